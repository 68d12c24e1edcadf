//! [`Stats`]: what a runtime has done so far, and every budget's figures now;
//! [`OperationStats`], the same counters for one operation; and
//! [`Counters`], the atomic counters behind them (bumped only through the
//! event sink, [`crate::events`]).
//!
//! Every bound operation counts into its own [`OpCounters`] (one allocation,
//! shared by the clones of that binding, so calls of different operations
//! never bump one shared cache line), itself sharded by thread: a call
//! counts into one [`Counters`] shard of 128 bytes, its thread's, so two
//! threads calling one operation do not bump one shared line either. The
//! runtime keeps a [`Registry`] of them and sums them (every shard) when
//! [`Runtime::stats`](crate::Runtime::stats) reads.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::kinds::{Ending, StoppedAt};

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
    /// (`Error::Failed`, `Error::TimedOut`).
    pub failed: u64,
    /// Admitted calls that found their key or a budget busy
    /// (`Error::Throttled`): admission `Reject`, a `Wait` call whose
    /// `max_wait` ran out, or one that found a budget's queue full. They ran
    /// nothing, except a retry that could not take its budgets back after a
    /// backoff sleep (its attempts are counted in `started`; see
    /// `Error::Throttled`).
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

/// What the calls of one operation have done so far: the counters of
/// [`Stats`], with the same names and relations, for this operation alone.
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
    /// Admitted calls whose last attempt failed or ran past its timeout.
    pub failed: u64,
    /// Admitted calls that found their key or a budget busy
    /// (`Error::Throttled`); they ran nothing, except a retry that could not
    /// take its budgets back after a backoff sleep.
    pub throttled: u64,
    /// Admitted calls withdrawn by shutdown while waiting.
    pub stopped_waiting: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Admitted calls a panic ended (as [`Stats::panicked`]: the handler's,
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
                "\nbreaker {}: {}, failure rate {}% of {} calls in the window, opened {}, refused {}",
                b.name, b.state, b.failure_rate, b.calls, b.opened, b.refused
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

/// One circuit breaker's figures, read now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerStats {
    /// The breaker's name.
    pub name: &'static str,
    /// Its state as last changed (an open breaker whose open period is
    /// over turns half-open at the next call).
    pub state: crate::BreakerState,
    /// The failure rate of its window now, in percent (slow attempts
    /// included).
    pub failure_rate: u8,
    /// The attempts its window holds now.
    pub calls: u64,
    /// Times it opened (from closed or half-open).
    pub opened: u64,
    /// Calls and retries it refused.
    pub refused: u64,
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
    /// Units a call could be granted now: `capacity - in_use` for a
    /// concurrency budget, the units a rate budget's bucket holds now (at
    /// most its burst, `capacity`).
    pub available: u32,
    /// A rate budget's rate and the units it granted; `None` for a
    /// concurrency budget (whose units are held, so `in_use` and
    /// `peak_in_use` count them; a rate budget's are consumed, and those
    /// read 0).
    pub rate: Option<RateStats>,
}

/// A rate budget's figures ([`ResourceStats::rate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateStats {
    /// Units granted per `period`.
    pub count: u32,
    /// The period.
    pub period: std::time::Duration,
    /// Units granted since the runtime was built (every attempt's).
    pub granted: u64,
}

/// Shards of one operation's counters (a power of two).
const SHARDS: usize = 8;

/// One operation's counters, one [`Counters`] shard per thread (threads
/// beyond [`SHARDS`] share them round-robin): every call bumps two or
/// three counters, so two threads calling one operation at once would
/// otherwise pass one cache line back and forth on every call. A read sums
/// the shards.
#[derive(Default)]
pub(crate) struct OpCounters {
    shards: [Counters; SHARDS],
}

impl OpCounters {
    /// The shard of the calling thread (a call picks it once, at admission).
    #[inline]
    pub(crate) fn here(&self) -> &Counters {
        &self.shards[shard() % SHARDS]
    }

    /// The counters read now (every shard, relaxed), as an operation's
    /// figures.
    fn read(&self, name: &'static str) -> OperationStats {
        let mut op = Counters::default().read(name);
        for shard in &self.shards {
            op.add(&shard.read(name));
        }
        op
    }
}

/// The calling thread's shard number: given round-robin at its first call.
#[inline]
fn shard() -> usize {
    thread_local! {
        static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SHARD.with(|shard| match shard.get() {
        usize::MAX => {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
            shard.set(n);
            n
        }
        n => n,
    })
}

/// One shard of an operation's event counters: one relaxed atomic per
/// [`Stats`] counter, on cache lines of their own.
#[derive(Default)]
#[repr(align(128))]
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
    pub(crate) would_deadlock: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`. `SeqCst`: `admitted` and the counters a call
    /// ends in are also the admission gate's count of calls in flight
    /// (`gate.rs` explains the protocol); on x86-64 any ordering of this
    /// add is the same one locked instruction.
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes back the `admitted` add of a call the closed gate refused.
    #[cold]
    pub(crate) fn take_back_admission(&self) {
        self.admitted.fetch_sub(1, Ordering::SeqCst);
    }

    /// The counter a call that ended so is counted in.
    #[inline(always)]
    pub(crate) fn of(&self, ending: Ending<'_>) -> &AtomicU64 {
        match ending {
            Ending::Succeeded => &self.succeeded,
            Ending::Failed(_) => &self.failed,
            Ending::Throttled(_) => &self.throttled,
            Ending::Stopping(StoppedAt::Admission) => &self.refused_stopping,
            Ending::Stopping(StoppedAt::Key | StoppedAt::Budgets) => &self.stopped_waiting,
            Ending::DeadlineExceeded { .. } => &self.deadline_exceeded,
            Ending::WouldDeadlock(_) => &self.would_deadlock,
            Ending::Cancelled => &self.cancelled,
            Ending::Panicked { .. } => &self.panicked,
        }
    }

    /// The counters an admitted call ends in, one per way it can end (a
    /// call refused at the closed gate was never admitted: its
    /// `refused_stopping` is not among them).
    fn endings(&self) -> [&AtomicU64; 8] {
        [
            &self.succeeded,
            &self.failed,
            &self.throttled,
            &self.stopped_waiting,
            &self.cancelled,
            &self.panicked,
            &self.deadline_exceeded,
            &self.would_deadlock,
        ]
    }

    /// The counters an admitted call ends in, summed (`SeqCst` loads).
    fn ended(&self) -> u64 {
        self.endings()
            .map(|c| c.load(Ordering::SeqCst))
            .iter()
            .sum()
    }

    /// The counters read now, one by one, as an operation's figures. The
    /// counters a call ends in are read before `admitted` (`SeqCst`, as they
    /// are bumped), so every ending read has its admission read too:
    /// `finished <= admitted` in every snapshot.
    fn read(&self, name: &'static str) -> OperationStats {
        let load = |a: &AtomicU64| a.load(Ordering::SeqCst);
        let endings = self.endings().map(load);
        let admitted = load(&self.admitted);
        let [succeeded, failed, throttled, stopped_waiting, cancelled, panicked, deadline_exceeded, would_deadlock] =
            endings;
        OperationStats {
            name,
            refused_stopping: load(&self.refused_stopping),
            started: load(&self.started),
            retried: load(&self.retried),
            timed_out: load(&self.timed_out),
            retries_denied: load(&self.retries_denied),
            succeeded,
            failed,
            throttled,
            stopped_waiting,
            cancelled,
            panicked,
            deadline_exceeded,
            would_deadlock,
            finished: endings.iter().sum(),
            admitted,
        }
    }
}

impl OperationStats {
    /// Adds `other`'s counters to these.
    fn add(&mut self, other: &OperationStats) {
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

/// Every binding's [`Counters`], by operation name: what
/// [`Runtime::stats`](crate::Runtime::stats) sums.
#[derive(Default)]
pub(crate) struct Registry {
    bound: Mutex<Vec<(&'static str, Arc<OpCounters>)>>,
}

impl Registry {
    /// The counters of a new binding of `operation`: a set left by a
    /// dropped binding of the same name if there is one (its counts go on
    /// adding up under that name), else a new one. So binding per request
    /// does not grow the registry beyond the bindings alive at once.
    pub(crate) fn counters(&self, operation: &'static str) -> Arc<OpCounters> {
        let mut bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        // Only the registry holds a set whose bindings are all dropped, and
        // only the registry (under this lock) hands it out again.
        if let Some((_, free)) = bound
            .iter()
            .find(|(name, c)| *name == operation && Arc::strong_count(c) == 1)
        {
            return Arc::clone(free);
        }
        let counters = Arc::new(OpCounters::default());
        bound.push((operation, Arc::clone(&counters)));
        counters
    }

    /// Calls admitted and not yet ended, over every operation: the
    /// admission gate's count (`gate.rs`). Every shard's ending counters are
    /// summed before any `admitted`, so an ending is never counted without
    /// its admission, and zero means no admitted call is in flight.
    pub(crate) fn in_flight(&self) -> u64 {
        let bound = self.bound.lock().unwrap_or_else(PoisonError::into_inner);
        let shards = || bound.iter().flat_map(|(_, c)| c.shards.iter());
        let ended: u64 = shards().map(Counters::ended).sum();
        let admitted: u64 = shards().map(|c| c.admitted.load(Ordering::SeqCst)).sum();
        debug_assert!(admitted >= ended, "a call counted out twice");
        admitted.saturating_sub(ended)
    }

    /// The counters read now, summed per operation name and over all, with
    /// the figures read elsewhere: keys, and every budget. Calls in flight
    /// are the snapshot's `admitted - finished`.
    pub(crate) fn stats(&self, keys: usize, resources: Vec<ResourceStats>) -> Stats {
        let mut operations: Vec<OperationStats> = Vec::new();
        for (name, counters) in self
            .bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let read = counters.read(name);
            match operations.iter_mut().find(|o| o.name == *name) {
                Some(op) => op.add(&read),
                None => operations.push(read),
            }
        }
        operations.sort_by_key(|o| o.name);
        let mut all = Counters::default().read("");
        for op in &operations {
            all.add(op);
        }
        Stats {
            admitted: all.admitted,
            refused_stopping: all.refused_stopping,
            succeeded: all.succeeded,
            failed: all.failed,
            throttled: all.throttled,
            stopped_waiting: all.stopped_waiting,
            cancelled: all.cancelled,
            panicked: all.panicked,
            finished: all.finished,
            started: all.started,
            retried: all.retried,
            timed_out: all.timed_out,
            in_flight: all.admitted - all.finished,
            keys,
            resources,
            retries_denied: all.retries_denied,
            deadline_exceeded: all.deadline_exceeded,
            would_deadlock: all.would_deadlock,
            breakers: Vec::new(),
            operations,
        }
    }
}
