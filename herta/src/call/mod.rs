//! One call of a bound operation, as a pipeline of stages:
//!
//! 1. [`admit`]: the admission gate counts the call in (or refuses it: the
//!    runtime is stopping);
//! 2. [`key`]: with `serialize_by`, the call's key (before budgets, so a
//!    same-key waiter holds no budget);
//! 3. [`budgets`]: every budget, all at once or none;
//! 4. [`attempts`]: the handler, each attempt under a fresh timeout, its
//!    failure classified, and the retry decision in one
//!    [`Policy`](attempts::Policy);
//! 5. [`backoff`]: between two attempts, the delay (budgets given back,
//!    key kept), the retry budget, and a pass through the scheduler;
//!
//! then the finish: [`Admitted::finish`](admit::Admitted::finish) marks the
//! call complete (the only place that does), counts how it ended
//! ([`ended::count`]) and turns that into the caller's result
//! ([`ended::result`]). Key and budgets are released in
//! reverse order when the stages end; the call is counted out of the gate
//! last.
//!
//! The stages report what happens through the one event sink,
//! [`crate::events`], and how the call ended as values
//! ([`Refusal`](ended::Refusal), [`End`]), never by building errors or
//! bumping counters themselves. Each stage's module says what it does and
//! what dropping the call there does: every stage is cancel safe (a dropped
//! call releases everything it held or waited for, at once, and is counted
//! cancelled).
//!
//! [`Bound::run`] strings the stages together in one `async` block, so that a
//! call is one state machine (a nested `async fn` per stage costs about 20
//! instructions per call; see `profile_call`): each stage is a synchronous,
//! inlined step, and only its wait is a future, built only when it waits.
//! Bounded waiting and the call's deadline are [`waiting`]: limits fixed
//! at admission that bound the key and budget waits and every attempt.
//! The stages' code is the `stages!` macro of [`stages`], which `run`
//! expands twice: bounded by the call's limits, and with every limit check
//! compiled out for a call no limit can apply to.
//! A new stage is a module here plus a line in
//! `stages!` (`stage!` ends the stages with its refusal); a new way to end a
//! call is a variant of `Refusal` or `End`, counted in `ended::count` and
//! mapped to its [`Error`] in `ended::result`.
//!
//! Bind-time checks live in [`bind`]; key type erasure in [`table_key`].

mod admit;
mod attempts;
mod backoff;
mod bind;
mod budgets;
mod ended;
mod key;
#[macro_use]
mod stages;
mod table_key;
mod waiting;

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;

use crate::arbiter::Needs;
use crate::context::Context;
use crate::contract::{Contract, KeySpec};
use crate::error::{BindError, Error, ErrorSource};
use crate::events::{AttemptClock, CallSpan, Event, Events, Recorders, SpanEnabled, SpanEnd};
use crate::keys::KeyTable;
use crate::outcome::{Admission, HandlerOutput, Outcome};
use crate::runtime::Runtime;
use crate::stats::Counters;
use ended::End;
use table_key::{KeyOps, TableKey};

/// A contract bound to a runtime: what a generated wrapper type holds.
///
/// `K` is the serialization key type (`NoKey` without `serialize_by`). Only
/// `bind` requires the key bounds (`Clone + Hash + Eq + Send + Sync`); it
/// stores what the key table needs of `K` (hashing, equality, cloning) as
/// function pointers, so the other methods compile for any `K`. A key type
/// without them is then one error, at `bind` (see
/// `herta::__private::KeyBound`), instead of one per method.
pub struct Bound<K: 'static> {
    inner: Arc<BoundInner<K>>,
}

/// What every clone of a [`Bound`] shares, read by every call.
///
/// Aligned to 128 bytes, so it starts on the cache line after its `Arc`'s
/// reference counts: callers commonly clone the operation per request, and
/// those clones (a write on each clone and drop) must not evict, from every
/// other core, the fields every call reads.
#[repr(align(128))]
struct BoundInner<K: 'static> {
    /// The runtime bound to.
    runtime: Runtime,
    /// The operation's contract.
    contract: &'static Contract,
    /// Its budgets, checked and sorted by budget index.
    needs: Needs,
    /// Its key space, with `serialize_by`.
    keys: Option<Arc<KeyTable<TableKey<K>>>>,
    /// `K`'s hashing, equality and cloning.
    key_ops: &'static KeyOps<K>,
    /// `K`'s description, for a throttled call and the span; only with
    /// `serialize_by(param, show_key = true)`.
    describe_key: Option<fn(&K) -> String>,
    /// Whether the contract declares `max_wait` or `deadline`.
    limited: bool,
    /// This binding's counters and metric handles.
    recorders: Recorders,
}

impl<K: 'static> Clone for Bound<K> {
    fn clone(&self) -> Self {
        Bound {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: 'static> fmt::Debug for Bound<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bound")
            .field("contract", self.inner.contract)
            .finish_non_exhaustive()
    }
}

/// The caller's result of a call whose handler returns `Fut::Output`.
type CallResult<Fut> = Result<
    <<Fut as Future>::Output as HandlerOutput>::Ok,
    Error<<<Fut as Future>::Output as HandlerOutput>::Err>,
>;

impl<K: 'static> Bound<K> {
    /// Checks `contract` against `runtime` and binds it.
    ///
    /// # Errors
    ///
    /// [`BindError`] for an unknown resource (with the closest declared name),
    /// 0 units, units above capacity, a resource named twice, or a shared key
    /// scope already keyed by another type.
    ///
    /// # Panics
    ///
    /// See [`Arbiter::needs`](crate::arbiter::Arbiter::needs): the 65 537th
    /// distinct need list bound to one runtime.
    pub(crate) fn bind(
        runtime: &Runtime,
        contract: &'static Contract,
        describe_key: fn(&K) -> String,
    ) -> Result<Self, BindError>
    where
        K: Clone + Hash + Eq + Send + Sync,
    {
        bind::open(runtime, contract)?;
        let needs = bind::needs(runtime, contract)?;
        let keys = bind::key_table::<K>(runtime, contract)?;
        Ok(Bound {
            inner: Arc::new(BoundInner {
                runtime: runtime.clone(),
                contract,
                needs,
                keys,
                key_ops: KeyOps::<K>::OPS,
                describe_key: contract
                    .serialize_by()
                    .filter(KeySpec::shows_key)
                    .map(|_| describe_key),
                limited: waiting::Limits::declared_by(contract),
                recorders: Recorders::register(&runtime.inner.operations, contract.operation()),
            }),
        })
    }

    /// The owned key of a call: a clone of the key parameter.
    #[inline]
    pub fn key(&self, value: &K) -> K {
        (self.inner.key_ops.clone)(value)
    }

    /// Runs a call whose handler runs at most once (no retry declared).
    ///
    /// `classify` (like `call`'s) is generic, so the macro's function item
    /// passes as a zero-sized value: a call carries no function pointer.
    #[inline]
    pub fn call_once<'a, F, Fut, S, C>(
        &'a self,
        key: Option<K>,
        classify: C,
        chain: S,
        attempt: F,
    ) -> impl Future<Output = CallResult<Fut>> + 'a
    where
        F: FnOnce(Context) -> Fut + 'a,
        Fut: Future + 'a,
        Fut::Output: HandlerOutput,
        S: ErrorSource<<Fut::Output as HandlerOutput>::Err> + 'a,
        C: Fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome + 'a,
    {
        let mut attempt = Some(attempt);
        self.call(key, classify, no_hint, chain, move |ctx| {
            // `call` makes one attempt when the contract allows one; a contract
            // without retry has `max_attempts == 1`.
            (attempt
                .take()
                .expect("a call without retry makes one attempt"))(ctx)
        })
    }

    /// Runs a call, making up to the contract's `max_attempts` attempts.
    ///
    /// With the `tracing` feature the call runs inside a `herta.operation`
    /// span (see [`herta::trace`](crate::trace) for the span and its events).
    ///
    /// `classify` gives a failed attempt's outcome; `retry_after` reads the
    /// server's hint from a failed attempt's error
    /// ([`Classify::retry_after`](crate::Classify::retry_after)). Both are
    /// generic, so a function item costs nothing to carry.
    ///
    /// Not an `async fn`: the span is opened when this is called (the
    /// generated `call` calls it from its own first poll, so nothing changes
    /// for a caller), and the future returned is `run`'s inside the span,
    /// with no state machine of its own around it (measured: 20
    /// instructions per call less; `profile_call`). The span is made
    /// before `run`'s future so that nothing between them forces the future
    /// to be copied.
    #[inline(always)]
    pub fn call<'a, F, Fut, S, C, R>(
        &'a self,
        key: Option<K>,
        classify: C,
        retry_after: R,
        chain: S,
        attempt: F,
    ) -> impl Future<Output = CallResult<Fut>> + 'a
    where
        F: FnMut(Context) -> Fut + 'a,
        Fut: Future + 'a,
        Fut::Output: HandlerOutput,
        S: ErrorSource<<Fut::Output as HandlerOutput>::Err> + 'a,
        C: Fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome + 'a,
        R: Fn(&<Fut::Output as HandlerOutput>::Err) -> Option<Duration> + 'a,
    {
        let span = CallSpan::open(self.inner.contract, key.as_ref(), self.inner.describe_key);
        let enabled = span.enabled();
        span.instrument(self.run(key, classify, retry_after, chain, attempt, enabled))
    }

    /// The call itself: admission, the stages, the finish.
    ///
    /// One `async` block for all stages, so one state machine: every stage's
    /// synchronous step is an inlined function, and only a wait (for a key,
    /// for budgets, for an attempt) is a future, built only when needed.
    ///
    /// Not an `async fn`: one of those keeps a copy of each argument beside
    /// the argument itself in its state (the handler twice, in every call's
    /// future); the block reads the captured arguments in place.
    #[allow(clippy::manual_async_fn)] // an `async fn` would copy its arguments
    fn run<'a, F, Fut, S, C, R>(
        &'a self,
        key: Option<K>,
        classify: C,
        retry_after: R,
        chain: S,
        mut handler: F,
        span: SpanEnabled,
    ) -> impl Future<Output = CallResult<Fut>> + use<'a, K, F, Fut, S, C, R>
    where
        F: FnMut(Context) -> Fut,
        Fut: Future,
        Fut::Output: HandlerOutput,
        S: ErrorSource<<Fut::Output as HandlerOutput>::Err>,
        C: Fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome,
        R: Fn(&<Fut::Output as HandlerOutput>::Err) -> Option<Duration>,
    {
        async move {
            let inner = &*self.inner;
            let rt = &*inner.runtime.inner;
            let contract = inner.contract;
            let mut call = match admit::admit(inner, SpanEnd::new(span)) {
                Ok(call) => call,
                Err(refused) => {
                    let end = Err(refused.into());
                    ended::count(&end, inner.events());
                    return ended::result(end, contract, chain);
                }
            };
            // What the stages count and hold, declared once for both copies
            // of them, so that the call's state keeps one slot for each, not
            // one per copy (56 bytes of every call's future: 512 -> 456).
            // The key guard and the permit are assigned on each path, not
            // set to `None` first (overwriting one drops the old value, a
            // check that cost 13 instructions per call each; as they are, the
            // pair costs 7), and dropped at the end of this block, the
            // permit first, as the copies' own locals were: before the call
            // finishes.
            let mut attempt = 1;
            let end = {
                let _held_key;
                let mut permit;
                // The stages read these of `run`'s locals (named once here,
                // for both copies).
                macro_rules! stages_bounded_by {
                    ($limits:expr) => {
                        stages!(
                            $limits,
                            inner,
                            call,
                            rt,
                            contract,
                            key,
                            handler,
                            classify,
                            retry_after,
                            attempt,
                            _held_key,
                            permit
                        )
                    };
                }
                // Bound, then returned, not the block's tail expression: the
                // tail form compiled to 7 more instructions per call.
                let end = if waiting::may_apply(inner.limited) {
                    let limits = waiting::Limits::at_admission(contract, inner.limited);
                    stages_bounded_by!(limits)
                } else {
                    stages_bounded_by!(waiting::Limits::NONE)
                };
                end
            };
            call.finish(end, chain)
        }
    }
}

/// The hint reader of a call that never retries.
fn no_hint<E>(_: &E) -> Option<Duration> {
    None
}

impl<K: 'static> BoundInner<K> {
    /// The event sink of this operation's calls on this thread.
    #[inline(always)]
    fn events(&self) -> Events<'_> {
        self.events_on(self.recorders.here())
    }

    /// The event sink of this operation's calls, counting in `counters`
    /// (a call takes its thread's shard once, at admission).
    #[inline(always)]
    fn events_on<'a>(&'a self, counters: &'a Counters) -> Events<'a> {
        self.recorders.events(counters, self.contract)
    }
}
