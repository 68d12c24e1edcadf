//! One call of a bound operation: admission gate → key → budgets → attempts
//! (each with a fresh timeout) → classify → maybe retry → release in reverse.

use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use tokio::time::Instant;

use crate::__private::HandlerOutput;
use crate::arbiter::{Need, TryAcquireError};
use crate::context::Context;
use crate::contract::Contract;
use crate::error::{BindError, Busy, Error};
use crate::keys::{KeyTable, TryKeyError};
use crate::outcome::{normalize, Admission, Outcome};
use crate::runtime::{Counters, Runtime};
use crate::trace::{self, Stage, Wait};

/// A contract bound to a runtime: what a generated wrapper type holds.
///
/// `K` is the serialization key type (`NoKey` without `serialize_by`). Only
/// `bind` requires the key bounds (`Clone + Hash + Eq + Send + Sync`); it
/// stores what the key table needs of `K` (hashing, equality, cloning) as
/// function pointers, so the other methods compile for any `K`. A key type
/// without them is then one error, at `bind` (see
/// [`KeyBound`](crate::__private::KeyBound)), instead of one per method.
pub struct Bound<K: 'static> {
    inner: Arc<BoundInner<K>>,
}

struct BoundInner<K: 'static> {
    runtime: Runtime,
    contract: &'static Contract,
    needs: Arc<[Need]>,
    keys: Option<Arc<KeyTable<TableKey<K>>>>,
    key_ops: &'static KeyOps<K>,
    describe_key: fn(&K) -> String,
}

/// What the key table needs of a key type, monomorphized by `bind` where
/// the key bounds are known.
struct KeyOps<K> {
    hash: fn(&K, &mut dyn Hasher),
    eq: fn(&K, &K) -> bool,
    clone: fn(&K) -> K,
}

impl<K: Clone + Hash + Eq + 'static> KeyOps<K> {
    const OPS: &'static KeyOps<K> = &KeyOps {
        hash: |key, mut state| key.hash(&mut state),
        eq: |a, b| a == b,
        clone: K::clone,
    };
}

/// A key as the key table stores it: `Hash + Eq` for any `K`, through the
/// operations `bind` stored. One pointer larger than the key; no allocation.
struct TableKey<K: 'static> {
    key: K,
    ops: &'static KeyOps<K>,
}

impl<K: 'static> Hash for TableKey<K> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.ops.hash)(&self.key, state);
    }
}

impl<K: 'static> PartialEq for TableKey<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        (self.ops.eq)(&self.key, &other.key)
    }
}

impl<K: 'static> Eq for TableKey<K> {}

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

impl<K: 'static> Bound<K> {
    /// Checks `contract` against `runtime` and binds it.
    ///
    /// # Errors
    ///
    /// [`BindError`] for an unknown resource (with the closest declared name),
    /// 0 units, units above capacity, a resource named twice, or a shared key
    /// scope already keyed by another type.
    pub(crate) fn bind(
        runtime: &Runtime,
        contract: &'static Contract,
        describe_key: fn(&K) -> String,
    ) -> Result<Self, BindError>
    where
        K: Clone + Hash + Eq + Send + Sync,
    {
        let operation = contract.operation();
        let declared = &runtime.inner.resources;
        let mut needs: Vec<Need> = Vec::with_capacity(contract.resources().len());
        for (i, used) in contract.resources().iter().enumerate() {
            let name = used.resource();
            if contract.resources()[..i]
                .iter()
                .any(|u| u.resource() == name)
            {
                return Err(BindError::DuplicateResource {
                    operation,
                    resource: name,
                });
            }
            let Some(index) = declared.iter().position(|r| r.name() == name) else {
                return Err(BindError::UnknownResource {
                    operation,
                    resource: name,
                    suggestion: closest(name, declared.iter().map(|r| r.name())),
                });
            };
            let capacity = declared[index].capacity();
            if used.units() == 0 {
                return Err(BindError::ZeroUnits {
                    operation,
                    resource: name,
                });
            }
            if used.units() > capacity {
                return Err(BindError::UnitsAboveCapacity {
                    operation,
                    resource: name,
                    units: used.units(),
                    capacity,
                });
            }
            needs.push(Need {
                resource: index,
                units: used.units(),
            });
        }
        needs.sort_by_key(|n| n.resource);
        let keys = match contract.serialize_by() {
            None => None,
            Some(spec) => {
                let space = match spec.scope() {
                    Some(scope) => format!("scope:{scope}"),
                    None => format!("operation:{operation}"),
                };
                let table = runtime
                    .key_table::<TableKey<K>>(space)
                    .map_err(|existing| BindError::ScopeKeyMismatch {
                        operation,
                        scope: spec.scope().unwrap_or(operation).to_owned(),
                        key_type: std::any::type_name::<K>(),
                        existing: unwrap_type_name::<K>(existing),
                    })?;
                Some(table)
            }
        };
        Ok(Bound {
            inner: Arc::new(BoundInner {
                runtime: runtime.clone(),
                contract,
                needs: needs.into(),
                keys,
                key_ops: KeyOps::<K>::OPS,
                describe_key,
            }),
        })
    }

    /// The owned key of a call: a clone of the key parameter.
    #[inline]
    pub fn key(&self, value: &K) -> K {
        (self.inner.key_ops.clone)(value)
    }

    /// The runtime this operation is bound to.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// Runs a call whose handler runs at most once (no retry declared).
    pub async fn call_once<F, Fut>(
        &self,
        key: Option<K>,
        classify: fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome,
        attempt: F,
    ) -> Result<<Fut::Output as HandlerOutput>::Ok, Error<<Fut::Output as HandlerOutput>::Err>>
    where
        F: FnOnce(Context) -> Fut,
        Fut: Future,
        Fut::Output: HandlerOutput,
    {
        let mut attempt = Some(attempt);
        self.call(key, classify, move |ctx| {
            // `call` makes one attempt when the contract allows one; a contract
            // without retry has `max_attempts == 1`.
            (attempt
                .take()
                .expect("a call without retry makes one attempt"))(ctx)
        })
        .await
    }

    /// Runs a call, making up to the contract's `max_attempts` attempts.
    ///
    /// With the `tracing` feature the call runs inside a `herta.operation`
    /// span (see [`herta::trace`](crate::trace) for the span and its events).
    pub async fn call<F, Fut>(
        &self,
        key: Option<K>,
        classify: fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome,
        attempt: F,
    ) -> Result<<Fut::Output as HandlerOutput>::Ok, Error<<Fut::Output as HandlerOutput>::Err>>
    where
        F: FnMut(Context) -> Fut,
        Fut: Future,
        Fut::Output: HandlerOutput,
    {
        let span = trace::call_span(self.inner.contract, key.as_ref(), self.inner.describe_key);
        trace::instrument(self.run(key, classify, attempt), span).await
    }

    /// The call itself: admission gate → key → budgets → attempts.
    async fn run<F, Fut>(
        &self,
        key: Option<K>,
        classify: fn(&<Fut::Output as HandlerOutput>::Err) -> Outcome,
        mut attempt: F,
    ) -> Result<<Fut::Output as HandlerOutput>::Ok, Error<<Fut::Output as HandlerOutput>::Err>>
    where
        F: FnMut(Context) -> Fut,
        Fut: Future,
        Fut::Output: HandlerOutput,
    {
        let inner = &*self.inner;
        let rt = &*inner.runtime.inner;
        let contract = inner.contract;
        let operation = contract.operation();
        let counters = &rt.counters;

        // 1. Admission gate.
        if !rt.gate.enter() {
            Counters::bump(&counters.rejected);
            trace::stopping(Stage::Admission);
            return Err(Error::Stopping { operation });
        }
        Counters::bump(&counters.admitted);
        // Counts the call out on every path; a drop before `completed` is a
        // cancellation.
        let mut call = InFlight {
            runtime: &inner.runtime,
            completed: false,
        };
        let stopping = |stage| {
            Counters::bump(&counters.rejected);
            trace::stopping(stage);
            Error::Stopping { operation }
        };
        let throttled = |busy| {
            Counters::bump(&counters.throttled);
            trace::throttled(&busy);
            Error::Throttled { operation, busy }
        };

        // 2. Key, before budgets: a same-key waiter holds no budget.
        let _key = match (&inner.keys, key) {
            (Some(table), Some(key)) => Some(match contract.admission() {
                Admission::Reject => match table.try_acquire(TableKey {
                    key,
                    ops: inner.key_ops,
                }) {
                    Ok(guard) => guard,
                    Err(TryKeyError::Busy(busy)) => {
                        call.completed = true;
                        let key = (inner.describe_key)(&busy.key);
                        return Err(throttled(Busy::Key { key }));
                    }
                    Err(TryKeyError::Closed) => {
                        call.completed = true;
                        return Err(stopping(Stage::Key));
                    }
                },
                Admission::Wait => {
                    let (acquired, waited) = trace::timed(table.acquire(TableKey {
                        key,
                        ops: inner.key_ops,
                    }))
                    .await;
                    match acquired {
                        Ok(guard) => {
                            trace::waited(Wait::Key, waited);
                            guard
                        }
                        Err(_closed) => {
                            call.completed = true;
                            return Err(stopping(Stage::Key));
                        }
                    }
                }
            }),
            _ => None,
        };

        // 3. Budgets, all at once or none. Every call first tries to take
        //    them at once (the uncontended path builds no waiter); only a
        //    `Wait` call queues when they are busy.
        let _permit = match rt.arbiter.try_acquire(&inner.needs) {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => {
                call.completed = true;
                return Err(stopping(Stage::Budgets));
            }
            Err(TryAcquireError::Busy(index)) => match contract.admission() {
                Admission::Reject => {
                    call.completed = true;
                    let resource = rt.resources[index].name().to_owned();
                    return Err(throttled(Busy::Resource { resource }));
                }
                Admission::Wait => match trace::timed(rt.arbiter.acquire(&inner.needs)).await {
                    (Ok(permit), waited) => {
                        trace::waited(Wait::Budgets, waited);
                        permit
                    }
                    (Err(_closed), _) => {
                        call.completed = true;
                        return Err(stopping(Stage::Budgets));
                    }
                },
            },
        };
        Counters::bump(&counters.started);

        // 4. Attempts. Key and budgets are held across retries and released
        //    (in reverse order) when this function returns or is dropped.
        let max_attempts = contract.max_attempts().max(1);
        let mut attempts = 0;
        // Another attempt only if one is left, the contract retries this
        // outcome, and the runtime is not closing (a drain waits for at most
        // the attempt already running).
        let retry_again = |attempts: u32, outcome| {
            attempts < max_attempts && contract.retries(outcome) && !rt.gate.is_closed()
        };
        loop {
            attempts += 1;
            if attempts > 1 {
                Counters::bump(&counters.retried);
                trace::retrying(attempts, max_attempts);
            }
            let deadline = contract.timeout().map(|t| Instant::now() + t);
            let ctx = Context {
                operation,
                attempt: attempts,
                max_attempts,
                deadline,
            };
            let run = AssertUnwindSafe(attempt(ctx)).catch_unwind();
            let finished = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, run).await.ok(),
                None => Some(run.await),
            };
            let outcome = match finished {
                Some(Ok(output)) => match output.into_result() {
                    Ok(value) => {
                        call.completed = true;
                        return Ok(value);
                    }
                    Err(error) => {
                        let outcome = normalize(classify(&error));
                        trace::attempt_failed(outcome, attempts, max_attempts);
                        if retry_again(attempts, outcome) {
                            continue;
                        }
                        call.completed = true;
                        return Err(Error::Failed {
                            operation,
                            outcome,
                            attempts,
                            source: error,
                        });
                    }
                },
                Some(Err(panic)) => {
                    Counters::bump(&counters.panicked);
                    trace::panicked(contract, attempts, max_attempts);
                    call.completed = true;
                    std::panic::resume_unwind(panic);
                }
                None => {
                    Counters::bump(&counters.timed_out);
                    let outcome = contract.effect().timeout_outcome();
                    trace::timed_out(contract, outcome, attempts, max_attempts);
                    outcome
                }
            };
            if retry_again(attempts, outcome) {
                continue;
            }
            call.completed = true;
            return Err(Error::TimedOut {
                operation,
                timeout: contract.timeout().unwrap_or_default(),
                attempts,
                outcome,
            });
        }
    }
}

/// One admitted call, counted out of the gate when dropped.
struct InFlight<'a> {
    runtime: &'a Runtime,
    completed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let rt = &*self.runtime.inner;
        if !self.completed {
            Counters::bump(&rt.counters.cancelled);
            trace::cancelled();
        }
        Counters::bump(&rt.counters.finished);
        rt.gate.exit();
    }
}

/// `K`'s name from the name of the `TableKey<K>` a key space was made with.
fn unwrap_type_name<K: 'static>(wrapped: &'static str) -> &'static str {
    let own = std::any::type_name::<TableKey<K>>();
    let prefix = own
        .strip_suffix('>')
        .and_then(|s| s.strip_suffix(std::any::type_name::<K>()));
    prefix
        .and_then(|p| wrapped.strip_prefix(p))
        .and_then(|s| s.strip_suffix('>'))
        .unwrap_or(wrapped)
}

/// The closest name to `wanted`, if one is close enough to be a typo.
fn closest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Option<String> {
    names
        .map(|n| (strsim::jaro_winkler(wanted, n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn a_key_space_reports_the_key_type_it_was_made_with() {
        let wrapped = std::any::type_name::<TableKey<u64>>();
        assert_eq!(unwrap_type_name::<String>(wrapped), "u64");
        assert_eq!(unwrap_type_name::<u64>("something else"), "something else");
    }

    #[test]
    fn table_keys_hash_and_compare_as_their_keys() {
        let ops = KeyOps::<String>::OPS;
        let key = |s: &str| TableKey {
            key: s.to_owned(),
            ops,
        };
        let state = std::hash::RandomState::new();
        assert!(key("acme") == key("acme"));
        assert!(key("acme") != key("zeta"));
        assert_eq!(state.hash_one(key("acme")), state.hash_one(key("acme")));
        assert_eq!((ops.clone)(&"acme".to_owned()), "acme");
    }
}
