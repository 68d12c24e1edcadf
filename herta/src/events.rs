//! The one event sink of a call.
//!
//! Everything the runtime counts or reports about a call is an [`Event`],
//! and [`Events::emit`] is the only place that turns an event into its
//! effects: it bumps the event's counter in the operation's [`Counters`]
//! (what [`Runtime::stats`](crate::Runtime::stats) sums), emits its tracing
//! event (see [`crate::trace`] for names, levels and fields) and, with the
//! `metrics` feature, records its metric (see `crate::metrics`). A new
//! consumer of events is added here, once, beside these. How a call ended
//! is one event, [`Event::Ended`], in the vocabulary of [`crate::kinds`].
//! Three events are the runtime's own, not a call's: an operator changed a
//! budget's capacity or queue limit ([`capacity_changed`],
//! [`queue_limit_changed`]), and a breaker changed state
//! ([`breaker_moved`]); their effects are made here too.
//!
//! The cargo features are handled here and nowhere else: without `tracing`
//! the call's span ([`CallSpan`], [`SpanEnd`]) holds nothing and no tracing
//! event is emitted; without `metrics` no metric handle is held
//! ([`Recorders`]) and no clock is read for one ([`AttemptClock`]); without
//! either, a wait is not timed ([`timed`]). The `trace` and `metrics`
//! modules hold only the code that runs when their feature is on.
//!
//! `emit` is `#[inline(always)]` over an event built at the call site, so
//! each use compiles to its own arm: a relaxed atomic add, then the tracing
//! callsite (itself one relaxed load while no subscriber listens).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::contract::Contract;
use crate::kinds::{Ending, Queue};
#[cfg(feature = "metrics")]
use crate::metrics::OpMetrics;
use crate::outcome::Outcome;
use crate::stats::{Counters, Latency, OpCounters, Registry};
#[cfg(feature = "tracing")]
use crate::trace;

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

/// With the `tracing` feature, runs `$body` (a call of a `trace`
/// function); without it, expands to nothing.
macro_rules! traced {
    ($body:expr) => {
        #[cfg(feature = "tracing")]
        {
            $body;
        }
    };
}

/// Something that happened to a call.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// The call passed the admission gate.
    Admitted,
    /// The call's wait in this queue ended in a grant (reported only if it
    /// actually waited; not counted).
    Waited(Queue, WaitTime),
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
    /// The call ended so: counted in the ending's counter (for an admitted
    /// call, its count out of the admission gate), its metric and its
    /// tracing event.
    Ended(Ending<'a>),
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

impl Events<'_> {
    /// Counts `event` and reports it. The count comes first: the counter a
    /// call ends in is its count out of the admission gate (`gate.rs`), so
    /// a panic in a tracing subscriber or a metrics recorder must not
    /// leave a call counted in but never out (a drain would wait forever).
    #[inline(always)]
    #[cfg_attr(
        not(all(feature = "tracing", feature = "metrics")),
        allow(unused_variables)
    )]
    pub(crate) fn emit(self, event: Event<'_>) {
        let c = self.counters;
        let max_attempts = || self.contract.attempts_allowed();
        match event {
            Event::Admitted => Counters::bump(&c.admitted),
            Event::Waited(queue, time) =>
            {
                #[cfg(any(feature = "tracing", feature = "metrics"))]
                if let Some(elapsed) = time.elapsed() {
                    metric!(self, m => m.waited(queue, elapsed));
                    traced!(trace::waited(queue, elapsed));
                }
            }
            Event::Started => {
                Counters::bump(&c.started);
                metric!(self, m => m.attempt_started(false));
            }
            Event::Retrying { attempt } => {
                Counters::bump(&c.retried);
                metric!(self, m => m.attempt_started(true));
                traced!(trace::retrying(attempt, max_attempts()));
            }
            Event::AttemptFailed { outcome, attempt } => {
                traced!(trace::attempt_failed(outcome, attempt, max_attempts()));
            }
            Event::TimedOut { outcome, attempt } => {
                Counters::bump(&c.timed_out);
                metric!(self, m => m.timed_out());
                traced!(trace::timed_out(
                    self.contract,
                    outcome,
                    attempt,
                    max_attempts()
                ));
            }
            Event::AttemptEnded(clock) => {
                metric!(self, m => m.attempt_ended(clock.since.elapsed()));
            }
            Event::RetryDenied { attempt } => {
                Counters::bump(&c.retries_denied);
                metric!(self, m => m.retry_denied());
                traced!(trace::retry_denied(self.contract, attempt, max_attempts()));
            }
            Event::BackingOff { delay, attempt } => {
                metric!(self, m => m.backing_off(delay));
                traced!(trace::backing_off(delay, attempt));
            }
            Event::Ended(ending) => {
                Counters::bump(c.of(ending));
                metric!(self, m => m.ended(ending));
                match ending {
                    Ending::Succeeded | Ending::Failed(_) => {}
                    Ending::Throttled(busy) => {
                        traced!(trace::throttled(busy));
                    }
                    Ending::Stopping(at) => {
                        traced!(trace::stopping(at));
                    }
                    Ending::DeadlineExceeded { outcome, attempts } => {
                        traced!(trace::deadline_exceeded(self.contract, outcome, attempts));
                    }
                    Ending::WouldDeadlock(busy) => {
                        traced!(trace::would_deadlock(self.contract, busy));
                    }
                    Ending::Cancelled => {
                        traced!(trace::cancelled());
                    }
                    Ending::Panicked { attempt } => {
                        traced!(trace::panicked(self.contract, attempt, max_attempts()));
                    }
                }
            }
        }
    }

    /// [`emit`](Self::emit) of [`Event::Ended`], out of line (compiled
    /// once, not for every handler type): for a call that did not succeed.
    #[inline(never)]
    pub(crate) fn ended(self, ending: Ending<'_>) {
        self.emit(Event::Ended(ending));
    }
}

/// One binding's recorders: its counters (also in the runtime's registry,
/// which sums them by operation name) and, with the `metrics` feature, its
/// metric handles, taken at bind.
pub(crate) struct Recorders {
    counters: Arc<OpCounters>,
    #[cfg(feature = "metrics")]
    metrics: OpMetrics,
}

impl Recorders {
    /// The recorders of a new binding of `operation`, registered in
    /// `registry` (and with the current metrics recorder).
    pub(crate) fn register(registry: &Registry, operation: &'static str) -> Self {
        Recorders {
            counters: registry.counters(operation),
            #[cfg(feature = "metrics")]
            metrics: OpMetrics::register(operation),
        }
    }

    /// The counters' shard of the calling thread (a call takes it once, at
    /// admission).
    #[inline(always)]
    pub(crate) fn here(&self) -> &Counters {
        self.counters.here()
    }

    /// The operation's latency histogram (shared by every shard).
    #[inline(always)]
    pub(crate) fn latency(&self) -> &Latency {
        &self.counters.latency
    }

    /// The event sink of `contract`'s calls, counting in `counters` (a
    /// shard of these recorders' counters).
    #[inline(always)]
    pub(crate) fn events<'a>(
        &'a self,
        counters: &'a Counters,
        contract: &'static Contract,
    ) -> Events<'a> {
        Events {
            counters,
            contract,
            #[cfg(feature = "metrics")]
            metrics: &self.metrics,
        }
    }
}

/// `Runtime::set_capacity` moved `resource` from `previous` to `capacity`
/// units, `in_use` held: its tracing event (the capacity gauge is the
/// budget's own, moved by the arbiter).
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn capacity_changed(resource: &str, previous: u32, capacity: u32, in_use: u32) {
    traced!(trace::capacity_changed(
        resource, previous, capacity, in_use
    ));
}

/// `Runtime::set_queue_limit` moved `resource`'s queue limit from
/// `previous` to `limit`: its tracing event.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn queue_limit_changed(resource: &str, previous: Option<u32>, limit: Option<u32>) {
    traced!(trace::queue_limit_changed(resource, previous, limit));
}

/// `Runtime::set_rate` moved `resource`'s `(count, period, burst)` from
/// `previous` to `now`: its tracing event.
#[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
pub(crate) fn rate_changed(
    resource: &str,
    previous: (u32, std::time::Duration, u32),
    now: (u32, std::time::Duration, u32),
) {
    traced!(trace::rate_changed(resource, previous, now));
}

/// Breaker `breaker` moved from one state to another: its tracing event,
/// its state gauge and its transitions counter.
#[cfg_attr(
    not(any(feature = "tracing", feature = "metrics")),
    allow(unused_variables)
)]
pub(crate) fn breaker_moved(breaker: &'static str, moved: crate::breaker::report::Transition) {
    traced!(trace::breaker_moved(breaker, moved));
    #[cfg(feature = "metrics")]
    crate::metrics::breaker_moved(breaker, moved.to);
}

/// A call's `herta.operation` span (feature `tracing`; else nothing).
pub(crate) struct CallSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl CallSpan {
    /// Opens the span of a call of `contract`; describes the key only when
    /// the span is enabled.
    #[inline(always)]
    pub(crate) fn open<K>(
        contract: &Contract,
        key: Option<&K>,
        describe: Option<fn(&K) -> String>,
    ) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = (contract, key, describe);
        CallSpan {
            #[cfg(feature = "tracing")]
            span: trace::call_span(contract, key, describe),
        }
    }

    /// Whether the span is enabled: what the call's [`SpanEnd`] is made
    /// from, at admission.
    #[inline]
    pub(crate) fn enabled(&self) -> SpanEnabled {
        SpanEnabled {
            #[cfg(feature = "tracing")]
            on: !self.span.is_disabled(),
        }
    }

    /// Runs `fut` inside the span (entered on every poll, and on drop).
    #[cfg_attr(feature = "tracing", inline)]
    #[cfg_attr(not(feature = "tracing"), inline(always))]
    pub(crate) fn instrument<F: Future>(self, fut: F) -> impl Future<Output = F::Output> {
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(fut, self.span)
        }
        #[cfg(not(feature = "tracing"))]
        {
            fut
        }
    }
}

/// Whether a call's span is enabled (one byte to carry until admission).
#[derive(Clone, Copy)]
pub(crate) struct SpanEnabled {
    #[cfg(feature = "tracing")]
    on: bool,
}

/// What a call's span records when the call ends: when the call began,
/// only if its span is enabled (the clock is read only then); the attempts
/// are the admitted call's own count, given at the end. It holds no span
/// (no drop glue): the end is recorded on the current span, which is the
/// call's (the call's future runs inside it, polled and dropped).
pub(crate) struct SpanEnd {
    #[cfg(feature = "tracing")]
    since: Option<tokio::time::Instant>,
}

impl SpanEnd {
    /// The span end of a call beginning now, whose span is enabled if
    /// `enabled` says so.
    #[inline]
    pub(crate) fn new(enabled: SpanEnabled) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = enabled;
        SpanEnd {
            #[cfg(feature = "tracing")]
            since: if enabled.on {
                Some(tokio::time::Instant::now())
            } else {
                None
            },
        }
    }

    /// Records `attempts` (the attempts made), the ending's label as
    /// `outcome`, and `duration_ms` on the span.
    #[inline(always)]
    pub(crate) fn record(&self, ending: Ending<'_>, attempts: u32) {
        self.record_with(|| ending, attempts);
    }

    /// [`record`](Self::record), the ending worked out only if the span is
    /// enabled.
    #[inline(always)]
    pub(crate) fn record_with<'e>(&self, ending: impl FnOnce() -> Ending<'e>, attempts: u32) {
        #[cfg(feature = "tracing")]
        if let Some(since) = self.since {
            trace::record_end(ending().label().as_str(), attempts, since);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (ending, attempts);
    }
}

/// When an attempt began, for `herta_attempt_seconds` (tokio's clock,
/// paused in tests; read only with the `metrics` feature).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttemptClock {
    #[cfg(feature = "metrics")]
    since: tokio::time::Instant,
}

impl AttemptClock {
    /// An attempt beginning now.
    #[inline(always)]
    pub(crate) fn start() -> Self {
        AttemptClock {
            #[cfg(feature = "metrics")]
            since: tokio::time::Instant::now(),
        }
    }
}

/// How long a call waited for its key or budgets, if it had to wait (what
/// the tracing event and the metrics histogram report): when its wait
/// began, at its first `Pending` poll (kept only with `tracing` or
/// `metrics`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WaitTime {
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    since: Option<tokio::time::Instant>,
}

impl WaitTime {
    /// From the first `Pending` poll until now; `None` if it never waited.
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    #[inline]
    fn elapsed(self) -> Option<std::time::Duration> {
        self.since.map(|since| since.elapsed())
    }
}

pin_project_lite::pin_project! {
    /// [`timed`]'s future: `fut`, and when it first returned `Pending`.
    ///
    /// A future type, not an `async fn`: an `async fn` taking a future
    /// keeps it twice in its state (as its argument and as what it
    /// awaits), and a call's waits nest three such layers.
    pub(crate) struct TimedWait<F> {
        #[pin]
        fut: F,
        waited: WaitTime,
    }
}

impl<F: Future> Future for TimedWait<F> {
    type Output = (F::Output, WaitTime);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.fut.poll(cx) {
            Poll::Ready(output) => Poll::Ready((output, std::mem::take(this.waited))),
            Poll::Pending => {
                #[cfg(any(feature = "tracing", feature = "metrics"))]
                if this.waited.since.is_none() {
                    this.waited.since = Some(tokio::time::Instant::now());
                }
                Poll::Pending
            }
        }
    }
}

/// Awaits `fut`, noting when it began to wait if its first poll was
/// `Pending` (the clock is read only then, and only with `tracing` or
/// `metrics`). Cancel safe if `fut` is.
#[inline]
pub(crate) fn timed<F: Future>(fut: F) -> TimedWait<F> {
    TimedWait {
        fut,
        waited: WaitTime::default(),
    }
}
