//! What every clone of a bound operation shares, and its event sink: the
//! state the stages read, apart from the pipeline in `call/mod.rs`, so that
//! the stages import it from here and never from their parent.

use std::sync::Arc;

use super::table_key::{KeyOps, TableKey};
use crate::arbiter::Needs;
use crate::breaker::circuit::Circuit;
use crate::contract::Contract;
use crate::events::{CallSpan, Events, Recorders, SpanEnabled};
use crate::keys::KeyTable;
use crate::runtime::Runtime;
use crate::stats::Counters;

/// What every clone of a [`Bound`](super::Bound) shares, read by every call.
///
/// Aligned to 128 bytes, so it starts on the cache line after its `Arc`'s
/// reference counts: callers commonly clone the operation per request, and
/// those clones (a write on each clone and drop) must not evict, from every
/// other core, the fields every call reads.
#[repr(align(128))]
pub(crate) struct BoundInner<K: 'static> {
    /// The runtime bound to.
    pub(crate) runtime: Runtime,
    /// The operation's contract.
    pub(crate) contract: &'static Contract,
    /// Its budgets, checked and sorted by budget index.
    pub(crate) needs: Needs,
    /// Its key space, with `serialize_by`.
    pub(crate) keys: Option<Arc<KeyTable<TableKey<K>>>>,
    /// `K`'s hashing, equality and cloning.
    pub(crate) key_ops: &'static KeyOps<K>,
    /// `K`'s description, for a throttled call and the span; only with
    /// `serialize_by(param, show_key = true)`.
    pub(crate) describe_key: Option<fn(&K) -> String>,
    /// Whether the contract declares `max_wait`, `deadline` or `timeout`
    /// (see [`Limits`](super::waiting::Limits)).
    pub(crate) limited: bool,
    /// This binding's counters and metric handles.
    pub(crate) recorders: Recorders,
    /// Its circuit breaker's state in this runtime, with `breaker = …`.
    pub(crate) breaker: Option<Arc<Circuit>>,
}

impl<K: 'static> BoundInner<K> {
    /// The event sink of this operation's calls on this thread.
    #[inline(always)]
    pub(crate) fn events(&self) -> Events<'_> {
        self.events_on(self.recorders.here())
    }

    /// Opens the span of a call with `key` (see [`CallSpan::open`]) and
    /// whether the call's end records on it.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(crate) fn span(&self, key: Option<&K>) -> (CallSpan, SpanEnabled) {
        let span = CallSpan::open(self.contract, key, self.describe_key);
        let enabled = span.enabled();
        (span, enabled)
    }

    /// The event sink of this operation's calls, counting in `counters`
    /// (a call takes its thread's shard once, at admission).
    #[inline(always)]
    pub(crate) fn events_on<'a>(&'a self, counters: &'a Counters) -> Events<'a> {
        self.recorders.events(counters, self.contract)
    }
}
