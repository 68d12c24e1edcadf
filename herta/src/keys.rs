//! Per-key serialization: at most one call per key runs at a time.
//!
//! A [`KeyTable`] is one key space (an operation's own, or a shared
//! `scope`). Before `close`, a key is *held* while its entry exists; waiters
//! for a held key queue on the entry in arrival order and are handed the key
//! directly when the holder releases it (no barging). The entry disappears
//! when the last holder releases with nobody queued, so an unused key leaves
//! nothing behind (after `close`, once its withdrawn waiters are gone too:
//! "Waiters" below).
//!
//! The key is stored once, in the table; holders and waiters refer to it by
//! its slot, so serializing costs no clone of the key.
//!
//! # Shards
//!
//! The table is split into [`SHARDS`] shards by the key's hash, each behind
//! its own mutex on its own cache line: calls on different keys meet on the
//! same lock only when their keys hash to the same shard (1 in 16).
//!
//! A shard finds a key by a scan of its entries while it holds at most
//! [`SMALL`] of them (each compared by its stored hash first, then by key),
//! and through a hash index above that: a few keys in use (the common case,
//! a call holding a key only while it runs) cost no index insertion and
//! removal per call. The index is built when the shard's entries pass
//! `SMALL` and dropped when the shard is empty again.
//!
//! # Hashing
//!
//! Keys are hashed with [foldhash](https://docs.rs/foldhash) (its `fast`
//! variant, seeded at random per table), not the standard library's
//! SipHash: a few instructions per key instead of SipHash's rounds, on
//! every call. The trade-off is SipHash's resistance to *hash flooding*: an
//! adversary who chooses many keys that collide can make one shard's index
//! slow. Here the keys are chosen by the program's own callers (the
//! `serialize_by` parameter of its own operations); a program that keys
//! calls by values an outside party chooses freely (a request's header, a
//! user-supplied name) gives that party some choice of the keys. foldhash's
//! random seed per table keeps its collisions from being computed offline,
//! and a collision costs at most a longer probe in one shard (never a lost
//! or wrong entry): keys are compared by equality after the hash.
//!
//! # Waiters
//!
//! Each entry's queue is a [`List`] of the waiter core ([`crate::waiters`],
//! the same one the budget arbiter uses), its nodes inside the waiting
//! futures: a cancelled waiter is unlinked in O(1); a waiter handed the key
//! but dropped before it saw it hands the key on at once (to the next
//! waiter, or lets the entry go); wakers are woken after the shard's lock is
//! released. An entry gets its list with its first waiter and keeps it as
//! long as the entry; an entry removed with an (empty) list gives it to
//! its shard, which keeps up to [`SPARE`] such lists for the next keys that
//! get a waiter. A new list costs one atomic add on a counter shared by the
//! whole process (pin-list's list ids), a write that two workers handing
//! keys over would otherwise make on every hand-over; a spare list costs a
//! move.
//!
//! A list must outlive its members (`waiters.rs`, invariant 3), and a
//! waiter withdrawn by `close` is still a member until its future sees it
//! or is dropped. So after `close`, an entry whose key is released while
//! such waiters remain stays, *unheld*, until the last of them leaves; it
//! counts in no figure ([`KeyTable::len`]), and nothing can queue on it or
//! find it (the table refuses everything once closed).
//!
//! # Invariants (checked by the loom models and the unit tests)
//!
//! 1. An entry exists iff its key is held or its list has members; its
//!    queue holds the waiters for it, oldest first, and each is handed the
//!    key in that order. Before `close`, every entry is held.
//! 2. A key is held by at most one guard or granted-but-unseen waiter.
//! 3. After `close`, every queue is empty and every waiter has seen (or will
//!    see on its next poll) [`Closed`]; held keys stay held until released.
//! 4. A waiter's entry slot names its entry while its node is a member (the
//!    entry cannot go before), so a waiter never touches another entry.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use arrayvec::ArrayVec;
use foldhash::fast::RandomState as FoldState;
use hashbrown::HashTable;
use slab::Slab;

use crate::loom::{lock, Mutex, MutexGuard};
use crate::own_lines::OwnLines;
use crate::waiters::{List, Node, Status, WakeList};

/// Shards per table (a power of two). The loom models use one: sharding
/// only picks which mutex a key meets, and each shard is the same machine.
#[cfg(not(loom))]
const SHARDS: usize = 16;
#[cfg(loom)]
const SHARDS: usize = 1;

/// Entries a shard finds by a scan (no index) while it holds no more.
const SMALL: usize = 8;

/// Empty waiter lists a shard keeps for reuse.
const SPARE: usize = 8;

/// The key type of an operation without `serialize_by`: uninhabited, so
/// such a call never has a key (the generated code names it through
/// `herta::__private`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoKey {}

/// A key as text, for `show_key = true`: its `Debug`, at most 64 bytes (a
/// longer one is cut at a character boundary and ends in `...`).
pub(crate) fn describe<K: fmt::Debug>(key: &K) -> String {
    let mut s = format!("{key:?}");
    if s.len() > 64 {
        let mut cut = 61;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// A wait for a key ended because the table closed (the runtime is
/// stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

/// Why [`KeyTable::try_acquire`] refused.
#[derive(Debug)]
pub(crate) enum TryKeyError<K> {
    /// The key is held or queued for; the key is given back for the report.
    Busy(K),
    /// The table is closed (the runtime is stopping).
    Closed,
}

pub(crate) struct KeyTable<K> {
    /// The shards' states, each on cache lines of its own.
    shards: Box<[OwnLines<Mutex<State<K>>>]>,
    hasher: FoldState,
}

struct Entry<K> {
    key: K,
    /// The key's hash when it was inserted: removal and rehashing use it, so
    /// a key whose `Hash` is not stable cannot corrupt the index.
    hash: u64,
    /// A guard or a granted waiter holds the key. Cleared when the key is
    /// released with no waiter queued: the entry then goes at once, unless
    /// withdrawn waiters (after `close`) are still members of its list.
    held: bool,
    /// Waiters for the key, oldest first: created with the first waiter.
    queue: Option<List<()>>,
}

struct State<K> {
    /// Entry slots, found by key through a scan while the shard is small,
    /// through `index` once it is `indexed`.
    entries: Slab<Entry<K>>,
    /// Every entry's slot by hash, while `indexed` (else empty).
    index: HashTable<usize>,
    /// The shard has held more than [`SMALL`] entries since it was last
    /// empty: `index` is kept. While it is not, `entries` has at most
    /// `SMALL` slots, free or not (a slab grows only when it is full).
    indexed: bool,
    /// Empty lists of removed entries, for the next first waiters.
    spare: ArrayVec<List<()>, SPARE>,
    /// Entries kept only for withdrawn waiters (see the module docs).
    unheld: usize,
    closed: bool,
}

impl<K: Eq> State<K> {
    fn new() -> Self {
        State {
            entries: Slab::new(),
            index: HashTable::new(),
            indexed: false,
            spare: ArrayVec::new(),
            unheld: 0,
            closed: false,
        }
    }

    /// The entry of `key`, if any (before `close`: every entry is held).
    #[inline]
    fn find(&self, hash: u64, key: &K) -> Option<usize> {
        let entries = &self.entries;
        if self.indexed {
            return self.index.find(hash, |&e| entries[e].key == *key).copied();
        }
        entries
            .iter()
            .find(|(_, e)| e.hash == hash && e.key == *key)
            .map(|(slot, _)| slot)
    }

    /// Holds a new entry for `key` (not present).
    fn insert(&mut self, key: K, hash: u64) -> usize {
        let State {
            entries,
            index,
            indexed,
            ..
        } = self;
        let entry = entries.insert(Entry {
            key,
            hash,
            held: true,
            queue: None,
        });
        if *indexed {
            index.insert_unique(hash, entry, |&e| entries[e].hash);
        } else if entries.len() > SMALL {
            // Past a scan's worth: index every entry from now on.
            for (slot, e) in entries.iter() {
                index.insert_unique(e.hash, slot, |&s| entries[s].hash);
            }
            *indexed = true;
        }
        entry
    }

    /// Queues `node` on the list of `entry` (held), giving the entry a
    /// list (a spare one if the shard has one) if it has none yet.
    fn push(&mut self, entry: usize, node: Pin<&mut Node<()>>, waker: Waker) {
        let State { entries, spare, .. } = self;
        let e = &mut entries[entry];
        debug_assert!(e.held, "only a closed table keeps unheld entries");
        e.queue
            .get_or_insert_with(|| spare.pop().unwrap_or_else(List::new))
            .push_back(node, (), waker);
    }

    /// The list of `entry`, which a member of it is asking for.
    fn queue(&mut self, entry: usize) -> &mut List<()> {
        self.entries[entry]
            .queue
            .as_mut()
            .expect("a waiter's entry has its list")
    }

    /// Hands the key of `entry` to its oldest waiter (returning its waker),
    /// or lets the entry go (kept, unheld, while withdrawn waiters are still
    /// members of its list).
    fn release(&mut self, entry: usize) -> Option<Waker> {
        let e = &mut self.entries[entry];
        if let Some(queue) = &mut e.queue {
            let mut oldest = queue.front();
            if oldest.value().is_some() {
                return Some(oldest.settle(Status::Granted));
            }
            if queue.has_members() {
                e.held = false;
                self.unheld += 1;
                return None;
            }
        }
        self.remove(entry);
        None
    }

    /// Removes the unheld `entry` once no withdrawn waiter refers to it.
    fn remove_if_unused(&mut self, entry: usize) {
        let e = &self.entries[entry];
        if e.held || e.queue.as_ref().is_some_and(List::has_members) {
            return;
        }
        self.unheld -= 1;
        self.remove(entry);
    }

    /// Removes `entry`, whose list (if any) has no members: the list is
    /// kept as a spare if the shard has room for one.
    fn remove(&mut self, entry: usize) {
        let removed = self.entries.remove(entry);
        if let Some(queue) = removed.queue {
            debug_assert!(!queue.has_members(), "a removed entry's list is empty");
            let _full = self.spare.try_push(queue);
        }
        if self.indexed {
            if let Ok(found) = self.index.find_entry(removed.hash, |&e| e == entry) {
                found.remove();
            }
            if self.entries.is_empty() {
                // Back to scans: the slab's slots go too, so that a scan
                // visits at most `SMALL` of them again.
                self.entries.clear();
                self.index.clear();
                self.indexed = false;
            }
        }
    }
}

impl<K: Hash + Eq> KeyTable<K> {
    pub(crate) fn new() -> Self {
        KeyTable {
            shards: (0..SHARDS)
                .map(|_| OwnLines(Mutex::new(State::new())))
                .collect(),
            hasher: FoldState::default(),
        }
    }

    /// The key's hash and its shard.
    fn locate(&self, key: &K) -> (u64, usize) {
        let hash = self.hasher.hash_one(key);
        // The shard is the top bits of the hash remixed by an odd multiplier,
        // scaled to `SHARDS` (no shift past 63 when there is one shard).
        // foldhash's `fast` output is a good hash for hashbrown, but under
        // some of its per-process seeds a run of small integer keys lands in
        // a few values of any one fixed bit range, leaving shards empty and
        // others crowded; the multiply spreads every bit of the hash into
        // the top ones.
        let mixed = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (hash, ((mixed * SHARDS as u64) >> 32) as usize)
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, State<K>> {
        lock(&self.shards[shard])
    }

    /// Holds `key` if nobody holds or waits for it.
    pub(crate) fn try_acquire(&self, key: K) -> Result<KeyGuard<'_, K>, TryKeyError<K>> {
        let (hash, shard) = self.locate(&key);
        let mut state = self.lock(shard);
        if state.closed {
            return Err(TryKeyError::Closed);
        }
        if state.find(hash, &key).is_some() {
            return Err(TryKeyError::Busy(key));
        }
        let entry = state.insert(key, hash);
        Ok(KeyGuard {
            table: self,
            shard,
            entry,
        })
    }

    /// Waits, in arrival order, until `key` can be held.
    pub(crate) fn acquire(&self, key: K) -> AcquireKey<'_, K> {
        AcquireKey {
            table: self,
            key: Some(key),
            shard: 0,
            entry: 0,
            node: Node::new(),
        }
    }

    /// Hands the key of `entry` to its oldest waiter, or removes the entry.
    fn release(&self, shard: usize, entry: usize) {
        let waker = self.lock(shard).release(entry);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Refuses new calls and withdraws every waiter. Held keys stay held
    /// until released. Idempotent.
    pub(crate) fn close(&self) {
        for shard in 0..SHARDS {
            let mut wake = WakeList::new();
            {
                let mut state = self.lock(shard);
                state.closed = true;
                for (_, entry) in state.entries.iter_mut() {
                    if let Some(queue) = &mut entry.queue {
                        queue.withdraw_all(&mut wake, |_| {});
                    }
                }
            }
            wake.wake_all();
        }
    }

    /// Keys held (a waited-for key is held too).
    pub(crate) fn len(&self) -> usize {
        (0..SHARDS)
            .map(|s| {
                let state = self.lock(s);
                state.entries.len() - state.unheld
            })
            .sum()
    }

    /// The table's address: what identifies it while a guard or a queued
    /// waiter refers to it (a nested call's self-deadlock check,
    /// `call/chain.rs`).
    pub(crate) fn addr(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Entries, held or kept for withdrawn waiters (tests only).
    #[cfg(test)]
    fn entries(&self) -> usize {
        (0..SHARDS).map(|s| self.lock(s).entries.len()).sum()
    }
}

/// A held key; dropping it hands the key to the next waiter.
#[must_use = "dropping a key guard releases the key at once"]
pub(crate) struct KeyGuard<'a, K: Hash + Eq> {
    table: &'a KeyTable<K>,
    shard: usize,
    entry: usize,
}

impl<K: Hash + Eq> KeyGuard<'_, K> {
    /// The held key's entry: its table's address, its shard and its slot
    /// (unique while the key is held).
    pub(crate) fn at(&self) -> (usize, usize, usize) {
        (self.table.addr(), self.shard, self.entry)
    }
}

impl<K: Hash + Eq> Drop for KeyGuard<'_, K> {
    fn drop(&mut self) {
        self.table.release(self.shard, self.entry);
    }
}

pin_project_lite::pin_project! {
    /// The future of [`KeyTable::acquire`]; dropping it at any point gives
    /// up its place (or the key, if it was just handed over).
    #[must_use = "futures do nothing unless polled"]
    pub(crate) struct AcquireKey<'a, K>
    where
        K: Hash,
        K: Eq,
    {
        table: &'a KeyTable<K>,
        key: Option<K>,
        // Where we queued, while `node` is a member of that entry's list.
        shard: usize,
        entry: usize,
        #[pin]
        node: Node<()>,
    }

    impl<'a, K> PinnedDrop for AcquireKey<'a, K>
    where
        K: Hash,
        K: Eq,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if this.node.is_idle() {
                return;
            }
            let waker = {
                // Nothing before `leave` can panic but a broken invariant 4
                // (the lock ignores poisoning; not under loom, whose lock
                // does not): a node dropped in a list aborts (waiters.rs).
                let mut state = this.table.lock(*this.shard);
                let entry = *this.entry;
                match this.node.leave(state.queue(entry)) {
                    // Handed the key but never saw it: pass it on.
                    Some((Status::Granted, ())) => state.release(entry),
                    // Queued: the key's holder is still there. Withdrawn:
                    // the entry may have been kept for us alone.
                    _ => {
                        state.remove_if_unused(entry);
                        None
                    }
                }
            };
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl<K: Hash + Eq> AcquireKey<'_, K> {
    /// Where a waiter that is queued (its poll returned `Pending`) waits:
    /// its table's address, its entry's shard and slot.
    pub(crate) fn queued_at(self: Pin<&mut Self>) -> (usize, usize, usize) {
        let this = self.project();
        debug_assert!(!this.node.is_idle(), "only a queued waiter asks");
        (this.table.addr(), *this.shard, *this.entry)
    }

    /// `f` of the key a queued waiter waits for (read in its entry, which
    /// stays while the waiter is queued on it).
    pub(crate) fn with_key<R>(self: Pin<&mut Self>, f: impl FnOnce(&K) -> R) -> R {
        let this = self.project();
        debug_assert!(!this.node.is_idle(), "only a queued waiter asks");
        let state = this.table.lock(*this.shard);
        f(&state.entries[*this.entry].key)
    }
}

impl<'a, K: Hash + Eq> Future for AcquireKey<'a, K> {
    type Output = Result<KeyGuard<'a, K>, Closed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let table = *this.table;
        if this.node.is_idle() {
            let key = this.key.take().expect("AcquireKey polled after completion");
            let (hash, shard) = table.locate(&key);
            let mut state = table.lock(shard);
            if state.closed {
                return Poll::Ready(Err(Closed));
            }
            if let Some(entry) = state.find(hash, &key) {
                state.push(entry, this.node, cx.waker().clone());
                (*this.shard, *this.entry) = (shard, entry);
                return Poll::Pending;
            }
            let entry = state.insert(key, hash);
            return Poll::Ready(Ok(KeyGuard {
                table,
                shard,
                entry,
            }));
        }
        let (shard, entry) = (*this.shard, *this.entry);
        let mut state = table.lock(shard);
        match this.node.poll(state.queue(entry), cx.waker()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((Status::Granted, ())) => Poll::Ready(Ok(KeyGuard {
                table,
                shard,
                entry,
            })),
            Poll::Ready(_) => {
                state.remove_if_unused(entry);
                Poll::Ready(Err(Closed))
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn unused_keys_leave_nothing_behind() {
        let table = KeyTable::new();
        for i in 0..1000 {
            let g = table.try_acquire(i).unwrap();
            assert_eq!(table.len(), 1);
            drop(g);
        }
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn same_key_queues_and_is_handed_over_in_order() {
        let table = KeyTable::new();
        let held = table.try_acquire("a").unwrap();
        assert!(matches!(
            table.try_acquire("a"),
            Err(TryKeyError::Busy("a"))
        ));
        let _other = table.try_acquire("b").unwrap();
        let mut first = Box::pin(table.acquire("a"));
        let mut second = Box::pin(table.acquire("a"));
        assert!(poll(&mut first).is_pending());
        assert!(poll(&mut second).is_pending());
        drop(held);
        assert!(
            poll(&mut second).is_pending(),
            "second must not overtake first"
        );
        let Poll::Ready(Ok(g)) = poll(&mut first) else {
            panic!("first should hold the key")
        };
        drop(g);
        assert!(matches!(poll(&mut second), Poll::Ready(Ok(_))));
    }

    #[test]
    fn handed_over_but_dropped_waiter_passes_the_key_on() {
        let table = KeyTable::new();
        let held = table.try_acquire(1).unwrap();
        let mut first = Box::pin(table.acquire(1));
        let mut second = Box::pin(table.acquire(1));
        assert!(poll(&mut first).is_pending());
        assert!(poll(&mut second).is_pending());
        drop(held);
        drop(first);
        let Poll::Ready(Ok(g)) = poll(&mut second) else {
            panic!("second should hold the key")
        };
        drop(g);
        assert_eq!(table.len(), 0);
    }

    /// Key 1 released after `close` withdrew its one waiter, which has not
    /// seen it yet.
    fn withdrawn_after_release(table: &KeyTable<i32>) -> Pin<Box<AcquireKey<'_, i32>>> {
        let held = table.try_acquire(1).unwrap();
        let mut w = Box::pin(table.acquire(1));
        assert!(poll(&mut w).is_pending());
        table.close();
        drop(held);
        w
    }

    #[test]
    fn a_withdrawn_waiter_keeps_its_entry_until_it_leaves_and_the_key_counts_as_free() {
        // Found by the hammer with shutdown racing: close withdraws the
        // waiter, the holder releases, then the waiter's future is dropped
        // unpolled. Its node still needs the entry's list (waiters.rs,
        // invariant 3): the entry stays, unheld, and goes with it.
        let table = KeyTable::new();
        let w = withdrawn_after_release(&table);
        assert_eq!((table.len(), table.entries()), (0, 1));
        drop(w);
        assert_eq!((table.len(), table.entries()), (0, 0));
    }

    #[test]
    fn a_withdrawn_waiter_that_sees_it_lets_the_unheld_entry_go() {
        let table = KeyTable::new();
        let mut w = withdrawn_after_release(&table);
        assert!(matches!(poll(&mut w), Poll::Ready(Err(Closed))));
        assert_eq!(table.entries(), 0);
        drop(w);
        assert_eq!(table.entries(), 0);
    }

    #[test]
    fn close_with_a_granted_unseen_waiter_and_a_queued_one_leaves_nothing_once_both_go() {
        let table = KeyTable::new();
        let held = table.try_acquire(3).unwrap();
        let mut first = Box::pin(table.acquire(3));
        let mut second = Box::pin(table.acquire(3));
        assert!(poll(&mut first).is_pending());
        assert!(poll(&mut second).is_pending());
        drop(held); // granted to `first`, which has not seen it
        table.close(); // withdraws `second`
        drop(first); // hands the key on: nobody queued, `second` still a member
        assert_eq!((table.len(), table.entries()), (0, 1));
        drop(second);
        assert_eq!((table.len(), table.entries()), (0, 0));
    }

    #[test]
    fn a_key_gets_its_list_with_its_first_waiter_and_not_without_one() {
        let table = KeyTable::new();
        let held = table.try_acquire(7).unwrap();
        let mut waiting: Vec<_> = (0..3).map(|_| Box::pin(table.acquire(7))).collect();
        for w in &mut waiting {
            assert!(poll(w).is_pending());
        }
        assert!(has_list(&table, 7));
        drop(held);
        for w in &mut waiting {
            let Poll::Ready(Ok(g)) = poll(w) else {
                panic!("handed over in order")
            };
            drop(g);
        }
        assert_eq!(table.entries(), 0);
        let uncontended = table.try_acquire(8).unwrap();
        assert!(!has_list(&table, 8), "no list without a waiter");
        drop(uncontended);
    }

    #[test]
    fn a_shard_past_a_scan_s_worth_of_keys_indexes_them_and_scans_again_once_empty() {
        let table = KeyTable::new();
        // 1000 keys over 16 shards: every shard passes `SMALL`.
        let guards: Vec<_> = (0..1000).map(|k| table.try_acquire(k).unwrap()).collect();
        assert!((0..SHARDS).all(|s| table.lock(s).indexed));
        for k in 0..1000 {
            assert!(matches!(table.try_acquire(k), Err(TryKeyError::Busy(_))));
        }
        let (odd, even): (Vec<_>, Vec<_>) = guards.into_iter().partition(|g| g.entry % 2 == 1);
        drop(odd);
        assert_eq!(table.len(), even.len());
        let free = (0..1000).filter(|&k| table.try_acquire(k).is_ok()).count();
        assert_eq!(
            free,
            1000 - even.len(),
            "released keys are free, held ones busy"
        );
        drop(even);
        assert_eq!(table.entries(), 0);
        for s in 0..SHARDS {
            let state = table.lock(s);
            assert!(!state.indexed && state.index.is_empty());
        }
        // Scans again, and finds what it holds.
        let held = table.try_acquire(5).unwrap();
        assert!(matches!(table.try_acquire(5), Err(TryKeyError::Busy(5))));
        assert!(!table.lock(held.shard).indexed);
    }

    #[test]
    fn a_removed_entry_s_list_is_kept_by_its_shard_and_reused_by_the_next_first_waiter() {
        let table = KeyTable::new();
        let contend = |key: i32| {
            let held = table.try_acquire(key).unwrap();
            let mut w = Box::pin(table.acquire(key));
            assert!(poll(&mut w).is_pending());
            let shard = held.shard;
            drop(held);
            let Poll::Ready(Ok(g)) = poll(&mut w) else {
                panic!("handed over")
            };
            drop(g);
            shard
        };
        let shard = contend(1);
        assert_eq!(table.lock(shard).spare.len(), 1, "the list is kept");
        let same = (2..).find(|&k| table.locate(&k).1 == shard).unwrap();
        let held = table.try_acquire(same).unwrap();
        let mut w = Box::pin(table.acquire(same));
        assert!(poll(&mut w).is_pending());
        assert_eq!(table.lock(shard).spare.len(), 0, "the first waiter took it");
        drop(held);
        drop(w);
        assert_eq!(table.lock(shard).spare.len(), 1, "and gave it back");
    }

    #[test]
    fn a_shard_keeps_at_most_spare_lists() {
        let table = KeyTable::new();
        let shard = table.locate(&0).1;
        let keys: Vec<i32> = (0..)
            .filter(|k| table.locate(k).1 == shard)
            .take(SPARE + 3)
            .collect();
        let held: Vec<_> = keys
            .iter()
            .map(|&k| table.try_acquire(k).unwrap())
            .collect();
        let mut waiting: Vec<_> = keys.iter().map(|&k| Box::pin(table.acquire(k))).collect();
        for w in &mut waiting {
            assert!(poll(w).is_pending());
        }
        drop(waiting);
        drop(held);
        assert_eq!(table.entries(), 0);
        assert_eq!(table.lock(shard).spare.len(), SPARE);
    }

    /// Whether the entry of `key` (present) has a waiter list.
    fn has_list(table: &KeyTable<i32>, key: i32) -> bool {
        let (hash, shard) = table.locate(&key);
        let state = table.lock(shard);
        let entry = state.find(hash, &key).unwrap();
        state.entries[entry].queue.is_some()
    }

    #[test]
    fn close_withdraws_waiters() {
        let table = KeyTable::new();
        let held = table.try_acquire(1).unwrap();
        let mut w = Box::pin(table.acquire(1));
        assert!(poll(&mut w).is_pending());
        table.close();
        assert!(matches!(poll(&mut w), Poll::Ready(Err(Closed))));
        drop(w);
        drop(held);
        assert_eq!(table.len(), 0);
        assert!(matches!(table.try_acquire(1), Err(TryKeyError::Closed)));
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
