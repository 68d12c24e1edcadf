//! The one event sink of a call.
//!
//! Everything the runtime counts or reports about a call is an [`Event`],
//! and [`Events::emit`] is the only place that turns an event into its
//! effects: it bumps the event's counter in [`Counters`] (what
//! [`Runtime::stats`](crate::Runtime::stats) reads) and emits its tracing
//! event (see [`crate::trace`] for names, levels and fields). A new consumer
//! of events, such as metrics, is added here, once, beside the two.
//!
//! `emit` is `#[inline(always)]` over an event built at the call site, so
//! each use compiles to its own arm: a relaxed atomic add, then the tracing
//! callsite (itself one relaxed load while no subscriber listens).

use crate::contract::Contract;
use crate::error::Busy;
use crate::outcome::Outcome;
use crate::stats::Counters;
use crate::trace::{self, Stage, Wait, Waited};

/// Something that happened to a call.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// The call passed the admission gate.
    Admitted,
    /// The call was refused at the gate (counted `refused_stopping`), or
    /// withdrawn from a wait (counted `stopped_waiting`), because the
    /// runtime is stopping.
    Stopping(Stage),
    /// A `Reject` call found `busy` busy and ran nothing.
    Throttled(&'a Busy),
    /// The call finished waiting for its key or its budgets (reported only
    /// if it actually waited; not counted).
    Waited(Wait, Waited),
    /// The call holds its key and budgets and begins its first attempt.
    Started,
    /// Attempt number `attempt` (2 or more) is about to run.
    Retrying {
        /// The attempt about to run, 1-based.
        attempt: u32,
    },
    /// An attempt's handler returned an error of this (normalized) outcome
    /// (not counted: the call's result says it).
    AttemptFailed {
        /// What the failure means.
        outcome: Outcome,
        /// The failed attempt, 1-based.
        attempt: u32,
    },
    /// An attempt ran past the contract's timeout and was dropped.
    TimedOut {
        /// What the timeout means for this effect.
        outcome: Outcome,
        /// The timed-out attempt, 1-based.
        attempt: u32,
    },
    /// An attempt's handler panicked; the panic then propagates.
    Panicked {
        /// The attempt that panicked, 1-based.
        attempt: u32,
    },
    /// The caller dropped the call before it completed.
    Cancelled,
    /// The call returned the handler's value.
    Succeeded,
    /// The call's last attempt failed or ran past its timeout.
    Failed,
    /// The runtime's retry budget refused the retry after attempt number
    /// `attempt`: the call returns that attempt's error.
    RetryDenied {
        /// The last attempt made, 1-based.
        attempt: u32,
    },
    /// The call sleeps `delay` (its budgets given back) before the next
    /// attempt (not counted).
    BackingOff {
        /// The sleep.
        delay: std::time::Duration,
        /// The attempt that failed, 1-based.
        attempt: u32,
    },
    /// The call's deadline passed while it waited (`attempts` 0) or during
    /// attempt number `attempts` (dropped); the call ends with
    /// `Error::DeadlineExceeded`.
    DeadlineExceeded {
        /// `Transient` when nothing ran, else the effect's timeout outcome.
        outcome: Outcome,
        /// Attempts made, the dropped one included.
        attempts: u32,
    },
}

/// Where a call's events go: the runtime's counters and the tracing events,
/// for one contract.
#[derive(Clone, Copy)]
pub(crate) struct Events<'a> {
    counters: &'a Counters,
    contract: &'static Contract,
}

impl<'a> Events<'a> {
    /// The sink of `contract`'s calls on a runtime with these counters.
    #[inline(always)]
    pub(crate) fn new(counters: &'a Counters, contract: &'static Contract) -> Self {
        Events { counters, contract }
    }

    /// Counts `event` and reports it.
    #[inline(always)]
    pub(crate) fn emit(self, event: Event<'_>) {
        let c = self.counters;
        let max_attempts = || self.contract.max_attempts().max(1);
        match event {
            Event::Admitted => Counters::bump(&c.admitted),
            Event::Stopping(stage) => {
                Counters::bump(match stage {
                    Stage::Admission => &c.refused_stopping,
                    Stage::Key | Stage::Budgets => &c.stopped_waiting,
                });
                trace::stopping(stage);
            }
            Event::Throttled(busy) => {
                Counters::bump(&c.throttled);
                trace::throttled(busy);
            }
            Event::Waited(what, waited) => trace::waited(what, waited),
            Event::Started => Counters::bump(&c.started),
            Event::Retrying { attempt } => {
                Counters::bump(&c.retried);
                trace::retrying(attempt, max_attempts());
            }
            Event::AttemptFailed { outcome, attempt } => {
                trace::attempt_failed(outcome, attempt, max_attempts());
            }
            Event::TimedOut { outcome, attempt } => {
                Counters::bump(&c.timed_out);
                trace::timed_out(self.contract, outcome, attempt, max_attempts());
            }
            Event::Panicked { attempt } => {
                Counters::bump(&c.panicked);
                trace::panicked(self.contract, attempt, max_attempts());
            }
            Event::Cancelled => {
                Counters::bump(&c.cancelled);
                trace::cancelled();
            }
            Event::Succeeded => Counters::bump(&c.succeeded),
            Event::Failed => Counters::bump(&c.failed),
            Event::RetryDenied { attempt } => {
                Counters::bump(&c.retries_denied);
                trace::retry_denied(self.contract, attempt, max_attempts());
            }
            Event::BackingOff { delay, attempt } => trace::backing_off(delay, attempt),
            Event::DeadlineExceeded { outcome, attempts } => {
                Counters::bump(&c.deadline_exceeded);
                trace::deadline_exceeded(self.contract, outcome, attempts);
            }
        }
    }
}
