//! Per-key serialization: at most one call per key runs at a time.
//!
//! A [`KeyTable`] is one key space (an operation's own, or a shared
//! `scope`). A key is *held* while its entry exists; waiters for a held key
//! queue on the entry in arrival order and are handed the key directly when
//! the holder releases it (no barging). The entry disappears when the last
//! holder releases with nobody queued, so an unused key leaves nothing behind.
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
//! # Waiters
//!
//! Each entry's queue is a [`List`] of the shard's waiter core
//! ([`crate::waiters`], the same one the budget arbiter uses): a cancelled
//! waiter is unlinked in O(1); a waiter handed the key but dropped before it
//! saw it hands the key on at once (to the next waiter, or removes the
//! entry); wakers are woken after the shard's lock is released.
//!
//! # Invariants (checked by the loom models and the unit tests)
//!
//! 1. An entry exists iff its key is held; its queue holds the waiters for
//!    it, oldest first, and each is handed the key in that order.
//! 2. A key is held by at most one guard or granted-but-unseen waiter.
//! 3. After `close`, every queue is empty and every waiter has seen
//!    [`Closed`]; held keys stay held until released.

use std::future::Future;
use std::hash::{BuildHasher, Hash, RandomState};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use hashbrown::HashTable;
use slab::Slab;

use crate::arbiter::Closed;
use crate::loom::{lock, Mutex, MutexGuard};
use crate::own_lines::OwnLines;
use crate::waiters::{List, Status, Waiters, WakeList};

/// Shards per table (a power of two). The loom models use one: sharding
/// only picks which mutex a key meets, and each shard is the same machine.
#[cfg(not(loom))]
const SHARDS: usize = 16;
#[cfg(loom)]
const SHARDS: usize = 1;

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
    hasher: RandomState,
}

struct Entry<K> {
    key: K,
    /// The key's hash when it was inserted: removal and rehashing use it, so
    /// a key whose `Hash` is not stable cannot corrupt the index.
    hash: u64,
    /// Waiters for the key, oldest first.
    queue: List,
}

struct State<K> {
    /// Entry slots, found by key through `index`.
    entries: Slab<Entry<K>>,
    index: HashTable<usize>,
    /// Waiter nodes; each one's value is its entry's slot.
    waiters: Waiters<usize>,
    closed: bool,
}

impl<K> State<K> {
    /// Holds a new entry for `key` (not present).
    fn insert(&mut self, key: K, hash: u64) -> usize {
        let State { entries, index, .. } = self;
        let entry = entries.insert(Entry {
            key,
            hash,
            queue: List::new(),
        });
        index.insert_unique(hash, entry, |&e| entries[e].hash);
        entry
    }

    /// Hands the key of `entry` to its oldest waiter (returning its waker),
    /// or removes the entry.
    fn release(&mut self, entry: usize) -> Option<Waker> {
        let State {
            entries,
            index,
            waiters,
            ..
        } = self;
        let queue = &mut entries[entry].queue;
        if let Some(next) = queue.front() {
            return Some(waiters.settle(queue, next, Status::Granted));
        }
        let removed = entries.remove(entry);
        if let Ok(found) = index.find_entry(removed.hash, |&e| e == entry) {
            found.remove();
        }
        None
    }
}

impl<K: Hash + Eq> KeyTable<K> {
    pub(crate) fn new() -> Self {
        KeyTable {
            shards: (0..SHARDS)
                .map(|_| {
                    OwnLines(Mutex::new(State {
                        entries: Slab::new(),
                        index: HashTable::new(),
                        waiters: Waiters::new(),
                        closed: false,
                    }))
                })
                .collect(),
            hasher: RandomState::new(),
        }
    }

    /// The key's hash and its shard.
    fn locate(&self, key: &K) -> (u64, usize) {
        let hash = self.hasher.hash_one(key);
        // hashbrown uses the low bits (bucket) and the top 7 (tag).
        (hash, (hash >> 32) as usize & (SHARDS - 1))
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
        let entries = &state.entries;
        if state.index.find(hash, |&e| entries[e].key == key).is_some() {
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
            slot: None,
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
                let State {
                    entries, waiters, ..
                } = &mut *state;
                for (_, entry) in entries.iter_mut() {
                    waiters.withdraw_all(&mut entry.queue, &mut wake);
                }
            }
            wake.wake_all();
        }
    }

    /// Keys held or waited for.
    pub(crate) fn len(&self) -> usize {
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

impl<K: Hash + Eq> Drop for KeyGuard<'_, K> {
    fn drop(&mut self) {
        self.table.release(self.shard, self.entry);
    }
}

/// The future of [`KeyTable::acquire`]; dropping it at any point gives up
/// its place (or the key, if it was just handed over).
#[must_use = "futures do nothing unless polled"]
pub(crate) struct AcquireKey<'a, K: Hash + Eq> {
    table: &'a KeyTable<K>,
    key: Option<K>,
    shard: usize,
    slot: Option<usize>,
}

impl<K: Hash + Eq> Unpin for AcquireKey<'_, K> {}

impl<'a, K: Hash + Eq> Future for AcquireKey<'a, K> {
    type Output = Result<KeyGuard<'a, K>, Closed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let table = this.table;
        let Some(slot) = this.slot else {
            let key = this.key.take().expect("AcquireKey polled after completion");
            let (hash, shard) = table.locate(&key);
            let mut state = table.lock(shard);
            if state.closed {
                return Poll::Ready(Err(Closed));
            }
            let State {
                entries,
                index,
                waiters,
                ..
            } = &mut *state;
            if let Some(&entry) = index.find(hash, |&e| entries[e].key == key) {
                this.shard = shard;
                this.slot = Some(waiters.push_back(&mut entries[entry].queue, entry, cx.waker()));
                return Poll::Pending;
            }
            let entry = state.insert(key, hash);
            return Poll::Ready(Ok(KeyGuard {
                table,
                shard,
                entry,
            }));
        };
        let shard = this.shard;
        match table.lock(shard).waiters.poll(slot, cx.waker()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready((status, entry)) => {
                this.slot = None;
                Poll::Ready(match status {
                    Status::Granted => Ok(KeyGuard {
                        table,
                        shard,
                        entry,
                    }),
                    _ => Err(Closed),
                })
            }
        }
    }
}

impl<K: Hash + Eq> Drop for AcquireKey<'_, K> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let waker = {
            let mut state = self.table.lock(self.shard);
            let State {
                entries, waiters, ..
            } = &mut *state;
            // The entry is looked up only while we are queued on it: once
            // withdrawn (closed), the entry may be gone or its slot reused.
            match waiters.leave(slot, |&entry| &mut entries[entry].queue) {
                // Handed the key but never saw it: pass it on.
                (Status::Granted, entry) => state.release(entry),
                _ => None,
            }
        };
        if let Some(w) = waker {
            w.wake();
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
        let mut first = table.acquire("a");
        let mut second = table.acquire("a");
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
        let mut first = table.acquire(1);
        let mut second = table.acquire(1);
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

    #[test]
    fn a_withdrawn_waiter_dropped_after_its_entry_left_touches_nothing() {
        // Found by the hammer with shutdown racing: close withdraws the
        // waiter, the holder releases (the entry goes), then the waiter's
        // future is dropped unpolled.
        let table = KeyTable::new();
        let held = table.try_acquire(1).unwrap();
        let mut w = table.acquire(1);
        assert!(poll(&mut w).is_pending());
        table.close();
        drop(held);
        assert_eq!(table.len(), 0);
        drop(w);
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn close_withdraws_waiters() {
        let table = KeyTable::new();
        let held = table.try_acquire(1).unwrap();
        let mut w = table.acquire(1);
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
