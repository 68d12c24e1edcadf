//! [`Runtime`]: the shared budgets, key spaces, admission gate and stats.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use crate::arbiter::Arbiter;
use crate::error::ConfigError;
use crate::keys::KeyTable;
use crate::resource::Resource;

/// The execution authority operations are bound to: named budgets, key
/// spaces, the admission gate and the stats.
///
/// A `Runtime` is a cheap handle (`Clone` is one reference-count increment);
/// every clone refers to the same runtime. It is `Send + Sync`.
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

pub(crate) struct Inner {
    pub(crate) resources: Vec<Resource>,
    pub(crate) arbiter: Arbiter,
    pub(crate) gate: Gate,
    pub(crate) counters: Counters,
    key_spaces: Mutex<HashMap<String, KeySpace>>,
}

/// One registered key space: its table, type-erased, and its key type.
struct KeySpace {
    table: Arc<dyn ErasedKeyTable>,
    type_id: TypeId,
    type_name: &'static str,
}

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
        }
    }

    /// Stops admitting calls and withdraws every call waiting for a key or a
    /// budget (they return [`Error::Stopping`](crate::Error::Stopping)).
    /// Calls already running continue; see [`Runtime::shutdown`] to wait for
    /// them. Idempotent; returns at once.
    pub fn close(&self) {
        let inner = &*self.inner;
        inner.gate.close();
        inner.arbiter.close();
        let spaces = inner
            .key_spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for space in spaces.values() {
            space.table.close();
        }
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
        self.inner.gate.drained().await;
    }

    /// Whether [`close`](Runtime::close) or [`shutdown`](Runtime::shutdown) was called.
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
        let c = &inner.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let keys = inner
            .key_spaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|s| s.table.len())
            .sum();
        Stats {
            admitted: load(&c.admitted),
            rejected: load(&c.rejected),
            throttled: load(&c.throttled),
            started: load(&c.started),
            finished: load(&c.finished),
            retried: load(&c.retried),
            timed_out: load(&c.timed_out),
            cancelled: load(&c.cancelled),
            panicked: load(&c.panicked),
            in_flight: inner.gate.in_flight(),
            keys,
            resources: inner
                .resources
                .iter()
                .zip(inner.arbiter.snapshot())
                .map(|(r, b)| ResourceStats {
                    name: r.name(),
                    capacity: b.capacity,
                    in_use: b.in_use,
                    waiting: b.waiting,
                    peak_in_use: b.peak_in_use,
                })
                .collect(),
        }
    }

    /// The key table of `space`, created on first use; `Err` carries the key
    /// type the space was first bound with.
    pub(crate) fn key_table<K: Hash + Eq + Send + Sync + 'static>(
        &self,
        space: String,
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
                type_name: std::any::type_name::<K>(),
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
}

impl RuntimeBuilder {
    /// Adds a budget. Order does not matter.
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Checks the declarations and builds the runtime.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when no resource was declared, a name is empty or
    /// repeated, or a capacity is 0 (the Go reference's construction table).
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
            if self.resources[..i].iter().any(|o| o.name() == r.name()) {
                return Err(ConfigError::DuplicateResource {
                    resource: r.name().to_owned(),
                });
            }
        }
        Ok(Runtime {
            inner: Arc::new(Inner {
                arbiter: Arbiter::new(self.resources.iter().map(Resource::capacity)),
                resources: self.resources,
                gate: Gate::new(),
                counters: Counters::default(),
                key_spaces: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// What the runtime has done so far, and every budget's figures now.
///
/// Every call ends in exactly one way, so after quiescence
/// `admitted == finished` and `started <= admitted`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls that passed the admission gate (the runtime was not stopping).
    pub admitted: u64,
    /// Calls that ended with `Error::Stopping`: refused at the gate, or
    /// withdrawn by shutdown while waiting for a key or a budget.
    pub rejected: u64,
    /// Calls that ended with `Error::Throttled` (admission `Reject`).
    pub throttled: u64,
    /// Calls that got their key and budgets and began their first attempt.
    pub started: u64,
    /// Admitted calls that ended, however they ended.
    pub finished: u64,
    /// Attempts beyond the first.
    pub retried: u64,
    /// Attempts that ran past the contract's timeout.
    pub timed_out: u64,
    /// Admitted calls whose future was dropped before it completed.
    pub cancelled: u64,
    /// Attempts whose handler panicked.
    pub panicked: u64,
    /// Admitted calls not yet finished, now.
    pub in_flight: u64,
    /// Keys held or waited for across all key spaces, now (0 when idle).
    pub keys: usize,
    /// Every budget, in declaration order.
    pub resources: Vec<ResourceStats>,
}

/// One line of counters, then one line per budget:
///
/// ```text
/// admitted 9, started 8, finished 9, retried 2, throttled 1, rejected 0, timed out 0, cancelled 0, panicked 0, in flight 0, keys 0
/// worker: 0 of 4 in use, 0 waiting, peak 4
/// ```
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "admitted {}, started {}, finished {}, retried {}, throttled {}, rejected {}, \
             timed out {}, cancelled {}, panicked {}, in flight {}, keys {}",
            self.admitted,
            self.started,
            self.finished,
            self.retried,
            self.throttled,
            self.rejected,
            self.timed_out,
            self.cancelled,
            self.panicked,
            self.in_flight,
            self.keys
        )?;
        for r in &self.resources {
            write!(
                f,
                "\n{}: {} of {} in use, {} waiting, peak {}",
                r.name, r.in_use, r.capacity, r.waiting, r.peak_in_use
            )?;
        }
        Ok(())
    }
}

impl Stats {
    /// The figures of the resource named `name`.
    pub fn resource(&self, name: &str) -> Option<&ResourceStats> {
        self.resources.iter().find(|r| r.name == name)
    }
}

/// One budget's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceStats {
    /// The resource's name.
    pub name: &'static str,
    /// Units in all.
    pub capacity: u32,
    /// Units held by running calls now.
    pub in_use: u32,
    /// Calls queued for this budget now.
    pub waiting: u32,
    /// The most units ever held at once.
    pub peak_in_use: u32,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) admitted: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) throttled: AtomicU64,
    pub(crate) started: AtomicU64,
    pub(crate) finished: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) panicked: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The admission gate: one word holding `in_flight << 1 | closed`.
///
/// A call enters by adding 2 and checking the closed bit of the old value in
/// the same atomic step, so no call can slip in after `close` and escape the
/// drain: either it sees the bit, or `close`'s waiter sees its count.
pub(crate) struct Gate {
    state: AtomicU64,
    drained: Notify,
}

const CLOSED: u64 = 1;
const ONE: u64 = 2;

impl Gate {
    fn new() -> Self {
        Gate {
            state: AtomicU64::new(0),
            drained: Notify::new(),
        }
    }

    /// Counts a call in; `false` (and nothing counted) when closed.
    pub(crate) fn enter(&self) -> bool {
        let prev = self.state.fetch_add(ONE, Ordering::SeqCst);
        if prev & CLOSED != 0 {
            self.exit();
            return false;
        }
        true
    }

    /// Counts a call out, waking the drain when it was the last one.
    pub(crate) fn exit(&self) {
        let prev = self.state.fetch_sub(ONE, Ordering::SeqCst);
        if prev == ONE | CLOSED {
            self.drained.notify_waiters();
        }
    }

    fn close(&self) {
        self.state.fetch_or(CLOSED, Ordering::SeqCst);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::SeqCst) & CLOSED != 0
    }

    fn in_flight(&self) -> u64 {
        self.state.load(Ordering::SeqCst) >> 1
    }

    async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }
}
