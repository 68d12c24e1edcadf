//! One call of a bound operation, as a pipeline of stages:
//!
//! 1. [`admit`]: the admission gate counts the call in (or refuses it: the
//!    runtime is stopping);
//! 2. [`breaker`]: with `breaker = …`, the call is refused while the
//!    breaker is open (or half-open with every probe out), before it
//!    queues for anything; each attempt passes it when it starts (the key
//!    and budgets held; a probe's slot is reserved then), and every
//!    attempt's end is counted there;
//! 3. [`key`]: with `serialize_by`, the call's key (before budgets, so a
//!    same-key waiter holds no budget);
//! 4. [`budgets`]: every budget, all at once or none;
//! 5. [`attempts`]: the handler, each attempt under a fresh timeout, its
//!    failure classified, and what follows decided by one
//!    [`Policy::next`](attempts::Policy::next) (stop, yield, or sleep);
//! 6. [`backoff`]: between two attempts, carries that out: the sleep
//!    (budgets given back, key kept) and the budgets again, or a pass
//!    through the scheduler;
//!
//! then the finish: [`Admitted::finish`](admit::Admitted::finish) marks the
//! call complete (the only place that does), counts how it ended
//! ([`ended::count`]) and turns that into the caller's result
//! ([`ended::result`]). What the stages take, the key and the budgets, is
//! held by the admitted call ([`Held`](admit::Held)), which releases them in
//! reverse order when it finishes or is dropped; the call is counted out of
//! the gate last.
//!
//! The stages report what happens through the one event sink,
//! [`crate::events`], and how the call ended as values
//! ([`Refusal`](ended::Refusal), [`End`]), never by building errors or
//! bumping counters themselves. Each stage's module says what it does and
//! what dropping the call there does: every stage is cancel safe (a dropped
//! call releases everything it held or waited for, at once, and is counted
//! cancelled). What every stage reads of the operation is
//! [`BoundInner`](bound::BoundInner), in [`bound`]; the stages import from
//! each other and from `bound`, never from this module.
//!
//! [`Bound::run`] strings the stages together in one `async` block, so that
//! a call is one state machine: each stage is a synchronous, inlined step
//! (a try that succeeds at once when nothing is contended), and only its
//! wait is a future, built only when it waits. Bounded waiting and the
//! call's deadline are [`waiting`]'s [`Limits`](waiting::Limits): fixed at
//! admission, they bound the key and budget waits and every attempt; a
//! call no limit can apply to has none, so each check is one test.
//!
//! The block is compiled once per operation (it calls the handler), so only
//! what depends on the handler's types is generic: calling it, classifying
//! its error, building the caller's result. The stages' slow paths (waits,
//! refusals, the retry decision, the backoff, a dropped call's clean-up)
//! are plain functions and futures compiled once, out of line. The steps
//! of the fast path are `#[inline(always)]` in optimized builds and only
//! `#[inline]` with `debug_assertions` (debug builds, which inline only
//! what is always inlined): there, inlining them would only copy them into
//! every operation's code.
//!
//! **A new stage** (rate tokens, a breaker) is a module here with a
//! synchronous try (inlined: it takes what the stage holds at once, or
//! says why not) and a wait future built from that answer only when the try
//! did not succeed (compiled once), plus one block in `run`'s `'stages`, in
//! the stage's place in the order: the try, then the wait if needed, each
//! ending the stages with the stage's refusal
//! (`break 'stages Err(End::Refused(refusal))`); what it takes is a field
//! of [`Held`](admit::Held), so that the call releases it (see `key` and
//! `budgets`). A new way to end a call is a variant of
//! [`Ending`](crate::kinds::Ending) (the compiler then points at every sink
//! that must handle it) and of `Refusal` or `End`, reported as that ending
//! by `End::ending` and mapped to its [`Error`] in `ended::result`.
//!
//! A nested call that its own calling chain blocks (the same key, or
//! units beyond what the chain leaves) is refused: [`chain`] records the
//! key and budget waits that queue, and checks them against what the call
//! holds after each handler poll that returned `Pending` having queued
//! some (the attempt's future is wrapped in [`chain::running`]).
//!
//! Bind-time checks live in [`bind`]; key type erasure in [`table_key`].

mod admit;
mod attempts;
mod backoff;
mod bind;
mod bound;
mod breaker;
mod budgets;
mod chain;
mod ended;
mod key;
mod table_key;
mod waiting;

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use crate::context::Context;
use crate::contract::{Contract, KeySpec};
use crate::error::{BindError, Error, ErrorSource};
use crate::events::{AttemptClock, Recorders, SpanEnabled, SpanEnd};
use crate::outcome::{HandlerOutput, Outcome};
use crate::runtime::Runtime;
use bound::BoundInner;
pub use breaker::{BreakerUse, NoBreaker, WithBreaker};
use ended::End;
use table_key::KeyOps;

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
        let breaker = bind::breaker(runtime, contract)?;
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
                breaker,
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
    pub fn call_once<'a, F, Fut, S, C, B>(
        &'a self,
        key: Option<K>,
        classify: C,
        chain: S,
        breaker: B,
        attempt: F,
    ) -> impl Future<Output = CallResult<Fut>> + 'a
    where
        F: FnOnce(Context) -> Fut + 'a,
        Fut: Future + 'a,
        Fut::Output: HandlerOutput,
        S: ErrorSource<<Fut::Output as HandlerOutput>::Err> + 'a,
        C: Fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome + 'a,
        B: BreakerUse,
    {
        let mut attempt = Some(attempt);
        self.call(key, classify, no_hint, chain, breaker, move |ctx| {
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
    /// generic, so a function item costs nothing to carry. `breaker` is
    /// the contract's breaker stage ([`NoBreaker`] or [`WithBreaker`]), a
    /// zero-sized value.
    ///
    /// Not an `async fn`: the span is opened when this is called (the
    /// generated `call` calls it from its own first poll, so nothing changes
    /// for a caller), and the future returned is `run`'s inside the span,
    /// with no state machine of its own around it (one fewer state machine
    /// to enter and leave on every poll). The span is made
    /// before `run`'s future so that nothing between them forces the future
    /// to be copied.
    #[inline(always)]
    pub fn call<'a, F, Fut, S, C, R, B>(
        &'a self,
        key: Option<K>,
        classify: C,
        retry_after: R,
        chain: S,
        breaker: B,
        attempt: F,
    ) -> impl Future<Output = CallResult<Fut>> + 'a
    where
        F: FnMut(Context) -> Fut + 'a,
        Fut: Future + 'a,
        Fut::Output: HandlerOutput,
        S: ErrorSource<<Fut::Output as HandlerOutput>::Err> + 'a,
        C: Fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome + 'a,
        R: Fn(&<Fut::Output as HandlerOutput>::Err) -> Option<Duration> + 'a,
        B: BreakerUse,
    {
        let (span, enabled) = self.inner.span(key.as_ref());
        let _ = breaker;
        span.instrument(self.run::<F, Fut, S, C, R, B>(
            key,
            classify,
            retry_after,
            chain,
            attempt,
            enabled,
        ))
    }

    /// The call itself: admission, the stages, the finish.
    ///
    /// One `async` block for all stages, so one state machine: every stage's
    /// synchronous step is an inlined function, and only a wait (for a key,
    /// for budgets, for an attempt, between attempts) is a future, built
    /// only when needed. In order: 1. admission (`call`, which holds what
    /// the stages take and releases it when the call finishes or is
    /// dropped); 2. the key; 3. the budgets, the try's result matched in a
    /// statement of its own, so that the call's state does not keep it
    /// across the wait; the deadline; 4. the attempts, each in a block of
    /// its own so that its locals end before the backoff's await (a local
    /// stays in the call's state across an await while its scope lasts,
    /// even once moved from; for the same reason the attempt's number is
    /// read from `call` again after the handler's await, not kept in a
    /// local across it); 5. between them, the backoff.
    ///
    /// Not an `async fn`: one of those keeps a copy of each argument beside
    /// the argument itself in its state (the handler twice, in every call's
    /// future); the block reads the captured arguments in place.
    #[allow(clippy::manual_async_fn)] // an `async fn` would copy its arguments
    fn run<'a, F, Fut, S, C, R, B: BreakerUse>(
        &'a self,
        key: Option<K>,
        classify: C,
        retry_after: R,
        chain: S,
        mut handler: F,
        span: SpanEnabled,
    ) -> impl Future<Output = CallResult<Fut>> + use<'a, K, F, Fut, S, C, R, B>
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
                Err(refused) => return admit::refused(inner, refused, chain),
            };
            let end = 'stages: {
                let admission = contract.admission();
                let limits = waiting::Limits::of_call(contract, inner.limited);
                let (mut pass, wait) = match B::enter(inner, key, admission, call.held()) {
                    Ok(entered) => entered,
                    Err(refused) => break 'stages Err(End::Refused(refused)),
                };
                if let Some((table, key)) = wait {
                    let (events, describe) = (call.events(), inner.describe_key);
                    match key::wait(table, key, events, &limits, contract, describe).await {
                        Ok(guard) => call.held().key = Some(guard),
                        Err(refused) => break 'stages Err(End::Refused(refused)),
                    }
                }
                if let Some(error) = call.take_budgets(rt, &inner.needs) {
                    let (events, needs) = (call.events(), &inner.needs);
                    let wait = budgets::contended(rt, needs, error, admission, events, &limits);
                    match wait.await {
                        Ok(taken) => call.held().permit = Some(taken),
                        Err(refused) => break 'stages Err(End::Refused(refused)),
                    }
                }
                if let Some(refused) = B::ready(&limits, inner, &mut pass) {
                    break 'stages Err(End::Refused(refused));
                }
                call.started();
                attempts::first(rt, contract);
                loop {
                    let (end, next) = {
                        let attempt = call.next_attempt();
                        let ctx = attempts::context(contract, attempt, &limits);
                        let deadline = ctx.deadline;
                        let clock = AttemptClock::start();
                        let run = chain::running(attempts::caught(handler(ctx)), call.holding());
                        let finished = match deadline {
                            Some(deadline) => attempts::timed(run, deadline).await,
                            None => Some(run.await),
                        };
                        call.attempt_ended(clock);
                        let (events, attempt) = (call.events(), call.attempt());
                        let bounds = (deadline, &limits);
                        let end = match attempts::classified(
                            contract, attempt, finished, &classify, events, bounds,
                        ) {
                            Ok(value) => break Ok(B::succeeded(pass, value)),
                            Err(end) => end,
                        };
                        B::ended(pass, breaker::verdict(&end));
                        let policy = (contract, rt);
                        match attempts::next(policy, attempt, &end, &retry_after, &limits, events) {
                            attempts::Next::Stop => break Err(end),
                            next => (end, next),
                        }
                    };
                    pass = match B::retry(call.between(next, &limits).await, inner) {
                        Ok(pass) => pass,
                        Err(interrupted) => break Err(interrupted.ended(end)),
                    };
                    backoff::retrying(call.events(), call.attempt() + 1);
                }
            };
            call.finish(end, chain)
        }
    }
}

/// The hint reader of a call that never retries.
fn no_hint<E>(_: &E) -> Option<Duration> {
    None
}
