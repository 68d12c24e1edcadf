//! [`Arbiter::acquire`] and its future: a `Wait`
//! call's queueing for its budgets (see the arbiter's module docs for the
//! grant pass and the fairness bound it takes part in).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::budget::Fast;
use super::needs::{Need, Needs};
use super::permits::{AcquireError, Arbiter, Permit};
use super::rate::Now;
use super::state::{State, Track, Waiter};
use crate::waiters::{Node, Status, WakeList};

pin_project_lite::pin_project! {
    /// The future of [`Arbiter::acquire`]. Dropping it at any point returns
    /// whatever it was granted and lets the waiters behind it proceed.
    #[must_use = "futures do nothing unless polled"]
    #[project = AcquireProj]
    pub(crate) struct Acquire<'a> {
        arbiter: &'a Arbiter,
        needs: &'a Needs,
        // Our place in the arbiter's queue: idle until we queue, and again
        // once we have seen our grant (or withdrawal).
        #[pin]
        node: Node<Waiter>,
        // Our ticket, once queued (to know whether we are a rate budget's
        // head).
        ticket: u64,
        // A rate budget's head's timer, for the instant its units exist
        // (boxed: only a waiter on a rate budget builds one).
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
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
                        let ticket = st.ticket(waiter);
                        State::stop_waiting(&mut st.track, &arbiter.budgets, needs, st.closed, ticket);
                        // Our departure may unblock, or mature, the waiters behind us.
                        st.pass(&arbiter.budgets, &mut wake, &mut arbiter.now());
                    }
                    Some((Status::Granted, waiter)) => {
                        // Granted but never seen: hand the units on at once
                        // (a rate budget's are refunded).
                        let ticket = st.ticket(waiter);
                        st.give_back(&arbiter.budgets, needs, ticket);
                        st.pass(&arbiter.budgets, &mut wake, &mut arbiter.now());
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
            ticket: 0,
            timer: None,
        }
    }
}

impl<'a> Acquire<'a> {
    /// What it queues for: its arbiter and its needs.
    pub(crate) fn wants(self: Pin<&mut Self>) -> (&'a Arbiter, &'a Needs) {
        let this = self.project();
        (*this.arbiter, *this.needs)
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let (arbiter, needs) = (*this.arbiter, *this.needs);
        let mut fired = None;
        if this.node.is_idle() {
            // First poll: take at once if we could be granted at the end of
            // the queue, else queue up holding nothing.
            if let [n] = &needs[..] {
                if let Fast::Taken = arbiter.budgets[n.resource].try_take_fast(n.units) {
                    return Poll::Ready(Ok(arbiter.permit(needs, 0)));
                }
            }
            let mut now = arbiter.now();
            let mut state = arbiter.lock();
            if state.closed {
                return Poll::Ready(Err(AcquireError::Closed));
            }
            for n in needs.iter() {
                arbiter.budgets[n.resource].freeze();
            }
            if state
                .blocked_on(&arbiter.budgets, needs, &mut now)
                .is_none()
            {
                let stamp = state.tickets;
                state.take(&arbiter.budgets, needs, stamp, &mut now);
                state.thaw_idle(&arbiter.budgets, needs);
                return Poll::Ready(Ok(arbiter.permit(needs, stamp)));
            }
            if let Some(full) = queue_full(&state.track, needs) {
                state.thaw_idle(&arbiter.budgets, needs);
                return Poll::Ready(Err(AcquireError::QueueFull(full)));
            }
            *this.ticket = state.enqueue(&arbiter.budgets, needs, this.node.as_mut(), cx, &mut now);
            if !needs.has_rate() {
                return Poll::Pending;
            }
            let due = rate_due(arbiter, &state, needs, *this.ticket, &mut now);
            drop(state);
            match due {
                None => return Poll::Pending,
                Some(due) => match arm(arbiter, this.timer, due, now.ns(), cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(at) => fired = Some(at),
                },
            }
        } else if let Some(timer) = this.timer.as_mut() {
            if timer.as_mut().poll(cx).is_ready() {
                fired = Some(arbiter.clock.ns_at(timer.deadline()));
                *this.timer = None;
            }
        }
        waiting(&mut this, cx, fired)
    }
}

/// A queued `Acquire`'s poll: a pass as of `fired` (a head's timer that
/// fired), then our node; a head re-arms its timer.
fn waiting<'a>(
    this: &mut AcquireProj<'_, 'a>,
    cx: &mut Context<'_>,
    mut fired: Option<u64>,
) -> Poll<Result<Permit<'a>, AcquireError>> {
    let (arbiter, needs) = (*this.arbiter, *this.needs);
    loop {
        let mut wake = WakeList::new();
        let mut state = arbiter.lock();
        let st = &mut *state;
        let mut now = match fired {
            // A head's timer fired: a pass runs as of its instant, so
            // the timer's lag is not charged to the bucket.
            Some(at) => {
                let mut now = Now::at(&arbiter.clock, at);
                st.pass(&arbiter.budgets, &mut wake, &mut now);
                now
            }
            None => arbiter.now(),
        };
        let ready = match this.node.as_mut().poll(&mut st.queue, cx.waker()) {
            Poll::Ready((status, waiter)) => Some(match status {
                Status::Granted => Ok(st.ticket(waiter)),
                _ => Err(AcquireError::Closed),
            }),
            Poll::Pending => None,
        };
        let due = match ready {
            None if needs.has_rate() => rate_due(arbiter, st, needs, *this.ticket, &mut now),
            _ => None,
        };
        drop(state);
        wake.wake_all();
        if let Some(ready) = ready {
            return Poll::Ready(ready.map(|ticket| arbiter.permit(needs, ticket)));
        }
        match due {
            None => {
                *this.timer = None;
                return Poll::Pending;
            }
            Some(due) => match arm(arbiter, this.timer, due, now.ns(), cx) {
                Poll::Pending => return Poll::Pending,
                // Due already (the head was polled after its units came
                // to exist, or its timer fired): a pass as of that
                // instant, which grants it or names the head that must
                // time the next units.
                Poll::Ready(at) => fired = Some(at),
            },
        }
    }
}

/// When the waiter with `ticket` (of `needs`) is the head of one of its
/// rate budgets: the instant all of its rate units exist (see `rate.rs`,
/// "Waiting"), `now` or earlier when they exist already: then a pass must
/// run as of it, since no timer will.
fn rate_due(
    arbiter: &Arbiter,
    state: &State,
    needs: &Needs,
    ticket: u64,
    now: &mut Now<'_>,
) -> Option<u64> {
    let rate = needs.rate();
    if !rate.iter().any(|n| state.track[n.resource].head == ticket) {
        return None;
    }
    let t = now.ns();
    let due = rate
        .iter()
        .map(|n| {
            let b = &arbiter.budgets[n.resource];
            let r = b.rate.as_ref().expect("a rate need names a rate budget");
            b.rate_ready_at(r, n.units, t)
        })
        .max()
        .unwrap_or(t);
    Some(due)
}

/// Arms (or keeps) the timer for `due` and polls it: `Ready` with its
/// instant (ns on the arbiter's clock) when that has come already (`due`
/// at most `now`: no timer built). A `due` beyond the clock's range (units decades away, or never:
/// see `Clock::instant_within`) arms no timer: the waiter waits for a
/// pass (a departure, a new rate) or its own limit, instead of a timer
/// that would fire at the range's end and be re-armed there at once.
fn arm(
    arbiter: &Arbiter,
    timer: &mut Option<Pin<Box<tokio::time::Sleep>>>,
    due: u64,
    now: u64,
    cx: &mut Context<'_>,
) -> Poll<u64> {
    if due <= now {
        *timer = None;
        return Poll::Ready(due);
    }
    let Some(at) = arbiter.clock.instant_within(due) else {
        *timer = None;
        return Poll::Pending;
    };
    let sleep = match timer {
        Some(sleep) if sleep.deadline() == at => sleep,
        _ => timer.insert(Box::pin(tokio::time::sleep_until(at))),
    };
    match sleep.as_mut().poll(cx) {
        Poll::Pending => Poll::Pending,
        Poll::Ready(()) => {
            *timer = None;
            Poll::Ready(due)
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
