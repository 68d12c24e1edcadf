//! What herta reports through [`tracing`](https://docs.rs/tracing): the
//! `tracing` cargo feature (on by default).
//!
//! Every call runs inside a span `herta.operation`, and emits events at the
//! points one debugs: a wait for a key or for budgets (with how long), a
//! throttled call, a failed attempt, a retry, a backoff sleep, a retry the
//! retry budget denied, a timeout, a missed deadline, a cancellation, a
//! panic, a refusal because the runtime is stopping, a nested call refused
//! because its own calling chain holds what it needs. All have
//! the target `herta`, so `RUST_LOG=herta=debug` (or a `Targets` filter
//! `herta=debug`) shows them:
//!
//! | span or event (message) | level | fields |
//! |---|---|---|
//! | span `herta.operation`, one per call | `DEBUG` | `operation` (its name), `effect` (`Pure`, `Idempotent`, `NonIdempotent`), `key` (only with `serialize_by(param, show_key = true)`: the key's `Debug`, at most 64 bytes: a longer one is cut at a character boundary and ends in `...`; without `show_key`, key values are never recorded); recorded when the call ends: `attempts` (attempts run, 0 if none), `outcome` (`success`, `transient`, `uncertain`, `permanent`, `throttled`, `stopping`, `deadline`, `would_deadlock`, `cancelled`, `panicked`: the labels of the `metrics` feature) and `duration_ms` (f64, from the call to its end) |
//! | `waited for key` | `DEBUG` | `wait_ms`: f64, milliseconds from the first poll that found the key busy to the grant |
//! | `waited for budgets` | `DEBUG` | `wait_ms`, likewise for the budgets |
//! | `throttled` | `DEBUG` | `throttle` (which limit refused the call: [`Throttle::label`](crate::Throttle::label), `no_room`, `rate`, `queue_full`, `max_wait` or `breaker_open`), `resource` (the budget without room, or whose queue is full) or `key` (the busy key's parameter name) and, with `show_key = true`, `value` (its `Debug`); also when a `max_wait` runs out (what the call was still waiting for) |
//! | `attempt failed` | `DEBUG`; `WARN` when the outcome is `Uncertain` | `outcome`, `attempt` (1-based), `max_attempts` |
//! | `retrying` | `DEBUG` | `attempt` (the one about to run), `max_attempts` |
//! | `backing off` | `DEBUG` | `delay_ms` (f64, the sleep before the next attempt), `attempt` (the one that failed) |
//! | `retry denied` | `WARN` | `operation`, `attempt`, `max_attempts` (the runtime's retry budget is empty: the call returns its last error) |
//! | `timed out` | `WARN` | `operation`, `timeout_ms` (f64), `outcome` (`Transient` or `Uncertain`), `attempt`, `max_attempts` |
//! | `cancelled` | `DEBUG` | — (the caller dropped the call before it completed) |
//! | `panicked` | `WARN` | `operation`, `attempt`, `max_attempts` (the panic then propagates unchanged) |
//! | `stopping` | `DEBUG` | `stage`: `admission`, `key` or `budgets` (where the call was refused or withdrawn) |
//! | `deadline exceeded` | `WARN` | `operation`, `outcome`, `attempts` (0: the deadline passed while the call waited; else the attempt dropped) |
//! | `would deadlock` | `WARN` | `operation`, and `key` (with `show_key = true`, `value`) or `resource`: a call made inside a handler queued for what its own calling chain holds, and was refused (`Error::WouldDeadlock`) |
//! | `capacity changed` | `INFO` | `resource`, `previous`, `capacity`, `in_use` (units held at the change; [`Runtime::set_capacity`](crate::Runtime::set_capacity)) |
//! | `queue limit changed` | `INFO` | `resource`, `previous`, `queue_limit` (a number, or `none`; [`Runtime::set_queue_limit`](crate::Runtime::set_queue_limit)) |
//! | `breaker state changed` | `WARN` when it opens, else `INFO` | `breaker`, `from`, `to` (`closed`, `open`, `half_open`), `failure_rate` (percent) and `calls` of its window then; once per transition, by the call that made it |
//!
//! `WARN` events name the `operation` themselves, so they say where they come
//! from even when the subscriber filters the `DEBUG` span out. A successful
//! uncontended call emits no event at all: only its span, which says how the
//! call ended. So a `fmt` subscriber that logs span closes
//! (`tracing_subscriber::fmt().with_span_events(FmtSpan::CLOSE)`) writes one
//! line per call:
//!
//! ```text
//! DEBUG herta.operation{operation="render" effect="Idempotent" attempts=2 outcome="success" duration_ms=12.5}: herta: close time.busy=… time.idle=…
//! ```
//!
//! **Cost.** While no subscriber is installed (or one that filters `herta`
//! out), each callsite is one relaxed atomic load: the span is not built, the
//! key is not formatted, no allocation is made. The key's `Debug` runs only
//! for an enabled span, and a wait is timed (one clock read) only when the
//! call actually had to wait.
//!
//! With the feature off (`default-features = false`), this module is empty
//! and no tracing code is compiled into herta.
//!
//! ```
//! use herta::{Failure, Runtime};
//!
//! #[herta::operation(effect = Idempotent, resources("worker" = 1), serialize_by = brand)]
//! async fn replace(brand: String) -> Result<(), Failure<std::io::Error>> {
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // In an application: `tracing_subscriber::fmt().with_env_filter("herta=debug").init()`.
//! let rt = Runtime::builder().resource(herta::Resource::new("worker", 1)).build()?;
//! // Runs inside `herta.operation{operation="replace" effect="Idempotent" key="\"acme\""}`.
//! Replace::bind(&rt)?.call("acme".to_owned()).await?;
//! # Ok(())
//! # }
//! ```

// What the event sink (`events.rs`) calls to open a call's span, record
// its end and emit its events; compiled only with the feature.
#[cfg(feature = "tracing")]
mod emit {
    use std::time::Duration;

    use tokio::time::Instant;
    use tracing::Level;

    use crate::contract::Contract;
    use crate::error::{Busy, Throttle};
    use crate::kinds::{Queue, StoppedAt};
    use crate::outcome::Outcome;

    /// `duration` in milliseconds (exact for whole milliseconds).
    fn millis(duration: Duration) -> f64 {
        duration.as_nanos() as f64 / 1e6
    }

    /// Opens the call's span; describes the key only when the span is enabled.
    ///
    /// Always inlined: out of line, the 40-byte span comes back through
    /// memory, written with narrow stores and read at once with wide loads
    /// that wait for them.
    #[inline(always)]
    pub(crate) fn call_span<K>(
        contract: &Contract,
        key: Option<&K>,
        describe: Option<fn(&K) -> String>,
    ) -> tracing::Span {
        let span = tracing::span!(
            target: "herta",
            Level::DEBUG,
            "herta.operation",
            operation = contract.operation(),
            effect = contract.effect().name(),
            key = tracing::field::Empty,
            attempts = tracing::field::Empty,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        );
        if let (Some(key), Some(describe)) = (key, describe) {
            if !span.is_disabled() {
                // Formatted only if the subscriber actually visits the field.
                span.record("key", tracing::field::display(LazyKey { key, describe }));
            }
        }
        span
    }

    /// Records `attempts`, `outcome` (the call's ending, as its label) and
    /// `duration_ms` (since `since`) on the current span, which is the call's.
    #[cold]
    #[inline(never)]
    pub(crate) fn record_end(outcome: &'static str, attempts: u32, since: Instant) {
        let span = tracing::Span::current();
        span.record("attempts", attempts);
        span.record("outcome", outcome);
        span.record("duration_ms", millis(since.elapsed()));
    }

    /// A key formatted only when displayed.
    struct LazyKey<'a, K> {
        key: &'a K,
        describe: fn(&K) -> String,
    }

    impl<K> std::fmt::Display for LazyKey<'_, K> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&(self.describe)(self.key))
        }
    }

    /// `waited for key` / `waited for budgets`: the call waited `elapsed` in
    /// this queue before its grant.
    #[cold]
    #[inline(never)]
    pub(crate) fn waited(queue: Queue, elapsed: Duration) {
        let wait_ms = millis(elapsed);
        match queue {
            Queue::Key => tracing::debug!(target: "herta", wait_ms, "waited for key"),
            Queue::Budgets => tracing::debug!(target: "herta", wait_ms, "waited for budgets"),
        }
    }

    /// `throttled`, naming what was busy and which limit refused the call.
    #[cold]
    #[inline(never)]
    pub(crate) fn throttled(busy: &Busy, throttle: Throttle) {
        let throttle = throttle.label();
        match busy {
            Busy::Resource { resource } => {
                tracing::debug!(target: "herta", throttle, resource = *resource, "throttled");
            }
            Busy::Key {
                parameter,
                value: None,
            } => {
                tracing::debug!(target: "herta", throttle, key = *parameter, "throttled");
            }
            Busy::Key {
                parameter,
                value: Some(value),
            } => {
                tracing::debug!(target: "herta", throttle, key = *parameter, value = value.as_str(), "throttled");
            }
            Busy::Breaker { breaker } => {
                tracing::debug!(target: "herta", throttle, breaker = *breaker, "throttled");
            }
        }
    }

    /// `attempt failed`: `WARN` when the outcome is `Uncertain`.
    #[cold]
    #[inline(never)]
    pub(crate) fn attempt_failed(outcome: Outcome, attempt: u32, max_attempts: u32) {
        if outcome == Outcome::Uncertain {
            tracing::warn!(
                target: "herta",
                outcome = outcome.name(),
                attempt,
                max_attempts,
                "attempt failed"
            );
        } else {
            tracing::debug!(
                target: "herta",
                outcome = outcome.name(),
                attempt,
                max_attempts,
                "attempt failed"
            );
        }
    }

    /// `retrying`, with the number of the attempt about to run.
    #[cold]
    #[inline(never)]
    pub(crate) fn retrying(attempt: u32, max_attempts: u32) {
        tracing::debug!(target: "herta", attempt, max_attempts, "retrying");
    }

    /// `timed out`, always `WARN`.
    #[cold]
    #[inline(never)]
    pub(crate) fn timed_out(
        contract: &Contract,
        outcome: Outcome,
        attempt: u32,
        max_attempts: u32,
    ) {
        let timeout_ms = millis(contract.timeout().unwrap_or_default());
        tracing::warn!(
            target: "herta",
            operation = contract.operation(),
            timeout_ms,
            outcome = outcome.name(),
            attempt,
            max_attempts,
            "timed out"
        );
    }

    /// `cancelled`: the caller dropped the call before it completed.
    #[cold]
    #[inline(never)]
    pub(crate) fn cancelled() {
        tracing::debug!(target: "herta", "cancelled");
    }

    /// `panicked`, always `WARN`; the panic then propagates unchanged.
    #[cold]
    #[inline(never)]
    pub(crate) fn panicked(contract: &Contract, attempt: u32, max_attempts: u32) {
        tracing::warn!(
            target: "herta",
            operation = contract.operation(),
            attempt,
            max_attempts,
            "panicked"
        );
    }

    /// `stopping`: refused or withdrawn because the runtime is stopping.
    #[cold]
    #[inline(never)]
    pub(crate) fn stopping(at: StoppedAt) {
        tracing::debug!(target: "herta", stage = at.name(), "stopping");
    }

    /// `retry denied`, `WARN`: the runtime's retry budget is empty, so the
    /// call returns its last error after `attempt` attempts.
    #[cold]
    #[inline(never)]
    pub(crate) fn retry_denied(contract: &Contract, attempt: u32, max_attempts: u32) {
        tracing::warn!(
            target: "herta",
            operation = contract.operation(),
            attempt,
            max_attempts,
            "retry denied"
        );
    }

    /// `backing off`, with the sleep before the next attempt.
    #[cold]
    #[inline(never)]
    pub(crate) fn backing_off(delay: Duration, attempt: u32) {
        tracing::debug!(target: "herta", delay_ms = millis(delay), attempt, "backing off");
    }

    /// `deadline exceeded`, always `WARN`: the call's deadline passed while
    /// it waited (`attempts` 0) or during attempt number `attempts`.
    #[cold]
    #[inline(never)]
    pub(crate) fn deadline_exceeded(contract: &Contract, outcome: Outcome, attempts: u32) {
        tracing::warn!(
            target: "herta",
            operation = contract.operation(),
            outcome = outcome.name(),
            attempts,
            "deadline exceeded"
        );
    }

    /// `would deadlock`, always `WARN` (a bug in the program): a nested
    /// call queued for what its own calling chain holds, `busy` (the key,
    /// its value only with `show_key`, or the budget).
    #[cold]
    #[inline(never)]
    pub(crate) fn would_deadlock(contract: &Contract, busy: &Busy) {
        let operation = contract.operation();
        match busy {
            Busy::Key {
                parameter,
                value: None,
            } => {
                tracing::warn!(target: "herta", operation, key = *parameter, "would deadlock");
            }
            Busy::Key {
                parameter,
                value: Some(value),
            } => {
                tracing::warn!(target: "herta", operation, key = *parameter, value = value.as_str(), "would deadlock");
            }
            Busy::Resource { resource } => {
                tracing::warn!(target: "herta", operation, resource = *resource, "would deadlock");
            }
            Busy::Breaker { breaker } => {
                tracing::warn!(target: "herta", operation, breaker = *breaker, "would deadlock");
            }
        }
    }

    /// `capacity changed`, `INFO`: `Runtime::set_capacity` moved a budget
    /// from `previous` to `capacity` units with `in_use` held.
    #[cold]
    #[inline(never)]
    pub(crate) fn capacity_changed(resource: &str, previous: u32, capacity: u32, in_use: u32) {
        tracing::info!(target: "herta", resource, previous, capacity, in_use, "capacity changed");
    }

    /// `breaker state changed`, `WARN` when it opens, else `INFO`: breaker
    /// `breaker` moved `from` → `to` (`closed`, `open`, `half_open`), with
    /// the window's `failure_rate` (percent) and `calls` then.
    #[cold]
    #[inline(never)]
    pub(crate) fn breaker_moved(breaker: &str, moved: crate::breaker::report::Transition) {
        let (from, to) = (moved.from.name(), moved.to.name());
        let (failure_rate, calls) = (moved.counts.failure_rate(), moved.counts.calls);
        if moved.to == crate::breaker::report::BreakerState::Open {
            tracing::warn!(target: "herta", breaker, from, to, failure_rate, calls, "breaker state changed");
        } else {
            tracing::info!(target: "herta", breaker, from, to, failure_rate, calls, "breaker state changed");
        }
    }

    /// `queue limit changed`, `INFO`: `Runtime::set_queue_limit` moved a
    /// budget's limit from `previous` to `limit` (`none`: no limit).
    #[cold]
    #[inline(never)]
    pub(crate) fn queue_limit_changed(resource: &str, previous: Option<u32>, limit: Option<u32>) {
        let shown = |l: Option<u32>| l.map_or_else(|| "none".to_owned(), |l| l.to_string());
        tracing::info!(
            target: "herta",
            resource,
            previous = shown(previous).as_str(),
            queue_limit = shown(limit).as_str(),
            "queue limit changed"
        );
    }

    /// `rate changed`, `INFO`: `Runtime::set_rate` moved a rate budget
    /// from `previous` to `now`, each `(count, period, burst)`; periods in
    /// milliseconds.
    #[cold]
    #[inline(never)]
    pub(crate) fn rate_changed(
        resource: &str,
        previous: (u32, std::time::Duration, u32),
        now: (u32, std::time::Duration, u32),
    ) {
        tracing::info!(
            target: "herta",
            resource,
            previous_count = previous.0,
            previous_period_ms = previous.1.as_millis() as u64,
            previous_burst = previous.2,
            count = now.0,
            period_ms = now.1.as_millis() as u64,
            burst = now.2,
            "rate changed"
        );
    }
}

#[cfg(feature = "tracing")]
pub(crate) use emit::*;
