//! [`Stats`]: what a runtime has done so far, and every budget's figures now;
//! and [`Counters`], the atomic counters behind it (bumped only through the
//! event sink, [`crate::events`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the runtime has done so far, and every budget's figures now.
///
/// Every call ends in exactly one way, so after quiescence
/// `admitted == finished` and `started <= admitted`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls that passed the admission gate (the runtime was not stopping).
    pub admitted: u64,
    /// Calls that ended with `Error::Stopping`: refused at the gate, or
    /// withdrawn by shutdown while waiting for a key or a budget.
    pub rejected: u64,
    /// Calls that ended with `Error::Throttled` (admission `Reject`).
    pub throttled: u64,
    /// Calls that got their key and budgets and began their first attempt.
    pub started: u64,
    /// Admitted calls that ended, however they ended.
    pub finished: u64,
    /// Attempts beyond the first.
    pub retried: u64,
    /// Attempts that ran past the contract's timeout.
    pub timed_out: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Attempts whose handler panicked.
    pub panicked: u64,
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
}

/// One line of counters (with `, retries denied N` at its end once a
/// [`RetryBudget`](crate::RetryBudget) has refused a retry), then one line
/// per budget:
///
/// ```text
/// admitted 9, started 8, finished 9, retried 2, throttled 1, rejected 0, timed out 0, cancelled 0, panicked 0, in flight 0, keys 0
/// worker: 0 of 4 in use, 0 waiting, peak 4
/// ```
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "admitted {}, started {}, finished {}, retried {}, throttled {}, rejected {}, \
             timed out {}, cancelled {}, panicked {}, in flight {}, keys {}",
            self.admitted,
            self.started,
            self.finished,
            self.retried,
            self.throttled,
            self.rejected,
            self.timed_out,
            self.cancelled,
            self.panicked,
            self.in_flight,
            self.keys
        )?;
        // Only with a retry budget that refused something, so that the
        // line is unchanged for runtimes without one.
        if self.retries_denied > 0 {
            write!(f, ", retries denied {}", self.retries_denied)?;
        }
        for r in &self.resources {
            write!(
                f,
                "\n{}: {} of {} in use, {} waiting, peak {}",
                r.name, r.in_use, r.capacity, r.waiting, r.peak_in_use
            )?;
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
}

/// The runtime's event counters: one relaxed atomic per [`Stats`] counter.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) admitted: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) throttled: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) finished: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) retries_denied: AtomicU64,
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
        Stats {
            admitted: load(&self.admitted),
            rejected: load(&self.rejected),
            throttled: load(&self.throttled),
            started: load(&self.started),
            finished: load(&self.finished),
            retried: load(&self.retried),
            timed_out: load(&self.timed_out),
            cancelled: load(&self.cancelled),
            panicked: load(&self.panicked),
            in_flight,
            keys,
            resources,
            retries_denied: load(&self.retries_denied),
        }
    }
}
