//! Stage 1, admission: the call counts itself `admitted` and passes the
//! runtime's gate, or is refused because the runtime is stopping.
//!
//! An admitted call is an [`Admitted`] guard, and [`Admitted::finish`] is the
//! one place a call is marked complete (and counted by how it ended). The
//! guard also holds what the later stages take, the key and the budgets
//! ([`held`](Admitted::held)), so that it alone releases them, in reverse
//! order, before the call's count. The counter a call ends in is its count
//! out of the gate (`gate.rs`), so it is bumped last, once the call holds
//! nothing: by `finish`, or by the guard's drop; whichever counted it then
//! exits the gate (which may wake a drain): `finish` itself, and the drop
//! only for a call that did not finish. A drop before `finish` is a
//! cancellation, or, while the thread panics, a panic (counted `panicked`).
//!
//! Cancel safety: admission never waits. Dropping the call future at any
//! later point drops the guard, which releases the budgets and the key
//! first, so the drain sees the call out only once it holds nothing. The
//! guard is the call's only local that holds anything, so a dropped call's
//! clean-up is one function, compiled once, not once per operation.

use std::mem::ManuallyDrop;

use super::attempts::Next;
use super::backoff::{self, Between};
use super::bound::BoundInner;
use super::budgets;
use super::chain::{Holding, Holds};
use super::ended::{self, End, Refusal};
use super::table_key::TableKey;
use super::waiting::Limits;
use crate::arbiter::{Needs, Permit, TryAcquireError};
use crate::error::{Error, ErrorSource};
use crate::events::{AttemptClock, Event, Events, SpanEnd};
use crate::keys::KeyGuard;
use crate::kinds::{Ending, StoppedAt};
use crate::runtime::Inner;
use crate::stats::{Counters, LatencyStart};

/// One admitted call of a bound operation: counted out of the gate by
/// [`finish`](Admitted::finish), or when dropped unfinished.
pub(crate) struct Admitted<'a, K: 'static> {
    bound: &'a BoundInner<K>,
    /// Where the call's events go (the counters' shard of the thread that
    /// admitted it, taken once).
    counters: &'a Counters,
    /// What the stages took. Released by `finish`, or by the guard's drop
    /// (out of line): never by drop glue of its own (so none is compiled
    /// into each operation's call).
    held: ManuallyDrop<Held<'a, K>>,
    /// How far `finish` got: what the guard's drop has left to do.
    progress: Progress,
    /// What the call's span records when it ends.
    span: SpanEnd,
    /// The attempt running or last run (0 before the first): the span's
    /// `attempts`, a panic's attempt number, and the number the stages
    /// read (the call keeps no other).
    attempt: u32,
    /// When the call began, if its latency is timed (the operation's
    /// latency quantiles time a sample of calls).
    timed: LatencyStart,
}

/// What a call's stages took and hold until the call ends.
pub(crate) struct Held<'a, K: 'static> {
    /// The call's key (`serialize_by`), once taken.
    pub(crate) key: Option<KeyGuard<'a, TableKey<K>>>,
    /// The call's budgets while it holds them (`None` while it waits for
    /// them, during a backoff sleep, and after a refused re-acquisition).
    pub(crate) permit: Option<Permit<'a>>,
}

impl<K> Held<'_, K> {
    /// Releases the budgets, then the key.
    #[inline(always)]
    fn release(&mut self) {
        self.permit = None;
        self.key = None;
    }
}

/// What a running call holds, for its check of the nested calls that
/// queue during its handler's polls (`call/chain.rs`).
impl<K> Holding for Held<'_, K> {
    fn holds(&self) -> Holds<'_> {
        Holds {
            key: self.key.as_ref().map(KeyGuard::at),
            permit: self.permit.as_ref(),
        }
    }
}

/// How far [`Admitted::finish`] got, so what the guard's drop has left to
/// do.
#[derive(Clone, Copy)]
enum Progress {
    /// Not finished: the drop counts the call cancelled (or panicked) and
    /// exits the gate.
    Running,
    /// Its ending is counted, but a subscriber or recorder panicked before
    /// the gate's exit: the drop exits.
    Counted,
    /// Counted and out of the gate: the drop does nothing.
    Exited,
}

/// Counts a call of `bound` into its runtime's gate, or refuses it when the
/// gate is closed (its span then records the refusal).
#[inline]
pub(crate) fn admit<K>(bound: &BoundInner<K>, span: SpanEnd) -> Result<Admitted<'_, K>, Refusal> {
    let counters = bound.recorders.here();
    let admitted = bound.runtime.inner.gate.enter(
        || bound.events_on(counters).emit(Event::Admitted),
        || counters.take_back_admission(),
    );
    if !admitted {
        span.record(Ending::Stopping(StoppedAt::Admission), 0);
        return Err(Refusal::Stopping(StoppedAt::Admission));
    }
    Ok(Admitted {
        bound,
        counters,
        held: ManuallyDrop::new(Held {
            key: None,
            permit: None,
        }),
        progress: Progress::Running,
        span,
        attempt: 0,
        timed: bound.recorders.latency().begin(&counters.sampling),
    })
}

/// The caller's result of a call of `bound` that admission refused
/// (counted and traced).
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn refused<K, T, E, S: ErrorSource<E>>(
    bound: &BoundInner<K>,
    refusal: Refusal,
    chain: S,
) -> Result<T, Error<E>> {
    let end = Err(refusal.into());
    ended::count(&end, bound.events());
    ended::result(end, bound.contract, chain)
}

impl<'a, K> Admitted<'a, K> {
    /// The call's event sink.
    #[inline(always)]
    pub(crate) fn events(&self) -> Events<'a> {
        self.bound.events_on(self.counters)
    }

    /// What the stages took: they assign the key and the permit here.
    #[inline(always)]
    pub(crate) fn held(&mut self) -> &mut Held<'a, K> {
        &mut self.held
    }

    /// What the stages took, for the check of the handler's nested calls.
    #[inline(always)]
    pub(crate) fn holding(&self) -> &Held<'a, K> {
        &self.held
    }

    /// The attempt running or last run (0 before the first).
    #[inline(always)]
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The first attempt starts (the key and budgets held).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(crate) fn started(&self) {
        self.events().emit(Event::Started);
    }

    /// Stage 4's try: takes `needs` at once if the budgets have room
    /// (held from then on); else why not, for [`budgets::contended`].
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(crate) fn take_budgets(
        &mut self,
        rt: &'a Inner,
        needs: &'a Needs,
    ) -> Option<TryAcquireError> {
        (budgets::try_acquire(rt, needs))
            .map(|taken| self.held.permit = Some(taken))
            .err()
    }

    /// Reports that an attempt ended (its duration, with `metrics`).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(crate) fn attempt_ended(&self, clock: AttemptClock) {
        self.events().emit(Event::AttemptEnded(clock));
    }

    /// What follows the attempt that just failed, carried out ([`backoff`]):
    /// the budgets given back and taken again around a backoff sleep, or a
    /// pass through the scheduler, under the call's `limits`.
    #[inline]
    pub(crate) fn between<'w>(&'w mut self, next: Next<'a>, limits: &'w Limits) -> Between<'a, 'w> {
        let (bound, events) = (self.bound, self.events());
        let stage = (&*bound.runtime.inner, bound.contract, &bound.needs);
        backoff::between(
            next,
            stage,
            &mut self.held.permit,
            self.attempt,
            limits,
            events,
        )
    }

    /// The next attempt is about to run: its number (the first is 1).
    #[inline(always)]
    pub(crate) fn next_attempt(&mut self) -> u32 {
        self.attempt += 1;
        self.attempt
    }

    /// Releases what the call holds (budgets, then key), marks the call
    /// complete, counts it out of the gate and gives the caller its result
    /// (a handler's panic resumes here, the call already counted out as
    /// finished, not cancelled). The guard's drop then does nothing.
    ///
    /// By reference, not by value, and with the gate's exit before the
    /// result is built: moving the guard into `finish` would copy it out of
    /// the call's state just after its attempt number was written, and a
    /// result built before the exit would be copied after it, each copy a
    /// wide load of narrow stores that must wait for them. Always inlined
    /// for the same reason: out of line, its result comes back through
    /// memory.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(crate) fn finish<T, E, S: ErrorSource<E>>(
        &mut self,
        end: Result<T, End<E>>,
        chain: S,
    ) -> Result<T, Error<E>> {
        self.held.release();
        (self.bound.recorders.latency()).end(&self.counters.sampling, self.timed);
        self.span.record_with(|| ended::ending(&end), self.attempt);
        // From here the call's ending is counted before anything else can
        // panic (`Events::emit` counts first); a panic before this point
        // (in a subscriber recording the span's end) is counted by the drop,
        // and one after the count (in a subscriber or recorder) leaves the
        // exit to the drop.
        self.progress = Progress::Counted;
        ended::count(&end, self.events());
        // Set before the exit, so that the drop never runs it a second time
        // (a panicking waker of the drain would then abort the process).
        self.progress = Progress::Exited;
        self.bound.runtime.inner.gate.exited();
        ended::result(end, self.bound.contract, chain)
    }
}

impl<K> Admitted<'_, K> {
    /// The call ended before `finish` (`Running`), or a subscriber or
    /// recorder panicked in it after the count (`Counted`): releases what it
    /// holds, counts the call cancelled (or panicked) if it is still
    /// running, then exits the gate.
    ///
    /// A call that is dropped unfinished was dropped by its caller
    /// (cancelled), or unwound by a panic — one in code herta runs for it
    /// (the error type's `Classify`, a key's `Hash` or `Eq`), or the
    /// caller's own, unwinding through the awaiting task. Out of line: a
    /// call that finishes never comes here.
    #[cold]
    #[inline(never)]
    fn ended_unfinished(&mut self) {
        self.held.release();
        if let Progress::Running = self.progress {
            if std::thread::panicking() {
                let ending = Ending::Panicked {
                    attempt: self.attempt,
                };
                self.span.record(ending, self.attempt);
                self.events().emit(Event::Ended(ending));
            } else {
                self.span.record(Ending::Cancelled, self.attempt);
                self.events().emit(Event::Ended(Ending::Cancelled));
            }
        }
        // The call's ending is counted (by `finish`, or just above): it is
        // out of the gate's count, which may wake the drain.
        self.bound.runtime.inner.gate.exited();
    }
}

impl<K> Drop for Admitted<'_, K> {
    #[inline]
    fn drop(&mut self) {
        if let Progress::Exited = self.progress {
            return;
        }
        self.ended_unfinished();
    }
}
