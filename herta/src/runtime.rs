//! [`Runtime`]: the shared budgets, key spaces, admission gate and stats.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use crate::arbiter::{Arbiter, Kind};
use crate::breaker::circuit::Circuit;
use crate::breaker::declaration::Breaker;
use crate::error::ConfigError;
use crate::gate::Gate;
use crate::keys::KeyTable;
use crate::resource::Resource;
use crate::retry::budget::{Bucket, RetryBudget};
use crate::retry::random::JitterSource;
use crate::stats::{BreakerStats, Registry, ResourceStats, Stats};

mod live;

/// The execution authority operations are bound to: named budgets, key
/// spaces, the admission gate and the stats.
///
/// A `Runtime` is a cheap handle (`Clone` is one reference-count increment);
/// every clone refers to the same runtime. It is `Send + Sync`. Every bound
/// operation holds a clone, so dropping your handles neither closes the
/// runtime nor cancels calls: stop it with [`close`](Runtime::close) or
/// [`shutdown`](Runtime::shutdown). A runtime declares at least one
/// resource ([`ConfigError::NoResources`] otherwise).
///
/// ```
/// use herta::{Failure, Runtime};
///
/// herta::resources! {
///     /// Render slots.
///     pub WORKER: "worker" = 4;
/// }
///
/// #[herta::operation(effect = Idempotent, resources(WORKER = 1))]
/// async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
///     Ok(format!("rendered {job}"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = Runtime::builder().resource(WORKER).build()?;
/// let render = Render::bind(&rt)?;
/// assert_eq!(render.call("a".to_owned()).await?, "rendered a");
/// rt.shutdown().await; // stop admitting, wake waiters, drain
/// assert!(render.call("b".to_owned()).await.is_err());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

/// What every clone of a [`Runtime`] shares.
pub(crate) struct Inner {
    /// The declared budgets, in declaration order (index = arbiter index).
    pub(crate) resources: Vec<Resource>,
    /// Every budget's units and waiters.
    pub(crate) arbiter: Arbiter,
    /// Admission and drain.
    pub(crate) gate: Gate,
    /// Every bound operation's counters, bumped through [`crate::events`]:
    /// what [`Runtime::stats`] sums.
    pub(crate) operations: Registry,
    /// Key spaces by name (`operation:…` or `scope:…`).
    key_spaces: Mutex<HashMap<String, KeySpace>>,
    /// Where backoff jitter draws from.
    pub(crate) jitter: JitterSource,
    /// The runtime-wide retry budget, if one was given.
    pub(crate) retry_budget: Option<Bucket>,
    /// The circuit breakers' states, in declaration order.
    pub(crate) breakers: Vec<Arc<Circuit>>,
}

/// One registered key space: its table, type-erased, and the name of the
/// key type it was first bound with.
struct KeySpace {
    table: Arc<dyn ErasedKeyTable>,
    type_id: TypeId,
    type_name: &'static str,
}

/// A key table of any key type: what closing and [`Runtime::stats`] need.
trait ErasedKeyTable: Send + Sync {
    fn close(&self);
    fn len(&self) -> usize;
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<K: Hash + Eq + Send + Sync + 'static> ErasedKeyTable for KeyTable<K> {
    fn close(&self) {
        KeyTable::close(self)
    }
    fn len(&self) -> usize {
        KeyTable::len(self)
    }
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl Runtime {
    /// Starts declaring a runtime's resources.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            resources: Vec::new(),
            jitter_seed: None,
            retry_budget: None,
            breakers: Vec::new(),
        }
    }

    /// Stops admitting calls and withdraws every call waiting for a key or a
    /// budget (they return [`Error::Stopping`](crate::Error::Stopping)).
    /// Calls already running continue; see [`Runtime::shutdown`] to wait for
    /// them. Idempotent; returns at once.
    pub fn close(&self) {
        let inner = &*self.inner;
        // Waiters first, the gate last: closing the gate wakes the calls
        // backing off, and one that holds a key releases it as it ends;
        // were its key table still open, a waiter for that key could be
        // handed the key and start an attempt after the runtime closed.
        {
            let spaces = inner
                .key_spaces
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for space in spaces.values() {
                space.table.close();
            }
        }
        inner.arbiter.close();
        inner.gate.close();
    }

    /// [`close`](Runtime::close)s the runtime, then waits until every admitted
    /// call has finished (drain). Running attempts are never cancelled by
    /// shutdown, but no new attempt starts once the runtime is closed: a call
    /// whose attempt fails after `close` returns that failure instead of
    /// retrying, so the drain lasts at most one attempt per running call.
    /// Bound the wait with `tokio::time::timeout` if a handler may run long.
    ///
    /// Do not await `shutdown` from inside an operation's handler: the drain
    /// would wait for the very call that awaits it, forever. Call
    /// [`close`](Runtime::close) there instead; it returns at once.
    pub async fn shutdown(&self) {
        self.close();
        let operations = &self.inner.operations;
        self.inner.gate.drained(|| operations.in_flight()).await;
    }

    /// Whether [`close`](Runtime::close) or [`shutdown`](Runtime::shutdown) was called.
    ///
    /// It turns `true` as `close` ends: `close` withdraws the waiting calls
    /// first and closes the admission gate last, so a call withdrawn with
    /// [`Error::Stopping`](crate::Error::Stopping) may, for that instant,
    /// still see `false` here.
    pub fn is_closed(&self) -> bool {
        self.inner.gate.is_closed()
    }

    /// The counters and every budget's figures, read now.
    ///
    /// Counters are read one by one (relaxed), so a snapshot taken while
    /// calls run may be mid-update; after quiescence `admitted == finished`
    /// and `started <= admitted` hold exactly.
    pub fn stats(&self) -> Stats {
        let inner = &*self.inner;
        let keys = inner
            .key_spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|s| s.table.len())
            .sum();
        let resources = inner
            .resources
            .iter()
            .zip(inner.arbiter.snapshot())
            .map(|(r, b)| ResourceStats {
                name: r.name(),
                capacity: b.capacity,
                in_use: b.in_use,
                waiting: b.waiting,
                peak_in_use: b.peak_in_use,
                queue_limit: b.queue_limit,
                available: b.available,
                rate: b.rate.map(|(count, period)| crate::stats::RateStats {
                    count,
                    period,
                    granted: b.granted,
                }),
            })
            .collect();
        let mut stats = inner.operations.stats(keys, resources);
        stats.breakers = inner.breakers.iter().map(|c| breaker_stats(c)).collect();
        stats
    }

    /// The state of the breaker named `name` in this runtime, if it
    /// declares one.
    pub(crate) fn circuit(&self, name: &str) -> Option<Arc<Circuit>> {
        self.inner
            .breakers
            .iter()
            .find(|c| c.breaker.name() == name)
            .cloned()
    }

    /// The key table of `space`, created on first use and recorded as keyed
    /// by `key_type` (the name of the user's key type); `Err` carries the key
    /// type the space was first bound with.
    pub(crate) fn key_table<K: Hash + Eq + Send + Sync + 'static>(
        &self,
        space: String,
        key_type: &'static str,
    ) -> Result<Arc<KeyTable<K>>, &'static str> {
        let mut spaces = self
            .inner
            .key_spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let space = spaces.entry(space).or_insert_with(|| {
            let table = Arc::new(KeyTable::<K>::new());
            if self.inner.gate.is_closed() {
                table.close();
            }
            KeySpace {
                table,
                type_id: TypeId::of::<K>(),
                type_name: key_type,
            }
        });
        if space.type_id != TypeId::of::<K>() {
            return Err(space.type_name);
        }
        Ok(Arc::clone(&space.table)
            .as_any()
            .downcast::<KeyTable<K>>()
            .expect("type id checked above"))
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("resources", &self.inner.resources)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// Declares a [`Runtime`]'s resources; [`build`](RuntimeBuilder::build) checks them.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `.build()`"]
pub struct RuntimeBuilder {
    resources: Vec<Resource>,
    jitter_seed: Option<u64>,
    retry_budget: Option<RetryBudget>,
    breakers: Vec<Breaker>,
}

impl RuntimeBuilder {
    /// Adds a circuit breaker, which contracts name with `breaker = …`.
    /// This runtime keeps its own state for it (closed at first). Order
    /// does not matter.
    pub fn breaker(mut self, breaker: Breaker) -> Self {
        self.breakers.push(breaker);
        self
    }

    /// Adds a budget. Order does not matter.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Draws backoff jitter from one generator seeded with `seed`, so that
    /// the same calls in the same order sleep the same delays (for tests,
    /// with a paused clock). Without it each thread draws from its own
    /// unseeded generator, with no lock.
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// Limits retries runtime-wide (storm protection): see [`RetryBudget`].
    /// Without one, every retry a contract allows is made.
    pub fn retry_budget(mut self, budget: RetryBudget) -> Self {
        self.retry_budget = Some(budget);
        self
    }

    /// Checks the declarations and builds the runtime.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when no resource was declared, a name is empty or
    /// repeated, a capacity is 0 (a budget no call could ever take), a
    /// queue limit is 0, or a breaker's values are out of range
    /// ([`ConfigError::InvalidBreaker`]).
    pub fn build(self) -> Result<Runtime, ConfigError> {
        if self.resources.is_empty() {
            return Err(ConfigError::NoResources);
        }
        for (i, r) in self.resources.iter().enumerate() {
            if r.name().is_empty() {
                return Err(ConfigError::EmptyName);
            }
            if r.capacity() == 0 {
                return Err(ConfigError::ZeroCapacity {
                    resource: r.name().to_owned(),
                });
            }
            if let Some((count, period)) = r.rate_of() {
                if count == 0 {
                    return Err(ConfigError::ZeroRate {
                        resource: r.name().to_owned(),
                    });
                }
                if period.is_zero() {
                    return Err(ConfigError::ZeroPeriod {
                        resource: r.name().to_owned(),
                    });
                }
            }
            if r.burst_without_rate() {
                return Err(ConfigError::BurstWithoutRate {
                    resource: r.name().to_owned(),
                });
            }
            if r.queue_limit() == Some(0) {
                return Err(ConfigError::ZeroQueueLimit {
                    resource: r.name().to_owned(),
                });
            }
            if self.resources[..i].iter().any(|o| o.name() == r.name()) {
                return Err(ConfigError::DuplicateResource {
                    resource: r.name().to_owned(),
                });
            }
        }
        for (i, b) in self.breakers.iter().enumerate() {
            b.check()?;
            if self.breakers[..i].iter().any(|o| o.name() == b.name()) {
                return Err(ConfigError::DuplicateBreaker {
                    breaker: b.name().to_owned(),
                });
            }
        }
        #[cfg(feature = "metrics")]
        for b in &self.breakers {
            crate::metrics::breaker_registered(b.name());
        }
        let mut arbiter = Arbiter::with_kinds(self.resources.iter().map(|r| match r.rate_of() {
            None => Kind::Concurrency(r.capacity()),
            Some((count, period)) => Kind::Rate {
                count,
                period,
                burst: r.capacity(),
            },
        }));
        arbiter.limit_queues(self.resources.iter().map(Resource::queue_limit));
        #[cfg(feature = "metrics")]
        arbiter.gauges(
            self.resources
                .iter()
                .map(crate::metrics::BudgetGauges::register),
        );
        Ok(Runtime {
            inner: Arc::new(Inner {
                arbiter,
                resources: self.resources,
                gate: Gate::new(),
                operations: Registry::default(),
                key_spaces: Mutex::new(HashMap::new()),
                jitter: JitterSource::new(self.jitter_seed),
                retry_budget: self.retry_budget.as_ref().map(Bucket::new),
                breakers: self
                    .breakers
                    .into_iter()
                    .map(|b| Arc::new(Circuit::new(b)))
                    .collect(),
            }),
        })
    }
}

/// The figures of `circuit`, now.
fn breaker_stats(circuit: &Circuit) -> BreakerStats {
    let (state, counts, opened, refused, probing, open_left) = circuit.snapshot();
    BreakerStats {
        open_left: std::time::Duration::from_nanos(open_left),
        name: circuit.breaker.name(),
        state,
        window: circuit.breaker.window(),
        probing,
        failure_rate: counts.failure_rate(),
        calls: counts.calls,
        opened,
        refused,
    }
}
