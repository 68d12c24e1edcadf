//! The waiter core shared by the budget arbiter and the key table.
//!
//! # What it is
//!
//! A [`Waiters`] slab holds one node per waiting future; [`List`]s thread
//! FIFO queues through it by slab index (a doubly linked list, so a node is
//! unlinked in O(1) wherever it sits — the same shape as tokio's
//! `batch_semaphore`, with slab indices instead of pointers, so no `unsafe`).
//! One slab may carry many lists: the arbiter has one queue in arrival order,
//! the key table one per key.
//!
//! # The protocol (every user follows it; the owner's lock guards all of it)
//!
//! A node is in exactly one of three states:
//!
//! * `Queued`: linked in its list, with the waker of its last poll;
//! * `Granted`: unlinked; the owner has already handed it what it waited for
//!   (units, a key), which it now owns even before its future sees it;
//! * `Withdrawn`: unlinked; the owner closed and refuses it.
//!
//! `Queued → Granted` and `Queued → Withdrawn` happen only under the owner's
//! lock, and take the waker out into a [`WakeList`] that is woken **after**
//! the lock is released. The future then either
//!
//! * polls ([`Waiters::poll`]): `Queued` stores the new waker and stays
//!   pending; `Granted` / `Withdrawn` remove the node and return its value;
//! * or is dropped ([`Waiters::leave`]): the node is removed whatever its
//!   state, and the owner learns which state it was in: a `Queued` node is
//!   unlinked in O(1) (the caller lets the waiters behind it proceed); a
//!   `Granted` node's grant must be **handed on** (the caller gives the units
//!   or the key to the next waiter) — a grant racing with a cancellation (or
//!   with the expiry of a `max_wait` or a deadline) is never lost.
//!
//! # Invariants
//!
//! 1. A node is linked iff it is `Queued`; each list's `len` counts its
//!    linked nodes (checked by the tests; owners that need a queue's length
//!    at run time, such as the arbiter's per-budget `waiting`, keep it
//!    themselves, per budget).
//! 2. Each node is removed exactly once, by its own future (poll to
//!    completion or drop), never by the owner: a slot index held by a future
//!    always names that future's node.
//! 3. Wakers are woken only outside the owner's lock. A [`WakeList`] keeps
//!    up to 32 wakers inline (no heap allocation per pass); a pass that
//!    grants more spills the rest into one `Vec`.

use std::task::{Poll, Waker};

use arrayvec::ArrayVec;
use slab::Slab;

/// Where a node stands (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Queued,
    Granted,
    Withdrawn,
}

/// A slot index in a link (`u32`: see [`Waiters`]).
type Link = u32;

/// No node: the end of a list.
const NIL: Link = Link::MAX;
/// In `next`, instead of a slot: the node is unlinked and `Granted`.
const GRANTED: Link = Link::MAX - 1;
/// In `next`, instead of a slot: the node is unlinked and `Withdrawn`.
const WITHDRAWN: Link = Link::MAX - 2;

/// One waiting future's node: 32 bytes with an 8-byte value, as both the
/// key table's and the arbiter's are (a `Waker` is 16), so two share a
/// cache line and none straddles two. The links are `u32` and the state is
/// read from `next` (a queued node's `next` is a slot or [`NIL`]; an
/// unlinked one's says how it left the queue): with `usize` links and a
/// state field beside them a node took 48 and 64 bytes, and a cancellation
/// storm touches a node, and its neighbours, at arbitrary places of the
/// slab (RELIABILITY.md, finding 5). Aligned to 32 bytes, so that the
/// slab's buffer is too (a large one comes from `mmap` at a page plus 16
/// bytes with only the 8-byte alignment of its fields, and half of its
/// nodes would straddle two lines).
#[repr(align(32))]
struct Node<T> {
    prev: Link,
    next: Link,
    /// The waker of the last poll while queued (a no-op waker once settled:
    /// not an `Option`, so that the slab's entries keep its niche and add
    /// no tag of their own).
    waker: Waker,
    value: T,
}

impl<T> Node<T> {
    fn status(&self) -> Status {
        match self.next {
            GRANTED => Status::Granted,
            WITHDRAWN => Status::Withdrawn,
            _ => Status::Queued,
        }
    }
}

/// A FIFO of nodes of one [`Waiters`] slab, oldest first.
#[derive(Debug)]
pub(crate) struct List {
    head: Link,
    tail: Link,
    len: usize,
}

impl List {
    pub(crate) const fn new() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    /// Linked (queued) nodes, in O(1).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The oldest node.
    pub(crate) fn front(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head as usize)
    }
}

/// The nodes of one owner (an arbiter, a key-table shard).
///
/// # Panics
///
/// Slots are `u32` links: queueing a node while 2^32 - 3 are in the slab
/// panics (each queued call's future is hundreds of bytes: terabytes of
/// waiters).
pub(crate) struct Waiters<T> {
    nodes: Slab<Node<T>>,
}

impl<T> Waiters<T> {
    pub(crate) fn new() -> Self {
        Waiters { nodes: Slab::new() }
    }

    /// Queues a new node at the back of `list`; returns its slot.
    pub(crate) fn push_back(&mut self, list: &mut List, value: T, waker: &Waker) -> usize {
        let slot = self.nodes.insert(Node {
            prev: list.tail,
            next: NIL,
            waker: waker.clone(),
            value,
        });
        let link = Link::try_from(slot)
            .ok()
            .filter(|&l| l < WITHDRAWN)
            .expect("fewer than 2^32 - 3 waiters at once");
        match list.tail {
            NIL => list.head = link,
            tail => self.nodes[tail as usize].next = link,
        }
        list.tail = link;
        list.len += 1;
        slot
    }

    pub(crate) fn value(&self, slot: usize) -> &T {
        &self.nodes[slot].value
    }

    /// The node after `slot` in its list (`slot` must be queued).
    pub(crate) fn next(&self, slot: usize) -> Option<usize> {
        let next = self.nodes[slot].next;
        debug_assert!(
            next == NIL || next < WITHDRAWN,
            "only queued nodes are linked"
        );
        (next != NIL).then_some(next as usize)
    }

    fn unlink(&mut self, list: &mut List, slot: usize) {
        let node = &self.nodes[slot];
        debug_assert_eq!(
            node.status(),
            Status::Queued,
            "only queued nodes are linked"
        );
        let (prev, next) = (node.prev, node.next);
        match prev {
            NIL => list.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => list.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
        list.len -= 1;
    }

    /// Unlinks a queued node from `list` and marks it `status` (`Granted` or
    /// `Withdrawn`); returns its waker, to wake once the lock is released.
    pub(crate) fn settle(&mut self, list: &mut List, slot: usize, status: Status) -> Waker {
        debug_assert_ne!(
            status,
            Status::Queued,
            "a node settles as granted or withdrawn"
        );
        self.unlink(list, slot);
        let node = &mut self.nodes[slot];
        node.next = if status == Status::Granted {
            GRANTED
        } else {
            WITHDRAWN
        };
        std::mem::replace(&mut node.waker, Waker::noop().clone())
    }

    /// Withdraws every node of `list` (the owner is closing).
    pub(crate) fn withdraw_all(&mut self, list: &mut List, wake: &mut WakeList) {
        while let Some(slot) = list.front() {
            wake.push(self.settle(list, slot, Status::Withdrawn));
        }
    }

    /// The poll of a waiting future: `Pending` while queued (keeping the
    /// latest waker), else the node is removed and its end state returned.
    pub(crate) fn poll(&mut self, slot: usize, waker: &Waker) -> Poll<(Status, T)> {
        let node = &mut self.nodes[slot];
        let status = node.status();
        if status == Status::Queued {
            if !node.waker.will_wake(waker) {
                node.waker = waker.clone();
            }
            return Poll::Pending;
        }
        Poll::Ready((status, self.nodes.remove(slot).value))
    }

    /// The drop of a waiting future: removes the node (unlinking it from the
    /// list `list` finds for its value, which is asked only while the node
    /// is still queued: a granted or withdrawn node's list may be gone) and
    /// says what state it was in; the caller hands a `Granted` node's grant on.
    pub(crate) fn leave<'l>(
        &mut self,
        slot: usize,
        list: impl FnOnce(&T) -> &'l mut List,
    ) -> (Status, T) {
        let status = self.nodes[slot].status();
        if status == Status::Queued {
            let list = list(&self.nodes[slot].value);
            #[cfg(herta_scan_on_cancel)]
            {
                // The bug that `tests/tests/suite/queue_scaling.rs` exists
                // to catch, put back on purpose to show that it does: a walk
                // from the head to the leaving node, O(queue) per cancel.
                // Never set in a normal build (RELIABILITY.md, finding 5).
                let mut at = list.head;
                while at != slot as Link {
                    at = self.nodes[at as usize].next;
                }
            }
            self.unlink(list, slot);
        }
        (status, self.nodes.remove(slot).value)
    }
}

const INLINE: usize = 32;

/// Wakers collected under a lock and woken after it is released.
pub(crate) struct WakeList {
    /// The first wakers, inline: creating an empty list writes only its
    /// length, and dropping one visits only the wakers it holds.
    inline: ArrayVec<Waker, INLINE>,
    spill: Vec<Waker>,
}

impl WakeList {
    pub(crate) fn new() -> Self {
        WakeList {
            inline: ArrayVec::new(),
            spill: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, waker: Waker) {
        if let Err(full) = self.inline.try_push(waker) {
            self.spill.push(full.element());
        }
    }

    /// Wakes everything collected, emptying the list. Call with no lock
    /// held. By reference and draining in place: taking the list by value
    /// (and iterating the array by value) copied its 544 bytes twice, most
    /// of the cost of a cancelled waiter's drop when nothing is to be woken
    /// (measured with callgrind, `queue_scaling`).
    #[inline]
    pub(crate) fn wake_all(&mut self) {
        for w in self.inline.drain(..) {
            w.wake();
        }
        if !self.spill.is_empty() {
            for w in self.spill.drain(..) {
                w.wake();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn unlinks_anywhere_in_constant_time_and_keeps_order() {
        let mut w = Waiters::new();
        let mut list = List::new();
        let waker = Waker::noop();
        let slots: Vec<usize> = (0..5).map(|i| w.push_back(&mut list, i, waker)).collect();
        assert_eq!(w.leave(slots[2], |_| &mut list), (Status::Queued, 2));
        assert_eq!(w.leave(slots[0], |_| &mut list), (Status::Queued, 0));
        assert_eq!(w.leave(slots[4], |_| &mut list), (Status::Queued, 4));
        assert_eq!(list.len(), 2);
        let mut order = Vec::new();
        let mut cur = list.front();
        while let Some(s) = cur {
            order.push(*w.value(s));
            cur = w.next(s);
        }
        assert_eq!(order, [1, 3]);
        let mut wake = WakeList::new();
        wake.push(w.settle(&mut list, slots[1], Status::Granted));
        assert_eq!(w.poll(slots[1], waker), Poll::Ready((Status::Granted, 1)));
        w.withdraw_all(&mut list, &mut wake);
        assert_eq!(list.len(), 0);
        assert_eq!(
            w.leave(slots[3], |_| -> &mut List {
                unreachable!("withdrawn: no list")
            }),
            (Status::Withdrawn, 3)
        );
        wake.wake_all();
    }

    #[test]
    fn a_node_with_an_8_byte_value_fills_half_a_cache_line() {
        // Two nodes per 64-byte line: a node never straddles two.
        assert_eq!(std::mem::size_of::<Node<u64>>(), 32);
        assert_eq!(std::mem::align_of::<Node<u64>>(), 32);
        // The slab's entries are an enum of a node and a free-list index:
        // with the waker's niche they need no tag either (as an `Option`).
        assert_eq!(std::mem::size_of::<Option<Node<u64>>>(), 32);
    }

    #[test]
    fn a_wake_list_spills_past_its_inline_capacity() {
        let mut wake = WakeList::new();
        for _ in 0..100 {
            wake.push(Waker::noop().clone());
        }
        assert_eq!(wake.inline.len(), INLINE);
        assert_eq!(wake.spill.len(), 100 - INLINE);
        wake.wake_all();
    }
}
