//! [`Stats`]: what a runtime has done so far, and every budget's figures now;
//! and [`Counters`], the atomic counters behind it (bumped only through the
//! event sink, [`crate::events`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the runtime has done so far, and every budget's figures now.
///
/// Each counter names one thing. A call is either refused at the admission
/// gate (`refused_stopping`) or admitted; an admitted call ends in exactly
/// one way, counted in exactly one of `succeeded`, `failed`, `throttled`,
/// `stopped_waiting`, `cancelled`, `panicked` and `deadline_exceeded`. The
/// figures relate exactly:
///
/// | relation | when |
/// |---|---|
/// | `finished = succeeded + failed + throttled + stopped_waiting + cancelled + panicked + deadline_exceeded` | always (`finished` is that sum) |
/// | `admitted = finished + in_flight` | once no call is between two steps (e.g. after every call returned) |
/// | `started <= admitted`, and `started` = calls that ran at least one attempt | always |
/// | attempts run = `started + retried`; `timed_out <= started + retried` | always |
///
/// `throttled` and the admission mode are different things: a `Reject`
/// call that finds its key or a budget busy is admitted, runs nothing and
/// ends `throttled`; `refused_stopping` counts only calls the runtime
/// refused because it is stopping.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls that passed the admission gate (the runtime was not stopping).
    pub admitted: u64,
    /// Calls refused at the admission gate because the runtime is stopping
    /// (`Error::Stopping`, never admitted).
    pub refused_stopping: u64,
    /// Admitted calls that returned the handler's value.
    pub succeeded: u64,
    /// Admitted calls whose last attempt failed or ran past its timeout
    /// (`Error::Failed`, `Error::TimedOut`).
    pub failed: u64,
    /// Admitted calls that found their key or a budget busy and ran nothing
    /// (`Error::Throttled`): admission `Reject`, a `Wait` call whose
    /// `max_wait` ran out, or one that found a budget's queue full.
    pub throttled: u64,
    /// Admitted calls withdrawn by shutdown while waiting for their key or
    /// budgets (`Error::Stopping`); they ran nothing.
    pub stopped_waiting: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Admitted calls whose handler panicked (the panic propagated).
    pub panicked: u64,
    /// Admitted calls that ended, however they ended: the sum of the six
    /// counters above it and `deadline_exceeded`.
    pub finished: u64,
    /// Calls that got their key and budgets and began their first attempt.
    pub started: u64,
    /// Attempts beyond the first.
    pub retried: u64,
    /// Attempts that ran past the contract's timeout.
    pub timed_out: u64,
    /// Admitted calls not yet finished, now.
    pub in_flight: u64,
    /// Keys held or waited for across all key spaces, now (0 when idle).
    pub keys: usize,
    /// Every budget, in declaration order.
    pub resources: Vec<ResourceStats>,
    /// Calls whose next retry the runtime's
    /// [`RetryBudget`](crate::RetryBudget) refused: they returned their last
    /// error at once.
    pub retries_denied: u64,
    /// Admitted calls that ended with `Error::DeadlineExceeded`: their
    /// deadline (contract `deadline` or a `herta::deadline` scope) passed
    /// while they waited or ran.
    pub deadline_exceeded: u64,
}

/// Three lines of counters (calls, how admitted calls ended, attempts),
/// then one line per budget:
///
/// ```text
/// calls: admitted 9, refused (stopping) 0, in flight 0, keys 0
/// ended: succeeded 6, failed 1, throttled 1, stopped waiting 0, cancelled 0, panicked 0, deadline exceeded 0
/// attempts: started 8, retried 2, timed out 0, retries denied 0
/// worker: 0 of 4 in use, 0 waiting, peak 4
/// ```
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "calls: admitted {}, refused (stopping) {}, in flight {}, keys {}",
            self.admitted, self.refused_stopping, self.in_flight, self.keys
        )?;
        writeln!(
            f,
            "ended: succeeded {}, failed {}, throttled {}, stopped waiting {}, cancelled {}, panicked {}, \
             deadline exceeded {}",
            self.succeeded,
            self.failed,
            self.throttled,
            self.stopped_waiting,
            self.cancelled,
            self.panicked,
            self.deadline_exceeded
        )?;
        write!(
            f,
            "attempts: started {}, retried {}, timed out {}, retries denied {}",
            self.started, self.retried, self.timed_out, self.retries_denied
        )?;
        for r in &self.resources {
            write!(
                f,
                "\n{}: {} of {} in use, {} waiting, peak {}",
                r.name, r.in_use, r.capacity, r.waiting, r.peak_in_use
            )?;
            if let Some(limit) = r.queue_limit {
                write!(f, ", queue limit {limit}")?;
            }
        }
        Ok(())
    }
}

impl Stats {
    /// The figures of the resource named `name`.
    pub fn resource(&self, name: &str) -> Option<&ResourceStats> {
        self.resources.iter().find(|r| r.name == name)
    }
}

/// One budget's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceStats {
    /// The resource's name.
    pub name: &'static str,
    /// Units in all.
    pub capacity: u32,
    /// Units held by running calls now.
    pub in_use: u32,
    /// Calls queued for this budget now.
    pub waiting: u32,
    /// The most units ever held at once.
    pub peak_in_use: u32,
    /// The most calls that may queue for it (`Resource::with_queue_limit`,
    /// `resources!`'s `queue = n`); `None`: unbounded. `waiting` never
    /// exceeds it.
    pub queue_limit: Option<u32>,
}

/// The runtime's event counters: one relaxed atomic per [`Stats`] counter.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) admitted: AtomicU64,
    pub(crate) refused_stopping: AtomicU64,
    pub(crate) succeeded: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) throttled: AtomicU64,
    pub(crate) stopped_waiting: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) retries_denied: AtomicU64,
    pub(crate) deadline_exceeded: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`.
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters read now, one by one (relaxed), with the figures read
    /// elsewhere: calls in flight, keys, and every budget.
    pub(crate) fn stats(
        &self,
        in_flight: u64,
        keys: usize,
        resources: Vec<ResourceStats>,
    ) -> Stats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (succeeded, failed, throttled) = (
            load(&self.succeeded),
            load(&self.failed),
            load(&self.throttled),
        );
        let (stopped_waiting, cancelled, panicked) = (
            load(&self.stopped_waiting),
            load(&self.cancelled),
            load(&self.panicked),
        );
        let deadline_exceeded = load(&self.deadline_exceeded);
        Stats {
            admitted: load(&self.admitted),
            refused_stopping: load(&self.refused_stopping),
            succeeded,
            failed,
            throttled,
            stopped_waiting,
            cancelled,
            panicked,
            finished: succeeded
                + failed
                + throttled
                + stopped_waiting
                + cancelled
                + panicked
                + deadline_exceeded,
            started: load(&self.started),
            retried: load(&self.retried),
            timed_out: load(&self.timed_out),
            in_flight,
            keys,
            resources,
            retries_denied: load(&self.retries_denied),
            deadline_exceeded,
        }
    }
}
