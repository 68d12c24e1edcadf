//! The budget arbiter: all-or-nothing, fair acquisition of several weighted
//! budgets at once.
//!
//! # Interface
//!
//! One [`Arbiter`] owns every budget of a runtime. A call asks for a set of
//! [`Need`]s (resource index, units) and gets a [`Permit`] whose `Drop`
//! returns all of them: [`Arbiter::try_acquire`] never waits (admission
//! `Reject`), [`Arbiter::acquire`] queues (admission `Wait`).
//! [`Arbiter::close`] withdraws every waiter with
//! [`AcquireError::Closed`].
//!
//! # Algorithm
//!
//! All state sits behind one mutex: per budget its free units and a `blocked`
//! flag, and one queue of waiters in arrival order. A waiter holds **no** unit
//! until it is granted all of its units in one step (all-or-nothing), so no
//! waiter ever holds one budget while it waits for another: there is no
//! hold-and-wait, hence no deadlock, whatever order contracts name their
//! resources in.
//!
//! Grants happen in a *pass* over the queue, in arrival order, after every
//! event that can make progress possible (a release, a cancelled waiter). A
//! waiter is granted when, for each of its needs, the budget has enough free
//! units **and** is not `blocked`. When a waiter cannot be granted, every
//! budget it is blocked on (short of units, or blocked by an earlier waiter)
//! is marked `blocked` for the rest of the pass. Hence:
//!
//! * per budget, waiters are granted in arrival order: a later waiter passes an
//!   earlier one only if it needs none of the budgets the earlier one is
//!   blocked on (it may use a budget the earlier one also needs but is not
//!   short of);
//! * no starvation: a large waiter blocks its short budgets for everyone who
//!   arrives after it, so it is granted as soon as the holders present when it
//!   arrived (and earlier waiters) have released;
//! * a new arrival (and a `Reject` probe) is granted at once only if it could
//!   be granted at the end of the queue, using the `blocked` flags of the last
//!   pass — `Reject` never overtakes a queued waiter on the same budget.
//!
//! # Invariants (checked by the loom models and the scenario tests)
//!
//! 1. `0 <= free <= capacity` for every budget; units held = `capacity - free`.
//! 2. After every operation, no queued waiter could be granted (the pass ran).
//! 3. A waiter's units are either all queued-for or all granted; a granted
//!    waiter dropped before it saw its grant returns them and a pass runs, so
//!    the units reach the next waiter at once.
//! 4. After `close`, the queue is empty and every waiter has seen [`AcquireError::Closed`].
//!
//! The uncontended path (free units, empty queue) takes the lock once to
//! acquire and once to release and allocates nothing.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use slab::Slab;

#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

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
    state: Mutex<State>,
}

struct Budget {
    capacity: u32,
    free: u32,
    peak_in_use: u32,
    /// Queued waiters that need this budget.
    waiting: u32,
    /// Some queued waiter is blocked on this budget (as of the last pass).
    blocked: bool,
    /// The most waiters that may queue for this budget (`u32::MAX`: no limit).
    queue_limit: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Queued,
    Granted,
    Withdrawn,
}

struct Waiter {
    needs: Arc<[Need]>,
    waker: Option<Waker>,
    status: Status,
}

struct State {
    budgets: Vec<Budget>,
    /// Queued waiters (slab keys), oldest first.
    queue: VecDeque<usize>,
    waiters: Slab<Waiter>,
    closed: bool,
}

impl State {
    /// The first budget among `needs` that cannot grant now: short of units,
    /// or blocked by an earlier waiter.
    fn blocked_on(&self, needs: &[Need]) -> Option<usize> {
        needs
            .iter()
            .find(|n| {
                let b = &self.budgets[n.resource];
                b.blocked || b.free < n.units
            })
            .map(|n| n.resource)
    }

    /// The first budget among `needs` whose queue is at its limit.
    fn queue_full(&self, needs: &[Need]) -> Option<usize> {
        needs
            .iter()
            .find(|n| {
                let b = &self.budgets[n.resource];
                b.waiting >= b.queue_limit
            })
            .map(|n| n.resource)
    }

    fn take(&mut self, needs: &[Need]) {
        for n in needs {
            let b = &mut self.budgets[n.resource];
            b.free -= n.units;
            b.peak_in_use = b.peak_in_use.max(b.capacity - b.free);
        }
    }

    fn give_back(&mut self, needs: &[Need]) {
        for n in needs {
            let b = &mut self.budgets[n.resource];
            b.free += n.units;
            debug_assert!(b.free <= b.capacity, "released more units than held");
        }
    }

    /// Marks every budget `needs` is short of as blocked. Returns how many
    /// of them were *open* before (free units and not blocked), for the pass.
    fn block(&mut self, needs: &[Need]) -> usize {
        let mut closed = 0;
        for n in needs {
            let b = &mut self.budgets[n.resource];
            if !b.blocked && b.free < n.units {
                b.blocked = true;
                closed += usize::from(b.free > 0);
            }
        }
        closed
    }

    fn stop_waiting(&mut self, needs: &[Need]) {
        for n in needs {
            self.budgets[n.resource].waiting -= 1;
        }
    }

    /// Grants, in arrival order, every queued waiter that can be granted, and
    /// recomputes the `blocked` flags. Returns the wakers to wake once the
    /// lock is released.
    ///
    /// The scan stops as soon as no budget is *open* (free units and not
    /// blocked): no later waiter could be granted then, and every check made
    /// before the next pass sees such a budget as short or blocked anyway.
    /// Passes run only after a release or a cancellation, the only events
    /// that add free units. So a release on a budget with a long queue costs
    /// the grants it makes, not the length of the queue.
    fn pass(&mut self) -> Vec<Waker> {
        let mut wake = Vec::new();
        let mut open = 0usize;
        for b in &mut self.budgets {
            b.blocked = false;
            open += usize::from(b.free > 0);
        }
        let mut i = 0;
        while i < self.queue.len() && open > 0 {
            let key = self.queue[i];
            let needs = Arc::clone(&self.waiters[key].needs);
            if self.blocked_on(&needs).is_some() {
                open -= self.block(&needs);
                i += 1;
                continue;
            }
            self.take(&needs);
            open -= needs
                .iter()
                .filter(|n| self.budgets[n.resource].free == 0)
                .count();
            self.stop_waiting(&needs);
            self.queue.remove(i);
            let w = &mut self.waiters[key];
            w.status = Status::Granted;
            wake.extend(w.waker.take());
        }
        wake
    }
}

fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

impl Arbiter {
    /// An arbiter over budgets with these capacities (index = resource).
    pub(crate) fn new(capacities: impl IntoIterator<Item = u32>) -> Self {
        let budgets = capacities
            .into_iter()
            .map(|capacity| Budget {
                capacity,
                free: capacity,
                peak_in_use: 0,
                waiting: 0,
                blocked: false,
                queue_limit: u32::MAX,
            })
            .collect();
        Arbiter {
            state: Mutex::new(State {
                budgets,
                queue: VecDeque::new(),
                waiters: Slab::new(),
                closed: false,
            }),
        }
    }

    /// Limits how many waiters may queue for each budget, by index (`None`:
    /// no limit). A waiter that would exceed a budget's limit is refused
    /// with [`AcquireError::QueueFull`] instead of queuing.
    pub(crate) fn limit_queues(&mut self, limits: impl IntoIterator<Item = Option<u32>>) {
        let mut state = self.lock();
        for (b, limit) in state.budgets.iter_mut().zip(limits) {
            b.queue_limit = limit.unwrap_or(u32::MAX);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        #[cfg(loom)]
        return self.state.lock().unwrap();
        #[cfg(not(loom))]
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes every need at once, or nothing, without waiting.
    pub(crate) fn try_acquire<'a>(
        &'a self,
        needs: &'a Arc<[Need]>,
    ) -> Result<Permit<'a>, TryAcquireError> {
        let mut state = self.lock();
        if state.closed {
            return Err(TryAcquireError::Closed);
        }
        if let Some(busy) = state.blocked_on(needs) {
            return Err(TryAcquireError::Busy(busy));
        }
        state.take(needs);
        Ok(Permit {
            arbiter: self,
            needs,
        })
    }

    /// Waits until every need can be taken at once, holding nothing meanwhile.
    pub(crate) fn acquire<'a>(&'a self, needs: &'a Arc<[Need]>) -> Acquire<'a> {
        Acquire {
            arbiter: self,
            needs,
            slot: None,
        }
    }

    fn release(&self, needs: &[Need]) {
        let wake = {
            let mut state = self.lock();
            state.give_back(needs);
            if state.queue.is_empty() {
                return;
            }
            state.pass()
        };
        wake_all(wake);
    }

    /// Refuses new acquisitions and withdraws every waiter with
    /// [`AcquireError::Closed`].
    /// Held permits stay valid and release normally. Idempotent.
    pub(crate) fn close(&self) {
        let wake = {
            let mut state = self.lock();
            state.closed = true;
            let mut wake = Vec::new();
            while let Some(key) = state.queue.pop_front() {
                let needs = Arc::clone(&state.waiters[key].needs);
                state.stop_waiting(&needs);
                let w = &mut state.waiters[key];
                w.status = Status::Withdrawn;
                wake.extend(w.waker.take());
            }
            for b in &mut state.budgets {
                b.blocked = false;
            }
            wake
        };
        wake_all(wake);
    }

    /// Every budget's figures, by index.
    pub(crate) fn snapshot(&self) -> Vec<BudgetSnapshot> {
        let state = self.lock();
        state
            .budgets
            .iter()
            .map(|b| BudgetSnapshot {
                capacity: b.capacity,
                in_use: b.capacity - b.free,
                waiting: b.waiting,
                peak_in_use: b.peak_in_use,
                queue_limit: (b.queue_limit != u32::MAX).then_some(b.queue_limit),
            })
            .collect()
    }
}

/// Units held from an [`Arbiter`]; dropping it returns them.
#[must_use = "dropping a permit releases its units at once"]
pub(crate) struct Permit<'a> {
    arbiter: &'a Arbiter,
    needs: &'a [Need],
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.arbiter.release(self.needs);
    }
}

/// The future of [`Arbiter::acquire`]. Dropping it at any point returns
/// whatever it was granted and lets the waiters behind it proceed.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Acquire<'a> {
    arbiter: &'a Arbiter,
    needs: &'a Arc<[Need]>,
    /// Our waiter's slab key while queued (or granted but not yet seen).
    slot: Option<usize>,
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<Permit<'a>, AcquireError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut state = this.arbiter.lock();
        let Some(key) = this.slot else {
            // First poll: take at once if we could be granted at the end of
            // the queue, else queue up holding nothing.
            if state.closed {
                return Poll::Ready(Err(AcquireError::Closed));
            }
            if state.blocked_on(this.needs).is_none() {
                state.take(this.needs);
                return Poll::Ready(Ok(Permit {
                    arbiter: this.arbiter,
                    needs: this.needs,
                }));
            }
            if let Some(full) = state.queue_full(this.needs) {
                return Poll::Ready(Err(AcquireError::QueueFull(full)));
            }
            let needs = Arc::clone(this.needs);
            state.block(&needs);
            for n in needs.iter() {
                state.budgets[n.resource].waiting += 1;
            }
            let key = state.waiters.insert(Waiter {
                needs,
                waker: Some(cx.waker().clone()),
                status: Status::Queued,
            });
            state.queue.push_back(key);
            this.slot = Some(key);
            return Poll::Pending;
        };
        match state.waiters[key].status {
            Status::Queued => {
                let w = &mut state.waiters[key];
                match &mut w.waker {
                    Some(old) if old.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Status::Granted => {
                state.waiters.remove(key);
                this.slot = None;
                Poll::Ready(Ok(Permit {
                    arbiter: this.arbiter,
                    needs: this.needs,
                }))
            }
            Status::Withdrawn => {
                state.waiters.remove(key);
                this.slot = None;
                Poll::Ready(Err(AcquireError::Closed))
            }
        }
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some(key) = self.slot.take() else {
            return;
        };
        let wake = {
            let mut state = self.arbiter.lock();
            let waiter = state.waiters.remove(key);
            match waiter.status {
                Status::Queued => {
                    if let Some(pos) = state.queue.iter().position(|&k| k == key) {
                        state.queue.remove(pos);
                    }
                    state.stop_waiting(&waiter.needs);
                    // Our departure may unblock the waiters behind us.
                    state.pass()
                }
                Status::Granted => {
                    // Granted but never seen: hand the units on at once.
                    state.give_back(&waiter.needs);
                    state.pass()
                }
                Status::Withdrawn => Vec::new(),
            }
        };
        wake_all(wake);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
