//! Stage 4, the attempts: run the handler, each attempt under a fresh
//! timeout, classify its failure, and ask the retry [`Policy`] whether
//! another attempt follows. The key and budgets stay held across attempts.
//!
//! One attempt is three steps: [`context`] (its `Context`, the timeout
//! starting now), the handler's future awaited under that timeout with a
//! panic caught (in [`Bound::run`](super::Bound), so the call stays one
//! state machine), and [`classified`] (how it ended, each event reported).
//!
//! As in tower's `retry` middleware, the decision (may this end be tried
//! again?) is one small [`Policy`], kept apart from the loop that acts on
//! it. What happens after a `retry` verdict (the backoff sleep racing the
//! gate's [`closed`](crate::gate::Gate::closed) signal, the retry budget, a
//! pass through the scheduler) is the next step, [`super::backoff`].
//!
//! The call's deadline (see [`waiting`](super::waiting)) bounds every
//! attempt too: an attempt's limit is the earlier of its timeout and the
//! deadline, and an attempt dropped at the deadline ends the call with
//! `DeadlineExceeded` (classified like a timeout), never retried; nor does a
//! retry start once the deadline has passed.
//!
//! Cancel safety: dropping the call drops the running attempt's future (the
//! handler is cancelled at its await point) and starts no further attempt.

use tokio::time::Instant;

use super::ended::End;
use super::waiting::{earliest, needs_timers};
use crate::context::Context;
use crate::contract::Contract;
use crate::events::{Event, Events};
use crate::gate::Gate;
use crate::outcome::HandlerOutput;
use crate::outcome::{normalize, Outcome};

/// The one retry decision: whether a failed attempt is tried again.
pub(crate) struct Policy<'a> {
    contract: &'static Contract,
    gate: &'a Gate,
}

impl<'a> Policy<'a> {
    /// The policy of `contract`'s calls on a runtime with this gate.
    #[inline]
    pub(crate) fn new(contract: &'static Contract, gate: &'a Gate) -> Self {
        Policy { contract, gate }
    }

    /// Whether another attempt follows attempt number `attempt`, which
    /// ended the call with `end`: only if it failed or timed out, an attempt
    /// is left, the contract retries its outcome (the effect × outcome
    /// rule), and the runtime is not closing (a drain waits for at most the
    /// attempt already running).
    #[inline]
    pub(crate) fn retry<E>(&self, attempt: u32, end: &End<E>) -> bool {
        end.failure().is_some_and(|outcome| {
            attempt < max_attempts(self.contract)
                && self.contract.retries(outcome)
                && !self.gate.is_closed()
        })
    }
}

/// All attempts a call of `contract` may make, the first included.
#[inline]
fn max_attempts(contract: &Contract) -> u32 {
    contract.max_attempts().max(1)
}

/// The context of attempt number `attempt`, its timeout starting now; its
/// deadline is the earlier of that timeout and the call's `deadline`.
#[inline(always)]
pub(crate) fn context(
    contract: &'static Contract,
    attempt: u32,
    deadline: Option<Instant>,
) -> Context {
    Context {
        operation: contract.operation(),
        attempt,
        max_attempts: max_attempts(contract),
        deadline: {
            let timeout = contract.timeout().map(|t| Instant::now() + t);
            let at = earliest(timeout, deadline);
            if at.is_some() {
                // One check per attempt that will build a timer.
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
        },
    }
}

/// How attempt number `attempt` ended (`None`: it timed out, or with
/// `missed` the call's deadline passed): its value, its failure classified,
/// its timeout, or its panic.
#[inline(always)]
pub(crate) fn classified<T: HandlerOutput>(
    contract: &'static Contract,
    attempt: u32,
    finished: Option<std::thread::Result<T>>,
    classify: impl Fn(&T::Err) -> Outcome,
    events: Events<'_>,
    missed: bool,
) -> Result<T::Ok, End<T::Err>> {
    match finished {
        Some(Ok(output)) => output.into_result().map_err(|source| {
            let outcome = normalize(classify(&source));
            events.emit(Event::AttemptFailed { outcome, attempt });
            End::Failed {
                outcome,
                attempts: attempt,
                source,
            }
        }),
        // Counted (`panicked`) when the call ends, after it released what it
        // held: that count is also the call's count out of the gate.
        Some(Err(panic)) => Err(End::Panicked { attempt, panic }),
        None if missed => Err(End::DeadlineExceeded {
            outcome: contract.effect().timeout_outcome(),
            attempts: attempt,
        }),
        None => {
            let outcome = contract.effect().timeout_outcome();
            events.emit(Event::TimedOut { outcome, attempt });
            Err(End::TimedOut {
                outcome,
                attempts: attempt,
            })
        }
    }
}
