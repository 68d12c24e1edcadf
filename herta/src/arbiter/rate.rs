//! Rate budgets: units that accrue with time and are consumed, never given
//! back, taken in the same all-or-nothing grant as concurrency budgets.
//!
//! # The bucket (GCRA, exact)
//!
//! A rate budget of `count` units per `period` with `burst` (its capacity)
//! is GCRA's *virtual scheduling* in integer **ticks**: with `g =
//! gcd(count, period in ns)`, a nanosecond is `count / g` ticks
//! ([`Rate::per_ns`]) and a unit costs `period / g` ticks
//! ([`Rate::per_unit`], `P`), so a unit every `period / count` exactly,
//! without rounding, whatever the rate. The bucket keeps one number, `x`:
//! its *theoretical arrival time*, the tick at which every unit granted so
//! far has accrued. At tick `s` (now), a full bucket is `burst × P` ticks
//! deep ([`Rate::full`]); it holds `floor((s + full - max(x, s)) / P)`
//! units, and a grant of `u` units sets `x = max(x, s) + u × P` when that
//! leaves it at most `s + full`. The units of a grant exist from the first
//! tick `s` with `s >= x + u × P - full`.
//!
//! So over any interval `T`, at most `burst + count × T / period` units are
//! granted, and an idle bucket holds at most `burst`: `max(x, s)` forgets
//! idle time at the very tick a full bucket is drawn from again (the
//! accrual restarts there, phase included), and never lets the bucket run
//! backwards, whatever the clock reads.
//!
//! Ticks count from [`Rate::base`], nanoseconds on the arbiter's
//! [`Clock`]. `x` and `s` stay below [`LIMIT`] (`2^61`: 73 years of ticks
//! for a rate whose `count / g` is 1, half a second for the largest): a
//! lock-free grant that would pass it takes the lock instead, and a grant
//! under the lock first moves the base to now ([`Budget::rebase`], keeping
//! what the bucket holds exactly). A bucket is at most [`LIMIT`] ticks deep:
//! a burst whose refill would take longer (a million units at 3 per day)
//! holds what accrues in `LIMIT` ticks, which is said where bursts are
//! declared.
//!
//! [`Budget::rebase`]: super::budget::Budget
//!
//! # The word
//!
//! `x << 2 | LOCKED | SLOW`. `SLOW` is always set, so the concurrency fast
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
//! [`Arbiter::try_acquire_rate`]: super::permits::Arbiter
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
//! runs. A head polled once its units exist already (woken late) arms no
//! timer: it runs the pass itself, as of the instant they came to exist,
//! which grants it or names the next head; otherwise nobody would time the
//! next units and the queue would sleep over a full bucket. A head whose
//! units are more than 30 years off (or never exist) arms no timer.

use std::time::Duration;

use crate::clock::Clock;
use crate::loom::{AtomicU64, Ordering};

/// A rate budget's flag: take the lock.
pub(super) const LOCKED: u64 = 2;
/// The bits of the word below `x`.
pub(super) const SHIFT: u32 = 2;
/// Ticks `s` (now) stay below it and a full bucket is at most it deep:
/// `x`, at most their sum, below `2^62`, so it fits the word beside its
/// two flags.
pub(super) const LIMIT: u64 = 1 << 61;

/// A rate budget's rate, in ticks (see the module docs). Changed only
/// under the lock with `LOCKED` set (`Arbiter::set_rate`, a rebase),
/// together with the word, so a lock-free grant that read an old rate
/// fails its compare-and-swap on the rewritten word.
pub(super) struct Rate {
    /// Units per period as declared, at least 1.
    count: AtomicU64,
    /// The period in nanoseconds as declared, at least 1.
    period: AtomicU64,
    /// Ticks per nanosecond: `count / g`.
    per_ns: AtomicU64,
    /// Ticks per unit: `period / g`, at most `LIMIT`.
    per_unit: AtomicU64,
    /// Ticks a full bucket is deep: `burst × per_unit`, at most `LIMIT`.
    full: AtomicU64,
    /// Where ticks count from: nanoseconds on the arbiter's clock.
    base: AtomicU64,
}

/// What a rate reads as in ticks, at one instant.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticks {
    /// Ticks per unit.
    pub(super) per_unit: u64,
    /// Ticks a full bucket is deep.
    pub(super) full: u64,
}

impl Rate {
    pub(super) fn new(count: u32, period: Duration, burst: u32) -> Self {
        let rate = Rate {
            count: AtomicU64::new(0),
            period: AtomicU64::new(0),
            per_ns: AtomicU64::new(0),
            per_unit: AtomicU64::new(0),
            full: AtomicU64::new(0),
            base: AtomicU64::new(0),
        };
        rate.set(count, period, burst, 0);
        rate
    }

    /// Sets every field: `count` units per `period`, `burst`, ticks from
    /// `base` (under the lock with `LOCKED` set, or before sharing).
    pub(super) fn set(&self, count: u32, period: Duration, burst: u32, base: u64) {
        let (count, period) = (u64::from(count.max(1)), period_ns(period));
        let g = gcd(count, period);
        let per_unit = (period / g).min(LIMIT);
        self.count.store(count, Ordering::Relaxed);
        self.period.store(period, Ordering::Relaxed);
        self.per_ns.store(count / g, Ordering::Relaxed);
        self.per_unit.store(per_unit, Ordering::Relaxed);
        self.set_burst(burst);
        self.base.store(base, Ordering::Relaxed);
    }

    /// Sets the bucket's depth for `burst` units.
    fn set_burst(&self, burst: u32) {
        let per_unit = self.per_unit.load(Ordering::Relaxed);
        let full = per_unit.saturating_mul(u64::from(burst)).min(LIMIT);
        self.full.store(full, Ordering::Relaxed);
    }

    /// Where ticks count from, ns on the arbiter's clock.
    pub(super) fn base(&self) -> u64 {
        self.base.load(Ordering::Relaxed)
    }

    /// Moves where ticks count from (under the lock, `LOCKED` set).
    pub(super) fn set_base(&self, base: u64) {
        self.base.store(base, Ordering::Relaxed);
    }

    /// The tick at `now` (ns on the arbiter's clock), if it is below
    /// [`LIMIT`]; `None` when the base must move first, or when `now` is
    /// before the base (a reading older than a racing rebase: it wraps
    /// past the limit, and the caller takes the lock).
    #[inline]
    pub(super) fn tick(&self, now: u64) -> Option<u64> {
        let ns = now.wrapping_sub(self.base.load(Ordering::Relaxed));
        ns.checked_mul(self.per_ns.load(Ordering::Relaxed))
            .filter(|&s| s < LIMIT)
    }

    /// The tick at `now`, however far (a read that moves nothing).
    pub(super) fn wide_tick(&self, now: u64) -> u128 {
        let ns = now.saturating_sub(self.base.load(Ordering::Relaxed));
        u128::from(ns) * u128::from(self.per_ns.load(Ordering::Relaxed))
    }

    /// The first nanosecond (on the arbiter's clock) at which the tick
    /// reaches `tick`, saturating.
    pub(super) fn ns_of(&self, tick: u128) -> u64 {
        let per_ns = u128::from(self.per_ns.load(Ordering::Relaxed));
        let ns = u128::from(self.base.load(Ordering::Relaxed)) + tick.div_ceil(per_ns);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    #[inline]
    pub(super) fn ticks(&self) -> Ticks {
        Ticks {
            per_unit: self.per_unit.load(Ordering::Relaxed),
            full: self.full.load(Ordering::Relaxed),
        }
    }

    /// Units per period and the period, as declared.
    pub(super) fn of(&self) -> (u32, Duration) {
        (
            u32::try_from(self.count.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
            Duration::from_nanos(self.period.load(Ordering::Relaxed)),
        )
    }
}

/// A period in nanoseconds, 1 to `u64::MAX` (saturating: 584 years).
pub(super) fn period_ns(period: Duration) -> u64 {
    u64::try_from(period.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// The greatest common divisor of two positive numbers.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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
    fn ticks_are_exact_for_any_rate() {
        // 5 per second: a unit is 200 ms, one tick a nanosecond.
        let r = Rate::new(5, Duration::from_secs(1), 5);
        assert_eq!(r.per_ns.load(Ordering::Relaxed), 1);
        assert_eq!(r.ticks().per_unit, 200_000_000);
        assert_eq!(r.ticks().full, 1_000_000_000);
        // 7 per second: a unit is 1/7 s, exactly 10^9 ticks of 7 per ns.
        let r = Rate::new(7, Duration::from_secs(1), 2);
        assert_eq!(r.per_ns.load(Ordering::Relaxed), 7);
        assert_eq!(r.ticks().per_unit, 1_000_000_000);
        assert_eq!(r.tick(3), Some(21));
        assert_eq!(r.ns_of(1_000_000_000), 142_857_143);
        // A daily quota, and a rate whose ticks pass the limit (then the
        // base must move).
        let r = Rate::new(1_000, Duration::from_secs(86_400), 1_000);
        assert_eq!(r.ticks().full, 86_400_000_000_000);
        assert_eq!(r.tick(u64::MAX), None);
        assert_eq!(r.wide_tick(u64::MAX), u128::from(u64::MAX));
        // Huge periods and bursts saturate at the limit.
        let r = Rate::new(u32::MAX, Duration::MAX, u32::MAX);
        assert_eq!(r.ticks().full, LIMIT);
        assert_eq!(r.of(), (u32::MAX, Duration::from_nanos(u64::MAX)));
        assert_eq!(gcd(12, 18), 6);
    }
}
