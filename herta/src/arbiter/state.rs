//! The arbiter's state under its lock: per-budget bookkeeping ([`Track`]),
//! the waiter queue, and the grant pass; see the arbiter's module docs.

use std::sync::Arc;

use super::budget::Budget;
use super::*;
use crate::waiters::{List, Status, Waiters, WakeList};

/// A budget's bookkeeping under the lock.
pub(super) struct Track {
    /// Queued waiters that need this budget (its queue length).
    pub(super) waiting: u32,
    /// Some queued waiter is blocked on this budget (as of the last pass).
    pub(super) blocked: bool,
    /// Scratch of a pass: an earlier waiter in this pass needs the budget.
    pub(super) claimed: bool,
    /// While `waiting > 0`: the ticket of the waiter that started this
    /// session (the first to queue while nobody waited); 0 otherwise.
    pub(super) session: u64,
    /// Units held with stamps below `session` (taken before it started).
    pub(super) untracked: u32,
    /// Units taken during the session, `(stamp, units)` sorted by stamp.
    pub(super) young: Vec<(u64, u32)>,
    /// The most waiters that may queue for this budget (`u32::MAX`: no
    /// limit); `waiting` never exceeds it.
    pub(super) queue_limit: u32,
}

impl Track {
    /// The smallest stamp among the units held (`u64::MAX` if none).
    pub(super) fn min_stamp(&self) -> u64 {
        if self.untracked > 0 {
            0
        } else {
            self.young.first().map_or(u64::MAX, |&(s, _)| s)
        }
    }

    pub(super) fn held(&mut self, stamp: u64, units: u32) {
        if self.session == 0 {
            return;
        }
        debug_assert!(stamp >= self.session, "a session sees every take");
        match self.young.binary_search_by_key(&stamp, |&(s, _)| s) {
            Ok(i) => self.young[i].1 += units,
            Err(i) => self.young.insert(i, (stamp, units)),
        }
    }

    pub(super) fn returned(&mut self, stamp: u64, units: u32) {
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

pub(super) struct Waiter {
    pub(super) needs: Arc<[Need]>,
    pub(super) ticket: u64,
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

pub(super) struct State {
    pub(super) track: Vec<Track>,
    pub(super) waiters: Waiters<Waiter>,
    /// Queued waiters, oldest first.
    pub(super) queue: List,
    /// Tickets handed out so far.
    pub(super) tickets: u64,
    pub(super) closed: bool,
    #[cfg(test)]
    pub(super) log: Vec<Event>,
}

impl State {
    /// The first budget among `needs` that a newcomer cannot take now:
    /// short of units, or blocked by a waiter.
    pub(super) fn blocked_on(&self, budgets: &[Budget], needs: &[Need]) -> Option<usize> {
        needs
            .iter()
            .find(|n| self.track[n.resource].blocked || budgets[n.resource].free() < n.units)
            .map(|n| n.resource)
    }

    /// Takes `needs` (all free, `SLOW` set) under `stamp`.
    pub(super) fn take(&mut self, budgets: &[Budget], needs: &[Need], stamp: u64) {
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
    pub(super) fn give_back(&mut self, budgets: &[Budget], needs: &[Need], stamp: u64) -> bool {
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
    pub(super) fn thaw_idle(&self, budgets: &[Budget], needs: &[Need]) {
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
    pub(super) fn enqueue(
        &mut self,
        budgets: &[Budget],
        needs: &Arc<[Need]>,
        cx: &Context<'_>,
    ) -> usize {
        self.tickets += 1;
        let ticket = self.tickets;
        for n in needs.iter() {
            let (t, b) = (&mut self.track[n.resource], &budgets[n.resource]);
            t.waiting += 1;
            b.gauge_waiting(true);
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
    pub(super) fn stop_waiting(
        track: &mut [Track],
        budgets: &[Budget],
        needs: &[Need],
        closed: bool,
    ) {
        for n in needs {
            let t = &mut track[n.resource];
            t.waiting -= 1;
            budgets[n.resource].gauge_waiting(false);
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
    pub(super) fn pass(&mut self, budgets: &[Budget], wake: &mut WakeList) {
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
                wake.push(waiters.settle(queue, slot, Status::Granted));
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
