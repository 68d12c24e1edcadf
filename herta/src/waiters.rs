//! The waiter core shared by the budget arbiter, the key table (and the
//! loom models' `Notify` stand-in).
//!
//! # What it is
//!
//! A [`List`] is a FIFO of waiting futures, oldest first; each waiting
//! future embeds its own [`Node`] (an intrusive doubly linked list, the
//! shape of tokio's `batch_semaphore`), so queueing allocates nothing and a
//! cancelled waiter is unlinked in O(1) wherever it sits. The links are the
//! [`pin_list`] crate's: a safe API over pinned nodes, so this crate keeps
//! `#![forbid(unsafe_code)]`. The owner's lock guards a list and all of its
//! nodes: every method takes the list by reference, which only the lock
//! holder has.
//!
//! Nodes live in the futures, not in a store of the owner's: a
//! cancellation touches its own future (which its drop touches anyway) and
//! two neighbours, and no waiter store apart from the futures competes with
//! them for the caches (a separate store of nodes makes a disconnect storm
//! cost more per waiter the longer the queue; the `queue_scaling` test
//! guards that it does not).
//!
//! # The protocol (every user follows it)
//!
//! A node is in one of four states:
//!
//! * *idle*: not in a list (before it queues and after it left);
//! * `Queued`: linked in its list, with the waker of its last poll;
//! * `Granted`: unlinked; the owner has already handed it what it waited
//!   for (units, a key), which it now owns even before its future sees it;
//! * `Withdrawn`: unlinked; the owner closed and refuses it.
//!
//! [`List::push_back`] makes an idle node `Queued`. `Queued → Granted` and
//! `Queued → Withdrawn` happen only in the owner ([`Cursor::settle`]), and
//! hand out the waker, which the owner collects in a [`WakeList`] and wakes
//! **after** its lock is released. The future then either
//!
//! * polls ([`Node::poll`]): `Queued` stores the new waker and stays
//!   pending; `Granted` / `Withdrawn` make the node idle and return its
//!   value;
//! * or is dropped ([`Node::leave`]): the node becomes idle whatever its
//!   state, and the owner learns which state it was in: a `Queued` node is
//!   unlinked in O(1) (the caller lets the waiters behind it proceed); a
//!   `Granted` node's grant must be **handed on** (the caller gives the units
//!   or the key to the next waiter): a grant racing with a cancellation (or
//!   with the expiry of a `max_wait` or a deadline) is never lost.
//!
//! # Invariants
//!
//! 1. A node is linked iff it is `Queued`. A list's *members* are its
//!    nodes that are not idle (queued or settled, not yet seen by their
//!    future); [`List::has_members`] reads their count in O(1).
//! 2. Each node is made idle only by its own future (poll to completion or
//!    drop), never by the owner, and before the future's memory goes: the
//!    future's drop calls [`Node::leave`] first, under the owner's lock.
//!    (A node dropped while not idle **aborts the process**: pin-list's
//!    rule, since its neighbours would point at freed memory.)
//! 3. A list outlives its members: a settled node still needs its list to
//!    become idle. The arbiter's one list lives as long as the arbiter,
//!    which every waiting future borrows; the key table keeps a key's entry,
//!    and its list, while the list has members (`keys.rs`). (A leaked
//!    waiting future, `mem::forget` of its box, stays a member for ever: its
//!    node is never touched again, and dropping the list then is harmless.)
//! 4. Wakers are woken only outside the owner's lock. A [`WakeList`] keeps
//!    up to 32 wakers inline (no heap allocation per pass); a pass that
//!    grants more spills the rest into one `Vec`.
//!
//! # Cost
//!
//! Creating a list takes one number from pin-list's global counter (one
//! atomic add on a shared line, which checks that a node is only ever used
//! with its own list): the arbiter creates one list; the key table gives a
//! contended key a list on its first waiter, a spare one of its shard's
//! when it has one (`keys.rs`), so lists are created only when a shard's
//! contended keys outgrow its spares. A list with no members may be reused
//! for any nodes. A node is 48 bytes of the waiting future with an 8-byte
//! value.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Poll, Waker};

use arrayvec::ArrayVec;
use pin_list::id::Checked;
use pin_list::{CursorMut, NodeData, PinList};

/// Where a node stands (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Queued,
    Granted,
    Withdrawn,
}

/// What pin-list keeps in a node: while queued the waker of its last poll
/// and the owner's value, once settled its status and the value.
struct Types<T>(PhantomData<fn() -> T>);

impl<T> pin_list::Types for Types<T> {
    type Id = Checked;
    type Protected = (Waker, T);
    type Removed = (Status, T);
    type Unprotected = ();
}

/// A FIFO of waiting futures' nodes, oldest first (see the module docs).
pub(crate) struct List<T> {
    nodes: PinList<Types<T>>,
    /// Nodes queued or settled and not yet seen (invariant 1).
    members: usize,
}

impl<T> List<T> {
    /// An empty list (one atomic add on pin-list's global id counter).
    pub(crate) fn new() -> Self {
        List {
            nodes: PinList::new(Checked::new()),
            members: 0,
        }
    }

    /// Queues the idle `node` at the back, with `value` and `waker`.
    ///
    /// # Panics
    ///
    /// If `node` is not idle.
    ///
    /// The waker comes cloned, so that an owner can clone it before its
    /// bookkeeping: nothing after that can panic.
    pub(crate) fn push_back(&mut self, node: Pin<&mut Node<T>>, value: T, waker: Waker) {
        self.nodes
            .push_back(node.project().inner, (waker, value), ());
        self.members += 1;
    }

    /// Whether some node is queued or settled but not yet seen by its
    /// future: the list must outlive it (invariant 3).
    pub(crate) fn has_members(&self) -> bool {
        self.members > 0
    }

    /// A cursor on the oldest queued node.
    pub(crate) fn front(&mut self) -> Cursor<'_, T> {
        Cursor(self.nodes.cursor_front_mut())
    }

    /// Withdraws every queued node, oldest first (the owner is closing):
    /// `each` sees each one's value, its waker goes into `wake`.
    pub(crate) fn withdraw_all(&mut self, wake: &mut WakeList, mut each: impl FnMut(&T))
    where
        T: Copy,
    {
        let mut cursor = self.front();
        while let Some(value) = cursor.value() {
            each(value);
            wake.push(cursor.settle(Status::Withdrawn));
        }
    }

    /// Queued nodes, counted by a walk of the list: O(queue) (tests, and
    /// the `herta_scan_on_cancel` bug below).
    #[cfg(any(herta_scan_on_cancel, all(test, not(loom))))]
    pub(crate) fn queued(&mut self) -> usize {
        let mut cursor = self.front();
        let mut n = 0;
        while cursor.value().is_some() {
            n += 1;
            cursor.move_next();
        }
        n
    }
}

/// A position in a [`List`], on a queued node or past the last one.
pub(crate) struct Cursor<'l, T>(CursorMut<'l, Types<T>>);

impl<T> Cursor<'_, T> {
    /// The value of the node under the cursor (`None`: past the last).
    pub(crate) fn value(&self) -> Option<&T> {
        self.0.protected().map(|(_, value)| value)
    }

    /// A clone of the waker of the node under the cursor (`None`: past the
    /// last), to wake it without settling it.
    pub(crate) fn waker(&self) -> Option<Waker> {
        self.0.protected().map(|(waker, _)| waker.clone())
    }

    /// Moves to the next queued node.
    pub(crate) fn move_next(&mut self) {
        self.0.move_next();
    }

    /// Unlinks the node under the cursor, settling it as `status`
    /// (`Granted` or `Withdrawn`), and moves to the next one; returns its
    /// waker, to wake once the lock is released.
    ///
    /// # Panics
    ///
    /// Past the last node.
    pub(crate) fn settle(&mut self, status: Status) -> Waker
    where
        T: Copy,
    {
        debug_assert_ne!(
            status,
            Status::Queued,
            "a node settles granted or withdrawn"
        );
        let value = *self.value().expect("settle on a queued node");
        match self.0.remove_current((status, value)) {
            Ok((waker, _)) => waker,
            Err(_) => unreachable!("the cursor is on a node"),
        }
    }
}

pin_project_lite::pin_project! {
    /// A waiting future's place in a [`List`]: embed it, pinned, in the
    /// future, and call [`leave`](Node::leave) from the future's drop
    /// (invariant 2).
    pub(crate) struct Node<T> {
        #[pin]
        inner: pin_list::Node<Types<T>>,
    }
}

impl<T> Node<T> {
    /// An idle node.
    pub(crate) const fn new() -> Self {
        Node {
            inner: pin_list::Node::new(),
        }
    }

    /// Whether the node is idle (never queued, or already left).
    pub(crate) fn is_idle(&self) -> bool {
        self.inner.is_initial()
    }

    /// The poll of a waiting future: `Pending` while queued (keeping the
    /// latest waker), else the node becomes idle and its end state and value
    /// are returned.
    ///
    /// # Panics
    ///
    /// If the node is idle, or `list` is not its list.
    pub(crate) fn poll(
        self: Pin<&mut Self>,
        list: &mut List<T>,
        waker: &Waker,
    ) -> Poll<(Status, T)> {
        let node = self
            .project()
            .inner
            .initialized_mut()
            .expect("polled a node that is not in a list");
        match node.take_removed(&list.nodes) {
            Ok(((status, value), ())) => {
                list.members -= 1;
                Poll::Ready((status, value))
            }
            Err(node) => {
                let (stored, _) = node
                    .protected_mut(&mut list.nodes)
                    .expect("a node not removed is linked");
                if !stored.will_wake(waker) {
                    *stored = waker.clone();
                }
                Poll::Pending
            }
        }
    }

    /// The drop of a waiting future: makes the node idle, unlinking it if it
    /// is queued, and says what state it was in (`None`: it was idle). The
    /// caller lets the waiters behind a `Queued` node proceed and hands a
    /// `Granted` node's grant on.
    ///
    /// # Panics
    ///
    /// If `list` is not the node's list.
    pub(crate) fn leave(self: Pin<&mut Self>, list: &mut List<T>) -> Option<(Status, T)> {
        let node = self.project().inner.initialized_mut()?;
        #[cfg(herta_scan_on_cancel)]
        {
            // The bug that `tests/tests/suite/queue_scaling.rs` exists to
            // catch, put back on purpose to show that it does: a walk of
            // the whole queue, O(queue) per cancel. Never set in a normal
            // build.
            let _ = list.queued();
        }
        let left = match node.reset(&mut list.nodes) {
            (NodeData::Linked((_waker, value)), ()) => (Status::Queued, value),
            (NodeData::Removed(settled), ()) => settled,
        };
        list.members -= 1;
        Some(left)
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

    /// Adds `waker`, if any.
    pub(crate) fn extend(&mut self, waker: Option<Waker>) {
        if let Some(waker) = waker {
            self.push(waker);
        }
    }

    /// Adds `waker`, to wake after the lock is released.
    pub(crate) fn push(&mut self, waker: Waker) {
        if let Err(full) = self.inline.try_push(waker) {
            self.spill.push(full.element());
        }
    }

    /// Wakes everything collected, emptying the list. Call with no lock
    /// held. By reference and draining in place: taking the list by value
    /// (and iterating the array by value) would copy the whole inline array
    /// twice, which would be most of the cost of a cancelled waiter's drop
    /// when nothing is to be woken.
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
    fn unlinks_anywhere_and_keeps_order() {
        let mut list = List::new();
        let waker = Waker::noop();
        let mut nodes: Vec<Pin<Box<Node<u32>>>> = (0..5).map(|_| Box::pin(Node::new())).collect();
        for (i, node) in nodes.iter_mut().enumerate() {
            list.push_back(node.as_mut(), i as u32, waker.clone());
        }
        assert_eq!(list.queued(), 5);
        assert_eq!(
            nodes[2].as_mut().leave(&mut list),
            Some((Status::Queued, 2))
        );
        assert_eq!(
            nodes[0].as_mut().leave(&mut list),
            Some((Status::Queued, 0))
        );
        assert_eq!(
            nodes[4].as_mut().leave(&mut list),
            Some((Status::Queued, 4))
        );
        assert!(nodes[0].is_idle());
        assert_eq!(nodes[0].as_mut().leave(&mut list), None, "left twice");
        let mut order = Vec::new();
        let mut cursor = list.front();
        while let Some(&v) = cursor.value() {
            order.push(v);
            cursor.move_next();
        }
        assert_eq!(order, [1, 3]);

        let mut wake = WakeList::new();
        wake.push(list.front().settle(Status::Granted));
        assert!(list.has_members());
        assert_eq!(
            nodes[1].as_mut().poll(&mut list, waker),
            Poll::Ready((Status::Granted, 1))
        );
        assert_eq!(nodes[3].as_mut().poll(&mut list, waker), Poll::Pending);
        let mut seen = Vec::new();
        list.withdraw_all(&mut wake, |&v| seen.push(v));
        assert_eq!((seen, list.queued()), (vec![3], 0));
        assert!(list.has_members(), "withdrawn but not yet seen");
        assert_eq!(
            nodes[3].as_mut().leave(&mut list),
            Some((Status::Withdrawn, 3))
        );
        assert!(!list.has_members());
        wake.wake_all();
    }

    #[test]
    fn a_poll_keeps_the_latest_waker() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use std::task::Wake;

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (first, second) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let mut list = List::new();
        let mut node = Box::pin(Node::new());
        list.push_back(node.as_mut(), (), Waker::from(Arc::clone(&first)));
        assert!(node
            .as_mut()
            .poll(&mut list, &Waker::from(Arc::clone(&second)))
            .is_pending());
        list.front().settle(Status::Granted).wake();
        assert_eq!(
            (
                first.0.load(Ordering::SeqCst),
                second.0.load(Ordering::SeqCst)
            ),
            (0, 1)
        );
        assert_eq!(
            node.as_mut().poll(&mut list, Waker::noop()),
            Poll::Ready((Status::Granted, ()))
        );
    }

    #[test]
    #[should_panic(expected = "incorrect `PinList`")]
    fn a_node_is_only_used_with_its_own_list() {
        let (mut mine, mut other) = (List::new(), List::<()>::new());
        let mut node = Box::pin(Node::new());
        mine.push_back(node.as_mut(), (), Waker::noop().clone());
        // Panics before touching either list. The node must still leave its
        // own list before it is dropped (else the process aborts).
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = node.as_mut().poll(&mut other, Waker::noop());
        }));
        assert!(node.as_mut().leave(&mut mine).is_some());
        std::panic::resume_unwind(result.unwrap_err());
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_node_with_an_8_byte_value_is_48_bytes() {
        assert_eq!(std::mem::size_of::<Node<u64>>(), 48);
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
