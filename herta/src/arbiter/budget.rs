//! The lock-free part of a budget: one atomic word (free units and a
//! `SLOW` flag) on its own cache line; see the arbiter's module docs.

use super::needs::Need;
use crate::loom::{AtomicU32, AtomicU64, Ordering};

/// The word's flag: go through the lock.
pub(super) const SLOW: u64 = 1;
/// One unit in the word.
pub(super) const UNIT: u64 = 2;

/// The lock-free part of a budget, on its own cache line.
#[repr(align(128))]
pub(super) struct Budget {
    /// `free << 1 | SLOW`.
    pub(super) word: AtomicU64,
    pub(super) peak_in_use: AtomicU32,
    /// Units in all; changed only under the lock, with `SLOW` set (see
    /// `resize.rs`), so it is stable under the lock; a lock-free reader
    /// may see it change (see `note_peak`).
    pub(super) capacity: AtomicU32,
    /// Its `herta_budget_in_use`, `herta_budget_waiting` and
    /// `herta_budget_capacity` gauges, moved on every change (feature
    /// `metrics`; set by `Arbiter::gauges`).
    #[cfg(feature = "metrics")]
    pub(super) gauges: Option<crate::metrics::BudgetGauges>,
    /// A rate budget's period and count (`rate.rs`); `None` for a
    /// concurrency budget.
    pub(super) rate: Option<super::rate::Rate>,
    /// The flag that sends this budget's calls through the lock: `SLOW`
    /// for a concurrency budget, `rate::LOCKED` for a rate budget (whose
    /// word always has `SLOW` set, so that the concurrency fast paths
    /// never take it; see `rate.rs`).
    pub(super) lock_bit: u64,
    /// A rate budget's units granted so far (less refunds).
    pub(super) granted: AtomicU64,
}

pub(super) enum Fast {
    Taken,
    /// Short of units, and no waiter needs the budget.
    Short,
    /// `SLOW` is set: take the lock.
    Slow,
}

/// How a lock-free take of several budgets went ([`try_take_all_fast`]).
pub(super) enum FastAll {
    /// Every need taken.
    Taken,
    /// Short of units on this budget (by index), which no waiter needs;
    /// nothing taken.
    Short(usize),
    /// A budget is `SLOW`; nothing taken: take the lock.
    Slow,
    /// The first `n` needs were taken, then a budget turned short or `SLOW`
    /// under a concurrent caller: give those back, then take the lock.
    Raced(usize),
}

/// Takes every need of a multi-budget call without the lock, when no budget
/// it needs is `SLOW` (no waiter needs it) and each has the units. It looks
/// at every word first, so that a call short of a unit, or one that must
/// take the lock, takes nothing; then takes them one by one in the needs'
/// (index) order, so a partial take exists only while another caller races
/// it between the look and the take.
#[inline]
pub(super) fn try_take_all_fast(budgets: &[Budget], needs: &[Need]) -> FastAll {
    for n in needs {
        let word = budgets[n.resource].word.load(Ordering::Relaxed);
        if word & SLOW != 0 {
            return FastAll::Slow;
        }
        if word < u64::from(n.units) * UNIT {
            return FastAll::Short(n.resource);
        }
    }
    for (taken, n) in needs.iter().enumerate() {
        if !matches!(budgets[n.resource].try_take_fast(n.units), Fast::Taken) {
            return FastAll::Raced(taken);
        }
    }
    FastAll::Taken
}

impl Budget {
    /// `units` were taken (`taken`) or given back: moves the in-use gauge.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    fn gauge_in_use(&self, units: u32, taken: bool) {
        #[cfg(feature = "metrics")]
        if let Some(g) = &self.gauges {
            g.in_use(units, taken);
        }
    }

    /// A waiter joined (`queued`) or left this budget's queue: moves the
    /// waiting gauge.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(super) fn gauge_waiting(&self, queued: bool) {
        #[cfg(feature = "metrics")]
        if let Some(g) = &self.gauges {
            g.waiting(queued);
        }
    }

    /// A rate budget's bucket holds `units()` after a grant: sets the
    /// available gauge (`units` is computed only if there is one).
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(super) fn gauge_available(&self, units: impl FnOnce() -> u64) {
        #[cfg(feature = "metrics")]
        if let Some(g) = &self.gauges {
            g.available(units());
        }
    }

    /// The capacity changed: moves the capacity gauge.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(super) fn gauge_capacity(&self, capacity: u32) {
        #[cfg(feature = "metrics")]
        if let Some(g) = &self.gauges {
            g.capacity(capacity);
        }
    }

    /// Free units. Stable under the lock while `SLOW` is set.
    pub(super) fn free(&self) -> u32 {
        (self.word.load(Ordering::Acquire) >> 1) as u32
    }

    /// Units in all. Stable under the lock.
    #[inline]
    pub(super) fn capacity(&self) -> u32 {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Raises the peak to the units in use after a take left `word_after`.
    ///
    /// A lock-free take reads the capacity after its CAS, so a resize that
    /// lands in between makes `in_use` off by the resize's change: after a
    /// shrink it may wrap below zero (then it is above the capacity and
    /// dropped, on the rare branch that raises the peak), after a growth it
    /// may exceed the units truly held, never the new capacity. Under the
    /// lock the capacity is stable and the figure exact.
    #[inline]
    pub(super) fn note_peak(&self, word_after: u64) {
        let in_use = self.capacity().wrapping_sub((word_after >> 1) as u32);
        if in_use > self.peak_in_use.load(Ordering::Relaxed) && in_use <= self.capacity() {
            self.peak_in_use.fetch_max(in_use, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(super) fn try_take_fast(&self, units: u32) -> Fast {
        let need = u64::from(units) * UNIT;
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            if cur & SLOW != 0 {
                return Fast::Slow;
            }
            if cur < need {
                return Fast::Short;
            }
            match self
                .word
                .compare_exchange(cur, cur - need, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.note_peak(cur - need);
                    self.gauge_in_use(units, true);
                    return Fast::Taken;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Gives units back without the lock; false if `SLOW` is set.
    #[inline]
    pub(super) fn try_give_fast(&self, units: u32) -> bool {
        let give = u64::from(units) * UNIT;
        let mut cur = self.word.load(Ordering::Relaxed);
        loop {
            if cur & SLOW != 0 {
                return false;
            }
            match self
                .word
                .compare_exchange(cur, cur + give, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.gauge_in_use(units, false);
                    return true;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Under the lock, with `SLOW` set.
    pub(super) fn take_locked(&self, units: u32) {
        let before = self
            .word
            .fetch_sub(u64::from(units) * UNIT, Ordering::AcqRel);
        self.note_peak(before - u64::from(units) * UNIT);
        self.gauge_in_use(units, true);
    }

    /// Under the lock (`SLOW` may be clear: the add is atomic either way):
    /// `units` are no longer held, of which `credit` become free again (the
    /// rest repaid a shrink's debt, see `resize.rs`).
    pub(super) fn give_locked(&self, units: u32, credit: u32) {
        let before = self
            .word
            .fetch_add(u64::from(credit) * UNIT, Ordering::AcqRel);
        debug_assert!(
            ((before >> 1) + u64::from(credit)) <= u64::from(self.capacity()),
            "released more units than held"
        );
        self.gauge_in_use(units, false);
    }

    pub(super) fn freeze(&self) {
        self.word.fetch_or(self.lock_bit, Ordering::AcqRel);
    }

    pub(super) fn thaw(&self) {
        self.word.fetch_and(!self.lock_bit, Ordering::AcqRel);
    }
}
