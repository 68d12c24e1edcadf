//! The delay before a retry: capped exponential backoff with jitter.
//!
//! The delay before attempt `n + 1`, after `n ≥ 1` failed attempts, is
//! `d = min(cap, base · 2^(n-1))`, then jittered:
//!
//! | jitter | delay |
//! |---|---|
//! | `Full` (default) | uniform in `[0, d]` |
//! | `Equal` | `d/2` + uniform in `[0, d/2]` |
//! | `None` | `d` |
//!
//! A retry of a `Throttled` attempt never sleeps less than `base`: its delay
//! is drawn from `[max(lower, base), d]` instead, where `lower` is the
//! jitter's own lower end. Every step is integer arithmetic on nanoseconds
//! that saturates at `cap`; no attempt number overflows or panics.

use std::time::Duration;

/// How the delay before a retry is spread around the capped exponential
/// delay `d`, so that callers that failed together do not retry together.
///
/// The terms are those of the AWS Architecture Blog's "Exponential Backoff
/// And Jitter" (2015), which measured `Full` as the best at spreading load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Jitter {
    /// Uniform in `[0, d]`.
    #[default]
    Full,
    /// `d/2` plus uniform in `[0, d/2]`: never less than half the delay.
    Equal,
    /// Exactly `d`: deterministic, for tests and for a single caller.
    None,
}

/// Capped exponential backoff between attempts, as declared by
/// `retry(…, backoff(base = "10ms", cap = "1s", jitter = Full))`.
///
/// The delay before attempt `n + 1` is `min(cap, base · 2^(n-1))` (so
/// `base`, `2·base`, `4·base`, … up to `cap`), then spread by [`Jitter`].
///
/// ```
/// use std::time::Duration;
/// use herta::{Backoff, Jitter};
///
/// let backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1), Jitter::None);
/// assert_eq!(backoff.capped_delay(1), Duration::from_millis(10));
/// assert_eq!(backoff.capped_delay(3), Duration::from_millis(40));
/// assert_eq!(backoff.capped_delay(u32::MAX), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    jitter: Jitter,
}

impl Backoff {
    /// A backoff from `base` (the first delay) doubling up to `cap`.
    ///
    /// # Panics
    ///
    /// If `base` is zero or greater than `cap`. The `backoff(...)` contract
    /// key reports both at compile time instead.
    pub const fn new(base: Duration, cap: Duration, jitter: Jitter) -> Self {
        assert!(!base.is_zero(), "a backoff's base must be above zero");
        assert!(
            base.as_nanos() <= cap.as_nanos(),
            "a backoff's base must not exceed its cap"
        );
        Backoff { base, cap, jitter }
    }

    /// The first delay, and the least a throttled retry sleeps.
    pub const fn base(&self) -> Duration {
        self.base
    }

    /// The longest delay.
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// How the delay is spread.
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The delay before the next attempt after `attempts` failed attempts,
    /// before jitter: `min(cap, base · 2^(attempts-1))`. `attempts = 0` is
    /// read as 1. Never overflows.
    pub fn capped_delay(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1);
        let cap = self.cap.as_nanos();
        let delay = match 1u128.checked_shl(doublings) {
            Some(factor) => self.base.as_nanos().saturating_mul(factor).min(cap),
            None => cap,
        };
        from_nanos(delay)
    }

    /// The jittered delay before the next attempt after `attempts` failed
    /// attempts. `throttled`: the last attempt was `Throttled`, so the delay
    /// is at least `base`. `random` is a uniform 64-bit draw.
    pub(crate) fn delay(&self, attempts: u32, throttled: bool, random: u64) -> Duration {
        let d = self.capped_delay(attempts).as_nanos();
        let lower = match self.jitter {
            Jitter::Full => 0,
            Jitter::Equal => d / 2,
            Jitter::None => d,
        };
        let lower = if throttled {
            lower.max(self.base.as_nanos())
        } else {
            lower
        };
        from_nanos(lower + uniform_up_to(d - lower, random))
    }
}

/// A uniform draw in `[0, span]` from a uniform 64-bit `random` (the high
/// bits of `random · (span + 1)`). Spans beyond `u64::MAX` ns (584 years)
/// are drawn from `[0, u64::MAX]`.
fn uniform_up_to(span: u128, random: u64) -> u128 {
    let span = span.min(u128::from(u64::MAX - 1));
    (u128::from(random) * (span + 1)) >> 64
}

/// Nanoseconds back into a `Duration`, saturating at `Duration::MAX`.
fn from_nanos(nanos: u128) -> Duration {
    const PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(nanos / PER_SEC) {
        Ok(secs) => Duration::new(secs, (nanos % PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn backoff(jitter: Jitter) -> Backoff {
        Backoff::new(10 * MS, 1000 * MS, jitter)
    }

    #[test]
    fn delays_double_from_base_and_stop_at_cap() {
        let b = backoff(Jitter::None);
        let delays: Vec<_> = (1..=9).map(|n| b.capped_delay(n)).collect();
        let expected = [10, 20, 40, 80, 160, 320, 640, 1000, 1000].map(|ms| ms * MS);
        assert_eq!(delays, expected);
        assert_eq!(b.capped_delay(0), 10 * MS);
    }

    #[test]
    fn any_attempt_number_is_capped_without_overflow() {
        let b = backoff(Jitter::Full);
        for n in [64, 65, 127, 128, 129, 200, u32::MAX - 1, u32::MAX] {
            assert_eq!(b.capped_delay(n), 1000 * MS, "attempt {n}");
            assert!(b.delay(n, false, u64::MAX) <= 1000 * MS);
        }
        let huge = Backoff::new(Duration::MAX, Duration::MAX, Jitter::Full);
        assert_eq!(huge.capped_delay(u32::MAX), Duration::MAX);
        assert!(huge.delay(u32::MAX, true, u64::MAX) <= Duration::MAX);
    }

    #[test]
    fn base_equal_to_cap_is_a_constant_delay() {
        let b = Backoff::new(50 * MS, 50 * MS, Jitter::None);
        assert!((1..100).all(|n| b.delay(n, false, n.into()) == 50 * MS));
    }

    #[test]
    fn jitter_stays_within_its_range_and_spans_it() {
        for (jitter, low) in [(Jitter::Full, 0), (Jitter::Equal, 40)] {
            let b = backoff(jitter);
            let draws: Vec<Duration> = (0..=1000u64)
                .map(|i| b.delay(4, false, i.wrapping_mul(u64::MAX / 1000)))
                .collect();
            assert!(draws.iter().all(|d| (low * MS..=80 * MS).contains(d)));
            assert_eq!(draws.iter().min(), Some(&(low * MS)), "{jitter:?}");
            assert_eq!(draws.iter().max(), Some(&(80 * MS)), "{jitter:?}");
        }
    }

    #[test]
    fn a_throttled_retry_never_sleeps_less_than_base() {
        let b = backoff(Jitter::Full);
        assert_eq!(b.delay(1, true, 0), 10 * MS);
        assert_eq!(b.delay(3, true, 0), 10 * MS);
        assert_eq!(b.delay(3, false, 0), Duration::ZERO);
        assert_eq!(b.delay(3, true, u64::MAX), 40 * MS);
    }

    #[test]
    #[should_panic(expected = "must not exceed its cap")]
    fn base_above_cap_panics() {
        let _ = Backoff::new(2 * MS, MS, Jitter::Full);
    }
}
