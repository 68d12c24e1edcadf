//! Stage 4, the attempts: run the handler, each attempt under a fresh
//! timeout, classify its failure, and ask the retry [`Policy`] what
//! follows. The key and budgets stay held across attempts.
//!
//! One attempt is three steps: [`context`] (its `Context`, the timeout
//! starting now), the handler's future with its panic [`caught`], awaited
//! [`timed`] by that timeout, and [`classified`] (how it ended, each event
//! reported).
//!
//! As in tower's `retry` middleware, the decision (is this end tried again,
//! and after what?) is one [`Policy::next`], kept apart from the code that
//! carries it out: [`super::backoff`] sleeps and takes the budgets again, or
//! passes once through the scheduler.
//!
//! The call's deadline (see [`waiting`](super::waiting)) bounds every
//! attempt too: an attempt's limit is the earlier of its timeout and the
//! deadline, and an attempt dropped at the deadline ends the call with
//! `DeadlineExceeded` (classified like a timeout), never retried; nor does a
//! retry start once the deadline has passed, or sleep past it.
//!
//! Only [`caught`], [`timed`], [`classified`] and [`next`] depend on the
//! handler's types (small steps, inlined); the rest is compiled once, and
//! what runs only after a failure is out of line.
//!
//! Cancel safety: dropping the call drops the running attempt's future (the
//! handler is cancelled at its await point) and starts no further attempt;
//! a retry token withdrawn for it is refunded.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use futures_util::future::CatchUnwind;
use futures_util::FutureExt;
use tokio::time::{Instant, Sleep};

use super::ended::End;
use super::waiting::{earliest, needs_timers, Limits};
use crate::context::Context;
use crate::contract::Contract;
use crate::events::{Event, Events};
use crate::outcome::HandlerOutput;
use crate::outcome::{normalize, Outcome};
use crate::retry::budget::Withdrawal;
use crate::runtime::Inner;

/// A first attempt of an operation that may retry deposits in the runtime's
/// retry budget (see [`Policy::next`]).
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn first(rt: &Inner, contract: &Contract) {
    if contract.max_attempts() > 1 {
        if let Some(bucket) = &rt.retry_budget {
            bucket.deposit();
        }
    }
}

/// The context of attempt number `attempt`, its timeout starting now; its
/// deadline is the earlier of that timeout and the call's deadline.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn context(contract: &'static Contract, attempt: u32, limits: &Limits) -> Context {
    Context {
        operation: contract.operation(),
        attempt,
        max_attempts: contract.attempts_allowed(),
        deadline: if limits.any() {
            attempt_deadline(contract, limits.deadline())
        } else {
            None
        },
        call_deadline: limits.deadline(),
    }
}

/// The deadline of an attempt of a call that [`Limits`] bound: the earlier
/// of its `timeout` and the call's `deadline`, checking once that tokio's
/// timers are there when it has one.
#[inline(never)]
fn attempt_deadline(contract: &Contract, deadline: Option<Instant>) -> Option<Instant> {
    let timeout = contract.timeout().map(|t| Instant::now() + t);
    let at = earliest(timeout, deadline);
    if at.is_some() {
        needs_timers(
            contract,
            if timeout.is_some() {
                "`timeout`"
            } else {
                "deadline"
            },
        );
    }
    at
}

/// One attempt's future: `handler`'s, its panic caught. The call awaits
/// it [`timed`] when the attempt has a deadline, else as it is: two await
/// points in the call's state machine, so that an untimed attempt carries
/// no timer, and no test for one.
#[inline(always)]
pub(crate) fn caught<Fut: Future>(handler: Fut) -> CatchUnwind<AssertUnwindSafe<Fut>> {
    AssertUnwindSafe(handler).catch_unwind()
}

/// `attempt` until `deadline`: `None` if the deadline came first.
#[inline(always)]
pub(crate) fn timed<F: Future>(attempt: F, deadline: Instant) -> Timed<F> {
    Timed {
        attempt,
        timer: tokio::time::sleep_until(deadline),
    }
}

pin_project_lite::pin_project! {
    /// [`timed`]'s future: `tokio::time::timeout_at`'s rule (the attempt
    /// is polled first, so a value ready at the deadline is used), with the
    /// timer polled out of line, so that its code is compiled once, not
    /// once per operation.
    pub(crate) struct Timed<F> {
        #[pin]
        attempt: F,
        #[pin]
        timer: Sleep,
    }
}

impl<F: Future> Future for Timed<F> {
    type Output = Option<F::Output>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.attempt.poll(cx) {
            return Poll::Ready(Some(output));
        }
        if expired(this.timer, cx) {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

/// Whether an attempt's `timer` has fired. As in `timeout_at`, an attempt
/// that used up the task's cooperative budget does not keep the timer from
/// being seen: it is then polled unconstrained.
#[inline(never)]
fn expired(timer: Pin<&mut Sleep>, cx: &mut std::task::Context<'_>) -> bool {
    if tokio::task::coop::has_budget_remaining() {
        timer.poll(cx).is_ready()
    } else {
        Pin::new(&mut tokio::task::coop::unconstrained(timer))
            .poll(cx)
            .is_ready()
    }
}

/// What follows attempt number `attempt`, which ended with `end` (a
/// failure, whose server's hint `hint` reads): the retry [`Policy`]'s
/// decision.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn next<'a, E>(
    (contract, rt): (&'static Contract, &'a Inner),
    attempt: u32,
    end: &End<E>,
    hint: impl Fn(&E) -> Option<Duration>,
    limits: &Limits,
    events: Events<'_>,
) -> Next<'a> {
    Policy::new(contract, rt).next(Failed::new(attempt, end, hint), limits, events)
}

/// How attempt number `attempt`, run until `deadline`, ended (`None`: it
/// was dropped at that deadline: its timeout, or the call's deadline in
/// `limits`): its value, its failure classified, its timeout, or its panic.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn classified<T: HandlerOutput>(
    contract: &'static Contract,
    attempt: u32,
    finished: Option<std::thread::Result<T>>,
    classify: impl Fn(&T::Err) -> Outcome,
    events: Events<'_>,
    (deadline, limits): (Option<Instant>, &Limits),
) -> Result<T::Ok, End<T::Err>> {
    match finished {
        Some(Ok(output)) => output.into_result().map_err(|source| End::Failed {
            outcome: failed(classify(&source), attempt, events),
            attempts: attempt,
            source,
        }),
        // Counted (`panicked`) when the call ends, after it released what it
        // held: that count is also the call's count out of the gate.
        Some(Err(panic)) => Err(End::Panicked { attempt, panic }),
        None => Err(match ran_out(contract, attempt, events, deadline, limits) {
            (outcome, true) => End::DeadlineExceeded {
                outcome,
                attempts: attempt,
            },
            (outcome, false) => End::TimedOut {
                outcome,
                attempts: attempt,
            },
        }),
    }
}

/// A failed attempt, classified `outcome`: its normalized outcome, reported.
#[inline(never)]
fn failed(outcome: Outcome, attempt: u32, events: Events<'_>) -> Outcome {
    let outcome = normalize(outcome);
    events.emit(Event::AttemptFailed { outcome, attempt });
    outcome
}

/// An attempt dropped at its `deadline`: what that means for the effect,
/// and whether it was the call's deadline (else its timeout, reported).
#[inline(never)]
fn ran_out(
    contract: &Contract,
    attempt: u32,
    events: Events<'_>,
    deadline: Option<Instant>,
    limits: &Limits,
) -> (Outcome, bool) {
    let missed = deadline == limits.deadline();
    let outcome = contract.effect().timeout_outcome();
    if !missed {
        events.emit(Event::TimedOut { outcome, attempt });
    }
    (outcome, missed)
}

/// How attempt number `attempt` failed, as the policy reads it: its outcome
/// (`None`: never retried), and the server's hint (a zero hint is no hint).
#[derive(Clone, Copy)]
struct Failed {
    attempt: u32,
    outcome: Option<Outcome>,
    hint: Option<Duration>,
}

impl Failed {
    /// Reads `end`, the end of attempt number `attempt`, with `hint`.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn new<E>(attempt: u32, end: &End<E>, hint: impl Fn(&E) -> Option<Duration>) -> Self {
        let (outcome, hint) = match end {
            End::Failed {
                outcome, source, ..
            } => (Some(*outcome), hint(source)),
            end => (end.failure(), None),
        };
        Failed {
            attempt,
            outcome,
            hint,
        }
    }
}

/// What follows a failed attempt: [`Policy::next`]'s decision.
pub(crate) enum Next<'a> {
    /// No further attempt: the call returns the attempt's error.
    Stop,
    /// The next attempt, after one pass through the scheduler (no
    /// `backoff`), with the retry token withdrawn for it, if the runtime
    /// has a retry budget.
    Yield(Option<Withdrawal<'a>>),
    /// The next attempt, after a backoff sleep of `delay` (until `wake`;
    /// `None`: past the clock's range), with its retry token.
    Sleep {
        /// How long.
        delay: Duration,
        /// Until when.
        wake: Option<Instant>,
        /// The retry token withdrawn for the next attempt.
        token: Option<Withdrawal<'a>>,
    },
}

/// The one retry decision: whether, and after what, a failed attempt is
/// tried again.
pub(crate) struct Policy<'a> {
    contract: &'static Contract,
    rt: &'a Inner,
}

impl<'a> Policy<'a> {
    /// The policy of `contract`'s calls on this runtime.
    #[inline]
    fn new(contract: &'static Contract, rt: &'a Inner) -> Self {
        Policy { contract, rt }
    }

    /// What follows attempt number `failed.attempt`. Another attempt only
    /// if it failed or timed out, an attempt is left, the contract retries
    /// its outcome (the effect × outcome rule), the runtime is not closing
    /// (a drain waits for at most the attempt already running), and the
    /// call's deadline has not passed; then, with `backoff(...)`:
    ///
    /// 1. the delay: the backoff's jittered delay (at least `base` after a
    ///    `Throttled` attempt), or the error's hint
    ///    ([`Classify::retry_after`](crate::Classify::retry_after)) if
    ///    longer; a hint above `cap` stops;
    /// 2. a sleep that would end at or after the call's deadline stops;
    /// 3. the runtime's retry budget, if any: one token, or stop (counted
    ///    `retries_denied`).
    ///
    /// Without `backoff` there is no sleep: any hint stops (a contract
    /// without a delay cannot honour it), the retry budget is asked as
    /// above, and the next attempt follows a pass through the scheduler.
    #[inline(never)]
    fn next(&self, failed: Failed, limits: &Limits, events: Events<'_>) -> Next<'a> {
        let Failed {
            attempt,
            outcome,
            hint,
        } = failed;
        let contract = self.contract;
        let retried = outcome.is_some_and(|outcome| {
            attempt < contract.attempts_allowed()
                && contract.retries(outcome)
                && !self.rt.gate.is_closed()
        });
        if !retried || limits.passed() {
            return Next::Stop;
        }
        let hint = hint.filter(|h| !h.is_zero());
        let Some(backoff) = contract.backoff() else {
            if hint.is_some() {
                return Next::Stop;
            }
            return match self.withdraw(attempt, events) {
                Ok(token) => Next::Yield(token),
                Err(()) => Next::Stop,
            };
        };
        let throttled = outcome == Some(Outcome::Throttled);
        let delay = backoff.delay(attempt, throttled, self.rt.jitter.next());
        let delay = match hint {
            Some(hint) if hint > backoff.cap() => return Next::Stop,
            Some(hint) => hint.max(delay),
            None => delay,
        };
        needs_timers(contract, "backoff sleep");
        let wake = Instant::now().checked_add(delay);
        if let Some(deadline) = limits.deadline() {
            if wake.is_none_or(|wake| wake >= deadline) {
                return Next::Stop;
            }
        }
        match self.withdraw(attempt, events) {
            Ok(token) => Next::Sleep { delay, wake, token },
            Err(()) => Next::Stop,
        }
    }

    /// A token from the runtime's retry budget, if it has one, for the
    /// retry after attempt `attempt`. `Err` when it is empty (counted and
    /// traced).
    fn withdraw(&self, attempt: u32, events: Events<'_>) -> Result<Option<Withdrawal<'a>>, ()> {
        let Some(bucket) = &self.rt.retry_budget else {
            return Ok(None);
        };
        match bucket.withdrawal() {
            Some(token) => Ok(Some(token)),
            None => {
                events.emit(Event::RetryDenied { attempt });
                Err(())
            }
        }
    }
}
