//! # herta
//!
//! An in-process **execution-contract runtime** for async Rust. Operations stay
//! plain `async fn`s; an attribute declares each one's contract — its side
//! effect, the shared budgets it consumes, whether it waits or fails fast when
//! busy, which failures are safe to retry, a per-attempt timeout, and a key
//! that serializes calls — and the runtime enforces it. Unsafe contracts
//! (retrying an `Uncertain` outcome of a `NonIdempotent` operation, say) are
//! compile errors.
//!
//! ```
//! use herta::{Failure, Runtime};
//!
//! herta::resources! {
//!     /// Render slots shared by every render call.
//!     pub WORKER: "worker" = 4;
//! }
//!
//! /// Idempotent: safe to retry Transient failures; waits for capacity.
//! #[herta::operation(effect = Idempotent, resources(WORKER = 1), admission = Wait,
//!                    retry(on = Transient, max = 3), timeout = "2s")]
//! async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
//!     Ok(format!("<h1>{job}</h1>"))
//! }
//!
//! /// Non-idempotent: fails fast when busy, retries nothing.
//! #[herta::operation(effect = NonIdempotent, resources("worker" = 1), admission = Reject)]
//! async fn charge(customer: String) -> Result<u64, Failure<std::io::Error>> {
//!     Ok(42)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let rt = Runtime::builder().resource(WORKER).build()?;
//!     let render = Render::bind(&rt)?; // checks the contract against this runtime
//!     let charge = Charge::bind(&rt)?;
//!
//!     assert_eq!(render.call("job-42".to_owned()).await?, "<h1>job-42</h1>");
//!     assert_eq!(charge.call("ada".to_owned()).await?, 42);
//!
//!     let stats = rt.stats();
//!     assert_eq!((stats.admitted, stats.finished), (2, 2));
//!     rt.shutdown().await; // stop admitting, wake waiters, drain
//!     Ok(())
//! }
//! ```
//!
//! ## One call, in order
//!
//! admission gate → key (`serialize_by`) → budgets (all at once) → attempts,
//! each with a fresh timeout → classify the error ([`Classify`]; unclassified
//! means [`Outcome::Permanent`]) → retry only if the outcome is listed in
//! `retry(on = …)` **and** the effect × outcome table allows it → release in
//! reverse. Dropping the call future at any point releases everything; a
//! handler panic releases everything and propagates.
//!
//! ## What a call can return
//!
//! `Ok(value)`, or an [`Error`]: the handler's error (`Failed`), a timeout
//! (`TimedOut`: `Transient` for Pure/Idempotent operations, `Uncertain` for
//! NonIdempotent ones), `Throttled` (admission `Reject` found a key or budget
//! busy, a `Wait` call's `max_wait` ran out, or a budget's queue was full),
//! `DeadlineExceeded` (the call's `deadline` or a [`deadline`](crate::deadline())
//! scope passed, while it waited or during an attempt) or `Stopping` (the
//! runtime is shutting down).
//!
//! ## What does not compile
//!
//! [`contract_rules`] lists every rule a contract must follow: what it
//! forbids, why, the error rustc shows and the fix. The keys of a contract
//! and what the macro generates are on [`operation`].
//!
//! ## Guides
//!
//! [`guide`] carries the design documents (`herta/docs/` in the repository, packaged with the crate), with
//! every example compiled: [concepts](guide::concepts),
//! [execution model](guide::execution_model),
//! [failure semantics](guide::failure_semantics),
//! [resource arbitration](guide::resource_arbitration),
//! [architecture](guide::architecture),
//! [what herta is not](guide::what_herta_is_not),
//! [operations that own state](guide::state) and
//! [observability](guide::observability) (stats, metrics, one log line per call).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod arbiter;
mod breaker;
mod call;
mod clock;
mod context;
mod contract;
#[cfg(feature = "dashboard")]
#[cfg_attr(docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
mod deadline;
mod error;
mod events;
mod gate;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod keys;
mod kinds;
mod loom;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod operation;
mod outcome;
mod own_lines;
mod resource;
mod retry;
mod runtime;
mod stats;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
pub mod trace;
mod waiters;

#[doc(hidden)]
pub mod __private;

#[doc = include_str!("../docs/contract-rules.md")]
pub mod contract_rules {}

/// The design documents, with every example compiled as a doc test.
pub mod guide {
    #[doc = include_str!("../docs/concepts.md")]
    pub mod concepts {}
    #[doc = include_str!("../docs/execution-model.md")]
    pub mod execution_model {}
    #[doc = include_str!("../docs/failure-semantics.md")]
    pub mod failure_semantics {}
    #[doc = include_str!("../docs/resource-arbitration.md")]
    pub mod resource_arbitration {}
    #[doc = include_str!("../docs/architecture.md")]
    pub mod architecture {}
    #[doc = include_str!("../docs/what-herta-is-not.md")]
    pub mod what_herta_is_not {}
    #[doc = include_str!("../docs/state.md")]
    pub mod state {}
    #[doc = include_str!("../docs/observability.md")]
    pub mod observability {}
    #[doc = include_str!("../docs/fleet.md")]
    pub mod fleet {}
    #[doc = include_str!("../docs/limits.md")]
    pub mod limits {}
    #[doc = include_str!("../docs/breakers.md")]
    pub mod breakers {}
}

pub use breaker::declaration::{Breaker, BreakerWindow, BUCKETS, MAX_WINDOW_CALLS, MIN_BUCKET};
pub use breaker::report::BreakerState;
pub use context::Context;
pub use contract::{Contract, DeclaredContract, KeySpec, ResourceUse};
pub use deadline::{current_deadline, deadline};
pub use error::{BindError, Busy, ConfigError, Error, ResizeError, Throttle};
pub use herta_contract::{retry_verdict, RetryVerdict};
/// Declares the execution contract of an `async fn` and generates its
/// wrapper type.
///
/// The function stays as written. Next to it comes a wrapper type
/// (`replace_catalogue` → `ReplaceCatalogue`) whose `bind` checks the
/// contract against a [`Runtime`] and whose `call` runs the function under
/// it. Every rule a contract must follow, with its error and its fix, is on
/// the [`contract_rules`] page.
///
/// ```
/// use herta::{Context, Runtime};
///
/// herta::resources! {
///     /// Connections to the primary database.
///     pub DB_WRITE: "db-write" = 4;
/// }
///
/// #[derive(Debug, Clone)]
/// pub struct Row {
///     pub sku: String,
/// }
///
/// #[derive(Debug, herta::Classify)]
/// pub enum DbError {
///     #[outcome(Transient)]
///     Busy,
///     #[outcome(Uncertain)]
///     LostReply,
///     Corrupt(String), // no `#[outcome]`: Permanent, never retried
/// }
///
/// /// Replaces one brand's rows.
/// #[herta::operation(
///     effect = Idempotent,                       // required: Pure | Idempotent | NonIdempotent
///     resources("worker" = 1, DB_WRITE = 3),     // budgets one call holds, by name or constant
///     admission = Wait,                          // Wait (default) | Reject
///     retry(on = [Transient, Uncertain], max = 3),
///     timeout = "2s",                            // per attempt: "250ms", "2s", "1m", "1h"
///     serialize_by(brand, scope = "catalogue"),  // or `serialize_by = brand`
/// )]
/// pub async fn replace_catalogue(
///     ctx: Context, // optional, first: attempt number, operation name, deadline
///     brand: String,
///     rows: Vec<Row>,
/// ) -> Result<u64, DbError> {
///     if ctx.attempt() == 1 {
///         return Err(DbError::Busy); // Transient: retried, with the key and budgets held
///     }
///     Ok(rows.len() as u64)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::builder()
///     .resource(herta::Resource::new("worker", 8))
///     .resource(DB_WRITE)
///     .build()?;
/// // `bind` checks what the compiler could not: "worker" exists and has room.
/// let op = ReplaceCatalogue::bind(&runtime)?;
/// assert_eq!(ReplaceCatalogue::NAME, "replace_catalogue");
///
/// let rows = vec![Row { sku: "a-1".into() }, Row { sku: "a-2".into() }];
/// let replaced = op.call("acme".to_owned(), rows).await.expect("the second attempt succeeds");
/// assert_eq!(replaced, 2);
/// assert_eq!(runtime.stats().retried, 1);
/// # Ok(())
/// # }
/// ```
///
/// The wrapper of an operation with only owned parameters implements
/// [`Operation`], for generic code:
///
/// ```
/// use herta::{Failure, Operation, Runtime};
///
/// /// Charges a customer: fails fast when busy, never retried.
/// #[herta::operation(effect = NonIdempotent, resources("payments" = 1), admission = Reject)]
/// async fn charge(customer: u64, cents: u64) -> Result<u64, Failure<std::io::Error>> {
///     Ok(customer * 1_000 + cents)
/// }
///
/// async fn run<O: Operation>(op: &O, args: O::Args) -> Result<O::Output, herta::Error<O::Error>> {
///     op.call_with(args).await
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = Runtime::builder().resource(herta::Resource::new("payments", 1)).build()?;
/// let charge = Charge::bind(&runtime)?;
/// assert_eq!(run(&charge, (7, 250)).await?, 7_250);
/// # Ok(())
/// # }
/// ```
#[doc(inline)]
pub use herta_macros::operation;

/// Declares named budgets as [`Resource`] constants.
///
/// ```
/// const POOL_SIZE: u32 = 3;
///
/// herta::resources! {
///     /// Render slots shared by every render call.
///     pub WORKER: "worker" = 4;
///     /// Connections to the primary database.
///     pub(crate) DB_WRITE: "db-write" = POOL_SIZE + 1;
/// }
/// // The same as:
/// // pub const WORKER: herta::Resource = herta::Resource::new("worker", 4);
/// // pub(crate) const DB_WRITE: herta::Resource = herta::Resource::new("db-write", POOL_SIZE + 1);
///
/// assert_eq!((WORKER.name(), WORKER.capacity()), ("worker", 4));
/// assert_eq!(DB_WRITE.capacity(), 4);
/// let runtime = herta::Runtime::builder()
///     .resource(WORKER)
///     .resource(DB_WRITE)
///     .build()
///     .unwrap();
/// # let _ = runtime;
/// ```
///
/// Its compile errors are on the [`contract_rules`] page.
#[doc(inline)]
pub use herta_macros::resources;

/// Declares circuit breakers: each entry is a [`Breaker`] constant.
///
/// ```
/// herta::breakers! {
///     /// The payments provider.
///     pub PAYMENTS: "payments" = breaker(failure_rate = 50, min_calls = 10,
///                                        window = "10s", open_for = "30s", probes = 2);
///     /// The search backend: slow answers count too.
///     pub SEARCH: "search" = breaker(slow_call = "2s", slow_rate = 80);
///     /// The last 100 attempts, whenever they ended (a count window).
///     pub LEDGER: "ledger" = breaker(window = 100, min_calls = 20);
/// }
/// // The same as:
/// // pub const PAYMENTS: herta::Breaker = herta::Breaker::new("payments")
/// //     .with_failure_rate(50).with_min_calls(10)
/// //     .with_window(Duration::from_secs(10)).with_open_for(Duration::from_secs(30))
/// //     .with_probes(2);
///
/// #[herta::operation(effect = NonIdempotent, resources("worker" = 1), breaker = PAYMENTS)]
/// async fn charge(customer: String) -> Result<u64, herta::Failure<std::io::Error>> {
///     Ok(42)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = herta::Runtime::builder()
///     .resource(herta::Resource::new("worker", 4))
///     .breaker(PAYMENTS)
///     .breaker(SEARCH)
///     .breaker(LEDGER)
///     .build()?;
/// let charge = Charge::bind(&rt)?;
/// assert_eq!(charge.call("ada".to_owned()).await?, 42);
/// assert_eq!(rt.stats().breaker("payments").unwrap().calls, 1);
/// assert_eq!(LEDGER.window(), herta::BreakerWindow::Count(100));
/// # Ok(()) }
/// ```
///
/// Its compile errors are on the [`contract_rules`] page.
#[doc(inline)]
pub use herta_macros::breakers;

/// Declares an execution contract without a handler, on a unit struct.
///
/// The keys and compile-time rules are those of [`operation`] (minus
/// `wrapper`: the struct is the type); the struct gets `NAME` and
/// `CONTRACT` and implements [`DeclaredContract`]. It is what
/// [`herta::tower::ContractLayer`](crate::tower) (feature `tower`) runs a
/// `tower::Service`'s requests under. With no parameters to name,
/// `serialize_by = customer` (or `serialize_by(customer, scope = "…",
/// show_key = true)`) *names* the key — in errors and traces, as an
/// operation's key parameter is named — and the layer's key function
/// (`ContractLayer::bind_keyed`) computes it from each request. The contract's
/// name is the struct's, unless `name = "…"`. The rules that differ are on
/// the [`contract_rules`] page ("Contracts without a handler").
///
/// ```
/// use herta::{DeclaredContract, Effect};
///
/// /// Calls the payments provider: one attempt, at most 4 at once, one per customer.
/// #[herta::contract(effect = NonIdempotent, resources("payments" = 1),
///                   admission = Reject, serialize_by = customer, timeout = "5s")]
/// pub struct ChargeCard;
///
/// assert_eq!(ChargeCard::NAME, "ChargeCard");
/// assert_eq!(ChargeCard::CONTRACT.effect(), Effect::NonIdempotent);
/// assert_eq!(ChargeCard::CONTRACT.serialize_by().unwrap().parameter(), "customer");
/// ```
#[doc(inline)]
pub use herta_macros::contract;
/// Derives [`Classify`](trait@Classify) from `#[outcome(...)]` attributes.
///
/// ```
/// use herta::{Classify, Outcome};
///
/// #[derive(Debug, Classify)]
/// enum DbError {
///     #[outcome(Transient)]
///     Busy,
///     #[outcome(Uncertain)]
///     LostReply { sent: u64 },
///     Corrupt(String), // no attribute: Permanent, never retried
/// }
///
/// #[derive(Debug, Classify)]
/// #[outcome(Transient)] // on the type: the outcome of every variant without one
/// struct ConnectionReset;
///
/// assert_eq!(DbError::Busy.outcome(), Outcome::Transient);
/// assert_eq!(DbError::LostReply { sent: 1 }.outcome(), Outcome::Uncertain);
/// assert_eq!(DbError::Corrupt("bad row".into()).outcome(), Outcome::Permanent);
/// assert_eq!(ConnectionReset.outcome(), Outcome::Transient);
/// ```
///
/// Its compile errors are on the [`contract_rules`] page (rule 12).
#[doc(inline)]
pub use herta_macros::Classify;
pub use operation::Operation;
pub use outcome::{Admission, Classify, Effect, Failure, Outcome, ResultExt};
pub use resource::Resource;
pub use retry::{Backoff, Jitter, RetryBudget};
pub use runtime::{Runtime, RuntimeBuilder};
pub use stats::{BreakerStats, OperationStats, RateStats, ResourceStats, Stats};
