//! The atomic counters behind [`Stats`](super::Stats): one operation's
//! sharded [`OpCounters`], and the runtime's [`Registry`] of them.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::budget::ResourceStats;
use super::latency::{self, Latency, Sampling, BUCKETS};
use super::operation::OperationStats;
use super::runtime::Stats;
use crate::kinds::{Ending, Label, StoppedAt};

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
    /// The operation's call latencies over the last minute.
    pub(crate) latency: Latency,
}

impl OpCounters {
    /// The shard of the calling thread (a call picks it once, at admission).
    #[inline]
    pub(crate) fn here(&self) -> &Counters {
        &self.shards[shard() % SHARDS]
    }

    /// The counters read now (every shard, relaxed), as an operation's
    /// figures; adds the latency window's counts to `latencies`.
    fn read(&self, name: &'static str, latencies: &mut [u64; BUCKETS]) -> OperationStats {
        let mut op = Counters::default().read(name);
        for shard in &self.shards {
            op.add(&shard.read(name));
        }
        self.latency.read(latencies);
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
/// [`Stats`](super::Stats) counter, on cache lines of their own.
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
    /// Which of this shard's calls are timed (the latency quantiles).
    pub(crate) sampling: Sampling,
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
        // The metrics' outcome label picks the counter (one mapping for
        // both, so a handler's own `Throttled` is throttled in each); only
        // `Stopping` splits by where the call stopped.
        match ending.label() {
            Label::Success => &self.succeeded,
            Label::Transient | Label::Uncertain | Label::Permanent => &self.failed,
            Label::Throttled => &self.throttled,
            Label::Stopping => match ending {
                Ending::Stopping(StoppedAt::Admission) => &self.refused_stopping,
                _ => &self.stopped_waiting,
            },
            Label::Deadline => &self.deadline_exceeded,
            Label::WouldDeadlock => &self.would_deadlock,
            Label::Cancelled => &self.cancelled,
            Label::Panicked => &self.panicked,
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
            p50: None,
            p99: None,
            timed: 0,
        }
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
        let mut read: Vec<(OperationStats, Box<[u64; BUCKETS]>)> = Vec::new();
        for (name, counters) in self
            .bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let at = match read.iter().position(|(o, _)| o.name == *name) {
                Some(at) => at,
                None => {
                    read.push((Counters::default().read(name), Box::new([0; BUCKETS])));
                    read.len() - 1
                }
            };
            let (op, latencies) = &mut read[at];
            op.add(&counters.read(name, latencies));
        }
        let mut operations: Vec<OperationStats> = read
            .into_iter()
            .map(|(mut op, latencies)| {
                op.p50 = latency::quantile(&latencies, 0.5);
                op.p99 = latency::quantile(&latencies, 0.99);
                op.timed = latencies.iter().sum();
                op
            })
            .collect();
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
