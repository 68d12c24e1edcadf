//! A breaker's count window: the outcomes of its last `size` attempts,
//! as bits in a ring of slots ([`Ring`]).
//!
//! Each attempt takes the next slot (one relaxed `fetch_add` on `next`,
//! the slot its value modulo `size`) and leaves its outcome there: a bit
//! in `failures` (failed, slow ones included) and one in `slow`, each
//! set or cleared by one atomic operation whose result says whether it
//! changed, which moves its count (the bits set, kept beside them so
//! that a judgement reads two words, whatever the size). The attempt the slot
//! held before leaves the window as the new one enters it.
//!
//! A success whose slot held a success (its bits clear) is the
//! `fetch_add`, one load of its `failures` word (and of its `slow` word
//! with a slow-call threshold) and a test: no clock, no write besides
//! `next`. Any other attempt goes through [`Ring::put`].
//!
//! Racing attempts each take their own slot; only `size` attempts taking
//! slots between another's `take` and its `put` (the ring lapping a
//! recording) could leave one slot's bits to the later of two, which the
//! counts follow exactly, as they follow every change of a bit.

use crate::loom::{AtomicU64, Ordering::Relaxed};

use super::window::Counts;

/// The last `size` attempts' outcomes.
pub(crate) struct Ring {
    /// The slots, at least 1.
    size: u64,
    /// Attempts recorded since the window was last emptied.
    next: AtomicU64,
    /// One bit per slot: the attempt there failed (or was slow).
    failures: Box<[AtomicU64]>,
    /// One bit per slot: the attempt there was slow (empty without a
    /// slow-call threshold).
    slow: Box<[AtomicU64]>,
    /// The `failures` bits set.
    failed: AtomicU64,
    /// The `slow` bits set.
    slowed: AtomicU64,
}

/// `slot`'s word and bit in a bitmap.
#[inline(always)]
fn at(slot: u64) -> (usize, u64) {
    ((slot / 64) as usize, 1 << (slot % 64))
}

/// A bitmap of `bits` bits, all clear.
fn bitmap(bits: u64) -> Box<[AtomicU64]> {
    (0..bits.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()
}

impl Ring {
    /// An empty window of `size` slots (at least 1), with slow bits if
    /// `slow_call` is set.
    pub(crate) fn new(size: u32, slow_call: bool) -> Self {
        let size = u64::from(size.max(1));
        Ring {
            size,
            next: AtomicU64::new(0),
            failures: bitmap(size),
            slow: if slow_call { bitmap(size) } else { bitmap(0) },
            failed: AtomicU64::new(0),
            slowed: AtomicU64::new(0),
        }
    }

    /// The slot of the attempt being recorded (the oldest attempt's,
    /// which it replaces).
    #[inline(always)]
    pub(crate) fn take(&self) -> u64 {
        self.next.fetch_add(1, Relaxed) % self.size
    }

    /// Whether `slot` holds a success (its bits clear): a success taking
    /// it then changes nothing more.
    #[inline(always)]
    pub(crate) fn holds_success(&self, slot: u64) -> bool {
        let (word, bit) = at(slot);
        self.failures[word].load(Relaxed) & bit == 0
            && self
                .slow
                .get(word)
                .is_none_or(|w| w.load(Relaxed) & bit == 0)
    }

    /// Leaves an attempt's outcome in `slot`: its bits set (`failed`,
    /// `slow`) or cleared, the counts moved by each bit that changed.
    pub(crate) fn put(&self, slot: u64, failed: bool, slow: bool) {
        let (word, bit) = at(slot);
        let set = |bits: &AtomicU64, on: bool, count: &AtomicU64| {
            if on {
                if bits.fetch_or(bit, Relaxed) & bit == 0 {
                    count.fetch_add(1, Relaxed);
                }
            } else if bits.load(Relaxed) & bit != 0 && bits.fetch_and(!bit, Relaxed) & bit != 0 {
                count.fetch_sub(1, Relaxed);
            }
        };
        set(&self.failures[word], failed || slow, &self.failed);
        if let Some(bits) = self.slow.get(word) {
            set(bits, slow, &self.slowed);
        }
    }

    /// What the window holds: its attempts (at most `size`), failures and
    /// slow attempts (each at most the attempts; a count that an emptying
    /// raced below zero, wrapped, reads as none).
    pub(crate) fn sum(&self) -> Counts {
        let calls = self.next.load(Relaxed).min(self.size);
        let of = |count: &AtomicU64| match count.load(Relaxed) {
            n if n > self.size => 0,
            n => n.min(calls),
        };
        Counts {
            calls,
            failures: of(&self.failed),
            slow: of(&self.slowed),
        }
    }

    /// Empties the window (the breaker closed: a new window starts).
    pub(crate) fn clear(&self) {
        for bits in self.failures.iter().chain(self.slow.iter()) {
            bits.store(0, Relaxed);
        }
        self.failed.store(0, Relaxed);
        self.slowed.store(0, Relaxed);
        self.next.store(0, Relaxed);
    }
}
