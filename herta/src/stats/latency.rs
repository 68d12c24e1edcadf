//! Rolling latency quantiles of one operation: a fixed-size, lock-free,
//! log-linear histogram of call latencies per time slot ([`Latency`]), and
//! the choice of which calls are timed ([`Sampling`]).
//!
//! **Buckets.** A latency is counted in nanoseconds in one of [`BUCKETS`]
//! buckets: below 8 ns one bucket per nanosecond, then eight buckets per
//! power of two, so a bucket is at most 1/8 of its lower bound wide and
//! its midpoint is within 1/16 of any latency in it. Latencies beyond
//! 2^40 ns (about 18 minutes) count in the last bucket.
//!
//! **Window.** Six slots of ten seconds, a ring indexed by the slot number
//! (the clock's seconds divided by ten); a slot is emptied by the first call
//! that records into it after its time came round again. A read sums the
//! slots of the current period and the five before it: the calls that
//! ended in the last 50 to 60 seconds.
//!
//! **Which calls are timed.** Timing a call reads the clock twice, which
//! costs more than the rest of an uncontended call's bookkeeping, and no
//! clock is read on the call path otherwise. So a thread's shard of the
//! operation's counters times one call in `stride`, where `stride`
//! doubles (to at most [`MAX_STRIDE`]) while that shard's timed calls end
//! less than a millisecond apart and halves (to 1) while they end further
//! apart: an operation called fewer than about a thousand times a second
//! per thread has every call timed; a busier one about one call per
//! millisecond per thread. Which call is timed depends only on its order
//! of admission, never on how long it takes, so the quantiles of the timed
//! calls estimate those of all calls.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Clock;

/// Buckets of one slot: 8 exact ones below 8 ns, then 8 per power of two
/// from 2^3 to 2^40 ns.
pub(crate) const BUCKETS: usize = 8 + 38 * 8;

/// The most calls of one shard between two timed ones.
const MAX_STRIDE: u32 = 64;

/// Timed calls ending closer together than this (nanoseconds) double the
/// stride; further apart, halve it.
const SPACING_NS: u64 = 1_000_000;

/// One slot's length in nanoseconds.
const SLOT_NS: u64 = 10_000_000_000;

/// Slots in the ring (the window is the current one and the five before).
const SLOTS: usize = 6;

/// A call's start, when it is timed: nanoseconds on its operation's
/// [`Latency`] clock; [`UNTIMED`] when it is not.
pub(crate) type Start = u64;

/// The [`Start`] of a call that is not timed.
pub(crate) const UNTIMED: Start = u64::MAX;

/// The bucket of a latency of `ns` nanoseconds.
#[inline]
fn bucket(ns: u64) -> usize {
    let ns = ns.min((1 << 41) - 1);
    if ns < 8 {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros() as usize;
    (exp - 2) * 8 + ((ns >> (exp - 3)) & 7) as usize
}

/// The midpoint of bucket `index`, in nanoseconds.
fn midpoint(index: usize) -> u64 {
    if index < 8 {
        return index as u64;
    }
    let exp = index / 8 + 2;
    let low = (8 + (index % 8) as u64) << (exp - 3);
    low + (1u64 << (exp - 3)) / 2
}

/// One time slot: which period it counts, and its buckets.
struct Slot {
    /// The slot number (nanoseconds / [`SLOT_NS`]) its counts belong to;
    /// `u64::MAX` before its first use.
    period: AtomicU64,
    counts: [AtomicU32; BUCKETS],
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            period: AtomicU64::new(u64::MAX),
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

/// One operation's latency histogram over a rolling window (see the
/// module docs), on tokio's clock (a paused test clock drives it).
pub(crate) struct Latency {
    clock: Clock,
    slots: Box<[Slot; SLOTS]>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            clock: Clock::new(),
            slots: Box::new(std::array::from_fn(|_| Slot::default())),
        }
    }
}

/// A thread shard's choice of the calls to time (in its [`Counters`](super::Counters)
/// shard): relaxed loads and stores, not atomic adds, since an exact count
/// is not needed.
#[derive(Default)]
pub(crate) struct Sampling {
    /// Calls left to admit untimed before the next timed one.
    countdown: AtomicU32,
    /// Calls per timed call (0 reads as 1).
    stride: AtomicU32,
    /// When the shard's last timed call ended (the operation's clock).
    last: AtomicU64,
}

impl Latency {
    /// Admits a call on `sampling`'s shard: its start if it is timed
    /// (one in the shard's stride), else [`UNTIMED`].
    #[inline(always)]
    pub(crate) fn begin(&self, sampling: &Sampling) -> Start {
        let left = sampling.countdown.load(Ordering::Relaxed);
        if left != 0 {
            sampling.countdown.store(left - 1, Ordering::Relaxed);
            return UNTIMED;
        }
        self.begin_timed(sampling)
    }

    /// A timed call's start; the next one comes a stride later.
    #[inline(never)]
    fn begin_timed(&self, sampling: &Sampling) -> Start {
        let stride = sampling.stride.load(Ordering::Relaxed).max(1);
        sampling.countdown.store(stride - 1, Ordering::Relaxed);
        self.clock.now()
    }

    /// A call that began at `start` ended: records its latency if it was
    /// timed, and adapts `sampling`'s stride.
    #[inline(always)]
    pub(crate) fn end(&self, sampling: &Sampling, start: Start) {
        if start != UNTIMED {
            self.end_timed(sampling, start);
        }
    }

    /// [`end`](Self::end) of a timed call.
    #[inline(never)]
    fn end_timed(&self, sampling: &Sampling, start: Start) {
        let now = self.clock.now();
        self.record_at(now, now.saturating_sub(start));
        let last = sampling.last.swap(now, Ordering::Relaxed);
        let stride = sampling.stride.load(Ordering::Relaxed).max(1);
        let stride = if now.saturating_sub(last) < SPACING_NS {
            (stride * 2).min(MAX_STRIDE)
        } else {
            (stride / 2).max(1)
        };
        sampling.stride.store(stride, Ordering::Relaxed);
    }

    /// Counts a latency of `took` nanoseconds that ended at `now` (the
    /// clock's nanoseconds), emptying its slot first if the slot still
    /// holds an earlier period. A call recording while another empties the
    /// slot may lose its count: a sample, never a wrong figure.
    fn record_at(&self, now: u64, took: u64) {
        let period = now / SLOT_NS;
        let slot = &self.slots[(period % SLOTS as u64) as usize];
        let seen = slot.period.load(Ordering::Acquire);
        // A slot holding a later period (this thread read the clock before
        // another call moved the slot on) is left alone.
        if (seen == u64::MAX || seen < period)
            && slot
                .period
                .compare_exchange(seen, period, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            for count in &slot.counts {
                count.store(0, Ordering::Relaxed);
            }
        }
        if slot.period.load(Ordering::Acquire) == period {
            slot.counts[bucket(took)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds the counts of the window ending now to `into`.
    pub(crate) fn read(&self, into: &mut [u64; BUCKETS]) {
        self.read_at(self.clock.now(), into);
    }

    /// Adds the counts of the window ending at `now` to `into`.
    fn read_at(&self, now: u64, into: &mut [u64; BUCKETS]) {
        let current = now / SLOT_NS;
        for slot in self.slots.iter() {
            let period = slot.period.load(Ordering::Acquire);
            if period <= current && current - period < SLOTS as u64 {
                for (sum, count) in into.iter_mut().zip(&slot.counts) {
                    *sum += u64::from(count.load(Ordering::Relaxed));
                }
            }
        }
    }
}

/// The latency at or below which a fraction `q` (0 to 1) of the counted
/// calls ended (the midpoint of that call's bucket); `None` if none was
/// counted.
pub(crate) fn quantile(counts: &[u64; BUCKETS], q: f64) -> Option<Duration> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    let index = counts.iter().position(|&n| {
        seen += n;
        seen >= rank
    })?;
    Some(Duration::from_nanos(midpoint(index)))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_midpoint_is_within_a_sixteenth_of_its_latencies() {
        let mut ns = 0u64;
        while ns < 1 << 40 {
            let mid = midpoint(bucket(ns)) as f64;
            assert!(
                (mid - ns as f64).abs() <= ns as f64 / 16.0 + 0.5,
                "{ns} ns reads as {mid}"
            );
            ns = ns * 17 / 16 + 1;
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket((1 << 41) - 1), BUCKETS - 1);
    }

    #[test]
    fn quantiles_of_a_known_mix() {
        let latency = Latency::default();
        for _ in 0..90 {
            latency.record_at(5, 1_000_000);
        }
        for _ in 0..10 {
            latency.record_at(5, 200_000_000);
        }
        let mut counts = [0; BUCKETS];
        latency.read_at(5, &mut counts);
        let p50 = quantile(&counts, 0.5).unwrap().as_nanos() as f64;
        let p99 = quantile(&counts, 0.99).unwrap().as_nanos() as f64;
        assert!((p50 - 1e6).abs() <= 1e6 / 16.0, "p50 {p50}");
        assert!((p99 - 2e8).abs() <= 2e8 / 16.0, "p99 {p99}");
        assert_eq!(quantile(&[0; BUCKETS], 0.5), None);
    }

    #[test]
    fn the_window_forgets_calls_older_than_six_slots() {
        let latency = Latency::default();
        latency.record_at(0, 1_000);
        latency.record_at(3 * SLOT_NS, 2_000);
        let read = |now| {
            let mut counts = [0; BUCKETS];
            latency.read_at(now, &mut counts);
            counts.iter().sum::<u64>()
        };
        assert_eq!(read(3 * SLOT_NS), 2);
        assert_eq!(read(5 * SLOT_NS + 1), 2);
        // Slot 0's period is now more than five periods back.
        assert_eq!(read(6 * SLOT_NS), 1);
        // Recording into the ring's first slot again empties it first.
        latency.record_at(6 * SLOT_NS, 3_000);
        assert_eq!(read(6 * SLOT_NS), 2);
        assert_eq!(read(20 * SLOT_NS), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_shard_times_one_call_in_its_stride() {
        let latency = Latency::default();
        let sampling = Sampling::default();
        // On a paused clock no time passes between these calls:
        // each timed call ends less than a millisecond after the last, so
        // the stride doubles up to its cap.
        let mut timed = 0;
        for _ in 0..10_000 {
            let start = latency.begin(&sampling);
            if start != UNTIMED {
                timed += 1;
            }
            latency.end(&sampling, start);
        }
        assert_eq!(sampling.stride.load(Ordering::Relaxed), MAX_STRIDE);
        assert!(timed < 10_000 / 32, "{timed} timed");
        assert!(timed >= 10_000 / MAX_STRIDE as usize, "{timed} timed");
    }
}
