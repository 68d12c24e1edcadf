//! [`Stats`]: what a runtime has done so far, and every budget's figures now.

use std::fmt;

use super::breaker::BreakerStats;
use super::budget::ResourceStats;
use super::operation::OperationStats;

/// What the runtime has done so far, and every budget's figures now.
///
/// Each counter names one thing. A call is either refused at the admission
/// gate (`refused_stopping`) or admitted; an admitted call ends in exactly
/// one way, counted in exactly one of `succeeded`, `failed`, `throttled`,
/// `stopped_waiting`, `cancelled`, `panicked`, `deadline_exceeded` and
/// `would_deadlock`. The
/// figures relate exactly:
///
/// | relation | when |
/// |---|---|
/// | `finished = succeeded + failed + throttled + stopped_waiting + cancelled + panicked + deadline_exceeded + would_deadlock` | always (`finished` is that sum) |
/// | `admitted = finished + in_flight` | always (`in_flight` is that difference, read in the same snapshot: endings are read before admissions); a call being refused at the closed gate may count in `admitted` and `in_flight` for an instant |
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
    /// (`Error::Failed`, `Error::TimedOut`), except one whose handler error
    /// is classified `Throttled` (counted in `throttled`).
    pub failed: u64,
    /// Admitted calls that found their key or a budget busy
    /// (`Error::Throttled`): admission `Reject`, a `Wait` call whose
    /// `max_wait` ran out, or one that found a budget's queue full. They ran
    /// nothing, except a retry that could not take its budgets back after a
    /// backoff sleep (its attempts are counted in `started`; see
    /// `Error::Throttled`). Also calls whose last attempt's handler error is
    /// classified `Throttled` (`Error::Failed` with that outcome: the
    /// dependency pushed back), as the `throttled` metrics label counts them.
    pub throttled: u64,
    /// Admitted calls withdrawn by shutdown while waiting for their key or
    /// budgets (`Error::Stopping`); they ran nothing.
    pub stopped_waiting: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Admitted calls a panic ended (the panic propagated): their
    /// handler's, one in code herta ran for them (the error type's
    /// `Classify`, a key's `Hash`/`Eq`), or their caller's while it
    /// awaited them.
    pub panicked: u64,
    /// Admitted calls that ended, however they ended: the sum of the six
    /// counters above it, `deadline_exceeded` and `would_deadlock`.
    pub finished: u64,
    /// Calls that got their key and budgets and began their first attempt.
    pub started: u64,
    /// Attempts beyond the first.
    pub retried: u64,
    /// Attempts that ran past the contract's timeout.
    pub timed_out: u64,
    /// Admitted calls not yet finished: `admitted - finished` of this
    /// snapshot.
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
    /// Admitted calls made inside a handler that queued for what their own
    /// calling chain holds (`Error::WouldDeadlock`); they ran nothing.
    pub would_deadlock: u64,
    /// Every circuit breaker of the runtime, in declaration order.
    pub breakers: Vec<BreakerStats>,
    /// The same counters for each operation bound to the runtime, by
    /// operation name (the contract's `name`, else the function's name),
    /// sorted by name. Two bindings of one name are one entry (their sum);
    /// each runtime-wide counter above is the sum of its operations'.
    pub operations: Vec<OperationStats>,
}

/// Three lines of counters (calls, how admitted calls ended, attempts: all
/// of them, then the first attempts of calls (`started`) and the retries),
/// then one line per budget (a rate budget's says the units its bucket
/// holds now of its burst, its rate, and the units granted), then one line per operation (see
/// [`OperationStats`]'s `Display`), indented under `operations:`:
///
/// ```text
/// calls: admitted 9, refused (stopping) 0, in flight 0, keys 0
/// ended: succeeded 6, failed 1, throttled 1, stopped waiting 0, cancelled 0, panicked 0, deadline exceeded 0, would deadlock 0
/// attempts: 10 (first 8, retried 2), timed out 0, retries denied 0
/// worker: 0 of 4 in use, 0 waiting, peak 4
/// api: 97 of 100 available (100 per 1s), 0 waiting, granted 3
/// operations:
///   charge: admitted 2, finished 2, succeeded 1, throttled 1, started 1
///   render: admitted 7, finished 7, succeeded 5, failed 1, started 7, retried 2
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
             deadline exceeded {}, would deadlock {}",
            self.succeeded,
            self.failed,
            self.throttled,
            self.stopped_waiting,
            self.cancelled,
            self.panicked,
            self.deadline_exceeded,
            self.would_deadlock
        )?;
        write!(
            f,
            "attempts: {} (first {}, retried {}), timed out {}, retries denied {}",
            self.started + self.retried,
            self.started,
            self.retried,
            self.timed_out,
            self.retries_denied
        )?;
        for r in &self.resources {
            match &r.rate {
                None => write!(
                    f,
                    "\n{}: {} of {} in use, {} waiting, peak {}",
                    r.name, r.in_use, r.capacity, r.waiting, r.peak_in_use
                )?,
                Some(rate) => write!(
                    f,
                    "\n{}: {} of {} available ({} per {:?}), {} waiting, granted {}",
                    r.name,
                    r.available,
                    r.capacity,
                    rate.count,
                    rate.period,
                    r.waiting,
                    rate.granted
                )?,
            }
            if let Some(limit) = r.queue_limit {
                write!(f, ", queue limit {limit}")?;
            }
        }
        for b in &self.breakers {
            write!(
                f,
                "\nbreaker {}: {}, failure rate {}% of {} calls in the window ({}), opened {}, refused {}",
                b.name, b.state, b.failure_rate, b.calls, b.window, b.opened, b.refused
            )?;
        }
        if !self.operations.is_empty() {
            write!(f, "\noperations:")?;
        }
        for op in &self.operations {
            write!(f, "\n  {op}")?;
        }
        Ok(())
    }
}

impl Stats {
    /// The figures of the breaker named `name`.
    pub fn breaker(&self, name: &str) -> Option<&BreakerStats> {
        self.breakers.iter().find(|b| b.name == name)
    }

    /// The figures of the resource named `name`.
    pub fn resource(&self, name: &str) -> Option<&ResourceStats> {
        self.resources.iter().find(|r| r.name == name)
    }

    /// The figures of the operation named `name` (`None` if no operation
    /// of that name was ever bound to the runtime).
    pub fn operation(&self, name: &str) -> Option<&OperationStats> {
        self.operations.iter().find(|o| o.name == name)
    }
}
