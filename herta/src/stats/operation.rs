//! [`OperationStats`]: one operation's counters.

use std::fmt;
use std::time::Duration;

/// What the calls of one operation have done so far: the counters of
/// [`Stats`](super::Stats), with the same names and relations, for this operation alone.
///
/// `admitted - finished` is its calls in flight once no call is between
/// two steps.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OperationStats {
    /// The operation's name (the contract's `name`, else the function's).
    pub name: &'static str,
    /// Calls that passed the admission gate.
    pub admitted: u64,
    /// Calls refused at the gate because the runtime is stopping.
    pub refused_stopping: u64,
    /// Admitted calls that returned the handler's value.
    pub succeeded: u64,
    /// Admitted calls whose last attempt failed or ran past its timeout,
    /// except one whose handler error is classified `Throttled`.
    pub failed: u64,
    /// Admitted calls that found their key or a budget busy
    /// (`Error::Throttled`); they ran nothing, except a retry that could not
    /// take its budgets back after a backoff sleep; and calls whose last
    /// attempt's handler error is classified `Throttled`.
    pub throttled: u64,
    /// Admitted calls withdrawn by shutdown while waiting.
    pub stopped_waiting: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Admitted calls a panic ended (as [`Stats::panicked`](super::Stats::panicked): the handler's,
    /// one in code herta ran for the call, or the caller's while it awaited).
    pub panicked: u64,
    /// Admitted calls that ended with `Error::DeadlineExceeded`.
    pub deadline_exceeded: u64,
    /// Admitted calls refused with `Error::WouldDeadlock` (made inside a
    /// handler, they queued for what their own calling chain holds).
    pub would_deadlock: u64,
    /// Admitted calls that ended, however they ended: the sum of the eight
    /// counters above it, from `succeeded` on.
    pub finished: u64,
    /// Calls that began their first attempt.
    pub started: u64,
    /// Attempts beyond the first.
    pub retried: u64,
    /// Attempts that ran past the contract's timeout.
    pub timed_out: u64,
    /// Calls whose next retry the runtime's retry budget refused.
    pub retries_denied: u64,
    /// The median latency of the timed calls that finished in the last
    /// minute (50 to 60 seconds; from admission to the result, every
    /// attempt and wait included), within 1/16 of the true value; `None`
    /// if none did. Calls dropped unfinished are not timed. Every call is
    /// timed while the operation runs fewer than about a thousand calls a
    /// second per thread, about one a millisecond per thread beyond that
    /// (chosen by order of admission, never by latency).
    pub p50: Option<Duration>,
    /// The 99th percentile latency of the same calls as `p50`.
    pub p99: Option<Duration>,
    /// The timed calls that `p50` and `p99` are of.
    pub timed: u64,
}

/// One line: `name: admitted A, finished F`, then every other counter that
/// is not zero, in the order of the fields:
///
/// ```text
/// render: admitted 9, finished 9, succeeded 6, failed 1, throttled 2, started 7, retried 2
/// ```
impl fmt::Display for OperationStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: admitted {}, finished {}",
            self.name, self.admitted, self.finished
        )?;
        let others = [
            ("refused (stopping)", self.refused_stopping),
            ("succeeded", self.succeeded),
            ("failed", self.failed),
            ("throttled", self.throttled),
            ("stopped waiting", self.stopped_waiting),
            ("cancelled", self.cancelled),
            ("panicked", self.panicked),
            ("deadline exceeded", self.deadline_exceeded),
            ("would deadlock", self.would_deadlock),
            ("started", self.started),
            ("retried", self.retried),
            ("timed out", self.timed_out),
            ("retries denied", self.retries_denied),
        ];
        for (what, n) in others.into_iter().filter(|(_, n)| *n != 0) {
            write!(f, ", {what} {n}")?;
        }
        Ok(())
    }
}

impl OperationStats {
    /// Adds `other`'s counters to these.
    pub(super) fn add(&mut self, other: &OperationStats) {
        self.admitted += other.admitted;
        self.refused_stopping += other.refused_stopping;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.throttled += other.throttled;
        self.stopped_waiting += other.stopped_waiting;
        self.cancelled += other.cancelled;
        self.panicked += other.panicked;
        self.deadline_exceeded += other.deadline_exceeded;
        self.would_deadlock += other.would_deadlock;
        self.finished += other.finished;
        self.started += other.started;
        self.retried += other.retried;
        self.timed_out += other.timed_out;
        self.retries_denied += other.retries_denied;
    }
}
