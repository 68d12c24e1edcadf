//! Between two attempts: after the retry [`Policy`](super::attempts::Policy)
//! said yes, what it costs to make the next attempt (DESIGN §8.3, §8.6).
//!
//! In order, for a contract with `backoff(...)`:
//!
//! 1. the delay: the backoff's jittered delay (at least `base` after a
//!    `Throttled` attempt), or the error's hint
//!    ([`Classify::retry_after`](crate::Classify::retry_after)) if longer; a
//!    hint above `cap` ends the call at once with the error;
//! 2. the deadline: a sleep that would end at or after the call's deadline
//!    (the contract's `deadline` and any `herta::deadline` scope, the
//!    earliest, fixed at admission) is not started (the call ends with the
//!    error);
//! 3. the runtime's retry budget, if any: one token, or the call ends with
//!    the error (counted `retries_denied`);
//! 4. the sleep, **holding the key but no budget**: the budgets are given
//!    back before it and re-acquired after it under the usual fairness rule
//!    (`Reject` finding them busy then ends the call `Throttled`). The sleep
//!    ends at once when the runtime closes (the call returns its last
//!    error).
//!
//! Without `backoff` there is no sleep: any hint above zero ends the call at
//! once (a contract without a delay cannot honour it), the retry budget is
//! asked as above, and the call yields to the scheduler before the next
//! attempt, so that a handler failing without awaiting never keeps its
//! worker thread (an outer `tokio::time::timeout`, other tasks) from running.
//!
//! The sleep and the re-acquisition after it are one boxed future, built
//! only when a call backs off (one allocation per backoff sleep): inline,
//! they made every call's state about 370 bytes larger (1 080 -> 712 bytes
//! for a plain call; `cargo run --release -p herta --example future_size`),
//! and [`between`] returns a small future of its own (712 -> 672).
//!
//! Cancel safety: dropping the call mid-sleep drops the sleep; the key is
//! released by the key stage, no budget is held, a withdrawn retry token is
//! refunded, and the call is counted cancelled.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{select, Either};
use tokio::time::Instant;

use super::ended::{End, Refusal};
use super::waiting::Limits;
use crate::arbiter::{Needs, Permit};
use crate::contract::Contract;
use crate::events::{Event, Events};
use crate::gate::Gate;
use crate::outcome::{Admission, Outcome};
use crate::retry::budget::{Bucket, Token};
use crate::runtime::Inner;

/// Why no further attempt follows although the policy allowed one.
pub(crate) enum Stop {
    /// The call returns its last attempt's error.
    Last,
    /// The call ends with this refusal (`Reject` found a budget busy after
    /// the sleep).
    Refused(Refusal),
}

/// A first attempt of an operation that may retry deposits in the runtime's
/// retry budget.
#[inline(always)]
pub(crate) fn first_attempt(rt: &Inner, contract: &Contract) {
    if contract.max_attempts() > 1 {
        if let Some(bucket) = &rt.retry_budget {
            bucket.deposit();
        }
    }
}

/// A token withdrawn for the next attempt, refunded on drop unless the
/// attempt starts.
struct Withdrawal<'a> {
    bucket: &'a Bucket,
    token: Option<Token>,
}

impl Withdrawal<'_> {
    fn spend(mut self) {
        self.token = None;
    }
}

impl Drop for Withdrawal<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            self.bucket.refund(token);
        }
    }
}

/// Asks the runtime's retry budget for the retry after attempt `attempt`.
/// `Err` when it is empty (counted and traced).
#[inline]
fn withdraw<'a>(
    rt: &'a Inner,
    attempt: u32,
    events: Events<'_>,
) -> Result<Option<Withdrawal<'a>>, Stop> {
    let Some(bucket) = &rt.retry_budget else {
        return Ok(None);
    };
    match bucket.take() {
        Some(token) => Ok(Some(Withdrawal {
            bucket,
            token: Some(token),
        })),
        None => {
            events.emit(Event::RetryDenied { attempt });
            Err(Stop::Last)
        }
    }
}

/// How attempt number `attempt` failed, as the step between attempts needs
/// it: its outcome, and the server's hint (a zero hint is no hint).
#[derive(Clone, Copy)]
pub(crate) struct Failed {
    attempt: u32,
    outcome: Option<Outcome>,
    hint: Option<Duration>,
}

impl Failed {
    /// Reads `end`, the end of attempt number `attempt`, with `hint`.
    #[inline]
    pub(crate) fn new<E>(
        attempt: u32,
        end: &End<E>,
        hint: impl Fn(&E) -> Option<Duration>,
    ) -> Self {
        Failed {
            attempt,
            outcome: end.failure(),
            hint: match end {
                End::Failed { source, .. } => hint(source).filter(|h| !h.is_zero()),
                _ => None,
            },
        }
    }
}

/// What happens between the attempt that `failed` and the next one: see
/// the module documentation. Decides at once (the delay, the deadline, the
/// retry budget) and returns the wait, which resolves `Ok` when the next
/// attempt may start (its budgets held again in `budgets`).
pub(crate) fn between<'a: 'w, 'w>(
    rt: &'a Inner,
    contract: &'static Contract,
    needs: &'a Needs,
    budgets: &'w mut Option<Permit<'a>>,
    failed: Failed,
    limits: &'w Limits,
    events: Events<'w>,
) -> Between<'a, 'w> {
    let Failed {
        attempt,
        outcome,
        hint,
    } = failed;
    let Some(backoff) = contract.backoff() else {
        if hint.is_some() {
            return Between::stopped(budgets, Stop::Last);
        }
        return match withdraw(rt, attempt, events) {
            Ok(withdrawal) => Between {
                step: Step::Reschedule {
                    woken: false,
                    gate: &rt.gate,
                },
                budgets,
                withdrawal,
            },
            Err(stop) => Between::stopped(budgets, stop),
        };
    };
    let throttled = outcome == Some(Outcome::Throttled);
    let delay = backoff.delay(attempt, throttled, rt.jitter.next());
    let sleep = match hint {
        Some(hint) if hint > backoff.cap() => return Between::stopped(budgets, Stop::Last),
        Some(hint) => hint.max(delay),
        None => delay,
    };
    super::waiting::needs_timers(contract, "backoff sleep");
    let wake = Instant::now().checked_add(sleep);
    if let Some(deadline) = limits.deadline {
        if wake.is_none_or(|wake| wake >= deadline) {
            return Between::stopped(budgets, Stop::Last);
        }
    }
    let withdrawal = match withdraw(rt, attempt, events) {
        Ok(withdrawal) => withdrawal,
        Err(stop) => return Between::stopped(budgets, stop),
    };
    events.emit(Event::BackingOff {
        delay: sleep,
        attempt,
    });
    // No budget is held while sleeping (the key is).
    *budgets = None;
    // Boxed: the sleep, the closed signal and the re-acquisition are a few
    // hundred bytes that every call's state would otherwise carry, for the
    // few that back off; one allocation is noise beside a backoff sleep.
    let sleep_then = Box::pin(sleep_then_reacquire(
        rt,
        needs,
        wake,
        sleep.is_zero(),
        contract.admission(),
        events,
        limits,
    ));
    Between {
        step: Step::Sleep(sleep_then),
        budgets,
        withdrawal,
    }
}

/// [`between`]'s wait: a few words in the call's state (the sleep, when
/// there is one, is boxed). Dropping it refunds a withdrawn retry token.
pub(crate) struct Between<'a, 'w> {
    step: Step<'a, 'w>,
    budgets: &'w mut Option<Permit<'a>>,
    withdrawal: Option<Withdrawal<'a>>,
}

enum Step<'a, 'w> {
    /// No further attempt (taken when polled).
    Stopped(Option<Stop>),
    /// No backoff: one pass through the scheduler, then the next attempt
    /// unless the runtime closed meanwhile. The call wakes itself and
    /// returns `Pending` once, so tokio puts it at the back of its worker's
    /// run queue (a task woken while it runs is rescheduled as a yield,
    /// behind the tasks already queued) and every task queued before it
    /// runs first. Unlike `tokio::task::yield_now`, it does not also wait
    /// for the I/O and timer driver to be polled first (tokio polls the
    /// driver every few dozen tasks anyway): that deferral cost each retry
    /// about 400 ns on 2 workers (BENCHMARKS.md, "Go reference").
    Reschedule { woken: bool, gate: &'a Gate },
    /// The backoff sleep, then the budgets again.
    Sleep(Pin<Box<dyn Future<Output = Result<Permit<'a>, Stop>> + Send + 'w>>),
}

impl<'a, 'w> Between<'a, 'w> {
    fn stopped(budgets: &'w mut Option<Permit<'a>>, stop: Stop) -> Self {
        Between {
            step: Step::Stopped(Some(stop)),
            budgets,
            withdrawal: None,
        }
    }

    /// The next attempt starts: its retry token is spent.
    fn next_attempt(&mut self) -> Poll<Result<(), Stop>> {
        if let Some(withdrawal) = self.withdrawal.take() {
            withdrawal.spend();
        }
        Poll::Ready(Ok(()))
    }
}

impl Future for Between<'_, '_> {
    type Output = Result<(), Stop>;

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
                    return Poll::Ready(Err(Stop::Last));
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
) -> Result<Permit<'a>, Stop> {
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
        return Err(Stop::Last);
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
) -> Result<Permit<'a>, Stop> {
    let error = match super::budgets::try_acquire(rt, needs) {
        Ok(permit) => return Ok(permit),
        Err(error) => error,
    };
    match super::budgets::contended(rt, needs, error, admission, events, limits).await {
        Ok(permit) => Ok(permit),
        Err(refusal @ Refusal::Throttled(_)) => Err(Stop::Refused(refusal)),
        Err(Refusal::Stopping(_) | Refusal::DeadlineExceeded) => Err(Stop::Last),
    }
}
