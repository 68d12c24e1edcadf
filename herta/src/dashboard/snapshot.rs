//! The JSON snapshot of `GET /stats.json`: [`Snapshot`], built from
//! [`Stats`] with stable, documented field names (`herta/docs/dashboard.md`).
//! It carries names and figures only: never a key's value, never a
//! handler's error text.

use serde::Serialize;

use crate::stats::{BreakerStats, OperationStats, ResourceStats, Stats};
use crate::BreakerState;

/// The schema version of the snapshot: raised only if a field changes
/// meaning or goes away (new fields may appear without it).
const VERSION: u32 = 1;

/// What `GET /stats.json` returns.
#[derive(Serialize)]
pub(super) struct Snapshot {
    version: u32,
    calls: Calls,
    operations: Vec<Operation>,
    resources: Vec<Budget>,
    breakers: Vec<Breaker>,
    retry_budget: RetryBudget,
}

/// The runtime-wide call counters.
#[derive(Serialize)]
struct Calls {
    admitted: u64,
    in_flight: u64,
    finished: u64,
    succeeded: u64,
    failed: u64,
    throttled: u64,
    deadline_exceeded: u64,
    keys: usize,
}

/// One operation's counters and latency quantiles.
#[derive(Serialize)]
struct Operation {
    name: &'static str,
    admitted: u64,
    finished: u64,
    succeeded: u64,
    failed: u64,
    throttled: u64,
    deadline_exceeded: u64,
    cancelled: u64,
    stopped_waiting: u64,
    panicked: u64,
    would_deadlock: u64,
    refused_stopping: u64,
    started: u64,
    retried: u64,
    timed_out: u64,
    retries_denied: u64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    timed: u64,
}

/// One budget's figures.
#[derive(Serialize)]
struct Budget {
    name: &'static str,
    kind: &'static str,
    capacity: u32,
    in_use: u32,
    waiting: u32,
    peak_in_use: u32,
    available: u32,
    queue_limit: Option<u32>,
    rate: Option<Rate>,
    /// An adaptive budget's bounds; `null` for a fixed one (every budget
    /// today).
    adaptive: Option<Bounds>,
}

/// A rate budget's rate.
#[derive(Serialize)]
struct Rate {
    count: u32,
    period_ms: f64,
    granted: u64,
}

/// An adaptive budget's limit and bounds.
#[derive(Serialize)]
struct Bounds {
    limit: u32,
    min: u32,
    max: u32,
}

/// One breaker's figures.
#[derive(Serialize)]
struct Breaker {
    name: &'static str,
    state: &'static str,
    failure_rate_pct: u8,
    calls: u64,
    opened: u64,
    refused: u64,
    open_left_ms: f64,
}

/// The runtime's retry budget.
#[derive(Serialize)]
struct RetryBudget {
    configured: bool,
    denied: u64,
}

/// A duration in milliseconds, fractional.
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Snapshot {
    /// The snapshot of `stats`; `retry_budget`: whether the runtime has one.
    pub(super) fn of(stats: &Stats, retry_budget: bool) -> Self {
        Snapshot {
            version: VERSION,
            calls: Calls {
                admitted: stats.admitted,
                in_flight: stats.in_flight,
                finished: stats.finished,
                succeeded: stats.succeeded,
                failed: stats.failed,
                throttled: stats.throttled,
                deadline_exceeded: stats.deadline_exceeded,
                keys: stats.keys,
            },
            operations: stats.operations.iter().map(operation).collect(),
            resources: stats.resources.iter().map(budget).collect(),
            breakers: stats.breakers.iter().map(breaker).collect(),
            retry_budget: RetryBudget {
                configured: retry_budget,
                denied: stats.retries_denied,
            },
        }
    }
}

fn operation(o: &OperationStats) -> Operation {
    Operation {
        name: o.name,
        admitted: o.admitted,
        finished: o.finished,
        succeeded: o.succeeded,
        failed: o.failed,
        throttled: o.throttled,
        deadline_exceeded: o.deadline_exceeded,
        cancelled: o.cancelled,
        stopped_waiting: o.stopped_waiting,
        panicked: o.panicked,
        would_deadlock: o.would_deadlock,
        refused_stopping: o.refused_stopping,
        started: o.started,
        retried: o.retried,
        timed_out: o.timed_out,
        retries_denied: o.retries_denied,
        p50_ms: o.p50.map(ms),
        p99_ms: o.p99.map(ms),
        timed: o.timed,
    }
}

fn budget(r: &ResourceStats) -> Budget {
    Budget {
        name: r.name,
        kind: if r.rate.is_some() {
            "rate"
        } else {
            "concurrency"
        },
        capacity: r.capacity,
        in_use: r.in_use,
        waiting: r.waiting,
        peak_in_use: r.peak_in_use,
        available: r.available,
        queue_limit: r.queue_limit,
        rate: r.rate.map(|rate| Rate {
            count: rate.count,
            period_ms: ms(rate.period),
            granted: rate.granted,
        }),
        adaptive: None,
    }
}

fn breaker(b: &BreakerStats) -> Breaker {
    Breaker {
        name: b.name,
        state: match b.state {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        },
        failure_rate_pct: b.failure_rate,
        calls: b.calls,
        opened: b.opened,
        refused: b.refused,
        open_left_ms: ms(b.open_left),
    }
}
