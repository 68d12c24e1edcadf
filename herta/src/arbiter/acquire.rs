//! The future of [`Arbiter::acquire`](super::Arbiter::acquire): a `Wait`
//! call's queueing for its budgets (see the arbiter's module docs for the
//! grant pass and the fairness bound it takes part in).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::budget::Fast;
use super::state::{State, Track};
use super::{AcquireError, Arbiter, Need, Needs, Permit};
use crate::waiters::{Status, WakeList};

/// The future of [`Arbiter::acquire`]. Dropping it at any point returns
/// whatever it was granted and lets the waiters behind it proceed.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Acquire<'a> {
    pub(super) arbiter: &'a Arbiter,
    pub(super) needs: &'a Needs,
    /// Our waiter's slot while queued (or granted but not yet seen).
    pub(super) slot: Option<usize>,
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let arbiter = this.arbiter;
        let Some(slot) = this.slot else {
            // First poll: take at once if we could be granted at the end of
            // the queue, else queue up holding nothing.
            if let [n] = &this.needs[..] {
                if let Fast::Taken = arbiter.budgets[n.resource].try_take_fast(n.units) {
                    return Poll::Ready(Ok(arbiter.permit(this.needs, 0)));
                }
            }
            let mut state = arbiter.lock();
            if state.closed {
                return Poll::Ready(Err(AcquireError::Closed));
            }
            for n in this.needs.iter() {
                arbiter.budgets[n.resource].freeze();
            }
            if state.blocked_on(&arbiter.budgets, this.needs).is_none() {
                let stamp = state.tickets;
                state.take(&arbiter.budgets, this.needs, stamp);
                state.thaw_idle(&arbiter.budgets, this.needs);
                return Poll::Ready(Ok(arbiter.permit(this.needs, stamp)));
            }
            if let Some(full) = queue_full(&state.track, this.needs) {
                state.thaw_idle(&arbiter.budgets, this.needs);
                return Poll::Ready(Err(AcquireError::QueueFull(full)));
            }
            this.slot = Some(state.enqueue(&arbiter.budgets, this.needs, cx));
            return Poll::Pending;
        };
        let mut state = arbiter.lock();
        match state.waiters.poll(slot, cx.waker()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((status, waiter)) => {
                this.slot = None;
                let ticket = state.ticket(waiter);
                drop(state);
                Poll::Ready(match status {
                    Status::Granted => Ok(arbiter.permit(this.needs, ticket)),
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

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let arbiter = self.arbiter;
        let mut wake = WakeList::new();
        {
            let mut state = arbiter.lock();
            let st = &mut *state;
            let (status, waiter) = st.waiters.leave(slot, |_| &mut st.queue);
            debug_assert_eq!(waiter.list(), usize::from(self.needs.id));
            match status {
                Status::Queued => {
                    State::stop_waiting(&mut st.track, &arbiter.budgets, self.needs, st.closed);
                    // Our departure may unblock, or mature, the waiters behind us.
                    st.pass(&arbiter.budgets, &mut wake);
                }
                Status::Granted => {
                    // Granted but never seen: hand the units on at once.
                    let ticket = st.ticket(waiter);
                    st.give_back(&arbiter.budgets, self.needs, ticket);
                    st.pass(&arbiter.budgets, &mut wake);
                }
                Status::Withdrawn => {}
            }
        }
        wake.wake_all();
    }
}
