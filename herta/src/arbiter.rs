//! The budget arbiter: all-or-nothing, fair acquisition of several weighted
//! budgets at once, with a lock-free fast path.
//!
//! # Interface
//!
//! One [`Arbiter`] owns every budget of a runtime. A call asks for a set of
//! [`Need`]s (resource index, units) and gets a [`Permit`] whose `Drop`
//! returns all of them: [`Arbiter::try_acquire`] never waits (admission
//! `Reject`), [`Arbiter::acquire`] queues (admission `Wait`).
//! [`Arbiter::close`] withdraws every waiter with [`Closed`].
//!
//! # Two layers
//!
//! **Per budget, one atomic word**: `free units << 1 | SLOW`. While `SLOW`
//! is clear, no queued waiter needs the budget, and a single-budget call
//! takes and returns units with one compare-and-swap each, without the lock
//! (the uncontended path). `SLOW` is set, under the lock, while some waiter
//! needing the budget is queued, while a lock holder works on the budget, and
//! for good once the arbiter is closed. While it is set, the word changes
//! only under the lock (the CAS of the fast path fails on it and falls back
//! to the lock), so every acquisition and release of a contended budget is
//! serialized with the queue, and a release always runs the grant pass.
//!
//! **Under one mutex**: the queue of waiters in arrival order (the shared
//! waiter core, [`crate::waiters`]: O(1) unlink of a cancelled waiter, wakers
//! woken after the lock is released, no allocation per pass), and per budget
//! the number of queued waiters needing it, a `blocked` flag, and the data
//! of the fairness bound below. Multi-budget calls always take the lock: they
//! set `SLOW` on each of their budgets before reading them, so no other
//! caller ever sees a partial take.
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
//! 5. After `close`, the queue is empty, every waiter has seen [`Closed`],
//!    and `SLOW` stays set, so every later call takes the lock and is refused.
//!
//! # Costs
//!
//! Uncontended single-budget call: one CAS to take, one to give back, no
//! allocation. A cancelled waiter: O(budgets it needs) to unlink plus a pass,
//! which stops at once when no budget with waiters has free units (a full
//! budget's disconnect storm costs O(1) per waiter). While some budget with
//! waiters has free units (a multi-budget queue short elsewhere), a pass may
//! scan further, up to the queue's length: the price of letting waiters pass
//! on budgets an earlier waiter is not short of. A budget's queue length is
//! its `waiting` count, read in O(1) under the lock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::loom::{lock, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering};
use crate::waiters::{List, Status, Waiters, WakeList};

/// Units of one budget, by the budget's index in the arbiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    pub(crate) resource: usize,
    pub(crate) units: u32,
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

/// A budget's figures at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetSnapshot {
    pub(crate) capacity: u32,
    pub(crate) in_use: u32,
    pub(crate) waiting: u32,
    pub(crate) peak_in_use: u32,
}

/// The word's flag: go through the lock.
const SLOW: u64 = 1;
/// One unit in the word.
const UNIT: u64 = 2;

/// The lock-free part of a budget, on its own cache line.
#[repr(align(128))]
struct Budget {
    /// `free << 1 | SLOW`.
    word: AtomicU64,
    peak_in_use: AtomicU32,
    capacity: u32,
}

enum Fast {
    Taken,
    /// Short of units, and no waiter needs the budget.
    Short,
    /// `SLOW` is set: take the lock.
    Slow,
}

impl Budget {
    /// Free units. Stable under the lock while `SLOW` is set.
    fn free(&self) -> u32 {
        (self.word.load(Ordering::Acquire) >> 1) as u32
    }

    #[inline]
    fn note_peak(&self, word_after: u64) {
        let in_use = self.capacity - (word_after >> 1) as u32;
        if in_use > self.peak_in_use.load(Ordering::Relaxed) {
            self.peak_in_use.fetch_max(in_use, Ordering::Relaxed);
        }
    }

    #[inline]
    fn try_take_fast(&self, units: u32) -> Fast {
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
                    return Fast::Taken;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Gives units back without the lock; false if `SLOW` is set.
    #[inline]
    fn try_give_fast(&self, units: u32) -> bool {
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
                Ok(_) => return true,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Under the lock, with `SLOW` set.
    fn take_locked(&self, units: u32) {
        let before = self
            .word
            .fetch_sub(u64::from(units) * UNIT, Ordering::AcqRel);
        self.note_peak(before - u64::from(units) * UNIT);
    }

    /// Under the lock (`SLOW` may be clear: the add is atomic either way).
    fn give_locked(&self, units: u32) {
        let before = self
            .word
            .fetch_add(u64::from(units) * UNIT, Ordering::AcqRel);
        debug_assert!(
            ((before >> 1) + u64::from(units)) <= u64::from(self.capacity),
            "released more units than held"
        );
    }

    fn freeze(&self) {
        self.word.fetch_or(SLOW, Ordering::AcqRel);
    }

    fn thaw(&self) {
        self.word.fetch_and(!SLOW, Ordering::AcqRel);
    }
}

/// A budget's bookkeeping under the lock.
struct Track {
    /// Queued waiters that need this budget (its queue length).
    waiting: u32,
    /// Some queued waiter is blocked on this budget (as of the last pass).
    blocked: bool,
    /// Scratch of a pass: an earlier waiter in this pass needs the budget.
    claimed: bool,
    /// While `waiting > 0`: the ticket of the waiter that started this
    /// session (the first to queue while nobody waited); 0 otherwise.
    session: u64,
    /// Units held with stamps below `session` (taken before it started).
    untracked: u32,
    /// Units taken during the session, `(stamp, units)` sorted by stamp.
    young: Vec<(u64, u32)>,
}

impl Track {
    /// The smallest stamp among the units held (`u64::MAX` if none).
    fn min_stamp(&self) -> u64 {
        if self.untracked > 0 {
            0
        } else {
            self.young.first().map_or(u64::MAX, |&(s, _)| s)
        }
    }

    fn held(&mut self, stamp: u64, units: u32) {
        if self.session == 0 {
            return;
        }
        debug_assert!(stamp >= self.session, "a session sees every take");
        match self.young.binary_search_by_key(&stamp, |&(s, _)| s) {
            Ok(i) => self.young[i].1 += units,
            Err(i) => self.young.insert(i, (stamp, units)),
        }
    }

    fn returned(&mut self, stamp: u64, units: u32) {
        if self.session == 0 {
            return;
        }
        if stamp < self.session {
            self.untracked -= units;
            return;
        }
        if let Ok(i) = self.young.binary_search_by_key(&stamp, |&(s, _)| s) {
            self.young[i].1 -= units;
            if self.young[i].1 == 0 {
                self.young.remove(i);
            }
        } else {
            debug_assert!(false, "a session sees every take");
        }
    }
}

struct Waiter {
    needs: Arc<[Need]>,
    ticket: u64,
}

/// Grant events, for the fairness property and the loom models.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Granted {
        stamp: u64,
        resources: Vec<usize>,
    },
    /// Only releases that take the lock (a budget with waiters) are logged.
    Released {
        stamp: u64,
        resources: Vec<usize>,
    },
}

struct State {
    track: Vec<Track>,
    waiters: Waiters<Waiter>,
    /// Queued waiters, oldest first.
    queue: List,
    /// Tickets handed out so far.
    tickets: u64,
    closed: bool,
    #[cfg(test)]
    log: Vec<Event>,
}

pub(crate) struct Arbiter {
    budgets: Box<[Budget]>,
    state: Mutex<State>,
}

impl State {
    /// The first budget among `needs` that a newcomer cannot take now:
    /// short of units, or blocked by a waiter.
    fn blocked_on(&self, budgets: &[Budget], needs: &[Need]) -> Option<usize> {
        needs
            .iter()
            .find(|n| self.track[n.resource].blocked || budgets[n.resource].free() < n.units)
            .map(|n| n.resource)
    }

    /// Takes `needs` (all free, `SLOW` set) under `stamp`.
    fn take(&mut self, budgets: &[Budget], needs: &[Need], stamp: u64) {
        for n in needs {
            budgets[n.resource].take_locked(n.units);
            self.track[n.resource].held(stamp, n.units);
        }
        #[cfg(test)]
        self.log.push(Event::Granted {
            stamp,
            resources: needs.iter().map(|n| n.resource).collect(),
        });
    }

    /// Gives `needs` back; true if a waiter needs one of them (run a pass).
    fn give_back(&mut self, budgets: &[Budget], needs: &[Need], stamp: u64) -> bool {
        let mut waiters = false;
        for n in needs {
            budgets[n.resource].give_locked(n.units);
            let t = &mut self.track[n.resource];
            t.returned(stamp, n.units);
            waiters |= t.waiting > 0;
        }
        #[cfg(test)]
        self.log.push(Event::Released {
            stamp,
            resources: needs.iter().map(|n| n.resource).collect(),
        });
        waiters
    }

    /// Clears `SLOW` on the budgets of `needs` that no waiter needs.
    fn thaw_idle(&self, budgets: &[Budget], needs: &[Need]) {
        if self.closed {
            return;
        }
        for n in needs {
            if self.track[n.resource].waiting == 0 {
                budgets[n.resource].thaw();
            }
        }
    }

    /// Queues a waiter for `needs` (frozen, not grantable now).
    fn enqueue(&mut self, budgets: &[Budget], needs: &Arc<[Need]>, cx: &Context<'_>) -> usize {
        self.tickets += 1;
        let ticket = self.tickets;
        for n in needs.iter() {
            let (t, b) = (&mut self.track[n.resource], &budgets[n.resource]);
            t.waiting += 1;
            if t.waiting == 1 {
                t.session = ticket;
                t.untracked = b.capacity - b.free();
                t.young.clear();
            }
            // A new waiter is never mature (it would have been granted):
            // it blocks the budgets it is short of.
            if b.free() < n.units {
                t.blocked = true;
            }
        }
        let waiter = Waiter {
            needs: Arc::clone(needs),
            ticket,
        };
        self.waiters.push_back(&mut self.queue, waiter, cx.waker())
    }

    /// A waiter of `needs` left the queue (granted, cancelled, withdrawn).
    fn stop_waiting(track: &mut [Track], budgets: &[Budget], needs: &[Need], closed: bool) {
        for n in needs {
            let t = &mut track[n.resource];
            t.waiting -= 1;
            if t.waiting == 0 {
                t.session = 0;
                t.untracked = 0;
                t.young.clear();
                t.blocked = false;
                if !closed {
                    budgets[n.resource].thaw();
                }
            }
        }
    }

    /// Grants, in arrival order, every queued waiter that can be granted, and
    /// recomputes the `blocked` flags (see the module docs).
    fn pass(&mut self, budgets: &[Budget], wake: &mut WakeList) {
        let State {
            track,
            waiters,
            queue,
            closed,
            #[cfg(test)]
            log,
            ..
        } = self;
        let mut open = 0usize;
        for (t, b) in track.iter_mut().zip(budgets.iter()) {
            t.blocked = false;
            t.claimed = false;
            open += usize::from(t.waiting > 0 && b.free() > 0);
        }
        let mut cursor = queue.front();
        while let Some(slot) = cursor {
            if open == 0 {
                break;
            }
            cursor = waiters.next(slot);
            let w = waiters.value(slot);
            let grantable = w
                .needs
                .iter()
                .all(|n| !track[n.resource].blocked && budgets[n.resource].free() >= n.units);
            if grantable {
                for n in w.needs.iter() {
                    let b = &budgets[n.resource];
                    b.take_locked(n.units);
                    track[n.resource].held(w.ticket, n.units);
                    // It was open (waited for, free, unblocked); is it still?
                    open -= usize::from(b.free() == 0 || track[n.resource].waiting == 1);
                }
                #[cfg(test)]
                log.push(Event::Granted {
                    stamp: w.ticket,
                    resources: w.needs.iter().map(|n| n.resource).collect(),
                });
                let needs = Arc::clone(&w.needs);
                State::stop_waiting(track, budgets, &needs, *closed);
                wake.extend(waiters.settle(queue, slot, Status::Granted));
                continue;
            }
            let mature = w.needs.iter().all(|n| {
                let t = &track[n.resource];
                !t.claimed && t.min_stamp() >= w.ticket
            });
            for n in w.needs.iter() {
                let t = &mut track[n.resource];
                let free = budgets[n.resource].free();
                if !t.blocked && (mature || free < n.units) {
                    t.blocked = true;
                    open -= usize::from(free > 0);
                }
                t.claimed = true;
            }
        }
    }
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
            })
            .collect();
        Arbiter {
            budgets,
            state: Mutex::new(State {
                track,
                waiters: Waiters::new(),
                queue: List::new(),
                tickets: 0,
                closed: false,
                #[cfg(test)]
                log: Vec::new(),
            }),
        }
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
        needs: &'a Arc<[Need]>,
    ) -> Result<Permit<'a>, TryAcquireError> {
        if let [n] = &needs[..] {
            match self.budgets[n.resource].try_take_fast(n.units) {
                Fast::Taken => return Ok(self.permit(needs, 0)),
                Fast::Short => return Err(TryAcquireError::Busy(n.resource)),
                Fast::Slow => {}
            }
        }
        self.try_acquire_locked(needs)
    }

    #[cold]
    #[inline(never)]
    fn try_acquire_locked<'a>(
        &'a self,
        needs: &'a Arc<[Need]>,
    ) -> Result<Permit<'a>, TryAcquireError> {
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
                Ok(self.permit(needs, stamp))
            }
        };
        state.thaw_idle(&self.budgets, needs);
        result
    }

    /// Waits until every need can be taken at once, holding nothing meanwhile.
    pub(crate) fn acquire<'a>(&'a self, needs: &'a Arc<[Need]>) -> Acquire<'a> {
        Acquire {
            arbiter: self,
            needs,
            slot: None,
        }
    }

    #[inline]
    fn release(&self, needs: &[Need], stamp: u64) {
        // Lock-free while no waiter needs the budget; from the first budget
        // that is `SLOW` on, under the lock.
        if let Some(first_slow) = needs
            .iter()
            .position(|n| !self.budgets[n.resource].try_give_fast(n.units))
        {
            self.release_locked(&needs[first_slow..], stamp);
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

    /// Refuses new acquisitions and withdraws every waiter with [`Closed`].
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
                waiters,
                queue,
                ..
            } = &mut *state;
            while let Some(slot) = queue.front() {
                let needs = Arc::clone(&waiters.value(slot).needs);
                State::stop_waiting(track, &self.budgets, &needs, true);
                wake.extend(waiters.settle(queue, slot, Status::Withdrawn));
            }
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

/// The future of [`Arbiter::acquire`]. Dropping it at any point returns
/// whatever it was granted and lets the waiters behind it proceed.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Acquire<'a> {
    arbiter: &'a Arbiter,
    needs: &'a Arc<[Need]>,
    /// Our waiter's slot while queued (or granted but not yet seen).
    slot: Option<usize>,
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, Closed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let arbiter = this.arbiter;
        let Some(slot) = this.slot else {
            // First poll: take at once if we could be granted at the end of
            // the queue, else queue up holding nothing.
            if let [n] = &this.needs[..] {
                if let Fast::Taken = arbiter.budgets[n.resource].try_take_fast(n.units) {
                    return Poll::Ready(Ok(arbiter.permit(this.needs, 0)));
                }
            }
            let mut state = arbiter.lock();
            if state.closed {
                return Poll::Ready(Err(Closed));
            }
            for n in this.needs.iter() {
                arbiter.budgets[n.resource].freeze();
            }
            if state.blocked_on(&arbiter.budgets, this.needs).is_none() {
                let stamp = state.tickets;
                state.take(&arbiter.budgets, this.needs, stamp);
                state.thaw_idle(&arbiter.budgets, this.needs);
                return Poll::Ready(Ok(arbiter.permit(this.needs, stamp)));
            }
            this.slot = Some(state.enqueue(&arbiter.budgets, this.needs, cx));
            return Poll::Pending;
        };
        let mut state = arbiter.lock();
        match state.waiters.poll(slot, cx.waker()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((status, waiter)) => {
                this.slot = None;
                drop(state);
                Poll::Ready(match status {
                    Status::Granted => Ok(arbiter.permit(this.needs, waiter.ticket)),
                    _ => Err(Closed),
                })
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let arbiter = self.arbiter;
        let mut wake = WakeList::new();
        {
            let mut state = arbiter.lock();
            let st = &mut *state;
            let (status, waiter) = st.waiters.leave(slot, |_| &mut st.queue);
            match status {
                Status::Queued => {
                    State::stop_waiting(&mut st.track, &arbiter.budgets, &waiter.needs, st.closed);
                    // Our departure may unblock, or mature, the waiters behind us.
                    st.pass(&arbiter.budgets, &mut wake);
                }
                Status::Granted => {
                    // Granted but never seen: hand the units on at once.
                    st.give_back(&arbiter.budgets, &waiter.needs, waiter.ticket);
                    st.pass(&arbiter.budgets, &mut wake);
                }
                Status::Withdrawn => {}
            }
        }
        wake.wake_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::task::{Context as TaskContext, Waker};

    fn needs(list: &[(usize, u32)]) -> Arc<[Need]> {
        list.iter()
            .map(|&(resource, units)| Need { resource, units })
            .collect()
    }

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let waker = Waker::noop();
        Pin::new(f).poll(&mut TaskContext::from_waker(waker))
    }

    #[test]
    fn a_waiter_holds_nothing_while_another_budget_is_full() {
        let arb = Arbiter::new([1, 1]);
        let b = needs(&[(1, 1)]);
        let ab = needs(&[(0, 1), (1, 1)]);
        let a = needs(&[(0, 1)]);
        let held_b = arb.try_acquire(&b).unwrap();
        let mut x = arb.acquire(&ab);
        assert!(poll(&mut x).is_pending());
        // Y needs only `a`, which X wants but is not short of: granted.
        let y = arb.try_acquire(&a).unwrap();
        assert_eq!(arb.snapshot()[0].in_use, 1);
        drop(y);
        drop(held_b);
        assert!(matches!(poll(&mut x), Poll::Ready(Ok(_))));
    }

    #[test]
    fn cancelling_a_large_waiter_grants_the_small_one_behind_it() {
        let arb = Arbiter::new([10]);
        let five = needs(&[(0, 5)]);
        let ten = needs(&[(0, 10)]);
        let one = needs(&[(0, 1)]);
        let _held = arb.try_acquire(&five).unwrap();
        let mut big = arb.acquire(&ten);
        assert!(poll(&mut big).is_pending());
        let mut small = arb.acquire(&one);
        assert!(poll(&mut small).is_pending(), "FIFO: queued behind the 10");
        drop(big);
        assert!(matches!(poll(&mut small), Poll::Ready(Ok(_))));
    }

    #[test]
    fn granted_but_unpolled_waiter_hands_units_on_when_dropped() {
        let arb = Arbiter::new([1]);
        let one = needs(&[(0, 1)]);
        let held = arb.try_acquire(&one).unwrap();
        let mut first = arb.acquire(&one);
        let mut second = arb.acquire(&one);
        assert!(poll(&mut first).is_pending());
        assert!(poll(&mut second).is_pending());
        drop(held); // grants `first`, which is never polled again
        drop(first);
        assert!(matches!(poll(&mut second), Poll::Ready(Ok(_))));
    }

    #[test]
    fn close_withdraws_waiters_and_refuses_new_ones() {
        let arb = Arbiter::new([1]);
        let one = needs(&[(0, 1)]);
        let held = arb.try_acquire(&one).unwrap();
        let mut w = arb.acquire(&one);
        assert!(poll(&mut w).is_pending());
        arb.close();
        assert!(matches!(poll(&mut w), Poll::Ready(Err(Closed))));
        assert_eq!(arb.try_acquire(&one).err(), Some(TryAcquireError::Closed));
        drop(held);
        assert_eq!(arb.snapshot()[0].in_use, 0);
        assert_eq!(arb.snapshot()[0].waiting, 0);
    }
}

/// The fairness bound of DESIGN §8.1, checked for every waiter of random
/// schedules (arrivals `Wait` / `Reject` over three budgets, releases,
/// cancellations), driven step by step on one thread so that each grant's
/// step is known exactly. `PROPTEST_CASES` sets the number of schedules.
#[cfg(all(test, not(loom)))]
mod fairness {
    use super::*;
    use proptest::prelude::*;
    use std::task::Waker;

    #[derive(Debug, Clone)]
    enum Step {
        Arrive {
            needs: Vec<(usize, u32)>,
            reject: bool,
        },
        Release(usize),
        Cancel(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (
                proptest::collection::vec((0usize..3, 1u32..=3), 1..=3),
                proptest::bool::weighted(0.2),
            )
                .prop_map(|(needs, reject)| Step::Arrive { needs, reject }),
            3 => any::<usize>().prop_map(Step::Release),
            1 => any::<usize>().prop_map(Step::Cancel),
        ]
    }

    enum Phase<'a> {
        Waiting(Acquire<'a>),
        /// Dropping the permit is the release.
        Holding(#[allow(dead_code)] Permit<'a>),
        Over,
    }

    struct Call<'a> {
        arrival: usize,
        resources: Vec<usize>,
        units: Vec<(usize, u32)>,
        queued: bool,
        granted: Option<usize>,
        released: Option<usize>,
        cancelled: Option<usize>,
        phase: Phase<'a>,
    }

    const NEVER: usize = usize::MAX;

    fn run(caps: [u32; 3], steps: &[Step]) -> Result<(), TestCaseError> {
        let arb = Arbiter::new(caps);
        let mut calls: Vec<Call<'_>> = Vec::new();
        let cx = &mut Context::from_waker(Waker::noop());
        let mut k = 0;
        let total = steps.len();
        loop {
            let step = if k < total {
                steps[k].clone()
            } else if calls.iter().any(|c| matches!(c.phase, Phase::Holding(_))) {
                Step::Release(0)
            } else {
                prop_assert!(
                    !calls.iter().any(|c| matches!(c.phase, Phase::Waiting(_))),
                    "a waiter is stuck with nothing held"
                );
                break;
            };
            match step {
                Step::Arrive { needs, reject } => {
                    let mut units: Vec<(usize, u32)> = Vec::new();
                    for (r, u) in needs {
                        if !units.iter().any(|&(x, _)| x == r) {
                            units.push((r, u.min(caps[r])));
                        }
                    }
                    let list: &'static Arc<[Need]> = Box::leak(Box::new(
                        units
                            .iter()
                            .map(|&(resource, units)| Need { resource, units })
                            .collect::<Arc<[Need]>>(),
                    ));
                    let mut call = Call {
                        arrival: k,
                        resources: units.iter().map(|&(r, _)| r).collect(),
                        units,
                        queued: false,
                        granted: None,
                        released: None,
                        cancelled: None,
                        phase: Phase::Over,
                    };
                    if reject {
                        if let Ok(p) = arb.try_acquire(list) {
                            call.granted = Some(k);
                            call.phase = Phase::Holding(p);
                        }
                    } else {
                        let mut fut = arb.acquire(list);
                        match Pin::new(&mut fut).poll(cx) {
                            Poll::Ready(Ok(p)) => {
                                call.granted = Some(k);
                                call.phase = Phase::Holding(p);
                            }
                            Poll::Ready(Err(Closed)) => prop_assert!(false, "closed"),
                            Poll::Pending => {
                                call.queued = true;
                                call.phase = Phase::Waiting(fut);
                            }
                        }
                    }
                    calls.push(call);
                }
                Step::Release(i) => {
                    let holding: Vec<usize> = (0..calls.len())
                        .filter(|&c| matches!(calls[c].phase, Phase::Holding(_)))
                        .collect();
                    if !holding.is_empty() {
                        let c = holding[i % holding.len()];
                        calls[c].phase = Phase::Over;
                        calls[c].released = Some(k);
                    }
                }
                Step::Cancel(i) => {
                    let waiting: Vec<usize> = (0..calls.len())
                        .filter(|&c| matches!(calls[c].phase, Phase::Waiting(_)))
                        .collect();
                    if !waiting.is_empty() {
                        let c = waiting[i % waiting.len()];
                        calls[c].phase = Phase::Over;
                        calls[c].cancelled = Some(k);
                    }
                }
            }
            // Observe this step's grants.
            for c in calls.iter_mut() {
                if let Phase::Waiting(fut) = &mut c.phase {
                    match Pin::new(fut).poll(cx) {
                        Poll::Pending => {}
                        Poll::Ready(Ok(p)) => {
                            c.granted = Some(k);
                            c.phase = Phase::Holding(p);
                        }
                        Poll::Ready(Err(Closed)) => prop_assert!(false, "closed"),
                    }
                }
            }
            // Exactness: the arbiter's figures are the units held.
            for (r, b) in arb.snapshot().iter().enumerate() {
                let held: u32 = calls
                    .iter()
                    .filter(|c| matches!(c.phase, Phase::Holding(_)))
                    .flat_map(|c| c.units.iter())
                    .filter(|&&(x, _)| x == r)
                    .map(|&(_, u)| u)
                    .sum();
                prop_assert_eq!(b.in_use, held);
                prop_assert!(b.in_use <= b.capacity);
            }
            k += 1;
            prop_assert!(k < 10 * total + 100, "the schedule does not drain");
        }
        check_bound(&calls)
    }

    /// DESIGN §8.1 for every call that queued.
    fn check_bound(calls: &[Call<'_>]) -> Result<(), TestCaseError> {
        let released = |c: &Call<'_>| c.released.unwrap_or(NEVER);
        for (wi, w) in calls.iter().enumerate().filter(|(_, c)| c.queued) {
            let overlaps = |c: &Call<'_>| c.resources.iter().any(|r| w.resources.contains(r));
            let others = || {
                calls
                    .iter()
                    .enumerate()
                    .filter(move |&(i, c)| i != wi && overlaps(c))
                    .map(|(_, c)| c)
            };
            // (1): units held at W's arrival, and units granted to earlier
            // arrivals, released (an earlier waiter that left: its leaving).
            let mut t1 = w.arrival;
            for c in others() {
                let held_at_arrival =
                    c.granted.is_some_and(|g| g < w.arrival) && released(c) >= w.arrival;
                let earlier_waiter =
                    c.arrival < w.arrival && c.queued && c.granted.is_none_or(|g| g >= w.arrival);
                if held_at_arrival || (earlier_waiter && c.granted.is_some()) {
                    t1 = t1.max(released(c));
                } else if earlier_waiter {
                    t1 = t1.max(c.cancelled.unwrap_or(NEVER));
                }
            }
            if t1 == NEVER {
                continue;
            }
            // (2): units later arrivals took by passing W before then.
            let mut t2 = t1;
            for c in others().filter(|c| c.arrival > w.arrival) {
                if c.granted.is_some_and(|g| g < t1) {
                    t2 = t2.max(released(c));
                }
            }
            let waiting_at =
                |s: usize| w.granted.is_none_or(|g| g > s) && w.cancelled.is_none_or(|x| x > s);
            if t2 != NEVER {
                prop_assert!(
                    !waiting_at(t2),
                    "call {} (arrived at step {}) still waits at step {} past its bound \
                     ((1) ended at {})",
                    wi,
                    w.arrival,
                    t2,
                    t1
                );
            }
            for (ci, c) in calls.iter().enumerate() {
                if ci == wi || c.arrival < w.arrival || !overlaps(c) {
                    continue;
                }
                if let Some(g) = c.granted.filter(|&g| g >= t1) {
                    prop_assert!(
                        !waiting_at(g) || (g == w.granted.unwrap_or(NEVER)),
                        "call {} (arrived at {}) passed waiter {} at step {} after its \
                         part (1) ended at {}",
                        ci,
                        c.arrival,
                        wi,
                        g,
                        t1
                    );
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
            ..ProptestConfig::default()
        })]
        #[test]
        fn every_waiter_is_granted_within_the_fairness_bound(
            caps in proptest::array::uniform3(1u32..=3),
            steps in proptest::collection::vec(step(), 1..60),
        ) {
            run(caps, &steps)?;
        }
    }
}

/// Model checks of the arbiter's state machine: every interleaving of grant,
/// release, cancel and close among 2–3 threads on small capacities.
/// Run with `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::future::block_on;
    use loom::thread;
    use std::task::Waker;

    fn needs(list: &[(usize, u32)]) -> Arc<[Need]> {
        list.iter()
            .map(|&(resource, units)| Need { resource, units })
            .collect()
    }

    fn assert_quiescent(arb: &Arbiter) {
        for b in arb.snapshot() {
            assert_eq!((b.in_use, b.waiting), (0, 0));
            assert!(b.peak_in_use <= b.capacity);
        }
    }

    #[test]
    fn contending_waiters_never_exceed_capacity_and_all_finish() {
        loom::model(|| {
            let arb = Arc::new(Arbiter::new([1]));
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let arb = Arc::clone(&arb);
                    thread::spawn(move || {
                        let one = needs(&[(0, 1)]);
                        let permit = block_on(arb.acquire(&one)).unwrap();
                        assert_eq!(arb.snapshot()[0].in_use, 1);
                        drop(permit);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_quiescent(&arb);
        });
    }

    #[test]
    fn multi_budget_waiters_in_opposite_orders_do_not_deadlock() {
        loom::model(|| {
            let arb = Arc::new(Arbiter::new([1, 1]));
            let a = Arc::clone(&arb);
            let t = thread::spawn(move || {
                let ab = needs(&[(0, 1), (1, 1)]);
                drop(block_on(a.acquire(&ab)).unwrap());
            });
            let b = needs(&[(1, 1)]);
            drop(block_on(arb.acquire(&b)).unwrap());
            let a_only = needs(&[(0, 1)]);
            drop(block_on(arb.acquire(&a_only)).unwrap());
            t.join().unwrap();
            assert_quiescent(&arb);
        });
    }

    #[test]
    fn a_cancelled_waiter_never_strands_units() {
        // Bounded like the three-task model: the lock-free release and the
        // queued waiter's CAS fallbacks multiply the interleavings.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let arb = Arc::new(Arbiter::new([2]));
            let two = needs(&[(0, 2)]);
            let held = arb.try_acquire(&two).unwrap();
            let a = Arc::clone(&arb);
            // A waiter that gives up after one poll, racing the release.
            let canceller = thread::spawn(move || {
                let one = needs(&[(0, 1)]);
                let mut fut = Box::pin(a.acquire(&one));
                let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                drop(fut);
            });
            let b = Arc::clone(&arb);
            let waiter = thread::spawn(move || {
                let two = needs(&[(0, 2)]);
                drop(block_on(b.acquire(&two)).unwrap());
            });
            drop(held);
            canceller.join().unwrap();
            waiter.join().unwrap();
            assert_quiescent(&arb);
        });
    }

    #[test]
    fn three_tasks_over_two_budgets_all_finish_within_capacity() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let arb = Arc::new(Arbiter::new([1, 1]));
            let spawn = |list: &'static [(usize, u32)]| {
                let arb = Arc::clone(&arb);
                thread::spawn(move || {
                    let n = needs(list);
                    let permit = block_on(arb.acquire(&n)).unwrap();
                    for b in arb.snapshot() {
                        assert!(b.in_use <= b.capacity);
                    }
                    drop(permit);
                })
            };
            let both = spawn(&[(0, 1), (1, 1)]);
            let first = spawn(&[(0, 1)]);
            let second = needs(&[(1, 1)]);
            drop(block_on(arb.acquire(&second)).unwrap());
            both.join().unwrap();
            first.join().unwrap();
            assert_quiescent(&arb);
        });
    }

    #[test]
    fn close_withdraws_or_grants_every_waiter() {
        loom::model(|| {
            let arb = Arc::new(Arbiter::new([1]));
            let one = needs(&[(0, 1)]);
            let held = arb.try_acquire(&one).unwrap();
            let a = Arc::clone(&arb);
            let waiter = thread::spawn(move || {
                let one = needs(&[(0, 1)]);
                // Granted (the release won) or withdrawn (close won): never stuck.
                let _ = block_on(a.acquire(&one));
            });
            let c = Arc::clone(&arb);
            let closer = thread::spawn(move || c.close());
            drop(held);
            waiter.join().unwrap();
            closer.join().unwrap();
            assert_quiescent(&arb);
        });
    }

    #[test]
    fn reject_probes_and_the_fast_path_never_exceed_capacity() {
        use loom::sync::atomic::{AtomicU32, Ordering};
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let arb = Arc::new(Arbiter::new([1]));
            let inside = Arc::new(AtomicU32::new(0));
            let enter = |inside: &AtomicU32| {
                assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "over capacity");
                inside.fetch_sub(1, Ordering::SeqCst);
            };
            let (a, i) = (Arc::clone(&arb), Arc::clone(&inside));
            let waiter = thread::spawn(move || {
                let one = needs(&[(0, 1)]);
                let p = block_on(a.acquire(&one)).unwrap();
                enter(&i);
                drop(p);
            });
            let (a, i) = (Arc::clone(&arb), Arc::clone(&inside));
            let prober = thread::spawn(move || {
                let one = needs(&[(0, 1)]);
                if let Ok(p) = a.try_acquire(&one) {
                    enter(&i);
                    drop(p);
                };
            });
            let one = needs(&[(0, 1)]);
            if let Ok(p) = arb.try_acquire(&one) {
                enter(&inside);
                drop(p);
            }
            waiter.join().unwrap();
            prober.join().unwrap();
            assert_quiescent(&arb);
        });
    }

    /// DESIGN §8.1 with a two-budget waiter W and two single-budget
    /// newcomers: once the unit held at W's arrival is released, no newcomer
    /// is granted `a` or `b` before W (in every interleaving).
    #[test]
    fn a_two_budget_waiter_is_granted_before_later_newcomers_once_its_holders_left() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let arb = Arc::new(Arbiter::new([1, 1]));
            let b = needs(&[(1, 1)]);
            let ab = needs(&[(0, 1), (1, 1)]);
            let held = arb.try_acquire(&b).unwrap();
            let mut w = Box::pin(arb.acquire(&ab));
            let cx = &mut Context::from_waker(Waker::noop());
            assert!(w.as_mut().poll(cx).is_pending(), "b is held: W queues");
            let newcomer = |list: &'static [(usize, u32)]| {
                let arb = Arc::clone(&arb);
                thread::spawn(move || {
                    let n = needs(list);
                    drop(block_on(arb.acquire(&n)).unwrap());
                })
            };
            let on_a = newcomer(&[(0, 1)]);
            let on_b = newcomer(&[(1, 1)]);
            drop(held);
            drop(block_on(w).unwrap());
            on_a.join().unwrap();
            on_b.join().unwrap();
            assert_quiescent(&arb);
            let log = arb.take_log();
            let released = log
                .iter()
                .position(|e| matches!(e, Event::Released { stamp: 0, .. }))
                .expect("the held unit of b is released under the lock (W waits)");
            let granted = log
                .iter()
                .position(
                    |e| matches!(e, Event::Granted { stamp: 1, resources } if resources.len() == 2),
                )
                .expect("W (ticket 1, the only two-budget call) is granted");
            assert!(
                !log[released..granted]
                    .iter()
                    .any(|e| matches!(e, Event::Granted { .. })),
                "a newcomer passed W after its part (1) ended: {log:?}"
            );
        });
    }
}
