//! Stage 2, the key (only with `serialize_by`): at most one call per key runs
//! at a time. The key comes before the budgets, so a call waiting for its
//! key holds no budget.
//!
//! `Reject` tries once: a held (or queued-for) key refuses the call as
//! throttled, naming the key's parameter (and its value only with
//! `show_key = true`). `Wait` queues behind the holder in arrival
//! order and reports how long it waited; it tries the key first, and builds
//! its wait only when the key is held.
//!
//! A `Wait` call's wait is bounded by its [`Limits`] (`max_wait`, the
//! deadline); when they run out it is refused, naming the key. A wait that
//! queues is recorded for the self-deadlock check ([`super::chain`]): a
//! call whose own calling chain holds the key is refused at once
//! (`WouldDeadlock`, naming the key).
//!
//! Cancel safety: dropping the wait withdraws the waiter at once (a key
//! granted to it but not yet seen passes to the next waiter); dropping the
//! returned guard releases the key.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::bound::BoundInner;
use super::chain::{Wants, Watch};
use super::ended::Refusal;
use super::table_key::TableKey;
use super::waiting::{self, Limits};
use crate::contract::Contract;
use crate::error::{Busy, Throttle};
use crate::events::{self, Event, Events};
use crate::keys::{AcquireKey, Closed, KeyGuard, KeyTable, TryKeyError};
use crate::kinds::{Queue, StoppedAt};
use crate::outcome::Admission;

/// A key a `Wait` call queues for ([`wait`]), and its table.
pub(crate) type Queued<'a, K> = (&'a KeyTable<TableKey<K>>, TableKey<K>);

/// The key stage's first step, for a call with `value` (`None` without
/// `serialize_by`): `Ok(None)` when the stage is done (no key, or the key
/// taken into `held`), `Ok(Some(_))` when a `Wait` call must queue for the
/// key ([`wait`]), or why a `Reject` call is refused.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub(crate) fn take<'a, K: 'static>(
    bound: &'a BoundInner<K>,
    value: Option<K>,
    admission: Admission,
    held: &mut Option<KeyGuard<'a, TableKey<K>>>,
) -> Result<Option<Queued<'a, K>>, Refusal> {
    let (Some(table), Some(key)) = (&bound.keys, value) else {
        return Ok(None);
    };
    let key = TableKey {
        key,
        ops: bound.key_ops,
    };
    match admission {
        Admission::Reject => {
            *held = Some(try_acquire(table, key, bound.contract, bound.describe_key)?);
            Ok(None)
        }
        // The fast path: a free key is taken here, so that only a call that
        // finds it held builds the wait's state (and its waiter node).
        Admission::Wait => match table.try_acquire(key) {
            Ok(guard) => {
                *held = Some(guard);
                Ok(None)
            }
            Err(TryKeyError::Busy(key)) => Ok(Some((table, key))),
            Err(TryKeyError::Closed) => Err(Refusal::Stopping(StoppedAt::Key)),
        },
    }
}

/// Takes `key` in `table` under `Reject`: at once if nobody holds or waits
/// for it, else refuses the call as throttled, naming the key.
#[inline]
fn try_acquire<'a, K: 'static>(
    table: &'a KeyTable<TableKey<K>>,
    key: TableKey<K>,
    contract: &'static Contract,
    describe_key: Option<fn(&K) -> String>,
) -> Result<KeyGuard<'a, TableKey<K>>, Refusal> {
    match table.try_acquire(key) {
        Ok(guard) => Ok(guard),
        Err(TryKeyError::Busy(busy)) => Err(Refusal::throttled(
            Throttle::NoRoom,
            Busy::Key {
                parameter: contract.serialize_by().map_or("", |k| k.parameter()),
                value: describe_key.map(|describe| describe(&busy.key)),
            },
        )),
        Err(TryKeyError::Closed) => Err(Refusal::Stopping(StoppedAt::Key)),
    }
}

/// Takes `key` in `table` under `Wait`, once [`take`] found it held:
/// behind the calls ahead of it, at most until `limits` allow (then
/// refused: throttled naming the key, or past the deadline).
///
/// Not an `async fn`, for the reason [`contended`](super::budgets::contended)
/// gives: the block reads its captured arguments in place.
#[allow(clippy::manual_async_fn)] // an `async fn` would copy its arguments
pub(crate) fn wait<'a, 'e, 'l, K: 'static>(
    table: &'a KeyTable<TableKey<K>>,
    key: TableKey<K>,
    events: Events<'e>,
    limits: &'l Limits,
    contract: &'static Contract,
    describe_key: Option<fn(&K) -> String>,
) -> impl Future<Output = Result<KeyGuard<'a, TableKey<K>>, Refusal>> + use<'a, 'e, 'l, K> {
    async move {
        let Some(until) = limits.wait_until() else {
            return match events::timed(watched(table.acquire(key), describe_key)).await {
                (Ok(Ok(guard)), waited) => {
                    events.emit(Event::Waited(Queue::Key, waited));
                    Ok(guard)
                }
                (Ok(Err(_closed)), _) => Err(Refusal::Stopping(StoppedAt::Key)),
                (Err(value), _) => Err(would_deadlock(contract, value)),
            };
        };
        // Bounded: only a call that found its key held gets here, so only
        // such a call describes its key (with `show_key`, for the refusal
        // should the limit run out). As a `Box<str>` while waiting: 16
        // bytes in the state, not 24. The key moves into the wait in the
        // same statement: a moved-from local would keep a slot in the state
        // across the await.
        let (value, acquire) = (
            describe_key.map(|describe| describe(&key.key).into_boxed_str()),
            watched(table.acquire(key), None),
        );
        match events::timed(waiting::bounded(Some(until), acquire)).await {
            (Some(Ok(Ok(guard))), waited) => {
                events.emit(Event::Waited(Queue::Key, waited));
                Ok(guard)
            }
            (Some(Ok(Err(_closed))), _) => Err(Refusal::Stopping(StoppedAt::Key)),
            (Some(Err(_)), _) => Err(would_deadlock(contract, value.map(String::from))),
            (None, _) => Err(limits.expired(|| Busy::Key {
                parameter: contract.serialize_by().map_or("", |k| k.parameter()),
                value: value.map(String::from),
            })),
        }
    }
}

/// The refusal of a call whose calling chain holds its key (`value`: the
/// key's, with `show_key`).
#[cold]
fn would_deadlock(contract: &'static Contract, value: Option<String>) -> Refusal {
    Refusal::WouldDeadlock(Busy::Key {
        parameter: contract.serialize_by().map_or("", |k| k.parameter()),
        value,
    })
}

/// A queued key wait, watched for its doom (`call/chain.rs`): once it
/// queues it is recorded, and a doomed wait ends with `Err`, the key
/// described by `describe` (with `show_key`, while it is still queued on
/// the key's entry). Dropping it withdraws the waiter, as a cancelled one.
fn watched<K>(
    acquire: AcquireKey<'_, TableKey<K>>,
    describe: Option<fn(&K) -> String>,
) -> Watched<'_, K> {
    Watched {
        acquire,
        watch: Watch::new(),
        describe,
    }
}

pin_project_lite::pin_project! {
    /// [`watched`]'s future.
    struct Watched<'a, K: 'static> {
        #[pin]
        acquire: AcquireKey<'a, TableKey<K>>,
        watch: Watch,
        describe: Option<fn(&K) -> String>,
    }
}

impl<'a, K: 'static> Future for Watched<'a, K> {
    type Output = Result<Result<KeyGuard<'a, TableKey<K>>, Closed>, Option<String>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(acquired) = this.acquire.as_mut().poll(cx) {
            return Poll::Ready(Ok(acquired));
        }
        let acquire = this.acquire.as_mut();
        let doomed = this.watch.pending(
            || {
                let (table, shard, entry) = acquire.queued_at();
                Wants::Key {
                    table,
                    shard,
                    entry,
                }
            },
            cx.waker(),
        );
        match doomed {
            None => Poll::Pending,
            // Still queued on the key's entry: its key can be read there.
            Some(_) => Poll::Ready(Err(this
                .describe
                .map(|describe| this.acquire.as_mut().with_key(|k| describe(&k.key))))),
        }
    }
}
