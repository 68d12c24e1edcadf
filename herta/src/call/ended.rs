//! How a call ends, as the stages report it, and the caller's result.
//!
//! The stages do not build [`Error`]s: a refusal before any attempt is a
//! [`Refusal`], a call that ended without a value an [`End`]. [`count`]
//! counts and traces how the call's `Result<T, End<E>>` ended (through the
//! event sink), then [`result`] turns it into what the caller gets, and is
//! where a handler's panic resumes.

use std::any::Any;

use crate::contract::Contract;
use crate::error::{Busy, Error};
use crate::error::{ErrorSource, SourceOf};
use crate::events::{Event, Events};
use crate::outcome::Outcome;
use crate::trace::Stage;

/// Why a call ran nothing: refused, or withdrawn from a wait, before its
/// first attempt.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The runtime is stopping; `Stage` says where the call was.
    Stopping(Stage),
    /// A `Reject` call found its key or a budget busy; or a `Wait` call's
    /// `max_wait` ran out (naming what it waited for), or a queue was full.
    Throttled(Busy),
    /// The call's deadline passed before its first attempt.
    DeadlineExceeded,
}

/// How a call ended without a value.
pub(crate) enum End<E> {
    /// Refused before any attempt.
    Refused(Refusal),
    /// The last attempt failed with the handler's error.
    Failed {
        /// Its (normalized) outcome.
        outcome: Outcome,
        /// Attempts made, the failed one included.
        attempts: u32,
        /// The handler's error.
        source: E,
    },
    /// The last attempt ran past the timeout.
    TimedOut {
        /// What the timeout means for this effect.
        outcome: Outcome,
        /// Attempts made, the timed-out one included.
        attempts: u32,
    },
    /// Attempt number `attempt`'s handler panicked with this payload.
    Panicked {
        /// The attempt that panicked, 1-based.
        attempt: u32,
        /// The panic's payload, resumed unchanged.
        panic: Box<dyn Any + Send>,
    },
    /// The call's deadline passed during an attempt, which was dropped.
    DeadlineExceeded {
        /// What the dropped attempt means for this effect (as a timeout).
        outcome: Outcome,
        /// Attempts made, the dropped one included.
        attempts: u32,
    },
}

impl<E> End<E> {
    /// The outcome of a failed or timed-out attempt: what the retry policy
    /// decides on. `None` for a refusal or a panic (never retried).
    #[inline]
    pub(crate) fn failure(&self) -> Option<Outcome> {
        match self {
            End::Failed { outcome, .. } | End::TimedOut { outcome, .. } => Some(*outcome),
            End::Refused(_) | End::Panicked { .. } | End::DeadlineExceeded { .. } => None,
        }
    }
}

impl<E> From<Refusal> for End<E> {
    #[inline]
    fn from(refusal: Refusal) -> Self {
        End::Refused(refusal)
    }
}

/// How a call that ended with `end` ended, as one word: the span's `outcome`
/// and the `outcome` label of the `metrics` feature (see `herta::trace` and
/// `herta::metrics`).
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) fn label<T, E>(end: &Result<T, End<E>>) -> &'static str {
    match end {
        Ok(_) => "success",
        Err(End::Failed { outcome, .. } | End::TimedOut { outcome, .. }) => match outcome {
            Outcome::Transient => "transient",
            Outcome::Uncertain => "uncertain",
            Outcome::Throttled => "throttled",
            _ => "permanent",
        },
        Err(End::Refused(Refusal::Throttled(_))) => "throttled",
        Err(End::Refused(Refusal::Stopping(_))) => "stopping",
        Err(End::Refused(Refusal::DeadlineExceeded) | End::DeadlineExceeded { .. }) => "deadline",
        Err(End::Panicked { .. }) => "panicked",
    }
}

/// Counts and traces how a call ended (through the event sink): its
/// success, or its refusal or failure. For an admitted call this is its
/// count out of the admission gate, so it comes once the call holds
/// nothing, before [`result`] builds what the caller gets.
#[inline(always)]
pub(crate) fn count<T, E>(end: &Result<T, End<E>>, events: Events<'_>) {
    match end {
        Ok(_) => events.emit(Event::Succeeded),
        Err(end) => count_error(end, events),
    }
}

/// [`count`] of a call that ended without a value.
#[inline]
fn count_error<E>(end: &End<E>, events: Events<'_>) {
    match end {
        End::Failed { outcome, .. } | End::TimedOut { outcome, .. } => {
            events.emit(Event::Failed { outcome: *outcome })
        }
        End::Panicked { attempt, .. } => events.emit(Event::Panicked { attempt: *attempt }),
        End::Refused(Refusal::Stopping(stage)) => events.emit(Event::Stopping(*stage)),
        End::Refused(Refusal::Throttled(busy)) => events.emit(Event::Throttled(busy)),
        End::Refused(Refusal::DeadlineExceeded) => deadline_exceeded(events, Outcome::Transient, 0),
        End::DeadlineExceeded { outcome, attempts } => {
            deadline_exceeded(events, *outcome, *attempts)
        }
    }
}

/// Counts and traces a missed deadline.
#[cold]
fn deadline_exceeded(events: Events<'_>, outcome: Outcome, attempts: u32) {
    events.emit(Event::DeadlineExceeded { outcome, attempts });
}

/// The caller's result of a call that ended with `end` (already
/// [`count`]ed); resumes a handler's panic unchanged.
///
/// Builds the value and does nothing else, so that it is written straight
/// into the caller's: an uncontended call's result built before the call's
/// last counting and copied after it was written with narrow stores and
/// read back with wide loads, a load that waits for the stores (18 % of an
/// uncontended call's time, `perf annotate` of `profile_call`).
#[inline(always)]
pub(crate) fn result<T, E, S: ErrorSource<E>>(
    end: Result<T, End<E>>,
    contract: &'static Contract,
    _chain: S,
) -> Result<T, Error<E>> {
    match end {
        Ok(value) => Ok(value),
        Err(end) => Err(error(end, contract, S::source_of())),
    }
}

/// The caller's error of a call that ended with `end`.
#[inline]
fn error<E>(end: End<E>, contract: &'static Contract, chain: SourceOf<E>) -> Error<E> {
    let operation = contract.operation();
    match end {
        End::Failed {
            outcome,
            attempts,
            source,
        } => Error::Failed {
            operation,
            outcome,
            attempts,
            source,
            chain,
        },
        End::TimedOut { outcome, attempts } => Error::TimedOut {
            operation,
            timeout: contract.timeout().unwrap_or_default(),
            attempts,
            outcome,
        },
        End::Panicked { panic, .. } => std::panic::resume_unwind(panic),
        End::Refused(Refusal::Stopping(_)) => Error::Stopping { operation },
        End::Refused(Refusal::Throttled(busy)) => Error::Throttled { operation, busy },
        End::Refused(Refusal::DeadlineExceeded) => Error::DeadlineExceeded {
            operation,
            attempts: 0,
            outcome: Outcome::Transient,
        },
        End::DeadlineExceeded { outcome, attempts } => Error::DeadlineExceeded {
            operation,
            attempts,
            outcome,
        },
    }
}
