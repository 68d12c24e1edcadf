//! Self-deadlock refused: a call made from inside a handler that could
//! never be granted because its own calling chain holds what it needs ends
//! at once with `Error::WouldDeadlock`, instead of hanging.
//!
//! Two cases: the same key in the same key space (its entry in the key
//! table, compared by identity), or more units of a budget than its
//! capacity minus what the chain holds of it (the capacity at the moment
//! of the check: a later `Runtime::set_capacity` does not revive a refused
//! call, nor refuse a waiting one). A nested call that can be granted
//! once others release waits as before.
//!
//! # How, at no cost to a call outside any handler
//!
//! Nothing is kept per running call. Instead:
//!
//! - **A call about to queue** (the key stage's wait and the budget
//!   stage's contended wait, and only when they do queue: a call granted at
//!   once records nothing) pushes a [`Record`] of what it waits for on a
//!   small per-thread ring, and bumps a per-thread counter, [`PUSHED`].
//!   The record keeps the task's waker and shares its [`Doom`] (a flag)
//!   with the waiting future. Each slot's doom is reused by the slot's next
//!   record once its waiter is done, so that queueing allocates nothing
//!   (the ring is built, all at once, at the thread's first queued wait).
//!   A slot's waker stays until the slot's next record: each thread keeps
//!   at most [`RING`] wakers (a task's allocation, not its future, lives
//!   until they go).
//! - **Around each poll of a handler** ([`Running`]), the counter is read
//!   before the poll. If the handler returns `Pending` and the counter
//!   moved, records were pushed during that poll, on this thread: by code
//!   the handler ran, that is by calls nested in it (at any depth). A cold
//!   function ([`check`]) then looks at those records: a key this call
//!   holds dooms its waiter; for budgets, it adds what this call holds to
//!   the record's tally of the chain's holdings, and dooms the waiter if
//!   its units exceed the capacity minus that tally.
//! - Records stay in the ring: every ancestor, further up the same poll,
//!   sees them in turn (its own handler returned `Pending` too), adding its
//!   holdings. Each call looks only at records pushed during its own
//!   handler's poll, so records of earlier polls or other tasks are never
//!   consulted, and the ring needs no clean-up. More than [`RING`] waits
//!   queued during one poll: the oldest of them are not checked (such a
//!   call waits as before).
//! - A doomed waiter is woken; its wait sees the doom on its next poll
//!   (still queued: granted meanwhile, it takes the grant), leaves its
//!   queue exactly as a cancelled waiter does (its place given back,
//!   nothing held), and the call ends with the refusal.
//!
//! A handler's poll that completes pays one thread-local read (none where
//! the compiler sees that the handler never returns `Pending`); a
//! `Pending` one, a second read and a comparison. Only a wait that queues
//! pays for its record (a slot of the ring, no allocation), beside the
//! queueing it already does.
//!
//! Siblings are not a chain: two calls joined in one task (`tokio::join!`),
//! neither inside the other's handler, wait for each other as before, and
//! so does a call in a task spawned from a handler. Code a handler polls
//! counts as the handler's own (a `LocalSet::run_until` inside a handler
//! polls the set's other tasks within the handler's poll: their waits are
//! judged as nested in it).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::arbiter::{Need, Permit};

/// Records the ring keeps: the waits queued during one handler poll that
/// its check can see.
pub(crate) const RING: usize = 16;

thread_local! {
    /// Records pushed on this thread so far (the next record's number is
    /// this plus one). Const-initialized and without a destructor, so that
    /// reading it is one load.
    static PUSHED: Cell<u64> = const { Cell::new(0) };

    /// The last [`RING`] records pushed on this thread, record `n` at slot
    /// `n % RING`; built (with every slot's [`Doom`]) at the thread's first
    /// queued wait.
    static RECORDS: RefCell<Option<Box<[Record; RING]>>> = const { RefCell::new(None) };
}

/// Records pushed on this thread so far.
#[inline(always)]
fn pushed() -> u64 {
    PUSHED.with(Cell::get)
}

/// What a queued call waits for, as a record says it.
pub(crate) enum Wants {
    /// A key: its table (by address) and its entry there (shard, slot).
    Key {
        table: usize,
        shard: usize,
        entry: usize,
    },
    /// Units of the budgets of an arbiter (by address): the concurrency
    /// part of the call's needs (a rate budget's units are never held, so
    /// never held by a chain).
    Units { arbiter: usize, needs: Arc<[Need]> },
}

/// One queued wait, on the ring (or a slot not used yet).
struct Record {
    /// Its number on this thread.
    number: u64,
    /// What it waits for (`None`: an unused slot).
    wants: Option<Wants>,
    /// For `Wants::Units`: what the chain holds of each need, filled in by
    /// the ancestors (empty until the first adds to it; its allocation is
    /// kept for the slot's next record).
    chain: Vec<u32>,
    /// Its doom, shared with the waiting future: while that future holds
    /// its clone, the wait is on. A slot's doom is reused by its next
    /// record once the waiter let it go, so that a queued wait allocates
    /// nothing (a new one only if the waiter 16 records back still waits).
    doom: Arc<Doom>,
    /// The waiting task's waker when it queued (kept until the slot's next
    /// record: a check runs in the poll the record was pushed in).
    waker: Option<Waker>,
}

/// A queued wait's doom, shared by the waiting future and its record.
pub(crate) struct Doom {
    /// 0: live; else doomed, and `resource + 1` for a budget (1 for a key).
    state: AtomicUsize,
}

impl Doom {
    fn new() -> Arc<Self> {
        Arc::new(Doom {
            state: AtomicUsize::new(0),
        })
    }

    /// Dooms the waiter (`what`: 1 for a key, a budget's index plus one).
    fn refuse(&self, what: usize) {
        self.state.store(what, Ordering::Release);
    }

    /// Whether the waiter is doomed.
    fn doomed(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }

    /// `None` while live; else 0 for a key, the budget's index for units.
    #[inline]
    pub(crate) fn refused(&self) -> Option<usize> {
        match self.state.load(Ordering::Acquire) {
            0 => None,
            what => Some(what - 1),
        }
    }
}

/// Records that the calling task queued for `wants`, waking `waker`;
/// returns the doom its wait watches. Out of line: only a call that queues
/// comes here.
#[cold]
#[inline(never)]
pub(crate) fn queued(wants: Wants, waker: &Waker) -> Arc<Doom> {
    let number = pushed() + 1;
    let doom = RECORDS.with_borrow_mut(|ring| {
        let ring = ring.get_or_insert_with(|| {
            Box::new(std::array::from_fn(|_| Record {
                number: 0,
                wants: None,
                chain: Vec::new(),
                doom: Doom::new(),
                waker: None,
            }))
        });
        let record = &mut ring[slot(number)];
        // No `Weak` is ever made: a count of 1 is the ring's alone, its
        // last waiter gone (the fence orders that waiter's reads before
        // the reset, as `Arc::get_mut` would, without its compare-and-swap).
        if Arc::strong_count(&record.doom) == 1 {
            std::sync::atomic::fence(Ordering::Acquire);
            record.doom.state.store(0, Ordering::Relaxed);
        } else {
            record.doom = Doom::new();
        }
        match &mut record.waker {
            // A clone only if it is another task's (`will_wake`).
            Some(kept) => kept.clone_from(waker),
            None => record.waker = Some(waker.clone()),
        }
        record.number = number;
        record.wants = Some(wants);
        record.chain.clear();
        Arc::clone(&record.doom)
    });
    PUSHED.with(|n| n.set(number));
    doom
}

/// The ring slot of record `number`.
#[inline]
fn slot(number: u64) -> usize {
    (number % RING as u64) as usize
}

/// What a running call holds, as its check reads it: its key's entry
/// (table address, shard, slot) and its permit.
pub(crate) struct Holds<'p> {
    pub(crate) key: Option<(usize, usize, usize)>,
    pub(crate) permit: Option<&'p Permit<'p>>,
}

/// A running call's check of the records numbered `since + 1 ..= upto`,
/// pushed during its handler's poll (see the module docs): dooms each
/// waiter that waits for what `holds` and the chain above it together make
/// impossible.
#[cold]
#[inline(never)]
pub(crate) fn check(since: u64, upto: u64, holds: Holds<'_>) {
    let first = (since + 1).max(upto.saturating_sub(RING as u64 - 1));
    RECORDS.with_borrow_mut(|ring| {
        let Some(ring) = ring else { return };
        for number in first..=upto {
            let record = &mut ring[slot(number)];
            debug_assert_eq!(record.number, number, "the ring keeps the last records");
            if Arc::strong_count(&record.doom) == 1 || record.doom.doomed() {
                continue; // the wait is over, or already refused
            }
            let Some(wants) = &record.wants else { continue };
            if let Some(what) = judge(wants, &mut record.chain, &holds) {
                record.doom.refuse(what);
                if let Some(waker) = &record.waker {
                    waker.wake_by_ref();
                }
            }
        }
    });
}

/// Whether a wait for `wants` can never be granted while this call holds
/// `holds` and the ancestors already judged it hold what `chain` tallies
/// (for units, added to here): `Some(1)` for a key, `Some(budget + 1)` for
/// a budget.
fn judge(wants: &Wants, chain: &mut Vec<u32>, holds: &Holds<'_>) -> Option<usize> {
    match wants {
        Wants::Key {
            table,
            shard,
            entry,
        } => (holds.key == Some((*table, *shard, *entry))).then_some(1),
        Wants::Units { arbiter, needs } => {
            let permit = holds.permit?;
            if permit.arbiter_addr() != *arbiter {
                return None;
            }
            if chain.is_empty() {
                chain.resize(needs.len(), 0);
            }
            let mut doomed = None;
            for (need, held) in needs.iter().zip(chain.iter_mut()) {
                *held = held.saturating_add(permit.units_of(need.resource));
                let capacity = permit.capacity_of(need.resource);
                if doomed.is_none() && need.units > capacity.saturating_sub(*held) {
                    doomed = Some(need.resource + 1);
                }
            }
            doomed
        }
    }
}

pin_project_lite::pin_project! {
    /// A handler's attempt, checked after each poll that returns `Pending`
    /// having queued nested calls ([`check`]).
    pub(crate) struct Running<'h, F, H> {
        #[pin]
        attempt: F,
        holds: &'h H,
    }
}

/// What a running call holds, for [`Running`]: the admitted call's `Held`.
pub(crate) trait Holding {
    /// What its check reads.
    fn holds(&self) -> Holds<'_>;
}

/// `attempt`, the handler's, checked against what the call `holds`.
#[inline(always)]
pub(crate) fn running<F: Future, H: Holding>(attempt: F, holds: &H) -> Running<'_, F, H> {
    Running { attempt, holds }
}

impl<F: Future, H: Holding> Future for Running<'_, F, H> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let since = pushed();
        let poll = this.attempt.poll(cx);
        if poll.is_pending() {
            let upto = pushed();
            if upto != since {
                nested(since, upto, *this.holds);
            }
        }
        poll
    }
}

/// [`check`] with what `held` holds (out of line: generic only over the
/// key type, and only a handler whose nested calls queued comes here).
#[cold]
#[inline(never)]
fn nested<H: Holding>(since: u64, upto: u64, held: &H) {
    check(since, upto, held.holds());
}

/// A queued wait's record: its doom once it queued (`None` before). One
/// word in the waiting call's state.
pub(crate) struct Watch(Option<Arc<Doom>>);

impl Watch {
    /// A wait that has not queued yet.
    #[inline]
    pub(crate) fn new() -> Self {
        Watch(None)
    }

    /// After a poll of the wait returned `Pending`: the first time, records
    /// it with what `wants` says; later, `Some` once it is doomed (0 for a
    /// key, the budget's index for units).
    #[inline]
    pub(crate) fn pending(
        &mut self,
        wants: impl FnOnce() -> Wants,
        waker: &Waker,
    ) -> Option<usize> {
        match &self.0 {
            Some(doom) => doom.refused(),
            None => {
                self.0 = Some(queued(wants(), waker));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait for entry `entry` of a table at address 1, recorded now.
    fn wait_for(entry: usize) -> Arc<Doom> {
        queued(
            Wants::Key {
                table: 1,
                shard: 0,
                entry,
            },
            Waker::noop(),
        )
    }

    /// A call holding entry `entry` of that table, checking the records
    /// pushed since `since`.
    fn holding(entry: usize, since: u64) {
        let holds = Holds {
            key: Some((1, 0, entry)),
            permit: None,
        };
        check(since, pushed(), holds);
    }

    #[test]
    fn only_the_records_pushed_during_the_poll_are_judged() {
        let before = wait_for(7);
        let since = pushed();
        let during = wait_for(7);
        let other = wait_for(8);
        holding(7, since);
        assert_eq!(before.refused(), None, "pushed before the poll");
        assert_eq!(during.refused(), Some(0));
        assert_eq!(other.refused(), None, "another entry");
    }

    #[test]
    fn beyond_the_ring_the_oldest_waits_of_one_poll_are_not_checked() {
        let since = pushed();
        let waits: Vec<_> = (0..RING + 2).map(|_| wait_for(3)).collect();
        holding(3, since);
        let refused: Vec<bool> = waits.iter().map(|d| d.refused().is_some()).collect();
        assert_eq!(&refused[..2], [false, false]);
        assert!(refused[2..].iter().all(|&r| r));
    }

    #[test]
    fn a_finished_wait_is_skipped_and_its_slot_s_doom_reused() {
        let since = pushed();
        let done = wait_for(5);
        let at = Arc::as_ptr(&done);
        drop(done);
        holding(5, since);
        // Its slot's next record reuses the doom, live again.
        for _ in 1..RING {
            drop(wait_for(6));
        }
        let again = wait_for(6);
        assert_eq!(Arc::as_ptr(&again), at);
        assert_eq!(again.refused(), None);
        // A waiter that still holds its doom keeps it: the slot gets a new one.
        let kept: Vec<_> = (0..RING).map(|_| wait_for(6)).collect();
        assert!(!kept.iter().any(|d| Arc::ptr_eq(d, &again)));
    }
}
