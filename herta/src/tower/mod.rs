//! herta behind tower: the `tower` cargo feature.
//!
//! Two adapters, both running every request through the runtime's one call
//! pipeline (admission, key, budgets, attempts):
//!
//! - [`OperationService<O>`]: an operation of yours (`#[herta::operation]`
//!   on an `async fn`) as a `tower::Service` over its argument tuple;
//! - [`ContractLayer<C>`]: a contract without a handler
//!   (`#[herta::contract]` on a unit struct) as a `tower_layer::Layer`
//!   that wraps **any** `tower::Service` — an HTTP client, a gRPC channel —
//!   so that each request runs under the contract.
//!
//! ## `OperationService`
//!
//! [`OperationService<O>`] binds an operation `O` (any type
//! `#[herta::operation]` generated that implements [`Operation`](crate::Operation)) to a
//! runtime and implements `Service<O::Args>`: the request is the tuple of the call's
//! arguments (`(String,)` for `render(job: String)`), the response is the
//! handler's success value `O::Output`, and the error is
//! [`herta::Error<O::Error>`](crate::Error), exactly what
//! [`Operation::call_with`](crate::Operation::call_with) returns.
//!
//! ## How admission maps onto `poll_ready`
//!
//! | the operation | `poll_ready` | `call` |
//! |---|---|---|
//! | `admission = Wait` | always `Ready(Ok(()))` while the runtime is open | queues **inside the call**, holding nothing while it waits (key, then all budgets), then runs under the contract |
//! | `admission = Reject` | always `Ready(Ok(()))` while the runtime is open | never queues: a busy key or a budget without room fails the call at once with [`Error::Throttled`](crate::Error::Throttled) — like tower's `LoadShed`, which turns "not ready" into an immediate error |
//! | runtime closed ([`Runtime::close`](crate::Runtime::close) / [`shutdown`](crate::Runtime::shutdown)) | `Ready(Err(`[`Error::Stopping`](crate::Error::Stopping)`))`: the service will never be ready again | [`Error::Stopping`](crate::Error::Stopping) (a call that skipped `poll_ready`, or raced the close) |
//!
//! Why readiness does not reserve capacity, as tower's `ConcurrencyLimit`
//! does: a herta call takes its key **before** its budgets (a same-key
//! waiter holds no budget), and the key is in the request, which
//! `poll_ready` does not see; budgets are also shared with every other
//! operation on the runtime, so a reservation made in `poll_ready` would hold
//! units that calls of other operations are waiting for. So `poll_ready`
//! answers only the question it can answer honestly — "is this runtime still
//! admitting calls?" — and the contract's admission decides the rest inside
//! `call`: a `Wait` call waits holding nothing, a `Reject` call sheds load.
//! Put a `tower::limit::ConcurrencyLimit` or a `Buffer` in front if you need
//! backpressure at the service boundary too.
//!
//! The error of a `poll_ready` refusal is not counted in
//! [`Stats`](crate::Stats) (no call was made); a `call` after a close is
//! counted in `refused_stopping`, as with [`Operation::call_with`](crate::Operation::call_with).
//!
//! An operation with `#[state]` does not implement
//! [`Operation`](crate::Operation) (its `bind_with` takes the state): serve
//! it with `tower::service_fn` around a clone of the bound wrapper and its
//! `call` (see [operations that own state](crate::guide::state)).
//!
//! Each call clones the operation (one reference-count increment) and boxes
//! its future (one allocation), so the future is `Send + 'static` as tower
//! middleware and hyper expect. Dropping the future cancels the call and
//! releases everything it held or waited for.
//!
//! ```
//! use herta::tower::OperationService;
//! use herta::{Failure, Resource, Runtime};
//! use tower_service::Service;
//!
//! /// Renders a job; waits for a render slot.
//! #[herta::operation(effect = Idempotent, resources("render" = 1), retry(on = Transient, max = 3))]
//! async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
//!     Ok(format!("<h1>{job}</h1>"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::builder().resource(Resource::new("render", 4)).build()?;
//! let mut svc = OperationService::<Render>::bind(&rt)?;
//!
//! std::future::poll_fn(|cx| svc.poll_ready(cx)).await?; // or `ServiceExt::ready`
//! assert_eq!(svc.call(("job-42".to_owned(),)).await?, "<h1>job-42</h1>");
//!
//! rt.close();
//! let refused = std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap_err();
//! assert!(matches!(refused, herta::Error::Stopping { .. }));
//! # Ok(())
//! # }
//! ```

//! ## `ContractLayer`
//!
//! [`ContractLayer::<C>::bind(&rt)`](ContractLayer::bind) (or
//! [`bind_keyed`](ContractLayer::bind_keyed), for a contract with
//! `serialize_by`, with the function that computes each request's key)
//! checks `C` against the runtime as an operation's `bind` does. The
//! service it makes of an inner service `S` is a `Service<Req>` with `S`'s
//! response and the error
//! `herta::Error<`[`ServiceError`]`<S::Error, S::Response>>`:
//!
//! | step of a call | what the layer does |
//! |---|---|
//! | `poll_ready` | as for `OperationService` (table above): `Ready(Ok)` while the runtime is open, `Ready(Err(Stopping))` once closed; never reserves capacity |
//! | admission, key, budgets | the contract's, inside `call`: a `Wait` call waits holding nothing, a `Reject` call fails with [`Error::Throttled`](crate::Error::Throttled); the key comes from the key function |
//! | each attempt | a clone of `S`, awaited ready (`S::poll_ready`) and called with a copy of the request (the last attempt gets the original), all under the attempt's fresh `timeout`, holding the key and budgets |
//! | an error of `S` | classified by its [`Classify`](crate::Classify) (outcome and retry hint), or by [`classify_error`](ContractLayer::classify_error) |
//! | a response of `S` | a success, unless [`classify_response`](ContractLayer::classify_response) calls it a failure (429 → `Throttled`, 503 → `Transient`), with the hint of [`response_retry_after`](ContractLayer::response_retry_after); by default ([`ByStatus`], feature `reqwest`), a `reqwest::Response` is classified by its status and `Retry-After` (`herta::http`) |
//! | retries | the contract's: only listed outcomes the effect allows, up to `max` attempts, with its `backoff` (budgets given back while sleeping) and the runtime's retry budget — the same code as an operation's |
//!
//! A call that ends on a failure returns [`Error::Failed`](crate::Error::Failed)
//! with the last attempt's [`ServiceError`] (the inner error, or the failed
//! response itself, so a 503 can still be read); a timed-out attempt is
//! [`Error::TimedOut`](crate::Error::TimedOut), as for operations. Stats and
//! traces name the contract (its struct's name, or `name = "..."`).
//!
//! A retrying contract needs `Req: Clone` (a compile error says so
//! otherwise): an `http::Request` is not, so put the layer in front of a
//! service that takes a small `Clone` request of yours and builds the HTTP
//! request in each attempt, as below. Dropping the call future cancels the
//! call and releases everything it held or waited for.
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use herta::tower::ContractLayer;
//! use herta::{Outcome, Resource, Runtime};
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! /// A call to the pricing upstream: retried when it answers 503.
//! #[herta::contract(effect = Idempotent, resources("upstream" = 1),
//!                   retry(on = Transient, max = 3), timeout = "2s")]
//! struct CallUpstream;
//!
//! /// The inner service: answers 503 twice, then 200 (an HTTP client, in real code).
//! #[derive(Clone)]
//! struct Upstream(Arc<AtomicU32>);
//!
//! impl Service<String> for Upstream {
//!     type Response = u16;
//!     type Error = Infallible;
//!     type Future = std::future::Ready<Result<u16, Infallible>>;
//!     fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Infallible>> {
//!         std::task::Poll::Ready(Ok(()))
//!     }
//!     fn call(&mut self, _path: String) -> Self::Future {
//!         let n = self.0.fetch_add(1, Ordering::SeqCst);
//!         std::future::ready(Ok(if n < 2 { 503 } else { 200 }))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::builder().resource(Resource::new("upstream", 8)).build()?;
//! let layer = ContractLayer::<CallUpstream>::bind(&rt)?
//!     .classify_error(|e: &Infallible| match *e {})
//!     .classify_response(|status: &u16| match status {
//!         429 => Some(Outcome::Throttled),
//!         503 => Some(Outcome::Transient),
//!         _ => None,
//!     });
//! let mut svc = layer.layer(Upstream(Arc::new(AtomicU32::new(0))));
//!
//! std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
//! assert_eq!(svc.call("/price".to_owned()).await?, 200); // third attempt
//! assert_eq!(rt.stats().retried, 2);
//! # Ok(())
//! # }
//! ```

mod classify;
pub(crate) mod keying;
mod layer;
mod operation;
pub(crate) mod service;

pub use classify::{
    ByClassify, ByStatus, ClassifyError, ClassifyResponse, ErrorFn, HintOf, NoHint, ResponseFn,
    ServiceError,
};
pub use keying::{KeyOf, KeyedBy, Unkeyed};
pub use layer::ContractLayer;
pub use operation::{OperationFuture, OperationService};
pub use service::{ContractError, ContractFuture, ContractService};
