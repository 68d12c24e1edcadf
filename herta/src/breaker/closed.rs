//! A closed breaker's counting: an attempt's end recorded in its window
//! (a time window, [`Window`](super::window::Window), or a count window,
//! [`Ring`]) and, when it may open the breaker, judged (see `circuit.rs`'s
//! module doc for the word and [`JUDGE`]).

use super::circuit::{next_epoch, Circuit, HEAD, JUDGE, OPEN};
use super::report::{BreakerState, Transition};
use super::ring::Ring;
use super::ticket::Ticket;
use crate::loom::{lock, Ordering};

impl Circuit {
    /// A closed attempt (`ticket`), `failed` or not, counted in the count
    /// window `ring` if the breaker is still in the state and epoch it
    /// started in, then judged as [`counted`](Circuit::counted) judges.
    /// The clock is read only for a slow-call threshold (the attempt's
    /// duration) or a judgement (when it opens): a success whose slot
    /// held a success is the word's load, the slot's `fetch_add` and one
    /// load and test of its bit.
    #[inline(always)]
    pub(crate) fn counted_in(
        &self,
        ring: &Ring,
        ticket: Ticket,
        failed: bool,
    ) -> Option<Transition> {
        let slow = self.slow != u64::MAX && self.is_slow(ticket, self.now());
        if !failed && !slow && self.word.load(Ordering::Acquire) == ticket.word {
            let slot = ring.take();
            if !ring.holds_success(slot) {
                // A failure leaves the window: the rates only fall.
                ring.put(slot, false, false);
            }
            return None;
        }
        self.counted_in_slow(ring, ticket, failed, slow)
    }

    /// [`counted_in`](Circuit::counted_in) of a failure, a slow attempt,
    /// or a success while the word holds [`JUDGE`] (or of a stale ticket,
    /// which counts nothing): out of line, and judged.
    #[cold]
    #[inline(never)]
    fn counted_in_slow(
        &self,
        ring: &Ring,
        ticket: Ticket,
        failed: bool,
        slow: bool,
    ) -> Option<Transition> {
        if self.word.load(Ordering::Acquire) & HEAD != ticket.word {
            return None;
        }
        ring.put(ring.take(), failed, slow);
        self.judged(ticket, self.now())
    }

    /// A closed attempt (`ticket`) that ended at `now`, `failed` or not,
    /// counted in the window if the breaker is still in the state and
    /// epoch it started in; the rates then judged if it may open the
    /// breaker (see the module doc). The transition it made, if any.
    #[inline(always)]
    pub(crate) fn counted(&self, ticket: Ticket, failed: bool, now: u64) -> Option<Transition> {
        let slow = self.slow != u64::MAX && self.is_slow(ticket, now);
        // A success is counted here, unjudged, only if the word is its
        // ticket's: closed, the same epoch, and without `JUDGE` (the
        // ticket never holds it), so the check that the success may skip
        // the judgement costs nothing more than the epoch's check. Any
        // other success goes out of line, which drops a stale one.
        if !failed
            && !slow
            && self.word.load(Ordering::Acquire) == ticket.word
            && self.window.add_success(now, self.bucket.get())
        {
            return None;
        }
        self.counted_slow(ticket, failed, slow, now)
    }

    /// Whether the attempt admitted with `ticket`, ended at `now`, was
    /// slow (with `slow_call`). Out of line: without `slow_call` the
    /// closed path only compares `slow` with its sentinel.
    #[inline(never)]
    pub(super) fn is_slow(&self, ticket: Ticket, now: u64) -> bool {
        now.saturating_sub(ticket.started) >= self.slow
    }

    /// [`counted`](Circuit::counted) of a failure, a slow attempt, a
    /// success while the word holds [`JUDGE`], or a success the window's
    /// cursor could not take (the first of a period): out of line, and
    /// judged. A stale ticket's attempt counts nothing.
    #[cold]
    #[inline(never)]
    fn counted_slow(
        &self,
        ticket: Ticket,
        failed: bool,
        slow: bool,
        now: u64,
    ) -> Option<Transition> {
        if self.word.load(Ordering::Acquire) & HEAD != ticket.word {
            return None;
        }
        let period = now / self.bucket;
        self.window.add(period, failed, slow);
        self.judged(ticket, now)
    }

    /// An attempt counted while closed (under `ticket`): opens the breaker
    /// if the window holds at least `min_calls` attempts and its rates
    /// reach a threshold. Below `min_calls` with failures in the window,
    /// sets [`JUDGE`] (so the success that reaches `min_calls` is judged);
    /// at or above it, clears it.
    #[cold]
    #[inline(never)]
    pub(crate) fn judged(&self, ticket: Ticket, now: u64) -> Option<Transition> {
        let guard = lock(&self.transitions);
        // Only this lock's holder changes a closed word (a plain store).
        let word = self.word.load(Ordering::Acquire);
        if word & HEAD != ticket.word {
            return None;
        }
        let counts = self.counts_at(now);
        let judge = |on: bool| {
            if (word & JUDGE != 0) != on {
                self.word.store(word ^ JUDGE, Ordering::Release);
            }
        };
        if counts.calls < u64::from(self.breaker.min_calls()) {
            judge(counts.failures > 0);
            return None;
        }
        let over = |part: u64, percent: u8| part * 100 >= u64::from(percent) * counts.calls;
        let slow_over = self
            .breaker
            .slow_call()
            .is_some_and(|(_, rate)| over(counts.slow, rate));
        if !over(counts.failures, self.breaker.failure_rate()) && !slow_over {
            judge(false);
            return None;
        }
        self.open_until
            .store(now.saturating_add(self.open_nanos()), Ordering::Relaxed);
        self.word.store(OPEN | next_epoch(word), Ordering::Release);
        self.opened.fetch_add(1, Ordering::Relaxed);
        drop(guard);
        Some(self.report_with(BreakerState::Closed, BreakerState::Open, counts))
    }
}
