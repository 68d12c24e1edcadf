//! How a call ends, as the stages report it, and the caller's result.
//!
//! The stages do not build [`Error`]s: a refusal before any attempt is a
//! [`Refusal`], a call that ended without a value an [`End`]. [`ending`]
//! says how the call's `Result<T, End<E>>` ended in the sinks' vocabulary
//! ([`Ending`]), [`count`] reports that through the event sink, then
//! [`result`] turns it into what the caller gets, and is where a handler's
//! panic resumes. A new way to end is a variant of `Refusal` or `End`,
//! given its [`Ending`] in [`End::ending`] and its [`Error`] in `result`.

use std::any::Any;
use std::time::Duration;

use crate::contract::Contract;
use crate::error::{Busy, Error, Throttle};
use crate::error::{ErrorSource, SourceOf};
use crate::events::{Event, Events};
use crate::kinds::{Ending, StoppedAt};
use crate::outcome::Outcome;

/// Why a call ran nothing: refused, or withdrawn from a wait, before its
/// first attempt.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The runtime is stopping; where the call was.
    Stopping(StoppedAt),
    /// A `Reject` call found its key or a budget busy; or a `Wait` call's
    /// `max_wait` ran out (naming what it waited for), or a queue was full.
    Throttled {
        /// Which limit refused it.
        throttle: Throttle,
        /// What was busy.
        busy: Busy,
        /// How long until it can admit the call, when known.
        retry_after: RetryAfter,
    },
    /// The call's deadline passed before its first attempt.
    DeadlineExceeded,
    /// A call made inside a handler queued for what its own calling chain
    /// holds (`busy`: the key, or the budget it needs more of than the
    /// chain leaves): it could never be granted (`call/chain.rs`).
    WouldDeadlock(Busy),
}

impl Refusal {
    /// Throttled by `throttle` on `busy`, with no known time until it
    /// frees (a concurrency budget, a key).
    pub(crate) fn throttled(throttle: Throttle, busy: Busy) -> Refusal {
        Refusal::Throttled {
            throttle,
            busy,
            retry_after: RetryAfter::UNKNOWN,
        }
    }
}

/// A refusal's `retry_after` in whole nanoseconds, `u64::MAX` when unknown
/// (a longer wait, some 584 years, saturates one below): eight bytes where
/// an `Option<Duration>` takes sixteen, so that a [`Refusal`], which every
/// call's result makes room for, is no larger for carrying its
/// [`Throttle`] beside its [`Busy`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryAfter(u64);

impl RetryAfter {
    /// No known time.
    pub(crate) const UNKNOWN: RetryAfter = RetryAfter(u64::MAX);

    /// `after`, or unknown.
    pub(crate) fn new(after: Option<Duration>) -> Self {
        after.map_or(Self::UNKNOWN, |after| {
            RetryAfter(
                u64::try_from(after.as_nanos()).map_or(u64::MAX - 1, |n| n.min(u64::MAX - 1)),
            )
        })
    }

    /// The wait, when known.
    pub(crate) fn get(self) -> Option<Duration> {
        (self.0 != u64::MAX).then(|| Duration::from_nanos(self.0))
    }
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

    /// How the call ended, in the sinks' vocabulary.
    #[inline]
    pub(crate) fn ending(&self) -> Ending<'_> {
        match self {
            End::Failed { outcome, .. } | End::TimedOut { outcome, .. } => Ending::Failed(*outcome),
            End::Refused(Refusal::Throttled { throttle, busy, .. }) => {
                Ending::Throttled(busy, *throttle)
            }
            End::Refused(Refusal::Stopping(at)) => Ending::Stopping(*at),
            End::Refused(Refusal::WouldDeadlock(busy)) => Ending::WouldDeadlock(busy),
            End::Refused(Refusal::DeadlineExceeded) => Ending::DeadlineExceeded {
                outcome: Outcome::Transient,
                attempts: 0,
            },
            End::DeadlineExceeded { outcome, attempts } => Ending::DeadlineExceeded {
                outcome: *outcome,
                attempts: *attempts,
            },
            End::Panicked { attempt, .. } => Ending::Panicked { attempt: *attempt },
        }
    }
}

impl<E> From<Refusal> for End<E> {
    #[inline]
    fn from(refusal: Refusal) -> Self {
        End::Refused(refusal)
    }
}

/// How a call that ended with `end` ended, in the sinks' vocabulary.
pub(crate) fn ending<T, E>(end: &Result<T, End<E>>) -> Ending<'_> {
    match end {
        Ok(_) => Ending::Succeeded,
        Err(end) => end.ending(),
    }
}

/// Counts and reports how a call ended (through the event sink): its
/// success, or its refusal or failure. For an admitted call this is its
/// count out of the admission gate, so it comes once the call holds
/// nothing, before [`result`] builds what the caller gets.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn count<T, E>(end: &Result<T, End<E>>, events: Events<'_>) {
    match end {
        Ok(_) => events.emit(Event::Ended(Ending::Succeeded)),
        // Out of line: inlined here, the other endings' arms merge with the
        // success's into one jump table on the ending, which a successful
        // call then goes through too.
        Err(end) => events.ended(end.ending()),
    }
}

/// The caller's result of a call that ended with `end` (already
/// [`count`]ed); resumes a handler's panic unchanged.
///
/// Builds the value and does nothing else, so that it is written straight
/// into the caller's: a result built before the call's last counting and
/// copied after it would be written with narrow stores and read back with
/// wide loads, a load that waits for the stores, on every call.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
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

/// The caller's error of a call that ended with `end`. Out of line (once
/// per error type, not per operation): no call that succeeds comes here.
#[inline(never)]
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
        End::Refused(Refusal::Throttled {
            throttle,
            busy,
            retry_after,
        }) => Error::Throttled {
            throttle,
            operation,
            busy,
            retry_after: retry_after.get(),
        },
        End::Refused(Refusal::WouldDeadlock(busy)) => Error::WouldDeadlock { operation, busy },
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
#[cfg(test)]
mod tests {
    use super::*;

    /// Every call's result makes room for a `Refusal`: its throttle and
    /// its `retry_after` fit in the two words beside its `Busy`.
    #[test]
    fn a_refusal_is_its_busy_and_two_words() {
        assert!(std::mem::size_of::<Refusal>() <= std::mem::size_of::<Busy>() + 16);
    }

    #[test]
    fn retry_after_keeps_what_it_is_given() {
        assert_eq!(RetryAfter::new(None).get(), None);
        assert_eq!(RetryAfter::UNKNOWN.get(), None);
        for after in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_secs(30),
        ] {
            assert_eq!(RetryAfter::new(Some(after)).get(), Some(after));
        }
        let saturated = RetryAfter::new(Some(Duration::MAX)).get();
        assert_eq!(saturated, Some(Duration::from_nanos(u64::MAX - 1)));
    }
}
