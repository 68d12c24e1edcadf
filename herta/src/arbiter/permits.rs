//! The [`Arbiter`]: every budget of a runtime, the table of need lists,
//! the acquisitions that do not queue ([`Arbiter::try_acquire`]), the
//! [`Permit`] whose drop gives units back, and `close`. Queueing is
//! [`Acquire`](super::acquire::Acquire).

use std::sync::Arc;

use super::budget::{self, Budget, Fast, FastAll, SLOW, UNIT};
use super::needs::{Largest, Need, Needs};
use super::rate::{Now, Rate, LOCKED};
#[cfg(all(test, loom))]
use super::state::Event;
use super::state::{State, Track};
use crate::loom::{lock, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::waiters::{List, WakeList};

/// Why [`Arbiter::try_acquire`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryAcquireError {
    /// The budget at this index has no room, or earlier waiters queue on it.
    Busy(usize),
    /// The arbiter is closed.
    Closed,
}

/// A `Result<u64, TryAcquireError>` in one word, so that the out-of-line
/// one-budget take ([`Arbiter::try_acquire_one_slow`]) returns it in a
/// register rather than through memory: a grant's stamp (tickets never
/// reach `BUSY`), `BUSY` with the busy budget's index, or `CLOSED`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed(u64);

impl Packed {
    const BUSY: u64 = 1 << 63;
    const CLOSED: u64 = u64::MAX;

    #[inline]
    pub(super) fn new(result: Result<u64, TryAcquireError>) -> Self {
        Packed(match result {
            Ok(stamp) => {
                debug_assert!(stamp < Self::BUSY, "a stamp below the flag");
                stamp
            }
            Err(TryAcquireError::Busy(index)) => Self::BUSY | index as u64,
            Err(TryAcquireError::Closed) => Self::CLOSED,
        })
    }

    #[inline(always)]
    pub(super) fn unpack(self) -> Result<u64, TryAcquireError> {
        match self.0 {
            stamp if stamp < Self::BUSY => Ok(stamp),
            Self::CLOSED => Err(TryAcquireError::Closed),
            busy => Err(TryAcquireError::Busy((busy & !Self::BUSY) as usize)),
        }
    }
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
    /// Units a call could be granted now.
    pub(crate) available: u32,
    /// A rate budget's units per period and period.
    pub(crate) rate: Option<(u32, std::time::Duration)>,
    /// A rate budget's units granted so far.
    pub(crate) granted: u64,
}

pub(crate) struct Arbiter {
    pub(super) budgets: Box<[Budget]>,
    pub(super) state: Mutex<State>,
    /// The clock of rate budgets (tokio's, from the arbiter's creation).
    pub(super) clock: crate::clock::Clock,
}

/// What kind of budget, for [`Arbiter::with_kinds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A concurrency budget of this many units, given back on release.
    Concurrency(u32),
    /// A rate budget: `count` units per `period`, at most `burst` at once,
    /// consumed (see `rate.rs`).
    Rate {
        count: u32,
        period: std::time::Duration,
        burst: u32,
    },
}

impl Arbiter {
    /// An arbiter over budgets with these capacities (index = resource).
    #[cfg(test)]
    pub(crate) fn new(capacities: impl IntoIterator<Item = u32>) -> Self {
        Self::with_kinds(capacities.into_iter().map(Kind::Concurrency))
    }

    /// An arbiter over budgets of these kinds (index = resource); rate
    /// budgets start full.
    pub(crate) fn with_kinds(kinds: impl IntoIterator<Item = Kind>) -> Self {
        let budgets: Box<[Budget]> = kinds
            .into_iter()
            .map(|kind| {
                let (capacity, word, rate, lock_bit) = match kind {
                    Kind::Concurrency(capacity) => {
                        (capacity, u64::from(capacity) * UNIT, None, SLOW)
                    }
                    Kind::Rate {
                        count,
                        period,
                        burst,
                    } => (burst, SLOW, Some(Rate::new(count, period, burst)), LOCKED),
                };
                Budget {
                    word: AtomicU64::new(word),
                    peak_in_use: AtomicU32::new(0),
                    capacity: AtomicU32::new(capacity),
                    #[cfg(feature = "metrics")]
                    gauges: None,
                    rate,
                    lock_bit,
                    granted: AtomicU64::new(0),
                }
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
                debt: 0,
                largest: Largest::NONE,
                head: 0,
                head_found: false,
                queued_units: 0,
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
            clock: crate::clock::Clock::new(),
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

    /// The arbiter's handle on `list`, registering no operation (tests
    /// only; binding goes through [`bind`](Self::bind)).
    #[cfg(test)]
    pub(crate) fn needs(&self, list: Vec<Need>) -> Needs {
        Self::intern(&mut self.lock(), &self.budgets, sorted(&self.budgets, list))
    }

    /// The arbiter's handle on `list` (sorted by budget index, each budget
    /// once), under the lock: equal lists share one entry of its table, so
    /// the table holds as many entries as there are distinct need lists
    /// bound, bounded by the contracts in the program, however often they
    /// are bound.
    ///
    /// # Panics
    ///
    /// When a 65 537th distinct need list is bound to one arbiter (each
    /// operation declares one, so a program would need that many distinct
    /// resource sets).
    pub(super) fn intern(state: &mut State, budgets: &[Budget], list: Vec<Need>) -> Needs {
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
            held: lists[at]
                .iter()
                .filter(|n| budgets[n.resource].rate.is_none())
                .copied()
                .collect(),
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

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The permit of a grant of `needs`: it holds their concurrency part.
    pub(super) fn permit<'a>(&'a self, needs: &'a Needs, stamp: u64) -> Permit<'a> {
        Permit {
            arbiter: self,
            needs: &needs.held,
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
                Fast::Slow => self.try_acquire_one_slow(needs).unpack()?,
            },
            _ => self.try_acquire_several(needs)?,
        };
        Ok(self.permit(needs, stamp))
    }

    /// `try_acquire` of several budgets, lock-free while it can be (see
    /// the module docs); the grant's stamp. Out of line, so that a
    /// one-budget call does not carry the several-budget code inline.
    ///
    /// The out-of-line takes return the stamp alone (16 bytes with the
    /// error, so in registers), and the inlined caller builds the
    /// [`Permit`]: a 32-byte result returned through memory would be
    /// written with 8-byte stores and read back with 16-byte loads, a load
    /// that waits for the stores, on every uncontended call.
    #[inline(never)]
    fn try_acquire_several(&self, needs: &Needs) -> Result<u64, TryAcquireError> {
        match budget::try_take_all_fast(&self.budgets, needs) {
            FastAll::Taken => return Ok(0),
            FastAll::Short(busy) => return Err(TryAcquireError::Busy(busy)),
            FastAll::Raced(taken) => self.release(&needs[..taken], 0),
            FastAll::Slow => {}
        }
        self.try_acquire_locked(needs)
    }

    /// `try_acquire` under the lock (a list naming a rate budget first
    /// tries [`try_acquire_rate`](Self::try_acquire_rate), lock-free: a
    /// rate budget's word always looks `SLOW` to the concurrency fast
    /// paths); the grant's stamp.
    #[cold]
    #[inline(never)]
    fn try_acquire_locked(&self, needs: &Needs) -> Result<u64, TryAcquireError> {
        if needs.has_rate() {
            return self.try_acquire_rate(needs);
        }
        self.try_acquire_locked_at(needs, self.now())
    }

    /// `try_acquire` under the lock, rate budgets taken at `now`.
    pub(super) fn try_acquire_locked_at(
        &self,
        needs: &[Need],
        mut now: Now<'_>,
    ) -> Result<u64, TryAcquireError> {
        let mut state = self.lock();
        if state.closed {
            return Err(TryAcquireError::Closed);
        }
        for n in needs.iter() {
            self.budgets[n.resource].freeze();
        }
        let result = match state.blocked_on(&self.budgets, needs, &mut now) {
            Some(busy) => Err(TryAcquireError::Busy(busy)),
            None => {
                let stamp = state.tickets;
                state.take(&self.budgets, needs, stamp, &mut now);
                Ok(stamp)
            }
        };
        state.thaw_idle(&self.budgets, needs);
        result
    }

    #[inline]
    pub(super) fn release(&self, needs: &[Need], stamp: u64) {
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
                state.pass(&self.budgets, &mut wake, &mut self.now());
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
                State::stop_waiting(track, &self.budgets, &lists[w.list()], true, 0);
            });
        }
        wake.wake_all();
    }

    /// The arbiter's address (see [`Permit::arbiter_addr`]).
    pub(crate) fn addr(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Every budget's figures, by index.
    pub(crate) fn snapshot(&self) -> Vec<BudgetSnapshot> {
        let state = self.lock();
        let mut now = self.now();
        self.budgets
            .iter()
            .zip(&state.track)
            .map(|(b, t)| BudgetSnapshot {
                available: b.room(&mut now),
                rate: b.rate.as_ref().map(Rate::of),
                granted: b.granted.load(Ordering::Relaxed),
                capacity: b.capacity(),
                in_use: t.in_use(b),
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

/// `list` in the order every take follows: concurrency budgets by index,
/// then rate budgets by index (see [`Needs`]).
pub(super) fn sorted(budgets: &[Budget], mut list: Vec<Need>) -> Vec<Need> {
    list.sort_by_key(|n| (budgets[n.resource].rate.is_some(), n.resource));
    debug_assert!(
        list.windows(2).all(|w| w[0].resource != w[1].resource),
        "each budget once"
    );
    list
}

/// Units held from an [`Arbiter`]; dropping it returns them.
#[must_use = "dropping a permit releases its units at once"]
pub(crate) struct Permit<'a> {
    arbiter: &'a Arbiter,
    needs: &'a [Need],
    /// Where this grant sits in arrival order (see the module docs).
    stamp: u64,
}

impl Permit<'_> {
    /// The address of the arbiter the units are held from: what identifies
    /// it while the permit lives (a nested call's self-deadlock check,
    /// `call/chain.rs`).
    pub(crate) fn arbiter_addr(&self) -> usize {
        self.arbiter.addr()
    }

    /// The units of budget `resource` the permit holds (0 if none).
    pub(crate) fn units_of(&self, resource: usize) -> u32 {
        self.needs
            .iter()
            .find(|n| n.resource == resource)
            .map_or(0, |n| n.units)
    }

    /// The capacity of budget `resource` of the permit's arbiter, now.
    pub(crate) fn capacity_of(&self, resource: usize) -> u32 {
        self.arbiter.budgets[resource].capacity()
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.arbiter.release(self.needs, self.stamp);
    }
}
