//! Live capacity: a budget's capacity and queue limit changed while calls
//! run, and the needs of bound operations, which bound how far a capacity
//! may shrink.
//!
//! # Capacity
//!
//! A resize never revokes a unit, so after a shrink a budget may have more
//! units in use than its capacity. Its *signed free count*, `capacity -
//! in_use`, is then negative: the word keeps its positive part (the free
//! units) and `Track::debt` its negative part, so `in_use = capacity -
//! free + debt` always, and at most one of `free` and `debt` is not 0.
//!
//! A resize works under the lock:
//!
//! 1. it sets `SLOW` on the budget, so the word is stable: a lock-free take
//!    or give that raced it fails its CAS and takes the lock;
//! 2. it moves the signed free count by the change of capacity (units in
//!    use stay as they are) and stores the capacity;
//! 3. if waiters need the budget, it runs a grant pass: after a growth it
//!    grants them at once, in queue order and under the fairness rules
//!    (a waiter short of units blocks the budget for the later ones, so a
//!    2-unit waiter ahead of 1-unit ones keeps its turn); after a shrink
//!    it grants nothing and recomputes the `blocked` flags. Otherwise it
//!    clears `SLOW` again, unless a debt remains (or the arbiter is closed).
//!
//! While a debt remains, `free` is 0, so nothing is granted, and `SLOW`
//! stays set, so every take and release of the budget goes through the
//! lock; each release repays the debt before it frees a unit
//! (`Track::repay`), and the release that repays the last of it clears
//! `SLOW` if no waiter needs the budget. So no call is granted until
//! `in_use + units <= capacity`, every release is credited against the
//! budget as it is when it runs, and any sequence of resizes under load
//! leaves, once every call has ended, exactly `capacity` free units.
//!
//! A budget never resized never owes: its lock-free paths are those of a
//! fixed budget. The capacity is an atomic read only where the units in
//! use are computed (the peak; see `Budget::note_peak`).
//!
//! # Bound needs
//!
//! Binding an operation registers, per budget, the most units a bound
//! operation needs ([`Largest`]), under the same lock as a resize. A
//! shrink below it is refused, so no queued or future call can become
//! ungrantable; a bind that needs more than the capacity now is refused.
//! Registrations last as long as the arbiter (operations may be bound
//! again at any time, and the table of need lists lasts as long).

use super::budget::{Budget, SLOW, UNIT};
use super::needs::{Largest, Need, Needs};
use super::permits::{sorted, Arbiter};
use crate::loom::Ordering;
use crate::waiters::WakeList;

/// A bind refused: a need above the budget's capacity now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AboveCapacity {
    /// The budget, by index.
    pub(crate) resource: usize,
    /// The units needed.
    pub(crate) units: u32,
    /// Its capacity now.
    pub(crate) capacity: u32,
}

/// A shrink refused: a bound operation needs more units than the new
/// capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BelowNeed {
    /// The first operation bound with the largest need.
    pub(crate) operation: &'static str,
    /// Its units.
    pub(crate) units: u32,
}

/// What a resize changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resized {
    /// The capacity before.
    pub(crate) before: u32,
    /// Units in use at the change (a resize does not change them).
    pub(crate) in_use: u32,
}

impl Budget {
    /// Sets the free count, under the lock with `SLOW` set (kept set).
    fn set_free(&self, free: u32) {
        debug_assert!(self.word.load(Ordering::Relaxed) & SLOW != 0);
        self.word
            .store((u64::from(free) * UNIT) | SLOW, Ordering::Release);
    }
}

impl Arbiter {
    /// The capacity of the budget at `resource` now.
    pub(crate) fn capacity(&self, resource: usize) -> u32 {
        self.budgets[resource].capacity()
    }

    /// The arbiter's handle on an operation's `list` (each budget once),
    /// registering its needs (see the module docs); `Err` when a need is
    /// above its budget's capacity now.
    ///
    /// # Panics
    ///
    /// As [`Arbiter::intern`]: at the 65 537th distinct need list.
    pub(crate) fn bind(
        &self,
        operation: &'static str,
        list: Vec<Need>,
    ) -> Result<Needs, AboveCapacity> {
        let list = sorted(&self.budgets, list);
        let mut state = self.lock();
        let above = list.iter().find_map(|n| {
            let capacity = self.budgets[n.resource].capacity();
            (n.units > capacity).then_some(AboveCapacity {
                resource: n.resource,
                units: n.units,
                capacity,
            })
        });
        if let Some(above) = above {
            return Err(above);
        }
        let needs = Self::intern(&mut state, &self.budgets, list);
        for n in needs.iter() {
            let largest = &mut state.track[n.resource].largest;
            if n.units > largest.units {
                *largest = Largest {
                    units: n.units,
                    operation,
                };
            }
        }
        Ok(needs)
    }

    /// Sets the capacity of the budget at `resource` (at least 1, checked
    /// by the caller), without waiting: grants the waiters a growth lets
    /// through, revokes nothing (see the module docs).
    ///
    /// # Errors
    ///
    /// [`BelowNeed`] when a bound operation needs more than `capacity`;
    /// nothing changed then.
    pub(crate) fn set_capacity(
        &self,
        resource: usize,
        capacity: u32,
    ) -> Result<Resized, BelowNeed> {
        let mut wake = WakeList::new();
        let resized = {
            let mut state = self.lock();
            let st = &mut *state;
            let (t, b) = (&mut st.track[resource], &self.budgets[resource]);
            if capacity < t.largest.units {
                return Err(BelowNeed {
                    operation: t.largest.operation,
                    units: t.largest.units,
                });
            }
            b.freeze();
            let (before, in_use) = (b.capacity(), t.in_use(b));
            let free = i64::from(capacity) - i64::from(in_use);
            t.debt = u32::try_from(-free).unwrap_or(0);
            b.set_free(u32::try_from(free).unwrap_or(0));
            b.capacity.store(capacity, Ordering::Relaxed);
            b.gauge_capacity(capacity);
            if t.waiting > 0 {
                st.pass(&self.budgets, &mut wake, &mut self.now());
            } else if t.debt == 0 && !st.closed {
                b.thaw();
            }
            Resized { before, in_use }
        };
        wake.wake_all();
        Ok(resized)
    }

    /// Sets the queue limit of the budget at `resource` (`None`: no limit;
    /// at least 1, checked by the caller); the limit before. It applies to
    /// the next call that would queue: no queued call is evicted, so the
    /// queue may stay longer than a lowered limit until it drains.
    pub(crate) fn set_queue_limit(&self, resource: usize, limit: Option<u32>) -> Option<u32> {
        let mut state = self.lock();
        let t = &mut state.track[resource];
        let before = t.queue_limit;
        t.queue_limit = limit.unwrap_or(u32::MAX);
        (before != u32::MAX).then_some(before)
    }
}

/// A rate budget's settings at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateSettings {
    /// Units per period.
    pub(crate) count: u32,
    /// The period.
    pub(crate) period: std::time::Duration,
    /// The most units at once.
    pub(crate) burst: u32,
}

impl Arbiter {
    /// Sets the rate and burst of the rate budget at `resource` (count and
    /// burst at least 1, period not zero, checked by the caller), without
    /// waiting; the settings before. The units the bucket holds now are
    /// kept (at most the new burst); they accrue at the new rate from now
    /// on. Waiters are looked at again at once (a faster rate or a larger
    /// burst may grant some, and their heads re-arm their timers).
    ///
    /// # Errors
    ///
    /// [`BelowNeed`] when a bound operation needs more units per call than
    /// `burst`; nothing changed then.
    ///
    /// # Panics
    ///
    /// If the budget at `resource` is not a rate budget.
    pub(crate) fn set_rate(
        &self,
        resource: usize,
        count: u32,
        period: std::time::Duration,
        burst: u32,
    ) -> Result<RateSettings, BelowNeed> {
        let mut wake = WakeList::new();
        let before = {
            let mut state = self.lock();
            let st = &mut *state;
            let (t, b) = (&mut st.track[resource], &self.budgets[resource]);
            let rate = b.rate.as_ref().expect("set_rate of a rate budget");
            if burst < t.largest.units {
                return Err(BelowNeed {
                    operation: t.largest.operation,
                    units: t.largest.units,
                });
            }
            let (old_count, old_period) = rate.of();
            let before = RateSettings {
                count: old_count,
                period: old_period,
                burst: b.capacity(),
            };
            b.freeze();
            let mut now = self.now();
            b.set_rate(rate, count, period, burst, now.ns());
            // Every head re-arms for the new rate.
            t.head = 0;
            if t.waiting > 0 {
                st.pass(&self.budgets, &mut wake, &mut now);
            } else if !st.closed {
                b.thaw();
            }
            before
        };
        wake.wake_all();
        Ok(before)
    }
}
