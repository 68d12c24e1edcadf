//! The runtime-wide retry budget: retries may be at most a fraction of
//! recent first attempts, plus a small constant reserve.
//!
//! Semantics are those of tower's `TpsBudget` and Finagle's `RetryBudget`:
//! every first attempt deposits `ratio` tokens; every retry withdraws one; a
//! reserve of `min_per_second × window` tokens is always counted in; deposits
//! and withdrawals expire after `window`, so an emptied budget refills with
//! time alone.
//!
//! Accounting is exact: tokens are kept in thousandths (a ratio has three
//! decimals), the window is ten slots, and the whole bucket sits under one
//! mutex, so a withdrawal that checks the balance and takes from it is one
//! step and the balance never goes negative (tower checks and takes in two).
//! The mutex is taken only by calls of operations that declare `retry` on a
//! runtime that has a budget.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Tokens are counted in thousandths, so that `ratio = 0.001` is exact.
const MILLI: i64 = 1000;
/// The window is kept as this many slots; a token expires between
/// `window · (SLOTS-1)/SLOTS` and `window` after it was counted.
const SLOTS: usize = 10;

/// A runtime-wide limit on retries, so that a failing dependency is not
/// hammered by every caller's retries at once (a retry storm).
///
/// Give it to [`RuntimeBuilder::retry_budget`](crate::RuntimeBuilder). Every
/// first attempt of an operation that declares `retry` deposits `ratio`
/// tokens; every retry withdraws one token; `min_per_second × window` tokens
/// are always available on top; tokens expire after `window`. A retry that
/// finds less than one token is not made: the call returns its last error at
/// once (counted in `Stats::retries_denied`). First attempts are never
/// refused by the budget.
///
/// The defaults are tower's: `ratio` 0.2, `min_per_second` 10, `window` 10 s.
///
/// ```
/// use std::time::Duration;
/// use herta::RetryBudget;
///
/// // Retries at most 10% of recent calls, plus 5 retries per second always.
/// let budget = RetryBudget::new()
///     .ratio(0.1)
///     .min_per_second(5)
///     .window(Duration::from_secs(10));
/// assert_eq!(budget.reserve(), 50);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudget {
    ratio: f32,
    min_per_second: u32,
    window: Duration,
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget::new()
    }
}

impl RetryBudget {
    /// The default budget: `ratio` 0.2, `min_per_second` 10, `window` 10 s.
    pub const fn new() -> Self {
        RetryBudget {
            ratio: 0.2,
            min_per_second: 10,
            window: Duration::from_secs(10),
        }
    }

    /// Tokens each first attempt deposits: `0.1` allows one retry per ten
    /// calls, `2.0` two retries per call. Counted to three decimals.
    ///
    /// # Panics
    ///
    /// If `ratio` is not within `0.0..=1000.0` (Finagle's bounds) or is NaN.
    pub fn ratio(mut self, ratio: f32) -> Self {
        assert!(
            (0.0..=1000.0).contains(&ratio),
            "a retry budget's ratio must be within 0.0..=1000.0, got {ratio}"
        );
        self.ratio = ratio;
        self
    }

    /// Retries per second allowed whatever the traffic, so that a quiet
    /// runtime can still retry.
    pub fn min_per_second(mut self, min_per_second: u32) -> Self {
        self.min_per_second = min_per_second;
        self
    }

    /// How long a deposit or a withdrawal counts.
    ///
    /// # Panics
    ///
    /// If `window` is below 1 second or above 60 seconds (Finagle's bounds).
    pub fn window(mut self, window: Duration) -> Self {
        assert!(
            (Duration::from_secs(1)..=Duration::from_secs(60)).contains(&window),
            "a retry budget's window must be within 1 s..=60 s, got {window:?}"
        );
        self.window = window;
        self
    }

    /// The retries always available: `min_per_second × window` (in whole
    /// seconds, rounded down).
    pub fn reserve(&self) -> u64 {
        u64::from(self.min_per_second) * self.window.as_secs()
    }

    /// The tokens one first attempt deposits, in thousandths.
    fn deposit_milli(&self) -> i64 {
        (f64::from(self.ratio) * MILLI as f64).round() as i64
    }
}

/// The running account of a [`RetryBudget`].
#[derive(Debug)]
pub(crate) struct Bucket {
    deposit: i64,
    reserve: i64,
    slot_length: Duration,
    state: Mutex<Slots>,
}

#[derive(Debug)]
struct Slots {
    /// Net tokens (thousandths) counted in each slot; `current` is open.
    net: [i64; SLOTS],
    current: usize,
    /// When the open slot began.
    opened: Instant,
    /// Slots opened so far: a [`Token`] taken at `rotations = r` is still
    /// counted while `rotations < r + SLOTS`.
    rotations: u64,
}

/// One token withdrawn for a retry, to [`refund`](Bucket::refund) if the
/// retry never starts.
#[derive(Debug)]
pub(crate) struct Token {
    slot: usize,
    rotations: u64,
}

/// A token withdrawn for the next attempt: refunded when dropped, unless
/// [`spend`](Self::spend) said that attempt started.
#[derive(Debug)]
pub(crate) struct Withdrawal<'a> {
    bucket: &'a Bucket,
    token: Option<Token>,
}

impl Withdrawal<'_> {
    /// The attempt the token was withdrawn for starts: it is spent.
    pub(crate) fn spend(mut self) {
        self.token = None;
    }
}

impl Drop for Withdrawal<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            self.bucket.refund(token);
        }
    }
}

impl Bucket {
    pub(crate) fn new(budget: &RetryBudget) -> Self {
        Bucket {
            deposit: budget.deposit_milli(),
            reserve: i64::try_from(budget.reserve())
                .unwrap_or(i64::MAX / MILLI)
                .saturating_mul(MILLI),
            slot_length: budget.window / SLOTS as u32,
            state: Mutex::new(Slots {
                net: [0; SLOTS],
                current: 0,
                opened: Instant::now(),
                rotations: 0,
            }),
        }
    }

    /// A first attempt deposits `ratio` tokens.
    pub(crate) fn deposit(&self) {
        let mut slots = self.slots();
        let current = slots.current;
        slots.net[current] = slots.net[current].saturating_add(self.deposit);
    }

    /// A retry takes one token if the balance has one; `false` if not (the
    /// balance is unchanged).
    #[cfg(test)]
    pub(crate) fn withdraw(&self) -> bool {
        self.take().is_some()
    }

    /// A retry takes one token if the balance has one; `None` if not (the
    /// balance is unchanged).
    pub(crate) fn take(&self) -> Option<Token> {
        let mut slots = self.slots();
        let balance = slots
            .net
            .iter()
            .fold(self.reserve, |a, n| a.saturating_add(*n));
        if balance < MILLI {
            return None;
        }
        let current = slots.current;
        slots.net[current] -= MILLI;
        Some(Token {
            slot: current,
            rotations: slots.rotations,
        })
    }

    /// A token for the next attempt, refunded unless that attempt starts
    /// ([`Withdrawal::spend`]); `None` if the balance has none.
    pub(crate) fn withdrawal(&self) -> Option<Withdrawal<'_>> {
        self.take().map(|token| Withdrawal {
            bucket: self,
            token: Some(token),
        })
    }

    /// Gives back a token whose retry never started (the call was dropped,
    /// the runtime closed, or its budgets were busy after the sleep), unless
    /// the withdrawal has expired already: the account is then as if it had
    /// never been taken.
    pub(crate) fn refund(&self, token: Token) {
        let mut slots = self.slots();
        if slots.rotations - token.rotations < SLOTS as u64 {
            slots.net[token.slot] += MILLI;
        }
    }

    /// The whole tokens available now (for stats and tests).
    #[cfg(test)]
    pub(crate) fn balance(&self) -> i64 {
        let slots = self.slots();
        slots
            .net
            .iter()
            .fold(self.reserve, |a, n| a.saturating_add(*n))
            / MILLI
    }

    /// The slots with every slot older than `window` cleared.
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        let mut slots = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let elapsed = slots.opened.elapsed();
        if elapsed >= self.slot_length {
            let steps = elapsed.as_nanos() / self.slot_length.as_nanos();
            slots.rotations = slots
                .rotations
                .saturating_add(u64::try_from(steps).unwrap_or(u64::MAX));
            for _ in 0..steps.min(SLOTS as u128) {
                slots.current = (slots.current + 1) % SLOTS;
                let current = slots.current;
                slots.net[current] = 0;
            }
            let whole = self.slot_length * u32::try_from(steps).unwrap_or(u32::MAX);
            slots.opened += whole.min(elapsed);
        }
        slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(ratio: f32, min_per_second: u32) -> Bucket {
        Bucket::new(
            &RetryBudget::new()
                .ratio(ratio)
                .min_per_second(min_per_second)
                .window(Duration::from_secs(1)),
        )
    }

    #[test]
    fn an_empty_budget_denies_and_stays_at_zero() {
        let b = bucket(1.0, 0);
        assert!(!b.withdraw());
        assert!(!b.withdraw());
        assert_eq!(b.balance(), 0);
    }

    #[test]
    fn the_reserve_allows_min_per_second_times_window() {
        let b = bucket(0.0, 5);
        assert_eq!((0..10).filter(|_| b.withdraw()).count(), 5);
        assert_eq!(b.balance(), 0);
    }

    #[test]
    fn deposits_allow_ratio_retries_per_first_attempt() {
        let b = bucket(0.1, 0);
        (0..30).for_each(|_| b.deposit());
        assert_eq!((0..10).filter(|_| b.withdraw()).count(), 3);
        let b = bucket(2.0, 0);
        (0..3).for_each(|_| b.deposit());
        assert_eq!((0..10).filter(|_| b.withdraw()).count(), 6);
    }

    #[tokio::test(start_paused = true)]
    async fn deposits_expire_after_the_window() {
        let b = bucket(1.0, 0);
        b.deposit();
        tokio::time::advance(Duration::from_millis(3000)).await;
        assert!(!b.withdraw());
    }

    #[tokio::test(start_paused = true)]
    async fn a_deposit_counts_until_its_slot_leaves_the_window() {
        let b = bucket(0.5, 0);
        b.deposit();
        b.deposit();
        tokio::time::advance(Duration::from_millis(901)).await;
        assert!(b.withdraw(), "0.9 s later the deposits still count");
        tokio::time::advance(Duration::from_millis(2001)).await;
        b.deposit();
        tokio::time::advance(Duration::from_millis(301)).await;
        b.deposit();
        tokio::time::advance(Duration::from_millis(801)).await;
        b.deposit();
        // The first of these three has expired; the other two make one token.
        assert!(b.withdraw());
        assert!(!b.withdraw());
    }

    #[tokio::test(start_paused = true)]
    async fn an_emptied_budget_refills_with_time_alone() {
        let b = bucket(0.0, 3);
        assert_eq!((0..5).filter(|_| b.withdraw()).count(), 3);
        tokio::time::advance(Duration::from_millis(1000)).await;
        assert_eq!((0..5).filter(|_| b.withdraw()).count(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refund_restores_the_token_until_it_expires() {
        let b = bucket(0.0, 1);
        let token = b.take().expect("the reserve has one");
        assert!(b.take().is_none());
        b.refund(token);
        let token = b.take().expect("refunded");
        tokio::time::advance(Duration::from_millis(1001)).await;
        // Expired: the reserve is whole again, and the refund adds nothing.
        b.refund(token);
        assert_eq!(b.balance(), 1);
    }

    #[test]
    #[should_panic(expected = "within 1 s..=60 s")]
    fn a_window_outside_finagle_bounds_panics() {
        let _ = RetryBudget::new().window(Duration::from_millis(500));
    }

    #[test]
    #[should_panic(expected = "within 0.0..=1000.0")]
    fn a_nan_ratio_panics() {
        let _ = RetryBudget::new().ratio(f32::NAN);
    }
}
