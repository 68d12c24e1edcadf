//! What the event sinks are told, in the words the call pipeline and the
//! sinks (`stats`, `trace`, `metrics`) share: how a call ended
//! ([`Ending`], in one word its [`Label`]), where a stopping runtime caught
//! it ([`StoppedAt`]), and which queue it waited in ([`Queue`]).
//!
//! A new way for a call to end is one variant of [`Ending`]: every match on
//! it is exhaustive, so the compiler points at each place that must handle
//! it (its label here, its counter in `stats::Counters::of`, its tracing
//! event in `Events::emit`, its metric through its label).

use crate::error::{Busy, Throttle};
use crate::outcome::Outcome;

/// How a call ended: what the operation's counters, the span's `outcome`,
/// the metrics and the tracing events report, once per call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ending<'a> {
    /// The call returned the handler's value.
    Succeeded,
    /// The last attempt failed, or ran past its timeout, with this
    /// (normalized) outcome.
    Failed(Outcome),
    /// `busy` was busy: a `Reject` call found it so, a `Wait` call's
    /// `max_wait` ran out waiting for it, or its queue was full; the
    /// [`Throttle`] says which.
    Throttled(&'a Busy, Throttle),
    /// The runtime is stopping: the call was refused, or withdrawn from a
    /// wait, here.
    Stopping(StoppedAt),
    /// The call's deadline passed while it waited (`attempts` 0) or during
    /// attempt number `attempts`, which was dropped.
    DeadlineExceeded {
        /// `Transient` when nothing ran, else the effect's timeout outcome.
        outcome: Outcome,
        /// Attempts made, the dropped one included.
        attempts: u32,
    },
    /// A call made inside a handler queued for what its own calling chain
    /// holds, `busy` (a key, or a budget it needs more units of than the
    /// chain leaves): refused, as it could never be granted.
    WouldDeadlock(&'a Busy),
    /// The caller dropped the call before it completed.
    Cancelled,
    /// A panic ended the call (its handler's, one in code herta ran for
    /// it, or its caller's) during attempt number `attempt` (0: before the
    /// first).
    Panicked {
        /// The attempt running, 1-based; 0 before the first.
        attempt: u32,
    },
}

/// How a call ended, in one word: the `outcome` recorded on its span, and
/// the `outcome` label of `herta_calls_total` (or, for `cancelled` and
/// `panicked`, the counter of its own the `metrics` feature counts it in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(any(feature = "tracing", feature = "metrics")), allow(dead_code))]
pub(crate) enum Label {
    /// The handler's value was returned.
    Success,
    /// The last attempt failed `Transient`.
    Transient,
    /// The last attempt failed `Uncertain` (it may have acted).
    Uncertain,
    /// The last attempt failed `Permanent`.
    Permanent,
    /// Refused or given up for load: herta's own budget or key, or the
    /// handler's `Throttled`.
    Throttled,
    /// The runtime was stopping.
    Stopping,
    /// The call's deadline passed.
    Deadline,
    /// A nested call needed what its own calling chain holds.
    WouldDeadlock,
    /// The caller dropped the call.
    Cancelled,
    /// A panic ended the call.
    Panicked,
}

#[cfg_attr(not(any(feature = "tracing", feature = "metrics")), allow(dead_code))]
impl Label {
    /// Every label, each at its own index: `ALL[label as usize] == label`.
    pub(crate) const ALL: [Label; 10] = [
        Label::Success,
        Label::Transient,
        Label::Uncertain,
        Label::Permanent,
        Label::Throttled,
        Label::Stopping,
        Label::Deadline,
        Label::WouldDeadlock,
        Label::Cancelled,
        Label::Panicked,
    ];

    /// The word.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Label::Success => "success",
            Label::Transient => "transient",
            Label::Uncertain => "uncertain",
            Label::Permanent => "permanent",
            Label::Throttled => "throttled",
            Label::Stopping => "stopping",
            Label::Deadline => "deadline",
            Label::WouldDeadlock => "would_deadlock",
            Label::Cancelled => "cancelled",
            Label::Panicked => "panicked",
        }
    }
}

// `Label::ALL` lists each label at its own index.
const _: () = {
    let mut i = 0;
    while i < Label::ALL.len() {
        assert!(Label::ALL[i] as usize == i);
        i += 1;
    }
};

impl Ending<'_> {
    /// How this ending is said in one word.
    #[inline]
    pub(crate) fn label(self) -> Label {
        match self {
            Ending::Succeeded => Label::Success,
            Ending::Failed(outcome) => match outcome {
                Outcome::Transient => Label::Transient,
                Outcome::Uncertain => Label::Uncertain,
                Outcome::Throttled => Label::Throttled,
                // A handler's `Success` outcome is normalized to
                // `Permanent` before a call ends on it.
                Outcome::Permanent | Outcome::Success => Label::Permanent,
            },
            Ending::Throttled(..) => Label::Throttled,
            Ending::Stopping(_) => Label::Stopping,
            Ending::DeadlineExceeded { .. } => Label::Deadline,
            Ending::WouldDeadlock(_) => Label::WouldDeadlock,
            Ending::Cancelled => Label::Cancelled,
            Ending::Panicked { .. } => Label::Panicked,
        }
    }
}

impl Ending<'_> {
    /// Which limit throttled the call, when its label is `Throttled`: its
    /// refusal's, or `Dependency` for a handler's own `Throttled`.
    #[inline]
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn throttle(self) -> Option<Throttle> {
        match self {
            Ending::Throttled(_, throttle) => Some(throttle),
            Ending::Failed(Outcome::Throttled) => Some(Throttle::Dependency),
            _ => None,
        }
    }
}

/// Where the runtime's stopping caught a call: refused at the admission
/// gate, or withdrawn from (or refused by) its key's or its budgets' stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoppedAt {
    /// At the admission gate: the call was never admitted.
    Admission,
    /// While waiting for (or trying) its key.
    Key,
    /// While waiting for (or trying) its budgets.
    Budgets,
}

impl StoppedAt {
    /// The `stage` field of the `stopping` tracing event.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            StoppedAt::Admission => "admission",
            StoppedAt::Key => "key",
            StoppedAt::Budgets => "budgets",
        }
    }
}

/// The queue a call waited in: its key's or the budgets'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    /// Its `serialize_by` key's.
    Key,
    /// The arbiter's, for all of its budgets at once.
    Budgets,
}
