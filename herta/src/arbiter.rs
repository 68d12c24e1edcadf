//! The budget arbiter: all-or-nothing, fair acquisition of several weighted
//! budgets at once, with a lock-free fast path.
//!
//! # Interface
//!
//! One [`Arbiter`] owns every budget of a runtime. A call asks for a set of
//! [`Need`]s (resource index, units) and gets a [`Permit`] whose `Drop`
//! returns all of them: [`Arbiter::try_acquire`] never waits (admission
//! `Reject`), [`Arbiter::acquire`] queues (admission `Wait`).
//! [`Arbiter::close`] withdraws every waiter with [`AcquireError::Closed`].
//!
//! # Two layers
//!
//! **Per budget, one atomic word**: `free units << 1 | SLOW`. While `SLOW`
//! is clear, no queued waiter needs the budget, and a call takes and returns
//! units with one compare-and-swap per budget, without the lock (the
//! uncontended path). `SLOW` is set, under the lock, while some waiter
//! needing the budget is queued, while a lock holder works on the budget, and
//! for good once the arbiter is closed. While it is set, the word changes
//! only under the lock (the CAS of the fast path fails on it and falls back
//! to the lock), so every acquisition and release of a contended budget is
//! serialized with the queue, and a release always runs the grant pass.
//!
//! **Under one mutex**: the queue of waiters in arrival order (the shared
//! waiter core, [`crate::waiters`]: each waiter's node inside its own
//! `Acquire` future, so queueing allocates nothing and a cancelled waiter is
//! unlinked in O(1); wakers woken after the lock is released, no allocation
//! per pass), and per budget
//! the number of queued waiters needing it, a `blocked` flag, and the data
//! of the fairness bound below.
//!
//! **Several budgets without the lock**: a call reads every word (one
//! `SLOW`: take the lock; one short: busy, nothing taken), then takes them
//! in index order. A caller racing in between makes it give back what it
//! took (through the lock if `SLOW` by then) and take the lock; that
//! partial take looks to others like a call that took and gave back at
//! once (a `Reject` caller may be throttled by it; `peak_in_use` and the
//! in-use gauge count it). Under the lock, `SLOW`
//! is set on each budget before it is read: no partial take is seen.
//!
//! A waiter holds **no** unit until it is granted all of its units in one
//! step, so no waiter holds one budget while it waits for another: there is
//! no hold-and-wait, hence no deadlock, whatever order contracts name their
//! resources in.
//!
//! # Grant pass and the fairness bound (DESIGN §8.1)
//!
//! Every acquisition gets a *stamp*, a point in arrival order: a queued
//! waiter its ticket (1, 2, …, one per waiter queued), a grant at once the
//! current ticket count, a lock-free grant 0 (the fast path runs only while
//! no waiter needs the budget, so it precedes every waiter that does). Per
//! budget, while waiters need it, the arbiter knows the smallest stamp among
//! the units held (units held before the first of those waiters queued count
//! as stamp 0; later ones are kept in a small sorted vector reused across
//! sessions).
//!
//! A waiter W (ticket t) is **mature** when, for each budget it needs, no
//! earlier queued waiter needs that budget and no unit of it is held with a
//! stamp below t: every unit held when W arrived, and every unit granted to
//! earlier waiters, has been released — part (1) of the bound.
//!
//! A *pass* runs, in arrival order, after every event that can change who may
//! be granted (a release on a budget with waiters, a waiter leaving). For
//! each waiter: if each of its budgets has enough free units and is not
//! `blocked`, it is granted; otherwise it marks `blocked` the budgets it is
//! short of — or, if mature, **all** of its budgets. A later waiter, and a
//! newcomer (whether `Wait` or `Reject`), is granted only on budgets that are
//! not `blocked`. The scan stops as soon as no budget with waiters has free
//! units and is unblocked: nothing after that point could be granted.
//!
//! **Bound.** A waiter W is granted no later than (1) every unit held at W's
//! arrival, and every unit granted to waiters that arrived before W, on the
//! budgets W needs, has been released, and then (2) the units that later
//! arrivals took on those budgets by passing W before that moment have been
//! released. Proof: the event that completes (1) runs a pass in which W is
//! mature; from then on W is the oldest waiter on each of its budgets (so no
//! earlier waiter competes) and blocks all of them (so no later arrival takes
//! a unit of them), and maturity never ends; the only units of those budgets
//! still held are the bypassers' of (2), and the release of the last of them
//! runs the pass that grants W. Before (1), a later arrival may pass W only
//! on budgets W is not short of (bypass keeps concurrency). Hence:
//!
//! * per budget, waiters short of it are granted in arrival order;
//! * no starvation: not a large waiter by small ones, not a multi-budget
//!   waiter by single-budget newcomers taking its budgets in turn;
//! * `Reject` never overtakes a queued waiter on a budget that waiter blocks.
//!
//! # Invariants (checked by the loom models, the unit tests, the fairness
//! property and the scenario tests)
//!
//! 1. `0 <= free <= capacity` for every budget; units held = `capacity - free`.
//! 2. A budget some queued waiter needs has `SLOW` set.
//! 3. After every operation, no queued waiter could be granted (the pass ran),
//!    and the `blocked` flags are those of the last pass.
//! 4. A waiter's units are either all queued-for or all granted; a granted
//!    waiter dropped before it saw its grant returns them and a pass runs, so
//!    the units reach the next waiter at once (the same hand-on covers a
//!    later `max_wait` expiry).
//! 5. After `close`, the queue is empty, every waiter has seen [`AcquireError::Closed`],
//!    and `SLOW` stays set, so every later call takes the lock and is refused.
//!
//! # Costs
//!
//! Uncontended call: one CAS per budget to take, one per budget to give
//! back, no allocation. A cancelled waiter: O(budgets it needs) to unlink plus a pass,
//! which stops at once when no budget with waiters has free units (a full
//! budget's disconnect storm costs O(1) per waiter). While some budget with
//! waiters has free units (a multi-budget queue short elsewhere), a pass may
//! scan further, up to the queue's length: the price of letting waiters pass
//! on budgets an earlier waiter is not short of. A budget's queue length is
//! its `waiting` count, read in O(1) under the lock.
//!
//! A queued waiter's value in its node is 8 bytes (the node, in its
//! future, 48): it names its need list by an index into the arbiter's table
//! of distinct lists ([`Arbiter::needs`], filled at bind) and keeps its
//! ticket's low 48 bits ([`state::Waiter`]), so queueing and leaving touch
//! no shared reference count.

use std::sync::Arc;
use std::task::Context;

use crate::loom::{lock, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::waiters::{List, WakeList};

mod acquire;
mod budget;
mod state;

pub(crate) use acquire::Acquire;
use budget::{Budget, Fast, FastAll, UNIT};
#[cfg(all(test, loom))]
pub(crate) use state::Event;
use state::{State, Track};

/// Units of one budget, by the budget's index in the arbiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    pub(crate) resource: usize,
    pub(crate) units: u32,
}

/// A contract's needs as its arbiter knows them: the list (sorted by budget
/// index, each budget once) and its index in the arbiter's table of need
/// lists ([`Arbiter::needs`]), so that a queued waiter names its needs in 2
/// bytes instead of holding a counted reference to them (see
/// [`state::Waiter`]).
#[derive(Debug, Clone)]
pub(crate) struct Needs {
    list: Arc<[Need]>,
    id: u16,
}

impl std::ops::Deref for Needs {
    type Target = [Need];

    #[inline]
    fn deref(&self) -> &[Need] {
        &self.list
    }
}

/// The arbiter refused because it is closed (the runtime is stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// Why [`Arbiter::try_acquire`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryAcquireError {
    /// The budget at this index has no room, or earlier waiters queue on it.
    Busy(usize),
    /// The arbiter is closed.
    Closed,
}

/// Why [`Arbiter::acquire`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcquireError {
    /// The arbiter is closed.
    Closed,
    /// The budget at this index already has as many waiters as its queue
    /// limit allows.
    QueueFull(usize),
}

/// A budget's figures at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetSnapshot {
    pub(crate) capacity: u32,
    pub(crate) in_use: u32,
    pub(crate) waiting: u32,
    pub(crate) peak_in_use: u32,
    pub(crate) queue_limit: Option<u32>,
}

pub(crate) struct Arbiter {
    budgets: Box<[Budget]>,
    state: Mutex<State>,
}

impl Arbiter {
    /// An arbiter over budgets with these capacities (index = resource).
    pub(crate) fn new(capacities: impl IntoIterator<Item = u32>) -> Self {
        let budgets: Box<[Budget]> = capacities
            .into_iter()
            .map(|capacity| Budget {
                word: AtomicU64::new(u64::from(capacity) * UNIT),
                peak_in_use: AtomicU32::new(0),
                capacity,
                #[cfg(feature = "metrics")]
                gauges: None,
            })
            .collect();
        let track = budgets
            .iter()
            .map(|_| Track {
                waiting: 0,
                blocked: false,
                claimed: false,
                session: 0,
                untracked: 0,
                young: Vec::new(),
                queue_limit: u32::MAX,
            })
            .collect();
        Arbiter {
            budgets,
            state: Mutex::new(State {
                track,
                queue: List::new(),
                lists: Vec::new(),
                tickets: 0,
                closed: false,
                #[cfg(test)]
                log: Vec::new(),
            }),
        }
    }

    /// Limits how many waiters may queue for each budget, by index (`None`:
    /// no limit). A waiter that would exceed a budget's limit is refused
    /// with [`AcquireError::QueueFull`] instead of queuing. The queue length
    /// is the budget's `waiting` count, kept by the waiter core.
    pub(crate) fn limit_queues(&mut self, limits: impl IntoIterator<Item = Option<u32>>) {
        let mut state = self.lock();
        for (t, limit) in state.track.iter_mut().zip(limits) {
            t.queue_limit = limit.unwrap_or(u32::MAX);
        }
    }

    /// Gives each budget, by index, its metric gauges (feature `metrics`),
    /// moved from then on at every change of its units or its queue.
    #[cfg(feature = "metrics")]
    pub(crate) fn gauges(
        &mut self,
        gauges: impl IntoIterator<Item = crate::metrics::BudgetGauges>,
    ) {
        for (b, g) in self.budgets.iter_mut().zip(gauges) {
            b.gauges = Some(g);
        }
    }

    /// The arbiter's handle on `list` (each budget once; sorted here by
    /// budget index, the order every take follows): equal lists share one
    /// entry of its table, so the table holds as many entries as there are
    /// distinct need lists bound, bounded by the contracts in the program,
    /// however often they are bound.
    ///
    /// # Panics
    ///
    /// When a 65 537th distinct need list is bound to one arbiter (each
    /// operation declares one, so a program would need that many distinct
    /// resource sets).
    pub(crate) fn needs(&self, mut list: Vec<Need>) -> Needs {
        list.sort_by_key(|n| n.resource);
        debug_assert!(
            list.windows(2).all(|w| w[0].resource < w[1].resource),
            "each budget once"
        );
        let mut state = self.lock();
        let lists = &mut state.lists;
        let at = lists
            .iter()
            .position(|l| **l == *list)
            .unwrap_or(lists.len());
        // Checked before the table changes: a panic under the lock leaves
        // the state as it was (`crate::loom`).
        let id = u16::try_from(at).expect("at most 65 536 distinct need lists per runtime");
        if at == lists.len() {
            lists.push(list.into());
        }
        Needs {
            list: Arc::clone(&lists[at]),
            id,
        }
    }

    /// [`needs`](Self::needs) of `(resource, units)` pairs (tests only).
    #[cfg(test)]
    pub(crate) fn needs_of(&self, list: &[(usize, u32)]) -> Needs {
        self.needs(
            list.iter()
                .map(|&(resource, units)| Need { resource, units })
                .collect(),
        )
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn permit<'a>(&'a self, needs: &'a [Need], stamp: u64) -> Permit<'a> {
        Permit {
            arbiter: self,
            needs,
            stamp,
        }
    }

    /// Takes every need at once, or nothing, without waiting.
    #[inline]
    pub(crate) fn try_acquire<'a>(
        &'a self,
        needs: &'a Needs,
    ) -> Result<Permit<'a>, TryAcquireError> {
        let stamp = match &needs[..] {
            [n] => match self.budgets[n.resource].try_take_fast(n.units) {
                Fast::Taken => 0,
                Fast::Short => return Err(TryAcquireError::Busy(n.resource)),
                Fast::Slow => self.try_acquire_locked(needs)?,
            },
            _ => self.try_acquire_several(needs)?,
        };
        Ok(self.permit(needs, stamp))
    }

    /// `try_acquire` of several budgets, lock-free while it can be (see
    /// the module docs); the grant's stamp. Out of line: inlined, it made
    /// every one-budget call cost 21 instructions more (`profile_call`; out
    /// of line, 2).
    ///
    /// The out-of-line takes return the stamp alone (16 bytes with the
    /// error, so in registers), and the inlined caller builds the
    /// [`Permit`]: a 32-byte result returned through memory was written
    /// with 8-byte stores and read back with 16-byte loads, a load that
    /// waits for the stores (13-15 % of an uncontended call's time,
    /// `perf annotate` of `profile_call`).
    #[inline(never)]
    fn try_acquire_several(&self, needs: &[Need]) -> Result<u64, TryAcquireError> {
        match budget::try_take_all_fast(&self.budgets, needs) {
            FastAll::Taken => return Ok(0),
            FastAll::Short(busy) => return Err(TryAcquireError::Busy(busy)),
            FastAll::Raced(taken) => self.release(&needs[..taken], 0),
            FastAll::Slow => {}
        }
        self.try_acquire_locked(needs)
    }

    /// `try_acquire` under the lock; the grant's stamp.
    #[cold]
    #[inline(never)]
    fn try_acquire_locked(&self, needs: &[Need]) -> Result<u64, TryAcquireError> {
        let mut state = self.lock();
        if state.closed {
            return Err(TryAcquireError::Closed);
        }
        for n in needs.iter() {
            self.budgets[n.resource].freeze();
        }
        let result = match state.blocked_on(&self.budgets, needs) {
            Some(busy) => Err(TryAcquireError::Busy(busy)),
            None => {
                let stamp = state.tickets;
                state.take(&self.budgets, needs, stamp);
                Ok(stamp)
            }
        };
        state.thaw_idle(&self.budgets, needs);
        result
    }

    /// Waits until every need can be taken at once, holding nothing meanwhile.
    pub(crate) fn acquire<'a>(&'a self, needs: &'a Needs) -> Acquire<'a> {
        Acquire::new(self, needs)
    }

    #[inline]
    fn release(&self, needs: &[Need], stamp: u64) {
        // Lock-free while no waiter needs the budget; from the first budget
        // that is `SLOW` on, under the lock.
        let mut rest = needs;
        while let [n, tail @ ..] = rest {
            if !self.budgets[n.resource].try_give_fast(n.units) {
                self.release_locked(rest, stamp);
                return;
            }
            rest = tail;
        }
    }

    #[cold]
    #[inline(never)]
    fn release_locked(&self, needs: &[Need], stamp: u64) {
        let mut wake = WakeList::new();
        {
            let mut state = self.lock();
            if state.give_back(&self.budgets, needs, stamp) {
                state.pass(&self.budgets, &mut wake);
            }
        }
        wake.wake_all();
    }

    /// Refuses new acquisitions and withdraws every waiter with
    /// [`AcquireError::Closed`].
    /// Held permits stay valid and release normally. Idempotent.
    pub(crate) fn close(&self) {
        let mut wake = WakeList::new();
        {
            let mut state = self.lock();
            state.closed = true;
            for b in self.budgets.iter() {
                b.freeze();
            }
            let State {
                track,
                queue,
                lists,
                ..
            } = &mut *state;
            queue.withdraw_all(&mut wake, |w| {
                State::stop_waiting(track, &self.budgets, &lists[w.list()], true);
            });
        }
        wake.wake_all();
    }

    /// Every budget's figures, by index.
    pub(crate) fn snapshot(&self) -> Vec<BudgetSnapshot> {
        let state = self.lock();
        self.budgets
            .iter()
            .zip(&state.track)
            .map(|(b, t)| BudgetSnapshot {
                capacity: b.capacity,
                in_use: b.capacity - b.free(),
                waiting: t.waiting,
                peak_in_use: b.peak_in_use.load(Ordering::Relaxed),
                queue_limit: (t.queue_limit != u32::MAX).then_some(t.queue_limit),
            })
            .collect()
    }

    /// The grant log so far (loom models only).
    #[cfg(all(test, loom))]
    pub(crate) fn take_log(&self) -> Vec<Event> {
        std::mem::take(&mut self.lock().log)
    }
}

/// Units held from an [`Arbiter`]; dropping it returns them.
#[must_use = "dropping a permit releases its units at once"]
pub(crate) struct Permit<'a> {
    arbiter: &'a Arbiter,
    needs: &'a [Need],
    /// Where this grant sits in arrival order (see the module docs).
    stamp: u64,
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.arbiter.release(self.needs, self.stamp);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod fairness;

#[cfg(all(test, loom))]
mod loom_tests;
