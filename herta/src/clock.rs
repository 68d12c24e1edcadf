//! One nanosecond clock for everything that counts time itself: rate
//! budgets (their bucket) and breakers (their window and open period).
//!
//! A [`Clock`] reads tokio's clock ([`tokio::time::Instant`]), so a paused
//! test clock (`tokio::time::pause`, `advance`) drives both exactly, and
//! gives `u64` nanoseconds since its own zero (the instant it was made).
//! Those fit an atomic word and cost integer arithmetic only.
//!
//! Reading an `Instant` as nanoseconds is most of the cost of a read: the
//! only public way is to subtract two `Instant`s, which costs dozens of
//! instructions (checked arithmetic, a normalized `Duration`, a `u128`).
//! So a clock reads an `Instant`'s seconds and nanoseconds through its
//! `Hash` instead ([`raw`]): a few instructions. That relies on what the
//! standard library's `Instant` hashes, which no API promises, so a clock
//! checks it when it is made: its zero and two instants after it must read
//! so, and their differences must be exact. Where they are not (another
//! platform's `Instant`, a future standard library), the clock subtracts,
//! at the old cost and with the same results.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use tokio::time::Instant;

/// The longest span [`Clock::instant_at`] turns into an `Instant`: 30
/// years, beyond any period or timer herta arms.
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// Nanoseconds since the clock's zero, on tokio's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    /// The instant read as 0.
    zero: Instant,
    /// `zero` as raw nanoseconds ([`raw`]), where instants read so exactly;
    /// `None` where they do not (then reads subtract).
    zero_raw: Option<u64>,
}

impl Clock {
    /// A clock whose zero is now.
    pub(crate) fn new() -> Self {
        let zero = Instant::now();
        Clock {
            zero,
            zero_raw: exact_raw(zero),
        }
    }

    /// Nanoseconds from the zero to now (0 if tokio's clock reads earlier,
    /// saturating after 584 years).
    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        self.ns_at(Instant::now())
    }

    /// Nanoseconds from the zero to `at` (0 before it, saturating).
    #[inline(always)]
    pub(crate) fn ns_at(&self, at: Instant) -> u64 {
        match (self.zero_raw, raw(&at)) {
            (Some(zero), Some(at)) => at.saturating_sub(zero),
            _ => self.subtract(at),
        }
    }

    /// `ns_at` by subtraction, where instants do not read as raw
    /// nanoseconds.
    #[cold]
    #[inline(never)]
    fn subtract(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.zero).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant `ns` after the zero, at most 30 years after it (for a
    /// timer: a later one would never fire in a process's life anyway).
    #[cfg(test)]
    pub(crate) fn instant_at(&self, ns: u64) -> Instant {
        self.zero + Duration::from_nanos(ns).min(FAR)
    }

    /// The instant `ns` after the zero if it is within 30 years of it (a
    /// timer's range); `None` beyond, where [`instant_at`](Self::instant_at)
    /// would answer the range's end, too early.
    pub(crate) fn instant_within(&self, ns: u64) -> Option<Instant> {
        let span = Duration::from_nanos(ns);
        (span <= FAR).then(|| self.zero + span)
    }
}

/// What an `Instant`'s `Hash` writes: its seconds (a 64-bit integer) and
/// its nanoseconds (a 32-bit one), in that order, and nothing else.
#[derive(Default)]
struct Grab {
    secs: Option<u64>,
    nanos: Option<u32>,
    other: bool,
}

impl Hasher for Grab {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, _: &[u8]) {
        self.other = true;
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.other |= self.secs.replace(n).is_some() || self.nanos.is_some();
    }
    #[inline]
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.other |= self.secs.is_none() || self.nanos.replace(n).is_some();
    }
}

/// `instant` as nanoseconds of its clock, read through its `Hash` (its
/// seconds and nanoseconds); `None` if the hash is not that shape. Only
/// differences of these readings mean anything, and only once
/// [`exact_raw`] has checked them.
#[inline(always)]
fn raw(instant: &Instant) -> Option<u64> {
    let mut grab = Grab::default();
    instant.hash(&mut grab);
    match grab {
        Grab {
            secs: Some(secs),
            nanos: Some(nanos),
            other: false,
        } if nanos < 1_000_000_000 => Some(
            secs.wrapping_mul(1_000_000_000)
                .wrapping_add(u64::from(nanos)),
        ),
        _ => None,
    }
}

/// `zero` as raw nanoseconds, if instants read so and differences read so
/// are exact (checked on `zero` and two instants after it, one a
/// fraction of a second and one a day later).
fn exact_raw(zero: Instant) -> Option<u64> {
    let at_zero = raw(&zero)?;
    [
        Duration::from_nanos(1_250_000_001),
        Duration::from_secs(86_400),
    ]
    .into_iter()
    .all(|d| raw(&(zero + d)).map(|r| r.wrapping_sub(at_zero)) == Some(d.as_nanos() as u64))
    .then_some(at_zero)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn instants_read_as_raw_nanoseconds_on_this_platform() {
        // Not a promise of std's, but true on every platform CI runs on:
        // if it stops being true, reads still work (by subtraction), and
        // this test says why they got slower.
        assert!(Clock::new().zero_raw.is_some());
    }

    #[test]
    fn reads_are_exact_and_saturate_at_the_zero() {
        let clock = Clock::new();
        for ns in [
            0,
            1,
            999_999_999,
            1_000_000_000,
            1_250_000_001,
            86_400_000_000_007,
        ] {
            let at = clock.zero + Duration::from_nanos(ns);
            assert_eq!(clock.ns_at(at), ns);
            assert_eq!(clock.subtract(at), ns);
            assert_eq!(clock.instant_at(ns), at);
        }
        let before = clock.zero.checked_sub(Duration::from_secs(1));
        if let Some(before) = before {
            assert_eq!(clock.ns_at(before), 0);
        }
        assert_eq!(clock.instant_at(u64::MAX), clock.zero + FAR);
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_drives_it() {
        let clock = Clock::new();
        assert_eq!(clock.now(), 0);
        tokio::time::advance(Duration::from_millis(1_500)).await;
        assert_eq!(clock.now(), 1_500_000_000);
    }
}
