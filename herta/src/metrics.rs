//! What herta exports through the [`metrics`](https://docs.rs/metrics)
//! crate facade: the `metrics` cargo feature (off by default).
//!
//! Install any recorder (Prometheus, OpenTelemetry, statsd, ...) **before**
//! building the runtime and binding the operations: herta takes its
//! handles from the facade once, when a [`Runtime`](crate::Runtime) is built
//! (the budget gauges) and when an operation is bound (its counters and
//! histograms), never per call and never from process-wide statics. So a
//! recorder set with `metrics::set_global_recorder`, or one made current
//! with `metrics::with_local_recorder` around `build` and `bind`, sees
//! everything; calls themselves may run anywhere.
//!
//! Labels are `operation` (the contract's `name`, else the function's name),
//! `outcome`, `throttle`, `stage`, `resource`, `breaker` and `to`: **never a key value**, so a million
//! keys add no series. Durations are in **seconds** (f64).
//!
//! | metric | kind | labels | what it counts |
//! |---|---|---|---|
//! | `herta_calls_total` | counter | `operation`, `outcome`; `throttle` only where `outcome` is `throttled` | calls by how they ended, once per call: `success`; `transient`, `uncertain`, `permanent` (the last attempt failed or timed out with that outcome); `throttled`, with `throttle` saying which limit ([`Throttle::label`](crate::Throttle::label)): `dependency` (the last attempt's handler error was `Throttled`), `no_room` (`Reject` found the key or a concurrency budget busy), `rate` (`Reject` found a rate budget short), `queue_full`, `max_wait` (the call ran nothing, except a retry that could not take its budgets back after a backoff sleep), `breaker_open`; `stopping` (refused or withdrawn because the runtime is stopping); `deadline` (`Error::DeadlineExceeded`); `would_deadlock` (`Error::WouldDeadlock`: a nested call that queued for what its own calling chain holds). Cancelled and panicked calls are not here, only in their own counters |
//! | `herta_attempts_total` | counter | `operation` | attempts run (first attempts and retries) |
//! | `herta_retries_total` | counter | `operation` | attempts beyond the first |
//! | `herta_retries_denied_total` | counter | `operation` | calls whose retry the runtime's [`RetryBudget`](crate::RetryBudget) refused |
//! | `herta_timeouts_total` | counter | `operation` | attempts that ran past the contract's `timeout` |
//! | `herta_cancelled_total` | counter | `operation` | admitted calls dropped before they completed |
//! | `herta_panics_total` | counter | `operation` | calls a panic ended: their handler's, one in code herta ran for them (`Classify`, a key's `Hash`), or their caller's while it awaited them (as `Stats::panicked`) |
//! | `herta_wait_seconds` | histogram | `operation`, `stage` (`key`, `budgets`) | one sample per wait that ended in a grant, from the first poll that found the key (budgets) busy to the grant; a call that did not wait records nothing, a re-acquisition of the budgets after a backoff sleep is a `budgets` sample of its own. A wait that ended otherwise (`max_wait`, deadline, shutdown, cancellation) is counted by how the call ended, not sampled |
//! | `herta_attempt_seconds` | histogram | `operation` | each attempt's duration, timed-out, panicking and deadline-dropped attempts included |
//! | `herta_backoff_seconds` | histogram | `operation` | each backoff sleep started (the delay chosen: backoff, or the server's hint) |
//! | `herta_budget_in_use` | gauge | `resource` | units held now |
//! | `herta_budget_waiting` | gauge | `resource` | calls queued for the budget now |
//! | `herta_budget_capacity` | gauge | `resource` | units in all (set when the runtime is built, and by `Runtime::set_capacity`) |
//! | `herta_budget_available` | gauge | `resource` | a rate budget's units in its bucket after its last grant (set at each grant; `Stats` reads the bucket now) |
//! | `herta_breaker_state` | gauge | `breaker` | 0 closed, 1 open, 2 half-open (set to 0 when the runtime is built, then at each transition) |
//! | `herta_breaker_transitions_total` | counter | `breaker`, `to` (`closed`, `open`, `half_open`) | state changes; a breaker's refusals count as `outcome="throttled", throttle="breaker_open"` in `herta_calls_total` |
//!
//! The gauges are updated on every change, by the budget's arbiter itself
//! (increments and decrements, so concurrent changes never leave a stale
//! value); every other metric is recorded by the call's event sink, beside
//! the [`Stats`](crate::Stats) counters and the tracing events. Relations:
//! `herta_attempts_total = started + retried` of the operation's
//! [`OperationStats`](crate::OperationStats); `herta_calls_total` summed over
//! outcomes is `finished - cancelled - panicked + refused_stopping` (a call refused
//! at the closed gate counts as `stopping` without being admitted).
//!
//! **Cost.** Each handle is a reference-counted pointer into the recorder;
//! a call increments two counters, records one attempt duration (two clock
//! reads) and moves its budgets' gauges. With the feature off, this module
//! does not exist and no metrics code is compiled into herta.
//!
//! ```
//! # #[cfg(feature = "metrics")] {
//! use herta::{Failure, Resource, Runtime};
//! use metrics_util::debugging::DebuggingRecorder;
//!
//! #[herta::operation(effect = Idempotent, resources("worker" = 1))]
//! async fn render(job: u32) -> Result<u32, Failure<std::io::Error>> {
//!     Ok(job)
//! }
//!
//! let recorder = DebuggingRecorder::new();
//! let snapshotter = recorder.snapshotter();
//! // Handles are taken at `build` and `bind`: the recorder must be current then.
//! let (rt, op) = metrics::with_local_recorder(&recorder, || {
//!     let rt = Runtime::builder().resource(Resource::new("worker", 2)).build().unwrap();
//!     let op = Render::bind(&rt).unwrap();
//!     (rt, op)
//! });
//! tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
//!     .block_on(op.call(7)).unwrap();
//! let calls = snapshotter.snapshot().into_vec().into_iter()
//!     .find(|(key, ..)| key.key().name() == "herta_calls_total")
//!     .map(|(key, ..)| key.key().labels().map(|l| l.value().to_owned()).collect::<Vec<_>>());
//! assert_eq!(calls, Some(vec!["render".to_owned(), "success".to_owned()]));
//! # drop(rt);
//! # }
//! ```

use std::time::Duration;

use ::metrics::{counter, gauge, histogram, Counter, Gauge, Histogram};

use crate::error::Throttle;
use crate::kinds::{Ending, Label, Queue};
use crate::resource::Resource;

/// Breaker `breaker` entered `to`: its state gauge and its transitions
/// counter.
#[cold]
pub(crate) fn breaker_moved(breaker: &'static str, to: crate::breaker::report::BreakerState) {
    gauge!("herta_breaker_state", "breaker" => breaker).set(f64::from(to.gauge()));
    counter!("herta_breaker_transitions_total", "breaker" => breaker, "to" => to.name())
        .increment(1);
}

/// Breaker `breaker`'s state gauge at 0 (closed), when the runtime is built.
pub(crate) fn breaker_registered(breaker: &'static str) {
    gauge!("herta_breaker_state", "breaker" => breaker).set(0.0);
}

/// One budget's `in_use`, `waiting` and `capacity` gauges, moved by the
/// arbiter.
pub(crate) struct BudgetGauges {
    in_use: Gauge,
    waiting: Gauge,
    capacity: Gauge,
    /// A rate budget's `herta_budget_available`: the units its bucket held
    /// after its last grant (time refills the bucket between grants, which
    /// no gauge sees without polling; `Stats` reads it exact).
    available: Option<Gauge>,
}

impl BudgetGauges {
    /// The gauges of `resource`, its capacity set now.
    pub(crate) fn register(resource: &Resource) -> Self {
        let name = resource.name();
        let capacity = gauge!("herta_budget_capacity", "resource" => name);
        capacity.set(resource.capacity());
        let available = resource.rate_of().map(|_| {
            let available = gauge!("herta_budget_available", "resource" => name);
            available.set(resource.capacity());
            available
        });
        BudgetGauges {
            in_use: gauge!("herta_budget_in_use", "resource" => name),
            waiting: gauge!("herta_budget_waiting", "resource" => name),
            capacity,
            available,
        }
    }

    /// A rate budget's bucket holds `units` after a grant.
    #[inline]
    pub(crate) fn available(&self, units: u64) {
        if let Some(g) = &self.available {
            g.set(units as f64);
        }
    }

    /// The capacity is `capacity` now (`Runtime::set_capacity`).
    pub(crate) fn capacity(&self, capacity: u32) {
        self.capacity.set(capacity);
    }

    /// `units` more (or, `taken` false, fewer) held.
    #[inline]
    pub(crate) fn in_use(&self, units: u32, taken: bool) {
        if taken {
            self.in_use.increment(units);
        } else {
            self.in_use.decrement(units);
        }
    }

    /// One more (or, `queued` false, one fewer) waiter.
    #[inline]
    pub(crate) fn waiting(&self, queued: bool) {
        if queued {
            self.waiting.increment(1);
        } else {
            self.waiting.decrement(1);
        }
    }
}

/// One operation's counters and histograms, registered at bind.
pub(crate) struct OpMetrics {
    /// The counter of each way a call ends, by [`Label`] (a no-op at
    /// `Throttled`: those are counted by their reason, in `throttled`).
    ended: [Counter; Label::ALL.len()],
    /// The counter of throttled calls, by [`Throttle`].
    throttled: [Counter; Throttle::ALL.len()],
    attempts: Counter,
    retries: Counter,
    retries_denied: Counter,
    timeouts: Counter,
    wait_key: Histogram,
    wait_budgets: Histogram,
    attempt: Histogram,
    backoff: Histogram,
}

/// The counter `operation`'s calls that end with `label` are counted in:
/// `herta_calls_total` with that `outcome`, except for cancelled and
/// panicked calls, which have counters of their own, and throttled ones,
/// counted by their reason ([`throttled_counter`]; registering a series
/// without its `throttle` label would export one that never moves).
fn ended_counter(operation: &'static str, label: Label) -> Counter {
    let op = operation;
    match label {
        Label::Cancelled => counter!("herta_cancelled_total", "operation" => op),
        Label::Panicked => counter!("herta_panics_total", "operation" => op),
        Label::Throttled => Counter::noop(),
        Label::Success
        | Label::Transient
        | Label::Uncertain
        | Label::Permanent
        | Label::Stopping
        | Label::Deadline
        | Label::WouldDeadlock => {
            counter!("herta_calls_total", "operation" => op, "outcome" => label.as_str())
        }
    }
}

/// The counter `operation`'s calls throttled by `throttle` are counted in:
/// `herta_calls_total` with `outcome` `throttled` and that `throttle`.
fn throttled_counter(operation: &'static str, throttle: Throttle) -> Counter {
    counter!(
        "herta_calls_total",
        "operation" => operation,
        "outcome" => Label::Throttled.as_str(),
        "throttle" => throttle.label()
    )
}

impl OpMetrics {
    /// The handles of `operation`'s metrics, from the current recorder.
    pub(crate) fn register(operation: &'static str) -> Self {
        let op = operation;
        OpMetrics {
            ended: Label::ALL.map(|label| ended_counter(op, label)),
            throttled: Throttle::ALL.map(|throttle| throttled_counter(op, throttle)),
            attempts: counter!("herta_attempts_total", "operation" => op),
            retries: counter!("herta_retries_total", "operation" => op),
            retries_denied: counter!("herta_retries_denied_total", "operation" => op),
            timeouts: counter!("herta_timeouts_total", "operation" => op),
            wait_key: histogram!("herta_wait_seconds", "operation" => op, "stage" => "key"),
            wait_budgets: histogram!(
                "herta_wait_seconds", "operation" => op, "stage" => "budgets"
            ),
            attempt: histogram!("herta_attempt_seconds", "operation" => op),
            backoff: histogram!("herta_backoff_seconds", "operation" => op),
        }
    }

    /// A call ended so.
    #[inline]
    pub(crate) fn ended(&self, ending: Ending<'_>) {
        match ending.throttle() {
            Some(throttle) => self.throttled[throttle as usize].increment(1),
            None => self.ended[ending.label() as usize].increment(1),
        }
    }
    /// An attempt started (`retry`: not the call's first).
    #[inline]
    pub(crate) fn attempt_started(&self, retry: bool) {
        self.attempts.increment(1);
        if retry {
            self.retries.increment(1);
        }
    }
    /// A retry the retry budget refused.
    #[inline]
    pub(crate) fn retry_denied(&self) {
        self.retries_denied.increment(1);
    }
    /// An attempt ran past its timeout.
    #[inline]
    pub(crate) fn timed_out(&self) {
        self.timeouts.increment(1);
    }
    /// A wait in `queue` ended in a grant after `elapsed`.
    #[inline]
    pub(crate) fn waited(&self, queue: Queue, elapsed: Duration) {
        match queue {
            Queue::Key => self.wait_key.record(elapsed),
            Queue::Budgets => self.wait_budgets.record(elapsed),
        }
    }
    /// An attempt ended after `elapsed`.
    #[inline]
    pub(crate) fn attempt_ended(&self, elapsed: Duration) {
        self.attempt.record(elapsed);
    }
    /// A backoff sleep of `delay` began.
    #[inline]
    pub(crate) fn backing_off(&self, delay: Duration) {
        self.backoff.record(delay);
    }
}
