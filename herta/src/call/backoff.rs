//! Between two attempts: carries out what the retry
//! [`Policy`](super::attempts::Policy) decided ([`Next`]).
//!
//! - [`Next::Sleep`]: the backoff sleep, **holding the key but no budget**:
//!   the budgets are given back before it and re-acquired after it under
//!   the usual fairness rule (`Reject` finding them busy then ends the call
//!   `Throttled`). The sleep ends at once when the runtime closes (the call
//!   returns its last error).
//! - [`Next::Yield`]: no backoff, so one pass through the scheduler before
//!   the next attempt, so that a handler failing without awaiting never
//!   keeps its worker thread (an outer `tokio::time::timeout`, other tasks)
//!   from running.
//!
//! The sleep and the re-acquisition after it are one boxed future, built
//! only when a call backs off (one allocation per backoff sleep): inline,
//! they would make every call's state a few hundred bytes larger, for the
//! few calls that back off; [`between`] returns a small future of its own.
//!
//! Cancel safety: dropping the call mid-sleep drops the sleep; no budget
//! is held, the admitted call releases the key, a withdrawn retry token is
//! refunded, and the call is counted cancelled.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::{select, Either};
use tokio::time::Instant;

use super::attempts::Next;
use super::ended::{End, Refusal};
use super::waiting::Limits;
use crate::arbiter::{Needs, Permit};
use crate::contract::Contract;
use crate::events::{Event, Events};
use crate::gate::Gate;
use crate::outcome::Admission;
use crate::retry::budget::Withdrawal;
use crate::runtime::Inner;

/// Why the next attempt does not start after all.
pub(crate) enum Interrupted {
    /// The call returns its last attempt's error (the runtime closed, or
    /// the deadline passed while the budgets were re-acquired).
    Last,
    /// The call ends with this refusal (`Reject` found a budget busy after
    /// the sleep).
    Refused(Refusal),
}

impl Interrupted {
    /// How the call ends, `end` being its last attempt's.
    #[inline]
    pub(crate) fn ended<E>(self, end: End<E>) -> End<E> {
        match self {
            Interrupted::Last => end,
            Interrupted::Refused(refusal) => End::Refused(refusal),
        }
    }
}

/// Carries out `next` after attempt number `attempt` of a call on `rt` of
/// `contract`, which needs `needs`: returns the wait, which resolves `Ok`
/// when the next attempt may start (its budgets held again in `budgets`).
pub(crate) fn between<'a: 'w, 'w>(
    next: Next<'a>,
    (rt, contract, needs): (&'a Inner, &'static Contract, &'a Needs),
    budgets: &'w mut Option<Permit<'a>>,
    attempt: u32,
    limits: &'w Limits,
    events: Events<'w>,
) -> Between<'a, 'w> {
    let (step, withdrawal) = match next {
        Next::Stop => (Step::Stopped(Some(Interrupted::Last)), None),
        Next::Yield(token) if needs.has_rate() => {
            // Every attempt takes its rate units (the dependency sees every
            // attempt): the budgets are given back and taken again, as after
            // a backoff sleep, after one pass through the scheduler.
            *budgets = None;
            let again = Box::pin(async move {
                tokio::task::yield_now().await;
                reacquire(rt, needs, contract.admission(), events, limits).await
            });
            (Step::Sleep(again), token)
        }
        Next::Yield(token) => (
            Step::Reschedule {
                woken: false,
                gate: &rt.gate,
            },
            token,
        ),
        Next::Sleep { delay, wake, token } => {
            events.emit(Event::BackingOff { delay, attempt });
            // No budget is held while sleeping (the key is).
            *budgets = None;
            // Boxed: the sleep, the closed signal and the re-acquisition
            // are a few hundred bytes that every call's state would
            // otherwise carry, for the few that back off; one allocation
            // is noise beside a backoff sleep.
            let sleep_then = Box::pin(sleep_then_reacquire(
                rt,
                needs,
                wake,
                delay.is_zero(),
                contract.admission(),
                events,
                limits,
            ));
            (Step::Sleep(sleep_then), token)
        }
    };
    Between {
        step,
        budgets,
        withdrawal,
    }
}

/// Reports that attempt number `attempt`, a retry, starts.
#[inline(never)]
pub(crate) fn retrying(events: Events<'_>, attempt: u32) {
    events.emit(Event::Retrying { attempt });
}

/// [`between`]'s wait: a few words in the call's state (the sleep, when
/// there is one, is boxed). Dropping it refunds a withdrawn retry token.
pub(crate) struct Between<'a, 'w> {
    step: Step<'a, 'w>,
    budgets: &'w mut Option<Permit<'a>>,
    /// The retry token withdrawn for the next attempt.
    withdrawal: Option<Withdrawal<'a>>,
}

enum Step<'a, 'w> {
    /// No further attempt (taken when polled).
    Stopped(Option<Interrupted>),
    /// No backoff: one pass through the scheduler, then the next attempt
    /// unless the runtime closed meanwhile. The call wakes itself and
    /// returns `Pending` once, so tokio puts it at the back of its worker's
    /// run queue (a task woken while it runs is rescheduled as a yield,
    /// behind the tasks already queued) and every task queued before it
    /// runs first. Unlike `tokio::task::yield_now`, it does not also wait
    /// for the I/O and timer driver to be polled first (tokio polls the
    /// driver every few dozen tasks anyway), a deferral each retry would
    /// pay.
    Reschedule { woken: bool, gate: &'a Gate },
    /// The backoff sleep, then the budgets again.
    Sleep(Pin<Box<dyn Future<Output = Result<Permit<'a>, Interrupted>> + Send + 'w>>),
}

impl Between<'_, '_> {
    /// The next attempt starts: its retry token is spent.
    fn next_attempt(&mut self) -> Poll<Result<(), Interrupted>> {
        if let Some(withdrawal) = self.withdrawal.take() {
            withdrawal.spend();
        }
        Poll::Ready(Ok(()))
    }
}

impl Future for Between<'_, '_> {
    type Output = Result<(), Interrupted>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.step {
            Step::Stopped(stop) => Poll::Ready(Err(stop.take().expect("polled after it ended"))),
            Step::Reschedule { woken, gate } => {
                if !*woken {
                    *woken = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                if gate.is_closed() {
                    return Poll::Ready(Err(Interrupted::Last));
                }
                this.next_attempt()
            }
            Step::Sleep(sleep) => match sleep.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(stop)) => Poll::Ready(Err(stop)),
                Poll::Ready(Ok(permit)) => {
                    *this.budgets = Some(permit);
                    this.next_attempt()
                }
            },
        }
    }
}

/// The backoff sleep until `wake` (`None`: past the clock's range, so
/// until the runtime closes), ended early by the runtime closing (the call
/// returns its last error), then the budgets again.
async fn sleep_then_reacquire<'a>(
    rt: &'a Inner,
    needs: &'a Needs,
    wake: Option<Instant>,
    zero: bool,
    admission: Admission,
    events: Events<'_>,
    limits: &Limits,
) -> Result<Permit<'a>, Interrupted> {
    let slept = async {
        match wake {
            Some(wake) => tokio::time::sleep_until(wake).await,
            None => std::future::pending().await,
        }
        if zero {
            tokio::task::yield_now().await;
        }
    };
    // In a block of its own, so the sleep and the signal are gone while the
    // budgets are re-acquired.
    let closed_first = {
        let closed = std::pin::pin!(rt.gate.closed());
        let slept = std::pin::pin!(slept);
        matches!(select(closed, slept).await, Either::Left(_))
    };
    if closed_first {
        return Err(Interrupted::Last);
    }
    reacquire(rt, needs, admission, events, limits).await
}

/// The budgets again after a backoff sleep, under the usual rules (the
/// stage [`budgets`](super::budgets) itself): at once if free; else
/// `Reject` is throttled, and `Wait` queues in its turn, bounded by the
/// call's `max_wait` and deadline, refused when a queue is full. Closing the
/// runtime, or the deadline passing, ends the call with its last error.
async fn reacquire<'a>(
    rt: &'a Inner,
    needs: &'a Needs,
    admission: Admission,
    events: Events<'_>,
    limits: &Limits,
) -> Result<Permit<'a>, Interrupted> {
    let error = match super::budgets::try_acquire(rt, needs) {
        Ok(permit) => return Ok(permit),
        Err(error) => error,
    };
    match super::budgets::contended(rt, needs, error, admission, events, limits).await {
        Ok(permit) => Ok(permit),
        Err(refusal @ (Refusal::Throttled { .. } | Refusal::WouldDeadlock(_))) => {
            Err(Interrupted::Refused(refusal))
        }
        Err(Refusal::Stopping(_) | Refusal::DeadlineExceeded) => Err(Interrupted::Last),
    }
}
