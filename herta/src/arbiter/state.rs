//! The arbiter's state under its lock: per-budget bookkeeping ([`Track`]),
//! the waiter queue, and the grant pass; see the arbiter's module docs.

use std::pin::Pin;
use std::sync::Arc;
use std::task::Context;

use super::budget::Budget;
use super::needs::{Largest, Need, Needs};
use super::rate::Now;
use crate::waiters::{List, Node, Status, WakeList};

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
    /// limit); `waiting` never exceeds it, except after the limit was
    /// lowered below it (no waiter is evicted).
    pub(super) queue_limit: u32,
    /// Units held beyond the capacity after it shrank below the units in
    /// use; while it is not 0, the free count is 0, `SLOW` stays set and
    /// each release repays it first (see `resize.rs`).
    pub(super) debt: u32,
    /// The most units of this budget a bound operation needs, and which
    /// one: the capacity never shrinks below it.
    pub(super) largest: Largest,
    /// A rate budget's head: the ticket of the first queued waiter short of
    /// its units as of the last pass, which keeps a timer for the instant
    /// they exist (`rate.rs`); 0 when none.
    pub(super) head: u64,
    /// Scratch of a pass: this pass found the head.
    pub(super) head_found: bool,
    /// Units the queued waiters need of this budget (a rate budget's
    /// refusal tells how long until the queue's and the call's units exist).
    pub(super) queued_units: u64,
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

    /// Units held now, `capacity - free + debt` (see `resize.rs`), of
    /// `budget`, this track's.
    /// A rate budget holds none (its units are consumed).
    pub(super) fn in_use(&self, budget: &Budget) -> u32 {
        if budget.rate.is_some() {
            return 0;
        }
        budget.capacity() - budget.free() + self.debt
    }

    /// No waiter needs the budget and it owes nothing: `SLOW` may be
    /// cleared.
    pub(super) fn idle(&self) -> bool {
        self.waiting == 0 && self.debt == 0
    }

    /// `units` are released: repays the debt first; the units left to
    /// credit as free, and whether this release repaid the last of a debt.
    #[inline]
    pub(super) fn repay(&mut self, units: u32) -> (u32, bool) {
        if self.debt == 0 {
            return (units, false);
        }
        let paid = units.min(self.debt);
        self.debt -= paid;
        (units - paid, self.debt == 0)
    }
}

/// A queued waiter's value in the waiter core: its ticket and the index of
/// its need list in [`State::lists`], packed into 8 bytes, so that its node
/// (a list id, two links, a waker, this) is 48 bytes of its future. With
/// the list as an `Arc<[Need]>` beside a `u64` ticket, queueing and leaving
/// would each move the list's shared reference count, under the lock, and a
/// cancellation storm's cost rises with every byte of the node.
///
/// The ticket keeps its low [`TICKET_BITS`] bits; [`State::ticket`] puts
/// back the rest from the arbiter's ticket count, exactly while the waiter
/// is younger than 2^48 tickets (326 days of waiting while ten million
/// calls queue per second). An older one would be taken for 2^48 tickets
/// younger than it is; its units and its grant stay exact, but the stamp
/// its grant is filed under may differ from the one its release returns
/// (a debug assertion in `Track::returned`), and a budget's smallest stamp
/// may then stay low until nobody waits for it: fairness, not safety.
#[derive(Debug, Clone, Copy)]
pub(super) struct Waiter(u64);

/// The bits of a ticket a [`Waiter`] keeps.
const TICKET_BITS: u32 = 48;
const TICKET_MASK: u64 = (1 << TICKET_BITS) - 1;

impl Waiter {
    fn new(ticket: u64, list: u16) -> Self {
        Waiter((u64::from(list) << TICKET_BITS) | (ticket & TICKET_MASK))
    }

    /// Its need list's index in [`State::lists`].
    pub(super) fn list(self) -> usize {
        (self.0 >> TICKET_BITS) as usize
    }
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
    /// Queued waiters, oldest first (their nodes are in their futures).
    pub(super) queue: List<Waiter>,
    /// Every distinct need list bound, by [`Needs`]' index.
    pub(super) lists: Vec<Arc<[Need]>>,
    /// Tickets handed out so far.
    pub(super) tickets: u64,
    pub(super) closed: bool,
    #[cfg(test)]
    pub(super) log: Vec<Event>,
}

impl State {
    /// A queued (or granted, not yet seen) waiter's full ticket.
    pub(super) fn ticket(&self, w: Waiter) -> u64 {
        ticket_of(w, self.tickets)
    }

    /// The first budget among `needs` that a newcomer cannot take now:
    /// short of units, or blocked by a waiter.
    pub(super) fn blocked_on(
        &self,
        budgets: &[Budget],
        needs: &[Need],
        now: &mut Now<'_>,
    ) -> Option<usize> {
        needs
            .iter()
            .find(|n| self.track[n.resource].blocked || budgets[n.resource].room(now) < n.units)
            .map(|n| n.resource)
    }

    /// Takes `needs` (all free, `SLOW` set) under `stamp`, rate budgets' at
    /// `now`.
    pub(super) fn take(
        &mut self,
        budgets: &[Budget],
        needs: &[Need],
        stamp: u64,
        now: &mut Now<'_>,
    ) {
        for n in needs {
            let b = &budgets[n.resource];
            b.take_at(n.units, now);
            if b.rate.is_none() {
                self.track[n.resource].held(stamp, n.units);
            }
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
            let t = &mut self.track[n.resource];
            let b = &budgets[n.resource];
            if b.rate.is_some() {
                // A grant never used: its units are refunded.
                b.refund_rate(n.units);
                waiters |= t.waiting > 0;
                continue;
            }
            let (credit, settled) = t.repay(n.units);
            b.give_locked(n.units, credit);
            if settled && t.waiting == 0 && !self.closed {
                b.thaw();
            }
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

    /// Clears `SLOW` on the budgets of `needs` that no waiter needs (and
    /// that owe no debt).
    pub(super) fn thaw_idle(&self, budgets: &[Budget], needs: &[Need]) {
        if self.closed {
            return;
        }
        for n in needs {
            if self.track[n.resource].idle() {
                budgets[n.resource].thaw();
            }
        }
    }

    /// Queues a waiter for `needs` (frozen, not grantable now).
    pub(super) fn enqueue(
        &mut self,
        budgets: &[Budget],
        needs: &Needs,
        node: Pin<&mut Node<Waiter>>,
        cx: &Context<'_>,
        now: &mut Now<'_>,
    ) -> u64 {
        // First, so that a panicking clone leaves no count behind.
        let waker = cx.waker().clone();
        self.tickets += 1;
        let ticket = self.tickets;
        for n in needs.iter() {
            let (t, b) = (&mut self.track[n.resource], &budgets[n.resource]);
            t.waiting += 1;
            t.queued_units += u64::from(n.units);
            b.gauge_waiting(true);
            if t.waiting == 1 {
                t.session = ticket;
                t.untracked = t.in_use(b);
                t.young.clear();
            }
            // A new waiter is never mature (it would have been granted):
            // it blocks the budgets it is short of.
            if b.room(now) < n.units {
                t.blocked = true;
                if b.rate.is_some() && t.head == 0 {
                    t.head = ticket;
                }
            }
        }
        debug_assert!(
            Arc::ptr_eq(&self.lists[usize::from(needs.id)], &needs.list),
            "needs interned by this arbiter"
        );
        let waiter = Waiter::new(ticket, needs.id);
        self.queue.push_back(node, waiter, waker);
        ticket
    }

    /// A waiter of `needs` left the queue (granted, cancelled, withdrawn).
    pub(super) fn stop_waiting(
        track: &mut [Track],
        budgets: &[Budget],
        needs: &[Need],
        closed: bool,
        ticket: u64,
    ) {
        for n in needs {
            let t = &mut track[n.resource];
            t.waiting -= 1;
            t.queued_units -= u64::from(n.units);
            if t.head == ticket {
                t.head = 0;
            }
            budgets[n.resource].gauge_waiting(false);
            if t.waiting == 0 {
                t.session = 0;
                t.untracked = 0;
                t.young.clear();
                t.blocked = false;
                if !closed && t.debt == 0 {
                    budgets[n.resource].thaw();
                }
            }
        }
    }

    /// Grants, in arrival order, every queued waiter that can be granted, and
    /// recomputes the `blocked` flags (see the module docs).
    ///
    /// Rate budgets are looked at as of `now`. Per rate budget with
    /// waiters, the first waiter short of its units becomes its head (woken
    /// if it was not, so that it arms its timer); the scan goes on until
    /// every such head is found.
    pub(super) fn pass(&mut self, budgets: &[Budget], wake: &mut WakeList, now: &mut Now<'_>) {
        let State {
            track,
            queue,
            lists,
            tickets,
            closed,
            #[cfg(test)]
            log,
        } = self;
        let mut open = 0usize;
        // Rate budgets with waiters whose head this pass has not found.
        let mut headless = 0usize;
        for (t, b) in track.iter_mut().zip(budgets.iter()) {
            t.blocked = false;
            t.claimed = false;
            t.head_found = false;
            open += usize::from(t.waiting > 0 && b.room(now) > 0);
            headless += usize::from(t.waiting > 0 && b.rate.is_some());
        }
        let mut cursor = queue.front();
        while let Some(&w) = cursor.value() {
            if open == 0 && headless == 0 {
                break;
            }
            let (needs, ticket) = (&lists[w.list()], ticket_of(w, *tickets));
            let grantable = needs
                .iter()
                .all(|n| !track[n.resource].blocked && budgets[n.resource].room(now) >= n.units);
            if grantable {
                for n in needs.iter() {
                    let b = &budgets[n.resource];
                    b.take_at(n.units, now);
                    let t = &mut track[n.resource];
                    if b.rate.is_none() {
                        t.held(ticket, n.units);
                    }
                    // It was open (waited for, free, unblocked); is it still?
                    open -= usize::from(b.room(now) == 0 || t.waiting == 1);
                    if b.rate.is_some() && t.waiting == 1 && !t.head_found {
                        // Its last waiter: no head to find.
                        headless -= 1;
                    }
                }
                #[cfg(test)]
                log.push(Event::Granted {
                    stamp: ticket,
                    resources: needs.iter().map(|n| n.resource).collect(),
                });
                State::stop_waiting(track, budgets, needs, *closed, ticket);
                wake.push(cursor.settle(Status::Granted));
                continue;
            }
            let (found, new) = find_heads(track, budgets, needs, ticket, now);
            headless -= found;
            if new {
                // A new head: woken, to arm its timer.
                wake.extend(cursor.waker());
            }
            let mature = needs.iter().all(|n| {
                let t = &track[n.resource];
                !t.claimed && t.min_stamp() >= ticket
            });
            for n in needs.iter() {
                let t = &mut track[n.resource];
                let free = budgets[n.resource].room(now);
                if !t.blocked && (mature || free < n.units) {
                    t.blocked = true;
                    open -= usize::from(free > 0);
                }
                t.claimed = true;
            }
            cursor.move_next();
        }
        if headless > 0 {
            // Rate budgets none of whose waiters is short of units: no
            // timer is needed until a pass finds one.
            for (t, b) in track.iter_mut().zip(budgets.iter()) {
                if b.rate.is_some() && t.waiting > 0 && !t.head_found {
                    t.head = 0;
                }
            }
        }
    }
}

/// The rate budgets of `needs` whose head the pass has not found yet and
/// of which the waiter with `ticket`, not granted, is short: it is their
/// head. How many, and whether it was not their head before.
fn find_heads(
    track: &mut [Track],
    budgets: &[Budget],
    needs: &[Need],
    ticket: u64,
    now: &mut Now<'_>,
) -> (usize, bool) {
    let (mut found, mut new) = (0, false);
    for n in needs {
        let (t, b) = (&mut track[n.resource], &budgets[n.resource]);
        if b.rate.is_none() || t.head_found || b.room(now) >= n.units {
            continue;
        }
        t.head_found = true;
        found += 1;
        new |= t.head != ticket;
        t.head = ticket;
    }
    (found, new)
}

/// The full ticket of `w` when `tickets` have been handed out: the most
/// recent ticket ending in `w`'s bits (see [`Waiter`]).
fn ticket_of(w: Waiter, tickets: u64) -> u64 {
    tickets - (tickets.wrapping_sub(w.0 & TICKET_MASK) & TICKET_MASK)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_is_8_bytes_and_keeps_its_list_and_its_ticket() {
        assert_eq!(std::mem::size_of::<Waiter>(), 8);
        let w = Waiter::new(12_345, u16::MAX);
        assert_eq!(w.list(), usize::from(u16::MAX));
        assert_eq!(ticket_of(w, 12_345), 12_345);
        assert_eq!(ticket_of(w, 12_345 + TICKET_MASK), 12_345);
    }

    #[test]
    fn a_ticket_is_restored_across_the_wrap_of_its_kept_bits() {
        let wrap = 1u64 << TICKET_BITS;
        for ticket in [wrap - 3, wrap, wrap + 1, 5 * wrap - 1] {
            let w = Waiter::new(ticket, 7);
            for age in [0, 1, 3, 1 << 20, TICKET_MASK] {
                assert_eq!(ticket_of(w, ticket + age), ticket, "{ticket} at age {age}");
            }
        }
    }
}
