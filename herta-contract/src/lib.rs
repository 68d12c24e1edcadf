//! The vocabulary of a herta contract and its one safety table.
//!
//! This crate is shared by the `herta` runtime and the `herta-macros` proc-macro
//! crate so that there is exactly **one** source of truth for which
//! (effect, outcome) pairs may be retried:
//!
//! * the `#[herta::operation]` macro rejects unsafe `retry(on = …)` lists at
//!   compile time with [`retry_verdict`];
//! * the runtime checks the same table again before every retry (belt and
//!   braces: the runtime does not rely on the macro having checked it);
//! * the docs' copies of the table are checked against [`RETRY_TABLE`] by a
//!   test (`tests/retry_table_docs.rs`, which can rewrite them).
//!
//! Users do not depend on this crate directly: `herta` re-exports [`Effect`],
//! [`Outcome`] and [`Admission`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::fmt;

mod words;
pub use words::{closest, ADMISSION_NAMES, EFFECT_NAMES, OUTCOME_NAMES};

/// What running an operation does to the world, declared by its contract.
///
/// The effect decides which failures may be retried (see [`retry_verdict`]) and
/// what a timeout means (see [`Effect::timeout_outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    /// No side effect at all: running it twice is indistinguishable from once.
    Pure,
    /// Has side effects, but repeating it with the same input leaves the world
    /// as one run would (an upsert, a replace, a PUT).
    Idempotent,
    /// Repeating it may repeat its effect (a charge, an e-mail, an append).
    NonIdempotent,
}

impl Effect {
    /// Every effect, in declaration order.
    pub const ALL: [Effect; 3] = [Effect::Pure, Effect::Idempotent, Effect::NonIdempotent];

    /// The name as written in a contract (`"Idempotent"`).
    pub const fn name(self) -> &'static str {
        match self {
            Effect::Pure => "Pure",
            Effect::Idempotent => "Idempotent",
            Effect::NonIdempotent => "NonIdempotent",
        }
    }

    /// Parses a name as written in a contract; exact and case-sensitive.
    pub fn from_name(name: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The outcome of an attempt that ran past its timeout.
    ///
    /// The attempt's future was dropped part-way, so for a `NonIdempotent`
    /// operation the work may or may not have happened: [`Outcome::Uncertain`].
    /// For `Pure` and `Idempotent` operations repeating is harmless, so the
    /// timeout is [`Outcome::Transient`].
    pub const fn timeout_outcome(self) -> Outcome {
        match self {
            Effect::Pure | Effect::Idempotent => Outcome::Transient,
            Effect::NonIdempotent => Outcome::Uncertain,
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one attempt's result means, as classified by the code closest to the
/// failure (see `herta::Classify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The attempt succeeded.
    Success,
    /// The attempt failed and did not take effect; trying again may succeed.
    Transient,
    /// The attempt may or may not have taken effect (a lost reply, a timeout).
    Uncertain,
    /// The attempt failed and trying again will fail the same way. Also the
    /// outcome of every error nobody classified.
    Permanent,
    /// The work was refused for lack of capacity (a full budget, a busy key).
    Throttled,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Success,
        Outcome::Transient,
        Outcome::Uncertain,
        Outcome::Permanent,
        Outcome::Throttled,
    ];

    /// The name as written in a contract (`"Transient"`).
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Success => "Success",
            Outcome::Transient => "Transient",
            Outcome::Uncertain => "Uncertain",
            Outcome::Permanent => "Permanent",
            Outcome::Throttled => "Throttled",
        }
    }

    /// Parses a name as written in a contract; exact and case-sensitive.
    pub fn from_name(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a call does when its key is busy or a budget has no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Admission {
    /// Queue (holding nothing) until the key and every budget can be taken.
    #[default]
    Wait,
    /// Never wait: fail at once with `Throttled`.
    Reject,
}

impl Admission {
    /// Every admission mode, in declaration order.
    pub const ALL: [Admission; 2] = [Admission::Wait, Admission::Reject];

    /// The name as written in a contract (`"Wait"`).
    pub const fn name(self) -> &'static str {
        match self {
            Admission::Wait => "Wait",
            Admission::Reject => "Reject",
        }
    }

    /// Parses a name as written in a contract; exact and case-sensitive.
    pub fn from_name(name: &str) -> Option<Admission> {
        Admission::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether an attempt with a given outcome may be retried under a given effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryVerdict {
    /// Retrying is safe.
    Allowed,
    /// Retrying is never meaningful or never safe; the text says why.
    Forbidden(&'static str),
}

impl RetryVerdict {
    /// `true` for [`RetryVerdict::Allowed`].
    pub const fn is_allowed(self) -> bool {
        matches!(self, RetryVerdict::Allowed)
    }
}

/// The effect × outcome retry table: the single source of truth.
///
/// `retry` is [`RetryVerdict::Allowed`]; `compile error` is
/// [`RetryVerdict::Forbidden`], which `#[herta::operation]` reports when the
/// outcome is listed in `retry(on = …)`. The docs' copies of this table are
/// checked against [`RETRY_TABLE`] by `tests/retry_table_docs.rs`.
///
/// | outcome \ effect | Pure | Idempotent | NonIdempotent |
/// |---|---|---|---|
/// | Success | compile error | compile error | compile error |
/// | Transient | retry | retry | retry |
/// | Uncertain | retry | retry | compile error |
/// | Permanent | compile error | compile error | compile error |
/// | Throttled | compile error | compile error | compile error |
///
/// The table is for attempts that follow each other at once: a contract with
/// `retry(…, backoff(…))` may also retry `Throttled`, after a delay (see
/// `herta::Contract::retries`).
pub const fn retry_verdict(effect: Effect, outcome: Outcome) -> RetryVerdict {
    match (outcome, effect) {
        (Outcome::Transient, _) => RetryVerdict::Allowed,
        (Outcome::Uncertain, Effect::Pure | Effect::Idempotent) => RetryVerdict::Allowed,
        (Outcome::Uncertain, Effect::NonIdempotent) => RetryVerdict::Forbidden(
            "an Uncertain attempt of a NonIdempotent operation may already have taken effect, \
             so repeating it may repeat the effect",
        ),
        (Outcome::Success, _) => {
            RetryVerdict::Forbidden("a Success is a result, there is nothing to retry")
        }
        (Outcome::Permanent, _) => {
            RetryVerdict::Forbidden("a Permanent failure fails the same way every time")
        }
        (Outcome::Throttled, _) => RetryVerdict::Forbidden(
            "retrying a Throttled call at once only adds load; retry it only after a delay, with `backoff(...)`",
        ),
    }
}

/// [`retry_verdict`] for every pair, row by row (outcome-major), for docs and tests.
pub const RETRY_TABLE: [(Outcome, [(Effect, RetryVerdict); 3]); 5] = {
    const fn row(o: Outcome) -> (Outcome, [(Effect, RetryVerdict); 3]) {
        (
            o,
            [
                (Effect::Pure, retry_verdict(Effect::Pure, o)),
                (Effect::Idempotent, retry_verdict(Effect::Idempotent, o)),
                (
                    Effect::NonIdempotent,
                    retry_verdict(Effect::NonIdempotent, o),
                ),
            ],
        )
    }
    [
        row(Outcome::Success),
        row(Outcome::Transient),
        row(Outcome::Uncertain),
        row(Outcome::Permanent),
        row(Outcome::Throttled),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_walk_matches_the_design() {
        for (outcome, row) in RETRY_TABLE {
            for (effect, verdict) in row {
                let expected = match outcome {
                    Outcome::Transient => true,
                    Outcome::Uncertain => effect != Effect::NonIdempotent,
                    Outcome::Success | Outcome::Permanent | Outcome::Throttled => false,
                };
                assert_eq!(verdict.is_allowed(), expected, "{effect} x {outcome}");
                assert_eq!(verdict, retry_verdict(effect, outcome));
            }
        }
    }

    #[test]
    fn timeouts_are_uncertain_only_for_non_idempotent() {
        assert_eq!(Effect::Pure.timeout_outcome(), Outcome::Transient);
        assert_eq!(Effect::Idempotent.timeout_outcome(), Outcome::Transient);
        assert_eq!(Effect::NonIdempotent.timeout_outcome(), Outcome::Uncertain);
    }

    #[test]
    fn names_round_trip() {
        for e in Effect::ALL {
            assert_eq!(Effect::from_name(e.name()), Some(e));
        }
        for o in Outcome::ALL {
            assert_eq!(Outcome::from_name(o.name()), Some(o));
        }
        for a in Admission::ALL {
            assert_eq!(Admission::from_name(a.name()), Some(a));
        }
        assert_eq!(Effect::from_name("idempotent"), None);
    }
}
