//! The one event sink of a call.
//!
//! Everything the runtime counts or reports about a call is an [`Event`],
//! and [`Events::emit`] is the only place that turns an event into its
//! effects: it bumps the event's counter in the operation's [`Counters`]
//! (what [`Runtime::stats`](crate::Runtime::stats) sums), emits its tracing
//! event (see [`crate::trace`] for names, levels and fields) and, with the
//! `metrics` feature, records its metric (see `crate::metrics`). A new
//! consumer of events is added here, once, beside these.
//!
//! `emit` is `#[inline(always)]` over an event built at the call site, so
//! each use compiles to its own arm: a relaxed atomic add, then the tracing
//! callsite (itself one relaxed load while no subscriber listens).

use crate::contract::Contract;
use crate::error::Busy;
use crate::metrics::AttemptClock;
#[cfg(feature = "metrics")]
use crate::metrics::{Ended, OpMetrics};
use crate::outcome::Outcome;
use crate::stats::Counters;
use crate::trace::{self, Stage, Wait, Waited};

/// With the `metrics` feature, runs `$body` with `$m` the sink's
/// [`OpMetrics`]; without it, expands to nothing.
macro_rules! metric {
    ($events:expr, $m:ident => $body:expr) => {
        #[cfg(feature = "metrics")]
        {
            let $m = $events.metrics;
            $body;
        }
    };
}

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
    Failed {
        /// The last attempt's outcome.
        outcome: Outcome,
    },
    /// An attempt that began at `clock` ended, however it ended (not
    /// counted; timed, with the `metrics` feature).
    AttemptEnded(AttemptClock),
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

/// Where a call's events go: the operation's counters, the tracing events
/// and (feature `metrics`) its metrics, for one contract.
#[derive(Clone, Copy)]
pub(crate) struct Events<'a> {
    counters: &'a Counters,
    contract: &'static Contract,
    #[cfg(feature = "metrics")]
    metrics: &'a OpMetrics,
}

impl<'a> Events<'a> {
    /// The sink of `contract`'s calls, counting in these counters.
    #[cfg(not(feature = "metrics"))]
    #[inline(always)]
    pub(crate) fn new(counters: &'a Counters, contract: &'static Contract) -> Self {
        Events { counters, contract }
    }

    /// The sink of `contract`'s calls, counting in these counters and
    /// recording these metrics.
    #[cfg(feature = "metrics")]
    #[inline(always)]
    pub(crate) fn new(
        counters: &'a Counters,
        contract: &'static Contract,
        metrics: &'a OpMetrics,
    ) -> Self {
        Events {
            counters,
            contract,
            metrics,
        }
    }

    /// Counts `event` and reports it. The count comes first: the counter a
    /// call ends in is its count out of the admission gate (`gate.rs`), so
    /// a panic in a tracing subscriber or a metrics recorder must not
    /// leave a call counted in but never out (a drain would wait forever).
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
                metric!(self, m => m.ended(Ended::Stopping));
                trace::stopping(stage);
            }
            Event::Throttled(busy) => {
                Counters::bump(&c.throttled);
                metric!(self, m => m.ended(Ended::Throttled));
                trace::throttled(busy);
            }
            Event::Waited(what, waited) => {
                metric!(self, m => m.waited(what, waited));
                trace::waited(what, waited);
            }
            Event::Started => {
                Counters::bump(&c.started);
                metric!(self, m => m.attempt_started(false));
            }
            Event::Retrying { attempt } => {
                Counters::bump(&c.retried);
                metric!(self, m => m.attempt_started(true));
                trace::retrying(attempt, max_attempts());
            }
            Event::AttemptFailed { outcome, attempt } => {
                trace::attempt_failed(outcome, attempt, max_attempts());
            }
            Event::TimedOut { outcome, attempt } => {
                Counters::bump(&c.timed_out);
                metric!(self, m => m.timed_out());
                trace::timed_out(self.contract, outcome, attempt, max_attempts());
            }
            Event::Panicked { attempt } => {
                Counters::bump(&c.panicked);
                metric!(self, m => m.panicked());
                trace::panicked(self.contract, attempt, max_attempts());
            }
            Event::Cancelled => {
                Counters::bump(&c.cancelled);
                metric!(self, m => m.cancelled());
                trace::cancelled();
            }
            Event::Succeeded => {
                Counters::bump(&c.succeeded);
                metric!(self, m => m.ended(Ended::Success));
            }
            Event::Failed { outcome } => {
                Counters::bump(&c.failed);
                metric!(self, m => m.ended(Ended::Failed(outcome)));
                let _ = outcome;
            }
            Event::AttemptEnded(clock) => {
                metric!(self, m => m.attempt_ended(clock));
                let _ = clock;
            }
            Event::RetryDenied { attempt } => {
                Counters::bump(&c.retries_denied);
                metric!(self, m => m.retry_denied());
                trace::retry_denied(self.contract, attempt, max_attempts());
            }
            Event::BackingOff { delay, attempt } => {
                metric!(self, m => m.backing_off(delay));
                trace::backing_off(delay, attempt);
            }
            Event::DeadlineExceeded { outcome, attempts } => {
                Counters::bump(&c.deadline_exceeded);
                metric!(self, m => m.ended(Ended::Deadline));
                trace::deadline_exceeded(self.contract, outcome, attempts);
            }
        }
    }
}
