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

use std::collections::VecDeque;
use std::future::Future;
use std::hash::{BuildHasher, Hash, RandomState};
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use hashbrown::HashTable;
use slab::Slab;

use crate::arbiter::Closed;

/// Why [`KeyTable::try_acquire`] refused.
#[derive(Debug)]
pub(crate) enum TryKeyError<K> {
    /// The key is held or queued for; the key is given back for the report.
    Busy(K),
    /// The table is closed (the runtime is stopping).
    Closed,
}

pub(crate) struct KeyTable<K> {
    state: Mutex<State<K>>,
    hasher: RandomState,
}

struct Entry<K> {
    key: K,
    /// The key's hash when it was inserted: removal and rehashing use it, so
    /// a key whose `Hash` is not stable cannot corrupt the index.
    hash: u64,
    /// Waiter slab keys, oldest first.
    queue: VecDeque<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Queued,
    Granted,
    Withdrawn,
}

struct Waiter {
    entry: usize,
    waker: Option<Waker>,
    status: Status,
}

struct State<K> {
    /// Entry slots, found by key through `index`.
    entries: Slab<Entry<K>>,
    index: HashTable<usize>,
    waiters: Slab<Waiter>,
    closed: bool,
}

impl<K: Hash + Eq> KeyTable<K> {
    pub(crate) fn new() -> Self {
        KeyTable {
            state: Mutex::new(State {
                entries: Slab::new(),
                index: HashTable::new(),
                waiters: Slab::new(),
                closed: false,
            }),
            hasher: RandomState::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `key` if nobody holds or waits for it.
    pub(crate) fn try_acquire(&self, key: K) -> Result<KeyGuard<'_, K>, TryKeyError<K>> {
        let mut state = self.lock();
        if state.closed {
            return Err(TryKeyError::Closed);
        }
        let hash = self.hasher.hash_one(&key);
        let State { entries, index, .. } = &mut *state;
        if index.find(hash, |&e| entries[e].key == key).is_some() {
            return Err(TryKeyError::Busy(key));
        }
        let entry = entries.insert(Entry {
            key,
            hash,
            queue: VecDeque::new(),
        });
        index.insert_unique(hash, entry, |&e| entries[e].hash);
        Ok(KeyGuard { table: self, entry })
    }

    /// Waits, in arrival order, until `key` can be held.
    pub(crate) fn acquire(&self, key: K) -> AcquireKey<'_, K> {
        AcquireKey {
            table: self,
            key: Some(key),
            slot: None,
        }
    }

    /// Hands the key of `entry` to its oldest waiter, or removes the entry.
    fn release(&self, entry: usize) {
        let waker = {
            let mut state = self.lock();
            match state.entries[entry].queue.pop_front() {
                Some(next) => {
                    let w = &mut state.waiters[next];
                    w.status = Status::Granted;
                    w.waker.take()
                }
                None => {
                    let removed = state.entries.remove(entry);
                    if let Ok(found) = state.index.find_entry(removed.hash, |&e| e == entry) {
                        found.remove();
                    }
                    None
                }
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Refuses new calls and withdraws every waiter. Held keys stay held
    /// until released. Idempotent.
    pub(crate) fn close(&self) {
        let wake: Vec<Waker> = {
            let mut state = self.lock();
            state.closed = true;
            let State {
                entries, waiters, ..
            } = &mut *state;
            let mut wake = Vec::new();
            for (_, entry) in entries.iter_mut() {
                for key in entry.queue.drain(..) {
                    let w = &mut waiters[key];
                    w.status = Status::Withdrawn;
                    wake.extend(w.waker.take());
                }
            }
            wake
        };
        for w in wake {
            w.wake();
        }
    }

    /// Keys held or waited for.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// A held key; dropping it hands the key to the next waiter.
#[must_use = "dropping a key guard releases the key at once"]
pub(crate) struct KeyGuard<'a, K: Hash + Eq> {
    table: &'a KeyTable<K>,
    entry: usize,
}

impl<K: Hash + Eq> Drop for KeyGuard<'_, K> {
    fn drop(&mut self) {
        self.table.release(self.entry);
    }
}

/// The future of [`KeyTable::acquire`]; dropping it at any point gives up
/// its place (or the key, if it was just handed over).
#[must_use = "futures do nothing unless polled"]
pub(crate) struct AcquireKey<'a, K: Hash + Eq> {
    table: &'a KeyTable<K>,
    key: Option<K>,
    slot: Option<usize>,
}

impl<K: Hash + Eq> Unpin for AcquireKey<'_, K> {}

impl<'a, K: Hash + Eq> Future for AcquireKey<'a, K> {
    type Output = Result<KeyGuard<'a, K>, Closed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let table = this.table;
        let mut state = table.lock();
        let Some(slot) = this.slot else {
            if state.closed {
                return Poll::Ready(Err(Closed));
            }
            let key = this.key.take().expect("AcquireKey polled after completion");
            let hash = table.hasher.hash_one(&key);
            let State {
                entries,
                index,
                waiters,
                ..
            } = &mut *state;
            if let Some(&entry) = index.find(hash, |&e| entries[e].key == key) {
                let slot = waiters.insert(Waiter {
                    entry,
                    waker: Some(cx.waker().clone()),
                    status: Status::Queued,
                });
                entries[entry].queue.push_back(slot);
                this.slot = Some(slot);
                return Poll::Pending;
            }
            let entry = entries.insert(Entry {
                key,
                hash,
                queue: VecDeque::new(),
            });
            index.insert_unique(hash, entry, |&e| entries[e].hash);
            return Poll::Ready(Ok(KeyGuard { table, entry }));
        };
        let w = &mut state.waiters[slot];
        match w.status {
            Status::Queued => {
                match &mut w.waker {
                    Some(old) if old.will_wake(cx.waker()) => {}
                    waker => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Status::Granted => {
                let entry = w.entry;
                state.waiters.remove(slot);
                this.slot = None;
                Poll::Ready(Ok(KeyGuard { table, entry }))
            }
            Status::Withdrawn => {
                state.waiters.remove(slot);
                this.slot = None;
                Poll::Ready(Err(Closed))
            }
        }
    }
}

impl<K: Hash + Eq> Drop for AcquireKey<'_, K> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let mut state = self.table.lock();
        let waiter = state.waiters.remove(slot);
        match waiter.status {
            Status::Queued => {
                let queue = &mut state.entries[waiter.entry].queue;
                if let Some(pos) = queue.iter().position(|&s| s == slot) {
                    queue.remove(pos);
                }
            }
            Status::Granted => {
                // Handed the key but never saw it: pass it on.
                drop(state);
                self.table.release(waiter.entry);
            }
            Status::Withdrawn => {}
        }
    }
}

#[cfg(test)]
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
