//! Stage 2, the circuit breaker (only for a contract with `breaker = …`):
//! a call is refused while its breaker is open, **before** it queues for
//! its key or budgets; then every attempt (the first, and each retry about
//! to start) passes the breaker, which counts its result.
//!
//! Which of the two the call runs is a type, chosen by the macro:
//! [`NoBreaker`] (every step is empty, the pass is `()`: a contract without
//! a breaker runs no instruction more) or [`WithBreaker`]. The try is
//! [`Stage::check`], taken before the key and the budgets: it only
//! refuses (open, or half-open with every probe out) and reserves nothing,
//! so a call queued for its key or budgets holds no probe's slot (other
//! callers are not refused for it, and the probe is not late for it). The
//! attempt's pass ([`Stage::pass`]: closed, the breaker's word read once,
//! kept as the attempt's ticket; half-open, a probe's slot reserved) is
//! taken when the attempt starts, the key and budgets held: a call that
//! finds the breaker open again, or every probe out, is refused there and
//! gives its key and budgets back, as any refusal does. Each retry passes
//! as the first attempt did. The attempt's end goes to [`Stage::ended`]
//! as a [`Verdict`].
//!
//! Cancel safety: a pass dropped before its attempt's verdict (the call
//! dropped during the attempt, or unwound by a panic outside the handler)
//! ends as `Neutral`: a probe frees its slot at once; a closed pass counts
//! nothing.

// `Stage` is sealed (in a private module): its steps name crate-private
// types, which no code outside herta can reach through it.
#![allow(private_interfaces)]

use std::mem::ManuallyDrop;
use std::time::Duration;

use super::admit::Held;
use super::backoff::Interrupted;
use super::bound::BoundInner;
use super::ended::{End, Refusal, RetryAfter};
use super::key::{self, Queued};
use super::waiting::Limits;
pub(crate) use crate::breaker::circuit::Verdict;
use crate::breaker::circuit::{Circuit, Ticket};
use crate::error::{Busy, Throttle};
use crate::outcome::Admission;
use crate::outcome::Outcome;

/// Which breaker stage a call runs: [`NoBreaker`] or [`WithBreaker`],
/// passed by the generated code as a value (zero-sized).
pub trait BreakerUse: sealed::Stage + Copy + Send + Sync + 'static {}

/// A contract without `breaker`: nothing runs, nothing is held.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBreaker;

/// A contract with `breaker = …`: the breaker bound with the operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct WithBreaker;

impl BreakerUse for NoBreaker {}
impl BreakerUse for WithBreaker {}

pub(crate) mod sealed {
    use super::*;

    /// The steps of the stage (not nameable outside herta).
    pub trait Stage {
        /// What an attempt holds while it runs.
        type Pass<'a>: Send;

        /// A call about to queue for its key and budgets: the breaker's
        /// refusal (open, or half-open with every probe out), else `Ok`,
        /// reserving nothing.
        fn check(circuit: Option<&Circuit>) -> Result<(), Refusal>;

        /// An attempt about to start (the call holds its key and budgets):
        /// its pass (a probe's slot, in half-open), or the refusal.
        fn pass(circuit: Option<&Circuit>) -> Result<Self::Pass<'_>, Refusal>;

        /// The pass of a call not yet started: it holds nothing.
        fn unreserved<'a>() -> Self::Pass<'a>;

        /// The attempt that held `pass` ended so.
        fn ended(pass: Self::Pass<'_>, verdict: Verdict);

        /// Stages 2 and 3's tries: the breaker's refusal, else the call's
        /// pass (holding nothing until its first attempt starts) and its
        /// key into `held` if the key is free, or the key to wait for
        /// ([`key::take`]).
        #[allow(clippy::type_complexity)]
        #[cfg_attr(not(debug_assertions), inline(always))]
        #[cfg_attr(debug_assertions, inline)]
        fn enter<'a, K>(
            bound: &'a BoundInner<K>,
            key: Option<K>,
            admission: Admission,
            held: &mut Held<'a, K>,
        ) -> Result<(Self::Pass<'a>, Option<Queued<'a, K>>), Refusal> {
            Self::check(bound.breaker.as_deref())?;
            let wait = key::take(bound, key, admission, &mut held.key)?;
            Ok((Self::unreserved(), wait))
        }

        /// The first attempt is about to start (the call holds its key and
        /// budgets): its pass taken into `pass`, else why it may not start
        /// (the call's deadline passed, or the breaker refused it: opened,
        /// or every probe out, while the call waited).
        #[cfg_attr(not(debug_assertions), inline(always))]
        #[cfg_attr(debug_assertions, inline)]
        fn ready<'a, K>(
            limits: &Limits,
            bound: &'a BoundInner<K>,
            pass: &mut Self::Pass<'a>,
        ) -> Option<Refusal> {
            if limits.passed() {
                return Some(Refusal::DeadlineExceeded);
            }
            Self::reserve(bound.breaker.as_deref(), pass)
        }

        /// [`pass`](Stage::pass) into `pass`, which holds nothing: the
        /// refusal, if refused.
        fn reserve<'a>(circuit: Option<&'a Circuit>, pass: &mut Self::Pass<'a>) -> Option<Refusal>;

        /// A retry is about to start, once `between` (the backoff) ended,
        /// its budgets held again: its pass, or why the call stops (the
        /// breaker's refusal among them).
        #[cfg_attr(not(debug_assertions), inline(always))]
        #[cfg_attr(debug_assertions, inline)]
        fn retry<K>(
            between: Result<(), Interrupted>,
            bound: &BoundInner<K>,
        ) -> Result<Self::Pass<'_>, Interrupted> {
            between?;
            Self::pass(bound.breaker.as_deref()).map_err(Interrupted::Refused)
        }

        /// The attempt that held `pass` succeeded with `value`.
        #[inline(always)]
        fn succeeded<T>(pass: Self::Pass<'_>, value: T) -> T {
            Self::ended(pass, Verdict::Success);
            value
        }
    }
}
use sealed::Stage;

impl Stage for NoBreaker {
    type Pass<'a> = ();

    #[inline(always)]
    fn check(_: Option<&Circuit>) -> Result<(), Refusal> {
        Ok(())
    }

    #[inline(always)]
    fn pass(_: Option<&Circuit>) -> Result<(), Refusal> {
        Ok(())
    }

    #[inline(always)]
    fn unreserved<'a>() -> Self::Pass<'a> {}

    #[inline(always)]
    fn reserve(_: Option<&Circuit>, _: &mut ()) -> Option<Refusal> {
        None
    }

    #[inline(always)]
    fn ended(_: (), _: Verdict) {}
}

impl Stage for WithBreaker {
    type Pass<'a> = Pass<'a>;

    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn check(circuit: Option<&Circuit>) -> Result<(), Refusal> {
        match circuit {
            Some(c) => c.admits().map_err(|retry_after| refusal(c, retry_after)),
            None => Ok(()),
        }
    }

    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn pass(circuit: Option<&Circuit>) -> Result<Pass<'_>, Refusal> {
        match circuit {
            Some(c) => match c.pass() {
                Ok(ticket) => Ok(Pass {
                    circuit: Some(c),
                    ticket,
                }),
                Err(retry_after) => Err(refusal(c, retry_after)),
            },
            None => Ok(Pass {
                circuit: None,
                ticket: Ticket::NONE,
            }),
        }
    }

    #[inline(always)]
    fn unreserved<'a>() -> Pass<'a> {
        Pass {
            circuit: None,
            ticket: Ticket::NONE,
        }
    }

    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn reserve<'a>(circuit: Option<&'a Circuit>, pass: &mut Pass<'a>) -> Option<Refusal> {
        let c = circuit?;
        match c.pass() {
            // Fields, not the whole pass: the one replaced holds nothing,
            // so there is nothing to drop.
            Ok(ticket) => {
                pass.circuit = Some(c);
                pass.ticket = ticket;
                None
            }
            Err(retry_after) => Some(refusal(c, retry_after)),
        }
    }

    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn ended(pass: Pass<'_>, verdict: Verdict) {
        let pass = ManuallyDrop::new(pass);
        if let Some(c) = pass.circuit {
            c.ended(pass.ticket, verdict);
        }
    }
}

/// The refusal of a call by `circuit`'s breaker, `retry_after` the time
/// left open (if open). Out of line: built only when refused, from the
/// breaker's `&'static` name (nothing allocated).
#[cold]
#[inline(never)]
fn refusal(circuit: &Circuit, retry_after: Option<Duration>) -> Refusal {
    Refusal::Throttled {
        throttle: Throttle::BreakerOpen,
        busy: Busy::Breaker {
            breaker: circuit.breaker.name(),
        },
        retry_after: RetryAfter::new(retry_after),
    }
}

/// An attempt's pass through its breaker; dropped without a verdict, it
/// ends neutral (see the module doc).
pub struct Pass<'a> {
    circuit: Option<&'a Circuit>,
    ticket: Ticket,
}

impl Drop for Pass<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(c) = self.circuit {
            if self.ticket.is_probe() {
                c.ended(self.ticket, Verdict::Neutral);
            }
        }
    }
}

/// How a breaker counts an attempt that ended with `end`: `Transient`,
/// `Uncertain` and timeouts (the attempt's, or the call's deadline during
/// it) fail; `Permanent` and `Success` succeed (the dependency answered);
/// `Throttled` and a panic are neutral. A refusal never reaches here.
#[inline]
pub(crate) fn verdict<E>(end: &End<E>) -> Verdict {
    match end {
        End::Failed { outcome, .. } => match outcome {
            Outcome::Transient | Outcome::Uncertain => Verdict::Failure,
            Outcome::Success | Outcome::Permanent => Verdict::Success,
            Outcome::Throttled => Verdict::Neutral,
        },
        End::TimedOut { .. } | End::DeadlineExceeded { .. } => Verdict::Failure,
        End::Panicked { .. } | End::Refused(_) => Verdict::Neutral,
    }
}
