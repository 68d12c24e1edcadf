//! A breaker's window: [`BUCKETS`] buckets of attempts, each counting the
//! attempts that ended in one bucket period (`window / BUCKETS` long).
//!
//! Bucket `i` counts period `p` when `p % BUCKETS == i`. A bucket is three
//! words — attempts, failures (slow ones included), slow attempts — each
//! the period it counts (its low 32 bits, the stamp) above the count (32
//! bits). A word whose stamp is not the current period is stale: the first
//! attempt of a new period replaces it (a compare-and-swap, once per word
//! and bucket period), and [`Window::sum`] counts a bucket only when its
//! attempts' stamp is one of the last `BUCKETS` periods, and its failures
//! and slow attempts only when their stamp is the attempts'.
//!
//! Every bucket expires on time, however long the gap: each renewal
//! empties the buckets older than the window (`sweep`), and when nothing
//! was renewed for a whole window (`latest`), `sum` counts nothing and the
//! next attempt empties every bucket first. A stamp is then ambiguous only
//! for a word left untouched for 2³² periods while the others were in use.
//!
//! The `cursor` names the current period and its bucket, published once
//! that bucket was renewed: a success ending in that period is one load
//! of the cursor, a multiply and a compare (is `now` in its period?), and
//! one relaxed `fetch_add` on the bucket ([`Window::add_success`]); no
//! division, no stamp to check. Any other attempt (a failure, the first
//! of a period) is [`Window::add`]: the period by division, the stamp
//! checked, the bucket renewed if stale (which moves the cursor on); a
//! failure adds one on its word. No lock, no allocation. An attempt
//! whose clock was read before another's renewal counts in its own
//! period's bucket while that period is in the window, and nowhere once
//! it is not (it empties nothing).
//!
//! Racing renewals of one bucket may drop an attempt or two at the instant
//! a period starts (the loser's swap finds the winner's count and adds to
//! it; only a renewal after a whole idle window clears what a racer added);
//! so may a success that read the cursor just before its bucket was
//! emptied (the breaker closed, or a whole idle window).

use super::declaration::BUCKETS;
use crate::loom::{AtomicU64, Ordering::Relaxed};

/// The low 32 bits of a word: its count.
const COUNT: u64 = u32::MAX as u64;
/// The number of words of the window.
const N: usize = BUCKETS as usize;
/// The bits of [`Window::cursor`] that hold its bucket's index.
const INDEX_BITS: u32 = 4;
/// Those bits' mask; also the length of `calls`, so that an index read
/// from the cursor needs no bounds check.
const INDEX: u64 = (1 << INDEX_BITS) - 1;
const _: () = assert!(N as u64 <= INDEX);

/// The window's buckets.
pub(crate) struct Window {
    /// Attempts; the words past `N` are never used (see `INDEX`).
    calls: [AtomicU64; INDEX as usize + 1],
    failures: [AtomicU64; N],
    slow: [AtomicU64; N],
    /// The latest period a bucket was renewed for (whole, not a stamp).
    latest: AtomicU64,
    /// The period whose bucket is ready for its attempts, and that
    /// bucket's index (`period << INDEX_BITS | period % BUCKETS`):
    /// published once the bucket was renewed for that period, so that an
    /// attempt ending in it adds to the bucket with no division and no
    /// stamp to check ([`Window::add_success`]).
    cursor: AtomicU64,
}

/// What the last `BUCKETS` periods hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Attempts counted.
    pub(crate) calls: u64,
    /// Of those, failures (slow ones included).
    pub(crate) failures: u64,
    /// Of those, slow attempts.
    pub(crate) slow: u64,
}

impl Counts {
    /// The failure rate, in percent (0 with no attempts).
    pub(crate) fn failure_rate(&self) -> u8 {
        if self.calls == 0 {
            return 0;
        }
        (self.failures.min(self.calls) * 100 / self.calls) as u8
    }
}

/// Whether the stamp `at` is of a period after `period` (less than half
/// the stamp's range ahead).
#[inline]
fn later(at: u64, period: u64) -> bool {
    let ahead = at.wrapping_sub(period) & COUNT;
    ahead != 0 && ahead < 1 << 31
}

/// A word's stamp for `period`.
#[inline(always)]
fn stamp(period: u64) -> u64 {
    period << 32
}

/// How many periods before `period` the stamp `at` is (modulo 2³²).
#[inline]
fn age(at: u64, period: u64) -> u64 {
    period.wrapping_sub(at) & COUNT
}

/// Adds one to `word` for `period`: to its count if it is stamped
/// `period` (or a later period), else replacing it with a count of 1.
#[inline]
fn bump(word: &AtomicU64, period: u64) {
    let mut old = word.load(Relaxed);
    loop {
        let at = old >> 32;
        if at == period & COUNT || later(at, period) {
            word.fetch_add(1, Relaxed);
            return;
        }
        match word.compare_exchange_weak(old, stamp(period) | 1, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(actual) => old = actual,
        }
    }
}

impl Window {
    /// An empty window.
    pub(crate) fn new() -> Self {
        Window {
            calls: std::array::from_fn(|_| AtomicU64::new(0)),
            failures: std::array::from_fn(|_| AtomicU64::new(0)),
            slow: std::array::from_fn(|_| AtomicU64::new(0)),
            latest: AtomicU64::new(0),
            cursor: AtomicU64::new(0),
        }
    }

    /// Counts a success that ended at `now` (ns; periods of `bucket` ns)
    /// if `now` is in the cursor's period: one load, a multiply and a
    /// compare, and the add. `false` (nothing counted) otherwise: the
    /// first attempts of a period, or one whose `now` was read before the
    /// cursor moved on, go through [`add`](Window::add).
    #[inline(always)]
    pub(crate) fn add_success(&self, now: u64, bucket: u64) -> bool {
        let cursor = self.cursor.load(Relaxed);
        let start = (cursor >> INDEX_BITS).wrapping_mul(bucket);
        // Before `start`, the difference wraps to a huge value.
        if now.wrapping_sub(start) < bucket {
            self.calls[(cursor & INDEX) as usize].fetch_add(1, Relaxed);
            return true;
        }
        false
    }

    /// Counts an attempt that ended in `period`: a failure (`failed`, or
    /// `slow`, which is one too), or a success.
    #[inline(always)]
    pub(crate) fn add(&self, period: u64, failed: bool, slow: bool) {
        let i = (period % u64::from(BUCKETS)) as usize;
        let calls = &self.calls[i];
        let now = calls.load(Relaxed);
        if now & !COUNT == stamp(period) && self.fresh(period) {
            calls.fetch_add(1, Relaxed);
        } else {
            self.renew(i, period);
        }
        if failed || slow {
            bump(&self.failures[i], period);
        }
        if slow {
            bump(&self.slow[i], period);
        }
    }

    /// Whether a bucket was renewed within the window before `period` (or
    /// for `period` or later: an attempt whose clock was read before
    /// another's renewal): if not, a bucket whose stamp reads as `period`
    /// may be 2³² periods old.
    #[inline(always)]
    fn fresh(&self, period: u64) -> bool {
        let latest = self.latest.load(Relaxed);
        period <= latest || period - latest < u64::from(BUCKETS)
    }

    /// Bucket `i`'s first attempt of `period` (counted): after a whole
    /// idle window, every bucket emptied first; then its attempts' word
    /// renewed, and every bucket older than the window emptied. An attempt
    /// of a period already out of the window (its clock read a whole
    /// window before the latest renewal) counts nowhere.
    #[cold]
    #[inline(never)]
    fn renew(&self, i: usize, period: u64) {
        if period.saturating_add(u64::from(BUCKETS)) <= self.latest.load(Relaxed) {
            return;
        }
        if !self.fresh(period) {
            self.clear();
        }
        // The latest period first, then the bucket: a sweep that sees a
        // bucket renewed for a period sees that period as the latest.
        let latest = self.latest.fetch_max(period, Relaxed).max(period);
        bump(&self.calls[i], period);
        self.sweep(latest);
        // The bucket is the period's now: successes of the period may
        // add to it directly (a later cursor is never moved back).
        let cursor = period.wrapping_shl(INDEX_BITS) | i as u64;
        self.cursor.fetch_max(cursor, Relaxed);
    }

    /// Empties every bucket older than the window before `latest`.
    fn sweep(&self, latest: u64) {
        for i in 0..N {
            let old = self.calls[i].load(Relaxed);
            if old & COUNT != 0
                && age(old >> 32, latest) >= u64::from(BUCKETS)
                && self.calls[i]
                    .compare_exchange(old, 0, Relaxed, Relaxed)
                    .is_ok()
            {
                self.failures[i].store(0, Relaxed);
                self.slow[i].store(0, Relaxed);
            }
        }
    }

    /// What the `BUCKETS` periods up to `period` hold.
    pub(crate) fn sum(&self, period: u64) -> Counts {
        let mut counts = Counts::default();
        if !self.fresh(period) && period > self.latest.load(Relaxed) {
            return counts;
        }
        for i in 0..N {
            let calls = self.calls[i].load(Relaxed);
            let at = calls >> 32;
            if age(at, period) >= u64::from(BUCKETS) && !later(at, period) {
                continue;
            }
            counts.calls += calls & COUNT;
            let of_bucket = |word: &AtomicU64| {
                let word = word.load(Relaxed);
                if word >> 32 == at {
                    word & COUNT
                } else {
                    0
                }
            };
            counts.failures += of_bucket(&self.failures[i]);
            counts.slow += of_bucket(&self.slow[i]);
        }
        counts
    }

    /// Empties every bucket (the breaker closed: a new window starts). A
    /// zero word counts nothing whatever period its stamp reads as.
    pub(crate) fn clear(&self) {
        // The cursor back to period 0, bucket 0, which every zero word
        // reads as (the next renewal moves it on): a success of the
        // cursor's old period must not add to an emptied bucket.
        self.cursor.store(0, Relaxed);
        for word in self.calls.iter().chain(&self.failures).chain(&self.slow) {
            word.store(0, Relaxed);
        }
    }
}
