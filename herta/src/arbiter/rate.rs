//! Rate budgets: units that accrue with time and are consumed, never given
//! back, taken in the same all-or-nothing grant as concurrency budgets.
//!
//! # The bucket (GCRA in whole units)
//!
//! A rate budget of `count` units per `period`, with `burst` (its capacity)
//! keeps one number, `n`: the units emitted since the arbiter's clock's zero,
//! counted the way GCRA counts its *theoretical arrival time*. At an instant
//! `now` (nanoseconds since that zero, on tokio's clock: [`Clock`]), `c(now) =
//! floor(now × count / period)` units have accrued; the bucket holds
//! `c + burst - max(n, c)` units (never more than `burst`: an idle bucket
//! does not save more), and a grant of `u` units sets `n = max(n, c) + u`
//! when it leaves that at most `c + burst`. The units of a grant exist from
//! the first instant `t` with `c(t) >= n + u - burst`, `ceil((n + u -
//! burst) × period / count)`.
//!
//! Everything is integer: `c` is computed from the period and count
//! themselves (a 64-bit product when it fits, else 128-bit), never from a
//! rounded interval, so there is no drift over any run; over any interval
//! `T` at most `burst + count × T / period` units are granted. Counts
//! saturate (`MAX_EMITTED`; the clock's range is centuries), `n` never
//! decreases except by a refund of a grant never used, and `max(n, c)`
//! makes the bucket monotone in time, whatever the clock reads.
//!
//! # The word
//!
//! `n << 2 | LOCKED | SLOW`. `SLOW` is always set, so the concurrency fast
//! paths (`try_take_fast`, `try_take_all_fast`) never take a rate budget:
//! they fall to `Arbiter::try_acquire_one_slow` (a one-budget list) or
//! `try_acquire_locked`, which sends a list naming a rate budget to
//! [`Arbiter::try_acquire_rate`]. `LOCKED` plays the part `SLOW`
//! plays for a concurrency budget (`Budget::lock_bit`): set under the lock
//! while waiters need the budget, while a lock holder works on it, and for
//! good once closed. While it is clear, a grant takes units with one
//! compare-and-swap on the word after one clock read (for the whole grant),
//! and a release does nothing for a rate budget (a permit holds only the
//! concurrency part of its needs).
//!
//! # Waiting
//!
//! A waiter short of a rate budget's units needs time, not a release. Per
//! rate budget, the first queued waiter short of its units (as of the last
//! grant pass) is its *head* (`Track::head`), and the head arms a timer for
//! the instant its units exist (`Acquire`); nobody polls. When it fires, a
//! grant pass runs **as of that instant** (the timer's lag is not charged
//! to the bucket), which grants the head if it can be granted, and names
//! the next head, waking it so that it arms its own timer. A head that
//! leaves (granted, cancelled, expired) is replaced by the pass its leaving
//! runs.

use std::time::Duration;

use crate::clock::Clock;
use crate::loom::{AtomicU64, Ordering};

/// A rate budget's flag: take the lock.
pub(super) const LOCKED: u64 = 2;
/// The bits of the word below `n`.
pub(super) const SHIFT: u32 = 2;
/// The most units counted as emitted: `n + units` stays within the word.
pub(super) const MAX_EMITTED: u64 = (u64::MAX >> SHIFT) - u32::MAX as u64;

/// A rate budget's rate. Changed only under the lock with `LOCKED` set
/// (`Arbiter::set_rate`), together with the word, so a lock-free grant that
/// read an old rate fails its compare-and-swap on the rewritten word.
pub(super) struct Rate {
    /// Units per period, at least 1.
    pub(super) count: AtomicU64,
    /// The period in nanoseconds, at least 1.
    pub(super) period: AtomicU64,
}

impl Rate {
    pub(super) fn new(count: u32, period: Duration) -> Self {
        Rate {
            count: AtomicU64::new(u64::from(count.max(1))),
            period: AtomicU64::new(period_ns(period)),
        }
    }

    #[inline]
    pub(super) fn get(&self) -> (u64, u64) {
        (
            self.count.load(Ordering::Relaxed),
            self.period.load(Ordering::Relaxed),
        )
    }

    /// Units per period and the period.
    pub(super) fn of(&self) -> (u32, Duration) {
        let (count, period) = self.get();
        (
            u32::try_from(count).unwrap_or(u32::MAX),
            Duration::from_nanos(period),
        )
    }
}

/// A period in nanoseconds, 1 to `u64::MAX` (saturating: 584 years).
pub(super) fn period_ns(period: Duration) -> u64 {
    u64::try_from(period.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// Units accrued from the clock's zero to `now`: `floor(now × count / period)`,
/// at most [`MAX_EMITTED`].
#[inline]
pub(super) fn accrued(now: u64, count: u64, period: u64) -> u64 {
    let c = match now.checked_mul(count) {
        Some(product) => product / period,
        None => u64::try_from(u128::from(now) * u128::from(count) / u128::from(period))
            .unwrap_or(u64::MAX),
    };
    c.min(MAX_EMITTED)
}

/// The first instant at which `k` units have accrued: `ceil(k × period /
/// count)`, saturating.
pub(super) fn instant_of(k: u64, count: u64, period: u64) -> u64 {
    let t = (u128::from(k) * u128::from(period)).div_ceil(u128::from(count));
    u64::try_from(t).unwrap_or(u64::MAX)
}

/// The instant a lock-free or locked grant is computed at, read from the
/// clock at most once and only if a rate budget is looked at.
pub(super) struct Now<'a> {
    clock: &'a Clock,
    ns: Option<u64>,
}

impl<'a> Now<'a> {
    /// The clock, read when first needed.
    pub(super) fn lazy(clock: &'a Clock) -> Self {
        Now { clock, ns: None }
    }

    /// A fixed instant, `ns` after the clock's zero (a timer's instant,
    /// tests).
    pub(super) fn at(clock: &'a Clock, ns: u64) -> Self {
        Now {
            clock,
            ns: Some(ns),
        }
    }

    /// Nanoseconds since the clock's zero (saturating).
    #[inline]
    pub(super) fn ns(&mut self) -> u64 {
        match self.ns {
            Some(ns) => ns,
            None => {
                let ns = self.clock.now();
                self.ns = Some(ns);
                ns
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn accrual_is_exact_and_saturates() {
        assert_eq!(accrued(999_999_999, 3, 1_000_000_000), 2);
        assert_eq!(accrued(1_000_000_000, 3, 1_000_000_000), 3);
        // 1 000 000 periods of 3 per second: no drift.
        let t = 1_000_000 * 1_000_000_000u64;
        assert_eq!(accrued(t, 3, 1_000_000_000), 3_000_000);
        assert_eq!(accrued(t - 1, 3, 1_000_000_000), 2_999_999);
        // Overflowing products take the wide path; huge values saturate.
        assert_eq!(accrued(u64::MAX, u64::from(u32::MAX), 1), MAX_EMITTED);
        assert_eq!(accrued(u64::MAX, 1, u64::MAX), 1);
        assert_eq!(instant_of(3, 3, 1_000_000_000), 1_000_000_000);
        assert_eq!(instant_of(1, 3, 1_000_000_000), 333_333_334);
        assert_eq!(instant_of(MAX_EMITTED, 1, u64::MAX), u64::MAX);
        // The instant of k is the first at which k have accrued.
        for k in [1u64, 2, 7, 1_000, 123_457] {
            let at = instant_of(k, 7, 1_000_000_000);
            assert_eq!(accrued(at, 7, 1_000_000_000), k);
            assert_eq!(accrued(at - 1, 7, 1_000_000_000), k - 1);
        }
    }
}
