//! One runtime's state of one breaker: [`Circuit`].
//!
//! The state is one word (`word`): the state (2 bits), the epoch (30 bits,
//! bumped by every transition), in half-open the probes in flight and the
//! probes that succeeded (16 bits each), and in closed the [`JUDGE`] bit.
//! Every change of the state is one compare-and-swap of that word, so:
//!
//! - an attempt's [`Ticket`] is the word it was admitted under (closed), or
//!   its state and epoch (a probe); a result whose ticket is not the
//!   current state and epoch (an attempt that started before the last
//!   transition) changes nothing and reports nothing;
//! - a probe is reserved by one compare-and-swap that checks the epoch and
//!   `in flight + succeeded < probes`: racing callers cannot over-admit,
//!   and a release or a transition in between makes the swap fail and
//!   retry on the new word;
//! - open → half-open is the swap of the first caller that finds the open
//!   period over, reserving its own probe.
//!
//! The closed path is the word's load before the call queues and again
//! when the attempt starts, then (a success or a failure) a clock read,
//! the word's load again and the window's add ([`Window`]: a success in
//! the window's current period is a load of its cursor, a multiply, a
//! compare and a relaxed add). The rates are judged (out of line, under the
//! transition lock, which only a move to open takes: it writes `open_until`
//! before publishing the word, so a caller that sees the open word reads
//! its end) at every failure, and at the successes that could open it: the
//! first of a bucket period (a bucket may have expired, raising a rate),
//! and every success while the word holds [`JUDGE`] (the window has
//! failures but fewer than `min_calls` attempts, so the success that
//! reaches `min_calls` is judged, and can open the breaker). Any other success only
//! lowers the rates, which were judged since the period began with
//! `min_calls` attempts: it is not judged. The open refusal is the word's
//! load, a clock read and a compare with `open_until`.
//!
//! Times are nanoseconds since the circuit was made (`tokio`'s clock, so a
//! paused test clock drives it).

use std::num::NonZeroU64;
use std::time::Duration;

use super::declaration::{Breaker, BreakerWindow, BUCKETS};
pub(crate) use super::report::{BreakerState, Transition};
use super::ring::Ring;
pub(crate) use super::ticket::{Ticket, Verdict};
use super::ticket::{CLOSED, STATE};
use super::window::{Counts, Window};
use crate::clock::Clock;
use crate::loom::{lock, AtomicU64, Mutex, Ordering};

pub(super) const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
/// The state and the epoch: the low 32 bits.
pub(super) const HEAD: u64 = u32::MAX as u64;
/// One more epoch.
const EPOCH: u64 = 1 << 2;
/// One probe in flight.
const IN_FLIGHT: u64 = 1 << 32;
/// One probe that succeeded.
const SUCCEEDED: u64 = 1 << 48;
/// Closed only (where the probes' bits are unused): the window holds
/// failures but fewer than `min_calls` attempts, so every success is
/// judged until one reaches `min_calls`. A closed ticket's word never
/// holds it, so a success under it fails the fast path's one compare of
/// the word with its ticket and is counted out of line. Every transition
/// writes a word without it.
pub(super) const JUDGE: u64 = 1 << 32;

/// A breaker's state in one runtime.
pub(crate) struct Circuit {
    /// The declaration.
    pub(crate) breaker: Breaker,
    /// State, epoch, and the half-open probes (see the module doc).
    pub(super) word: AtomicU64,
    /// While open: when the open period ends (ns since `base`).
    pub(super) open_until: AtomicU64,
    /// The attempts of the last `window` (a time window; unused with a
    /// count window).
    pub(super) window: Window,
    /// The last N attempts (a count window), if the window is one.
    pub(super) ring: Option<Ring>,
    /// One bucket, in ns (never zero: a division by it needs no check).
    pub(super) bucket: NonZeroU64,
    /// `slow_call` in ns; `u64::MAX` without one.
    pub(super) slow: u64,
    /// Times it opened.
    pub(super) opened: AtomicU64,
    /// Calls and retries it refused.
    pub(super) refused: AtomicU64,
    /// Held by moves to open (they write `open_until`, then the word).
    pub(super) transitions: Mutex<()>,
    /// The breaker's clock (its zero: when the circuit was made).
    clock: Clock,
}

impl Circuit {
    /// A closed circuit for `breaker` (already checked), its clock
    /// starting now.
    pub(crate) fn new(breaker: Breaker) -> Self {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (span, ring) = match breaker.window() {
            BreakerWindow::Time(span) => (nanos(span), None),
            BreakerWindow::Count(calls) => {
                (0, Some(Ring::new(calls, breaker.slow_call().is_some())))
            }
        };
        Circuit {
            breaker,
            word: AtomicU64::new(CLOSED),
            open_until: AtomicU64::new(0),
            window: Window::new(),
            ring,
            bucket: NonZeroU64::new(span / u64::from(BUCKETS)).unwrap_or(NonZeroU64::MIN),
            slow: breaker.slow_call().map_or(u64::MAX, |(t, _)| nanos(t)),
            opened: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            transitions: Mutex::new(()),
            clock: Clock::new(),
        }
    }

    /// Now, in ns since the circuit was made, on tokio's clock (so a
    /// paused test clock drives the breaker).
    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Whether a call may queue for its key and budgets: refused (counted,
    /// with the time left open) while open, or half-open with every probe
    /// out or succeeded; else `Ok`, reserving nothing (the attempt's
    /// [`pass`](Circuit::pass), once the call holds its key and budgets,
    /// reserves its probe or refuses it then).
    #[inline(always)]
    pub(crate) fn admits(&self) -> Result<(), Option<Duration>> {
        let word = self.word.load(Ordering::Acquire);
        if word & STATE == CLOSED {
            return Ok(());
        }
        self.admits_slow(word)
    }

    /// [`admits`](Circuit::admits) of a breaker that is not closed: out of
    /// line, so the closed path carries none of it.
    #[cold]
    #[inline(never)]
    fn admits_slow(&self, word: u64) -> Result<(), Option<Duration>> {
        self.admits_at(word, self.now())
    }

    /// [`admits`](Circuit::admits) of `word` at `now`.
    fn admits_at(&self, word: u64, now: u64) -> Result<(), Option<Duration>> {
        match word & STATE {
            CLOSED => Ok(()),
            OPEN => {
                let until = self.open_until.load(Ordering::Acquire);
                if now < until {
                    return Err(self.refuse(Some(until - now)));
                }
                // The open period is over: the first attempt to start
                // moves it to half-open.
                Ok(())
            }
            _ if self.probes_full(word) => Err(self.refuse(None)),
            _ => Ok(()),
        }
    }

    /// [`admits`](Circuit::admits) at `now` (for tests and models).
    #[cfg(test)]
    pub(crate) fn admits_now(&self, now: u64) -> Result<(), Option<Duration>> {
        self.admits_at(self.word.load(Ordering::Acquire), now)
    }

    /// Admits an attempt about to start (at `now`, read only when needed):
    /// its ticket (in half-open, its probe's slot reserved), or the refusal
    /// (counted), with the time left open.
    #[inline(always)]
    pub(crate) fn pass(&self) -> Result<Ticket, Option<Duration>> {
        let word = self.word.load(Ordering::Acquire);
        if word & STATE == CLOSED {
            let started = if self.slow == u64::MAX { 0 } else { self.now() };
            // Without `JUDGE`: see `counted`.
            return Ok(Ticket {
                word: word & HEAD,
                started,
            });
        }
        self.pass_slow(word)
    }

    /// [`pass`](Circuit::pass) of a breaker that is not closed: out of
    /// line, so the closed path carries none of it.
    #[cold]
    #[inline(never)]
    fn pass_slow(&self, word: u64) -> Result<Ticket, Option<Duration>> {
        match self.pass_at(word, self.now()) {
            Ok((ticket, _)) => Ok(ticket),
            Err(retry_after) => Err(retry_after),
        }
    }

    /// [`pass`](Circuit::pass) at `now` (for tests and models).
    #[cfg(test)]
    pub(crate) fn pass_now(
        &self,
        now: u64,
    ) -> Result<(Ticket, Option<Transition>), Option<Duration>> {
        self.pass_at(self.word.load(Ordering::Acquire), now)
    }

    /// The state now (for tests and models).
    #[cfg(test)]
    pub(crate) fn state(&self) -> BreakerState {
        state_of(self.word.load(Ordering::Acquire))
    }

    /// Empties the window, as closing does (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn window_cleared(&self) {
        self.clear_window();
    }

    /// The window's counts at `now` (for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn counts(&self, now: u64) -> Counts {
        self.counts_at(now)
    }

    /// What the window holds at `now` (a count window's, whenever).
    pub(super) fn counts_at(&self, now: u64) -> Counts {
        match &self.ring {
            Some(ring) => ring.sum(),
            None => self.window.sum(now / self.bucket),
        }
    }

    /// Empties the window (a new one starts).
    fn clear_window(&self) {
        match &self.ring {
            Some(ring) => ring.clear(),
            None => self.window.clear(),
        }
    }

    /// [`pass`](Circuit::pass) past the closed state, at `now`: also the
    /// transition it made (open → half-open), if it made one, reported.
    #[inline]
    pub(crate) fn pass_at(
        &self,
        mut word: u64,
        now: u64,
    ) -> Result<(Ticket, Option<Transition>), Option<Duration>> {
        loop {
            let next = match word & STATE {
                CLOSED => {
                    let ticket = Ticket {
                        word: word & HEAD,
                        started: now,
                    };
                    return Ok((ticket, None));
                }
                OPEN => {
                    let until = self.open_until.load(Ordering::Acquire);
                    if now < until {
                        return Err(self.refuse(Some(until - now)));
                    }
                    HALF_OPEN | next_epoch(word) | IN_FLIGHT
                }
                _ if self.probes_full(word) => return Err(self.refuse(None)),
                _ => word + IN_FLIGHT,
            };
            match self
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    let ticket = Ticket {
                        word: next & HEAD,
                        started: now,
                    };
                    if word & STATE == OPEN {
                        let moved = self.report(BreakerState::Open, BreakerState::HalfOpen, now);
                        return Ok((ticket, Some(moved)));
                    }
                    return Ok((ticket, None));
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether a half-open `word` has all its probes out or succeeded.
    fn probes_full(&self, word: u64) -> bool {
        let in_flight = (word >> 32) & 0xFFFF;
        let succeeded = word >> 48;
        in_flight + succeeded >= u64::from(self.breaker.probes())
    }

    /// Counts a refusal; gives back `retry_after`.
    fn refuse(&self, retry_after: Option<u64>) -> Option<Duration> {
        self.refused.fetch_add(1, Ordering::Relaxed);
        retry_after.map(Duration::from_nanos)
    }

    /// The attempt admitted with `ticket` ended so. A ticket of before the
    /// last transition changes nothing.
    #[inline(always)]
    pub(crate) fn ended(&self, ticket: Ticket, verdict: Verdict) {
        if ticket.is_probe() {
            self.probe_ended(ticket, verdict, self.now());
            return;
        }
        let failed = match verdict {
            Verdict::Neutral => return,
            Verdict::Failure => true,
            Verdict::Success => false,
        };
        if let Some(ring) = &self.ring {
            self.counted_in(ring, ticket, failed);
            return;
        }
        self.counted(ticket, failed, self.now());
    }

    /// A probe (admitted with `ticket`) ended so, at `now`: a failure
    /// reopens the breaker, the last success closes it, a neutral end frees
    /// the slot. The transition made, if any (reported).
    #[cold]
    #[inline(never)]
    pub(crate) fn probe_ended(
        &self,
        ticket: Ticket,
        verdict: Verdict,
        now: u64,
    ) -> Option<Transition> {
        let slow = self.slow != u64::MAX && self.is_slow(ticket, now);
        let verdict = match verdict {
            Verdict::Success if slow => Verdict::Failure,
            verdict => verdict,
        };
        if verdict == Verdict::Failure {
            return self.reopen(ticket, now);
        }
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & HEAD != ticket.word {
                return None;
            }
            let mut next = word - IN_FLIGHT;
            let closes = verdict == Verdict::Success && {
                next += SUCCEEDED;
                next >> 48 >= u64::from(self.breaker.probes())
            };
            if closes {
                // A new window starts with the closed state.
                self.clear_window();
                next = CLOSED | next_epoch(word);
            }
            match self
                .word
                .compare_exchange(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if closes => {
                    return Some(self.report(BreakerState::HalfOpen, BreakerState::Closed, now));
                }
                Ok(_) => return None,
                Err(actual) => word = actual,
            }
        }
    }

    /// A probe admitted with `ticket` failed at `now`: open again for a
    /// full `open_for`, unless the state moved on.
    fn reopen(&self, ticket: Ticket, now: u64) -> Option<Transition> {
        let guard = lock(&self.transitions);
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            if word & HEAD != ticket.word {
                return None;
            }
            self.open_until
                .store(now.saturating_add(self.open_nanos()), Ordering::Relaxed);
            match self.word.compare_exchange(
                word,
                OPEN | next_epoch(word),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(actual) => word = actual,
            }
        }
        self.opened.fetch_add(1, Ordering::Relaxed);
        drop(guard);
        Some(self.report(BreakerState::HalfOpen, BreakerState::Open, now))
    }

    /// `open_for`, in ns.
    pub(super) fn open_nanos(&self) -> u64 {
        u64::try_from(self.breaker.open_for().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Reports the move `from` → `to` at `now`, with the window then.
    fn report(&self, from: BreakerState, to: BreakerState, now: u64) -> Transition {
        self.report_with(from, to, self.counts_at(now))
    }

    pub(super) fn report_with(
        &self,
        from: BreakerState,
        to: BreakerState,
        counts: Counts,
    ) -> Transition {
        let moved = Transition { from, to, counts };
        crate::events::breaker_moved(self.breaker.name(), moved);
        moved
    }

    /// The state now, the window's counts, times opened, calls refused,
    /// probes in flight (half-open), and the nanoseconds left open (0
    /// unless open).
    pub(crate) fn snapshot(&self) -> (BreakerState, Counts, u64, u64, u16, u64) {
        let (word, now) = (self.word.load(Ordering::Acquire), self.now());
        let left = self.open_until.load(Ordering::Acquire).saturating_sub(now);
        let probing = if word & STATE == HALF_OPEN {
            ((word / IN_FLIGHT) & 0xFFFF) as u16
        } else {
            0
        };
        let mut state = state_of(word);
        if state == BreakerState::Open && left == 0 {
            // The next call will find it half-open.
            state = BreakerState::HalfOpen;
        }
        let open_left = if state == BreakerState::Open { left } else { 0 };
        (
            state,
            self.counts_at(now),
            self.opened.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
            probing,
            open_left,
        )
    }
}

/// The state `word` holds.
fn state_of(word: u64) -> BreakerState {
    match word & STATE {
        CLOSED => BreakerState::Closed,
        OPEN => BreakerState::Open,
        _ => BreakerState::HalfOpen,
    }
}

/// `word`'s next epoch (wrapping), without the state and probe counts.
#[inline]
pub(super) fn next_epoch(word: u64) -> u64 {
    (word & HEAD & !STATE).wrapping_add(EPOCH) & HEAD & !STATE
}
