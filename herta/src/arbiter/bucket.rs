//! A rate budget's bucket operations on its word ([`Budget`]) and the
//! arbiter's rate paths: the lock-free grant, the refusal's retry-after,
//! the readiness a bounded wait checks (see `rate.rs` for the bucket).

use std::time::Duration;

use tokio::time::Instant;

use super::budget::{Budget, Fast, FastAll, SLOW};
use super::needs::Needs;
use super::permits::{Arbiter, Packed, TryAcquireError};
#[cfg(all(test, not(loom)))]
use super::rate::LIMIT;
use super::rate::{Now, Rate, Ticks, LOCKED, SHIFT};
use crate::loom::Ordering;

impl Budget {
    /// Takes `units` of a rate budget without the lock, at `now` (ns on the
    /// arbiter's clock): one compare-and-swap on the word.
    #[inline]
    pub(super) fn try_take_rate(&self, rate: &Rate, units: u32, now: u64) -> Fast {
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            if cur & LOCKED != 0 {
                return Fast::Slow;
            }
            // A tick past the limit: the lock moves the base first.
            let Some(s) = rate.tick(now) else {
                return Fast::Slow;
            };
            let Ticks { per_unit, full } = rate.ticks();
            let next = (cur >> SHIFT)
                .max(s)
                .saturating_add(per_unit.saturating_mul(u64::from(units)));
            if next > s + full {
                return Fast::Short;
            }
            match self.word.compare_exchange_weak(
                cur,
                (next << SHIFT) | (cur & (LOCKED | SLOW)),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.granted.fetch_add(u64::from(units), Ordering::Relaxed);
                    self.gauge_available(|| (s + full - next) / per_unit);
                    return Fast::Taken;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Units a rate budget holds at `now` (at most its burst).
    #[inline]
    pub(super) fn rate_room(&self, rate: &Rate, now: u64) -> u32 {
        let x = u128::from(self.word.load(Ordering::Acquire) >> SHIFT);
        let s = rate.wide_tick(now);
        let Ticks { per_unit, full } = rate.ticks();
        let room = (s + u128::from(full)).saturating_sub(x.max(s)) / u128::from(per_unit);
        u32::try_from(room).unwrap_or(u32::MAX)
    }

    /// Units this budget can grant now: free units, or a rate budget's.
    #[inline]
    pub(super) fn room(&self, now: &mut Now<'_>) -> u32 {
        match &self.rate {
            None => self.free(),
            Some(rate) => self.rate_room(rate, now.ns()),
        }
    }

    /// Takes `units` under the lock (`LOCKED` or `SLOW` set, room checked).
    pub(super) fn take_at(&self, units: u32, now: &mut Now<'_>) {
        match &self.rate {
            None => self.take_locked(units),
            Some(rate) => {
                let now = now.ns();
                let s = self.rebased(rate, now);
                let word = self.word.load(Ordering::Acquire);
                let Ticks { per_unit, full } = rate.ticks();
                let next = (word >> SHIFT)
                    .max(s)
                    .saturating_add(per_unit.saturating_mul(u64::from(units)));
                debug_assert!(next <= s + full, "room checked");
                self.gauge_available(|| (s + full).saturating_sub(next) / per_unit);
                self.word.store(
                    (next << SHIFT) | (word & (LOCKED | SLOW)),
                    Ordering::Release,
                );
                self.granted.fetch_add(u64::from(units), Ordering::Relaxed);
            }
        }
    }

    /// The tick at `now`, the base moved to `now` first if the tick is
    /// past [`LIMIT`](super::rate::LIMIT) (under the lock, `LOCKED` set):
    /// the bucket keeps exactly what it holds, `x` less the ticks the base
    /// moved by (the bucket full if `x` was earlier than that).
    fn rebased(&self, rate: &Rate, now: u64) -> u64 {
        // A reading older than the base (taken before the lock, the base
        // moved since) is the base's instant: the base never moves back.
        let now = now.max(rate.base());
        if let Some(s) = rate.tick(now) {
            return s;
        }
        let word = self.word.load(Ordering::Acquire);
        debug_assert!(word & LOCKED != 0, "under the lock, frozen");
        let x = u128::from(word >> SHIFT);
        let ahead = x.saturating_sub(rate.wide_tick(now));
        rate.set_base(now);
        let x = u64::try_from(ahead).expect("x is at most a bucket ahead of now");
        self.word
            .store((x << SHIFT) | (word & (LOCKED | SLOW)), Ordering::Release);
        0
    }

    /// Gives back `units` of a rate budget granted to a call that never
    /// used them (a waiter dropped before it saw its grant, a partial
    /// take): atomic, with or without the lock.
    pub(super) fn refund_rate(&self, units: u32) {
        let rate = self.rate.as_ref().expect("a refund of a rate budget");
        let ticks = rate.ticks().per_unit.saturating_mul(u64::from(units));
        let mut cur = self.word.load(Ordering::Acquire);
        loop {
            let x = (cur >> SHIFT).saturating_sub(ticks);
            match self.word.compare_exchange_weak(
                cur,
                (x << SHIFT) | (cur & (LOCKED | SLOW)),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.granted.fetch_sub(u64::from(units), Ordering::Relaxed);
                    return;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// The first instant (ns on the arbiter's clock, at least `now`) at
    /// which a rate budget has `units`, if no one else takes any meanwhile;
    /// `u64::MAX` if a full bucket is too shallow for them.
    pub(super) fn rate_ready_at(&self, rate: &Rate, units: u32, now: u64) -> u64 {
        self.rate_ready_after(rate, 0, units, now)
    }

    /// The first instant (as [`rate_ready_at`](Self::rate_ready_at)) at
    /// which a grant of `units` could follow grants of `ahead` units, each
    /// taken as soon as its units exist; `u64::MAX` if a full bucket is too
    /// shallow for `units`.
    pub(super) fn rate_ready_after(&self, rate: &Rate, ahead: u64, units: u32, now: u64) -> u64 {
        let Ticks { per_unit, full } = rate.ticks();
        let (per_unit, full) = (u128::from(per_unit), u128::from(full));
        if per_unit * u128::from(units) > full {
            return u64::MAX;
        }
        let x = u128::from(self.word.load(Ordering::Acquire) >> SHIFT);
        // The first tick with `max(x, s) + cost <= s + full`, for all the
        // units in turn.
        let cost = per_unit * (u128::from(ahead) + u128::from(units));
        let at = (x + cost).saturating_sub(full);
        if at <= rate.wide_tick(now) {
            return now;
        }
        rate.ns_of(at).max(now)
    }

    /// Sets a rate budget's rate and burst, under the lock with `LOCKED`
    /// set: the whole units it holds now are kept (at most the new burst),
    /// and from now on they accrue at the new rate.
    pub(super) fn set_rate(&self, rate: &Rate, count: u32, period: Duration, burst: u32, now: u64) {
        let word = self.word.load(Ordering::Acquire);
        debug_assert!(word & LOCKED != 0, "under the lock, frozen");
        let room = self.rate_room(rate, now).min(burst);
        rate.set(count, period, burst, now);
        self.capacity.store(burst, Ordering::Relaxed);
        // Ticks count from now: `room` units short of full.
        let Ticks { per_unit, full } = rate.ticks();
        let x = full.saturating_sub(per_unit.saturating_mul(u64::from(room)));
        self.word
            .store((x << SHIFT) | (word & (LOCKED | SLOW)), Ordering::Release);
        self.gauge_capacity(burst);
    }
}

impl Arbiter {
    /// The clock of this arbiter's rate budgets, read when first needed.
    #[inline]
    pub(super) fn now(&self) -> Now<'_> {
        Now::lazy(&self.clock)
    }

    /// `try_acquire` of a one-budget list whose budget's word looks `SLOW`
    /// (a rate budget's always does): a rate budget's units with one clock
    /// read and one CAS, else the lock. Called straight from the inlined
    /// `try_acquire`, in a function of its own (the general one's frame
    /// costs more than this whole path); the clock is read only once the
    /// budget is known to be a rate budget.
    ///
    /// `#[cold]` as the lock path it replaces was: the concurrency path's
    /// caller stays small enough to inline. The result comes [`Packed`]
    /// in one register.
    #[cold]
    #[inline(never)]
    pub(super) fn try_acquire_one_slow(&self, needs: &Needs) -> Packed {
        let n = needs.list[0];
        let b = &self.budgets[n.resource];
        let Some(rate) = &b.rate else {
            return Packed::new(self.try_acquire_locked_at(needs, self.now()));
        };
        let t = self.clock.now();
        match b.try_take_rate(rate, n.units, t) {
            Fast::Taken => Packed::new(Ok(0)),
            Fast::Short => Packed::new(Err(TryAcquireError::Busy(n.resource))),
            Fast::Slow => Packed::new(self.try_acquire_locked_at(needs, Now::at(&self.clock, t))),
        }
    }

    /// `try_acquire` of a list naming a rate budget: lock-free while no
    /// waiter needs any of its budgets, with one clock read; else under the
    /// lock. The grant's stamp (0: lock-free).
    ///
    /// It looks at every rate budget first (one `LOCKED`: the lock; one
    /// short: busy, nothing taken), takes the concurrency part as
    /// `try_acquire_several` does, then each rate budget's units; a rate
    /// budget that turns short or `LOCKED` under a racing caller makes it
    /// give back what it took (refunding the rate units) and take the lock,
    /// or report it busy.
    #[inline(never)]
    pub(super) fn try_acquire_rate(&self, needs: &Needs) -> Result<u64, TryAcquireError> {
        let mut now = self.now();
        let t = now.ns();
        let rate = needs.rate();
        for n in rate {
            let b = &self.budgets[n.resource];
            let r = b.rate.as_ref().expect("a rate need names a rate budget");
            if b.word.load(Ordering::Relaxed) & LOCKED != 0 {
                return self.try_acquire_locked_at(needs, now);
            }
            if b.rate_room(r, t) < n.units {
                return Err(TryAcquireError::Busy(n.resource));
            }
        }
        let held = &needs.held[..];
        match super::budget::try_take_all_fast(&self.budgets, held) {
            FastAll::Taken => {}
            FastAll::Short(busy) => return Err(TryAcquireError::Busy(busy)),
            FastAll::Raced(taken) => {
                self.release(&held[..taken], 0);
                return self.try_acquire_locked_at(needs, now);
            }
            FastAll::Slow => return self.try_acquire_locked_at(needs, now),
        }
        for (i, n) in rate.iter().enumerate() {
            let b = &self.budgets[n.resource];
            let r = b.rate.as_ref().expect("a rate need names a rate budget");
            match b.try_take_rate(r, n.units, t) {
                Fast::Taken => {}
                outcome => {
                    for m in &rate[..i] {
                        self.budgets[m.resource].refund_rate(m.units);
                    }
                    self.release(held, 0);
                    if let Fast::Short = outcome {
                        return Err(TryAcquireError::Busy(n.resource));
                    }
                    return self.try_acquire_locked_at(needs, now);
                }
            }
        }
        Ok(0)
    }

    /// How long until the rate budgets of `needs` have the call's units
    /// after those of the waiters queued for them (the longest of them);
    /// `None` when `needs` names none, or they would have them now.
    pub(crate) fn rate_retry_after(&self, needs: &Needs) -> Option<Duration> {
        if !needs.has_rate() {
            return None;
        }
        let state = self.lock();
        let now = self.now().ns();
        let at = needs
            .rate()
            .iter()
            .map(|n| {
                let b = &self.budgets[n.resource];
                let rate = b.rate.as_ref().expect("a rate need names a rate budget");
                let ahead = state.track[n.resource].queued_units;
                b.rate_ready_after(rate, ahead, n.units, now)
            })
            .max()
            .unwrap_or(now);
        (at > now).then(|| Duration::from_nanos(at - now))
    }

    /// Whether the rate budgets of `needs` cannot have the call's units,
    /// after those of the calls queued for them (each taken as soon as it
    /// exists), by `until`: then how long until they do (`None`: never,
    /// or beyond the clock's range) and the first budget that is last to
    /// have them. `None` when they can, or `needs` names no rate budget.
    /// The comparison is in nanoseconds, unclamped, so units centuries
    /// away are late for any deadline. A call queued ahead that leaves
    /// makes the units exist sooner.
    pub(crate) fn rate_late(
        &self,
        needs: &Needs,
        until: Instant,
    ) -> Option<(Option<Duration>, usize)> {
        let (at, short) = self.rate_ready(needs)?;
        let now = self.clock.now();
        let late = at == u64::MAX || at > self.clock.ns_at(until);
        late.then(|| {
            let after = (at != u64::MAX).then(|| Duration::from_nanos(at - now.min(at)));
            (after, short)
        })
    }

    /// The instant (ns on the arbiter's clock, `u64::MAX`: never) at which
    /// every rate budget of `needs` has the call's units after those of
    /// the calls queued for them, with the first budget that is last to
    /// have them; `None` when they all have them now or `needs` names no
    /// rate budget.
    fn rate_ready(&self, needs: &Needs) -> Option<(u64, usize)> {
        let state = self.lock();
        let now = self.now().ns();
        let mut latest: Option<(u64, usize)> = None;
        for n in needs.rate() {
            let b = &self.budgets[n.resource];
            let rate = b.rate.as_ref().expect("a rate need names a rate budget");
            let ahead = state.track[n.resource].queued_units;
            let at = b.rate_ready_after(rate, ahead, n.units, now);
            if at > now && latest.is_none_or(|(l, _)| at > l) {
                latest = Some((at, n.resource));
            }
        }
        latest
    }

    /// Whether the budget at `resource` is a rate budget.
    pub(crate) fn is_rate(&self, resource: usize) -> bool {
        self.budgets[resource].rate.is_some()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::permits::Kind;
    use super::*;

    const MS: u64 = 1_000_000;
    const SEC: u64 = 1_000_000_000;

    fn rate_budget(count: u32, period: Duration, burst: u32) -> Arbiter {
        Arbiter::with_kinds([Kind::Rate {
            count,
            period,
            burst,
        }])
    }

    /// Takes units one by one at `t` until the bucket is short.
    fn drain(b: &Budget, rate: &Rate, t: u64) -> u64 {
        let mut taken = 0;
        while let Fast::Taken = b.try_take_rate(rate, 1, t) {
            taken += 1;
        }
        taken
    }

    /// The any-window bound across a burst from a full bucket taken between
    /// two of the rate's unit instants: 5 units at 190 ms of a `5 per 1s`
    /// budget, then none before 390 ms (`burst + count × T / period` for
    /// T = 10 ms is 5.05): the accrual restarts at 190 ms, phase included.
    #[test]
    fn a_burst_from_a_full_bucket_between_accrual_instants_holds_the_any_window_bound() {
        let arb = rate_budget(5, Duration::from_secs(1), 5);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        assert_eq!(drain(b, rate, 190 * MS), 5);
        assert_eq!(drain(b, rate, 200 * MS), 0, "6 units within 10 ms");
        assert_eq!(drain(b, rate, 390 * MS - 1), 0);
        assert_eq!(b.rate_ready_at(rate, 1, 200 * MS), 390 * MS);
        assert_eq!(drain(b, rate, 390 * MS), 1);
        assert_eq!(drain(b, rate, 590 * MS), 1);
    }

    /// The bound over every window, at every nanosecond a unit could be
    /// granted, for a rate whose unit is not a whole number of ns (7 per
    /// second, burst 3), drawn at irregular instants.
    #[test]
    fn every_window_holds_the_bound() {
        let arb = rate_budget(7, Duration::from_secs(1), 3);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        let mut grants = Vec::new();
        let mut t = 0;
        for step in 0..2_000u64 {
            t += (step * 7_919 % 311) * MS / 3 + 1;
            for _ in 0..drain(b, rate, t) {
                grants.push(t);
            }
        }
        assert!(grants.len() > 500, "{} grants", grants.len());
        for (i, &from) in grants.iter().enumerate() {
            for (j, &to) in grants.iter().enumerate().skip(i) {
                // Units granted in [from, to]: at most 3 + 7 × (to - from) / 1 s.
                let bound = 3 + 7 * (to - from) / SEC;
                assert!(
                    (j - i + 1) as u64 <= bound,
                    "{} in [{from}, {to}]",
                    j - i + 1
                );
                if (j - i) as u64 > bound + 1 {
                    break;
                }
            }
        }
    }

    #[test]
    fn no_drift_over_a_million_periods() {
        let arb = rate_budget(3, Duration::from_secs(1), 3);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        // The full bucket at 0, then all that accrued by the end of each period.
        let mut granted = drain(b, rate, 0);
        for k in 0..1_000_000u64 {
            // The last nanosecond of period k: 3k + 2 units accrued.
            granted += drain(b, rate, k * SEC + 999_999_999);
        }
        // burst + count × T / period, T the last instant: exactly.
        assert_eq!(granted, 3 + 3 * 999_999 + 2);
        assert_eq!(b.granted.load(Ordering::Relaxed), granted);
    }

    #[test]
    fn a_unit_exists_at_its_instant_and_not_a_nanosecond_before() {
        let arb = rate_budget(7, Duration::from_secs(1), 1);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        for t in [0u64, SEC + 1, 3 * SEC - 1, 7 * SEC + 3, 86_400 * SEC] {
            // A full bucket of one drawn at `t`: the next unit exists a
            // seventh of a second later, to the first whole nanosecond.
            assert_eq!(drain(b, rate, t), 1);
            let at = t + SEC.div_ceil(7);
            assert_eq!(b.rate_ready_at(rate, 1, t), at);
            assert!(matches!(b.try_take_rate(rate, 1, at - 1), Fast::Short));
            assert!(matches!(b.try_take_rate(rate, 1, at), Fast::Taken));
            // Then full again a unit later.
            assert_eq!(b.rate_ready_at(rate, 1, at), at + SEC.div_ceil(7));
        }
    }

    #[test]
    fn ticks_past_the_limit_move_the_base_under_the_lock_keeping_the_bucket() {
        // A rate whose tick passes the limit after 2^61 / 999 983 ns (38 min).
        let arb = rate_budget(999_983, Duration::from_secs(1), 4);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        let late = 3_600 * SEC;
        assert_eq!(drain(b, rate, 1_000 * SEC), 4);
        assert!(matches!(b.try_take_rate(rate, 1, late), Fast::Slow));
        // Under the lock: a grant moves the base, then takes.
        b.freeze();
        assert_eq!(b.rate_room(rate, late), 4);
        b.take_at(3, &mut Now::at(&arb.clock, late));
        b.thaw();
        assert_eq!(b.rate_room(rate, late), 1);
        // A reading older than the new base takes the lock, where it reads
        // as the base's instant.
        assert!(matches!(b.try_take_rate(rate, 1, late - 1), Fast::Slow));
        b.freeze();
        b.take_at(1, &mut Now::at(&arb.clock, late - 1));
        b.refund_rate(1);
        b.thaw();
        assert_eq!(drain(b, rate, late), 1);
        // One unit a 999 983rd of a second later, exactly.
        let next = late + SEC.div_ceil(999_983);
        assert_eq!(b.rate_ready_at(rate, 1, late), next);
        assert_eq!(drain(b, rate, next - 1), 0);
        assert_eq!(drain(b, rate, next), 1);
    }

    #[test]
    fn huge_periods_and_gaps_saturate_and_never_run_backwards() {
        let arb = rate_budget(u32::MAX, Duration::MAX, u32::MAX);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        // A bucket is at most 2^61 ticks deep: here about 2^29 units.
        let room = b.rate_room(rate, 0);
        assert_eq!(u64::from(room), LIMIT / (u64::from(u32::MAX) + 2));
        assert!(matches!(b.try_take_rate(rate, room, 0), Fast::Taken));
        assert_eq!(b.rate_room(rate, 0), 0);
        assert_eq!(b.rate_ready_at(rate, room + 1, 0), u64::MAX);
        let arb = rate_budget(1, Duration::from_nanos(1), 2);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        b.freeze();
        b.take_at(2, &mut Now::at(&arb.clock, u64::MAX));
        b.thaw();
        assert_eq!(b.rate_room(rate, u64::MAX), 0);
        assert_eq!(b.rate_ready_at(rate, 1, u64::MAX), u64::MAX);
        // An earlier clock reading sees no more units than a later one did.
        assert_eq!(b.rate_room(rate, 0), 0);
    }

    /// A bucket `LIMIT` ticks deep drawn at the last tick before the base
    /// must move: its arrival time stays within the word (it once wrapped
    /// to 0 there, a full bucket again).
    #[test]
    fn the_deepest_bucket_drawn_at_the_limit_stays_drawn() {
        for t in [LIMIT - 1, LIMIT, LIMIT + 1] {
            let arb = rate_budget(1, Duration::MAX, 1);
            let b = &arb.budgets[0];
            let rate = b.rate.as_ref().unwrap();
            assert_eq!(rate.ticks().full, LIMIT);
            b.freeze();
            let mut now = Now::at(&arb.clock, t);
            if b.room(&mut now) == 1 {
                b.take_at(1, &mut now);
            }
            b.thaw();
            assert_eq!(b.rate_room(rate, t), 0, "at {t}");
            assert!(matches!(
                b.try_take_rate(rate, 1, t),
                Fast::Short | Fast::Slow
            ));
        }
    }

    #[test]
    fn units_after_those_queued_ahead_exist_in_turn_beyond_the_burst() {
        let arb = rate_budget(5, Duration::from_secs(1), 2);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        assert_eq!(drain(b, rate, 0), 2);
        // 7 units queued ahead (more than the burst), then 1: the 8th unit
        // after the bucket was drawn empty, 8 × 200 ms later.
        assert_eq!(b.rate_ready_after(rate, 7, 1, 0), 1_600 * MS);
        assert_eq!(b.rate_ready_after(rate, 0, 1, 0), 200 * MS);
        // A grant larger than the burst never exists.
        assert_eq!(b.rate_ready_after(rate, 0, 3, 0), u64::MAX);
    }

    #[test]
    fn a_refund_gives_back_exactly_what_was_taken() {
        let arb = rate_budget(10, Duration::from_secs(1), 5);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        assert!(matches!(b.try_take_rate(rate, 4, 0), Fast::Taken));
        b.refund_rate(4);
        assert_eq!(b.rate_room(rate, 0), 5);
        assert_eq!(b.granted.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_new_rate_keeps_the_whole_units_held() {
        let arb = rate_budget(5, Duration::from_secs(1), 5);
        let b = &arb.budgets[0];
        let rate = b.rate.as_ref().unwrap();
        assert!(matches!(b.try_take_rate(rate, 3, 100 * MS), Fast::Taken));
        b.freeze();
        b.set_rate(rate, 2, Duration::from_secs(1), 4, 100 * MS);
        b.thaw();
        assert_eq!(b.rate_room(rate, 100 * MS), 2);
        assert_eq!(b.rate_ready_at(rate, 3, 100 * MS), 600 * MS);
        assert_eq!(rate.of(), (2, Duration::from_secs(1)));
    }
}
