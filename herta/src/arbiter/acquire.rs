//! [`Arbiter::acquire`] and its future: a `Wait`
//! call's queueing for its budgets (see the arbiter's module docs for the
//! grant pass and the fairness bound it takes part in).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::budget::Fast;
use super::needs::{Need, Needs};
use super::permits::{AcquireError, Arbiter, Permit};
use super::state::{State, Track, Waiter};
use crate::waiters::{Node, Status, WakeList};

pin_project_lite::pin_project! {
    /// The future of [`Arbiter::acquire`]. Dropping it at any point returns
    /// whatever it was granted and lets the waiters behind it proceed.
    #[must_use = "futures do nothing unless polled"]
    pub(crate) struct Acquire<'a> {
        arbiter: &'a Arbiter,
        needs: &'a Needs,
        // Our place in the arbiter's queue: idle until we queue, and again
        // once we have seen our grant (or withdrawal).
        #[pin]
        node: Node<Waiter>,
    }

    impl<'a> PinnedDrop for Acquire<'a> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.node.is_idle() {
                return;
            }
            let arbiter = *this.arbiter;
            let needs = *this.needs;
            let mut wake = WakeList::new();
            {
                // Nothing before `leave` can panic (the lock ignores
                // poisoning; not under loom, whose lock does not): a node
                // dropped in a list aborts (waiters.rs).
                let mut state = arbiter.lock();
                let st = &mut *state;
                match this.node.leave(&mut st.queue) {
                    Some((Status::Queued, waiter)) => {
                        debug_assert_eq!(waiter.list(), usize::from(needs.id));
                        State::stop_waiting(&mut st.track, &arbiter.budgets, needs, st.closed);
                        // Our departure may unblock, or mature, the waiters behind us.
                        st.pass(&arbiter.budgets, &mut wake);
                    }
                    Some((Status::Granted, waiter)) => {
                        // Granted but never seen: hand the units on at once.
                        let ticket = st.ticket(waiter);
                        st.give_back(&arbiter.budgets, needs, ticket);
                        st.pass(&arbiter.budgets, &mut wake);
                    }
                    Some((Status::Withdrawn, _)) | None => {}
                }
            }
            wake.wake_all();
        }
    }
}

impl Arbiter {
    /// Waits until every need can be taken at once, holding nothing meanwhile.
    pub(crate) fn acquire<'a>(&'a self, needs: &'a Needs) -> Acquire<'a> {
        Acquire {
            arbiter: self,
            needs,
            node: Node::new(),
        }
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let (arbiter, needs) = (*this.arbiter, *this.needs);
        if this.node.is_idle() {
            // First poll: take at once if we could be granted at the end of
            // the queue, else queue up holding nothing.
            if let [n] = &needs[..] {
                if let Fast::Taken = arbiter.budgets[n.resource].try_take_fast(n.units) {
                    return Poll::Ready(Ok(arbiter.permit(needs, 0)));
                }
            }
            let mut state = arbiter.lock();
            if state.closed {
                return Poll::Ready(Err(AcquireError::Closed));
            }
            for n in needs.iter() {
                arbiter.budgets[n.resource].freeze();
            }
            if state.blocked_on(&arbiter.budgets, needs).is_none() {
                let stamp = state.tickets;
                state.take(&arbiter.budgets, needs, stamp);
                state.thaw_idle(&arbiter.budgets, needs);
                return Poll::Ready(Ok(arbiter.permit(needs, stamp)));
            }
            if let Some(full) = queue_full(&state.track, needs) {
                state.thaw_idle(&arbiter.budgets, needs);
                return Poll::Ready(Err(AcquireError::QueueFull(full)));
            }
            state.enqueue(&arbiter.budgets, needs, this.node, cx);
            return Poll::Pending;
        }
        let mut state = arbiter.lock();
        let st = &mut *state;
        match this.node.poll(&mut st.queue, cx.waker()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((status, waiter)) => {
                let ticket = st.ticket(waiter);
                drop(state);
                Poll::Ready(match status {
                    Status::Granted => Ok(arbiter.permit(needs, ticket)),
                    _ => Err(AcquireError::Closed),
                })
            }
        }
    }
}

/// The first budget among `needs` whose queue is at its limit.
fn queue_full(track: &[Track], needs: &[Need]) -> Option<usize> {
    needs
        .iter()
        .find(|n| {
            let t = &track[n.resource];
            t.waiting >= t.queue_limit
        })
        .map(|n| n.resource)
}
