//! Stage 1, admission: the call counts itself `admitted` and passes the
//! runtime's gate, or is refused because the runtime is stopping.
//!
//! An admitted call is an [`Admitted`] guard, and [`Admitted::finish`] is the
//! one place a call is marked complete (and counted by how it ended). The
//! counter a call ends in is its count out of the gate (`gate.rs`), so it is
//! bumped last, once the call holds nothing: by `finish` after the stages
//! released the key and budgets, or by the guard's drop; whichever counted
//! it then exits the gate (which may wake a drain): `finish` itself, and
//! the drop only for a call that did not finish. A drop before `finish` is
//! a cancellation, or, while the thread panics, a panic (counted
//! `panicked`).
//!
//! Cancel safety: admission never waits. Dropping the call future at any
//! later point drops the guard after the later stages have released their
//! key and budgets, so the drain sees the call out only once it holds
//! nothing.

use super::ended::{self, End, Refusal};
use super::BoundInner;
use crate::error::Error;
use crate::error::ErrorSource;
use crate::events::{Event, Events, SpanEnd};
use crate::kinds::{Ending, StoppedAt};
use crate::stats::Counters;

/// One admitted call of a bound operation: counted out of the gate by
/// [`finish`](Admitted::finish), or when dropped unfinished.
pub(crate) struct Admitted<'a, K: 'static> {
    bound: &'a BoundInner<K>,
    /// Where the call's events go (the counters' shard of the thread that
    /// admitted it, taken once).
    counters: &'a Counters,
    /// How far `finish` got: what the guard's drop has left to do.
    progress: Progress,
    /// What the call's span records when it ends.
    span: SpanEnd,
    /// The attempt running or last run (0 before the first): the span's
    /// `attempts` and a panic's attempt number.
    attempt: u32,
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
        progress: Progress::Running,
        span,
        attempt: 0,
    })
}

impl<'a, K> Admitted<'a, K> {
    /// The call's event sink.
    #[inline(always)]
    pub(crate) fn events(&self) -> Events<'a> {
        self.bound.events_on(self.counters)
    }

    /// Attempt number `attempt` is about to run.
    #[inline(always)]
    pub(crate) fn attempt(&mut self, attempt: u32) {
        self.attempt = attempt;
    }

    /// Marks the call complete, counts it out of the gate and gives the
    /// caller its result (a handler's panic resumes here, the call already
    /// counted out as finished, not cancelled). The guard's drop then does
    /// nothing.
    ///
    /// By reference, not by value, and with the gate's exit before the
    /// result is built: moving the guard into `finish` copied it out of the
    /// call's state just after its attempt number was written, and a result
    /// built before the exit was copied after it, each copy a wide load of
    /// narrow stores that waits for them (8 % and 18 % of an uncontended
    /// call's time, `perf annotate` of `profile_call`). Always inlined for
    /// the same reason: out of line, its result came back through memory.
    #[inline(always)]
    pub(crate) fn finish<T, E, S: ErrorSource<E>>(
        &mut self,
        end: Result<T, End<E>>,
        chain: S,
    ) -> Result<T, Error<E>> {
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
    /// The call ended before `finish`: dropped by its caller (cancelled),
    /// or unwound by a panic — one in code herta runs for it (the error
    /// type's `Classify`, a key's `Hash` or `Eq`), or the caller's own,
    /// unwinding through the awaiting task. Out of line: a call that
    /// finishes never comes here.
    #[cold]
    #[inline(never)]
    fn ended_unfinished(&mut self) {
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
}

impl<K> Drop for Admitted<'_, K> {
    #[inline]
    fn drop(&mut self) {
        if let Progress::Exited = self.progress {
            return;
        }
        if let Progress::Running = self.progress {
            self.ended_unfinished();
        }
        // The call's ending is counted (by `finish`, or just above): it is
        // out of the gate's count, which may wake the drain.
        self.bound.runtime.inner.gate.exited();
    }
}
