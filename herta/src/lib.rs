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
//! busy) or `Stopping` (the runtime is shutting down).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod arbiter;
mod call;
mod context;
mod contract;
mod error;
mod keys;
mod operation;
mod outcome;
mod resource;
mod runtime;

#[doc(hidden)]
pub mod __private;

pub use context::Context;
pub use contract::{Contract, KeySpec, ResourceUse};
pub use error::{BindError, Busy, ConfigError, Error};
pub use herta_contract::{retry_verdict, RetryVerdict};
pub use herta_macros::{operation, resources, Classify};
pub use operation::Operation;
pub use outcome::{Admission, Classify, Effect, Failure, Outcome};
pub use resource::Resource;
pub use runtime::{ResourceStats, Runtime, RuntimeBuilder, Stats};
