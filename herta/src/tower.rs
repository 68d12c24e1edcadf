//! Any bound operation as a [`tower::Service`](tower_service::Service): the
//! `tower` cargo feature.
//!
//! [`OperationService<O>`] binds an operation `O` (any type
//! `#[herta::operation]` generated that implements [`Operation`]) to a
//! runtime and implements `Service<O::Args>`: the request is the tuple of the call's
//! arguments (`(String,)` for `render(job: String)`), the response is the
//! handler's success value `O::Output`, and the error is
//! [`herta::Error<O::Error>`](Error), exactly what
//! [`Operation::call_with`] returns.
//!
//! ## How admission maps onto `poll_ready`
//!
//! | the operation | `poll_ready` | `call` |
//! |---|---|---|
//! | `admission = Wait` | always `Ready(Ok(()))` while the runtime is open | queues **inside the call**, holding nothing while it waits (key, then all budgets), then runs under the contract |
//! | `admission = Reject` | always `Ready(Ok(()))` while the runtime is open | never queues: a busy key or a budget without room fails the call at once with [`Error::Throttled`] — like tower's `LoadShed`, which turns "not ready" into an immediate error |
//! | runtime closed ([`Runtime::close`](crate::Runtime::close) / [`shutdown`](crate::Runtime::shutdown)) | `Ready(Err(`[`Error::Stopping`]`))`: the service will never be ready again | [`Error::Stopping`] (a call that skipped `poll_ready`, or raced the close) |
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
//! counted in `rejected`, as with [`Operation::call_with`].
//!
//! An operation with `#[state]` does not implement [`Operation`] (its
//! `bind_with` takes the state): serve it with `tower::service_fn` around
//! a clone of the bound wrapper and its `call` (see
//! [operations that own state](crate::guide::state)).
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

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::{BindError, Error};
use crate::operation::Operation;
use crate::runtime::Runtime;

/// A bound operation as a `tower::Service<O::Args>`.
///
/// Made with [`OperationService::bind`], which binds `O` to a runtime and
/// keeps a handle on that runtime for `poll_ready`. Cheap to clone (two
/// reference-count increments); `Send + Sync`. See [the module docs](self)
/// for how `poll_ready` and `call` map herta's admission.
pub struct OperationService<O> {
    op: O,
    runtime: Runtime,
}

impl<O: Operation> OperationService<O> {
    /// Binds `O` to `runtime` (the checks of [`Operation::bind`]) and wraps it.
    ///
    /// # Errors
    ///
    /// The [`BindError`] of [`Operation::bind`]: a resource the contract
    /// names is not declared by `runtime` or is too small for one call, or a
    /// shared key scope is keyed by another type.
    pub fn bind(runtime: &Runtime) -> Result<Self, BindError> {
        Ok(OperationService {
            op: O::bind(runtime)?,
            runtime: runtime.clone(),
        })
    }

    /// The wrapped operation.
    pub fn get_ref(&self) -> &O {
        &self.op
    }

    /// The runtime the operation is bound to.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Unwraps the operation.
    pub fn into_inner(self) -> O {
        self.op
    }
}

impl<O: Clone> Clone for OperationService<O> {
    fn clone(&self) -> Self {
        OperationService {
            op: self.op.clone(),
            runtime: self.runtime.clone(),
        }
    }
}

impl<O: Operation> fmt::Debug for OperationService<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperationService")
            .field("operation", &O::NAME)
            .field("admission", &O::CONTRACT.admission())
            .field("runtime", &self.runtime)
            .finish()
    }
}

/// The future of [`OperationService`]'s
/// [`Service::call`](tower_service::Service::call): the call, boxed so that it owns
/// its operation (`Send + 'static`).
pub type OperationFuture<O> = Pin<
    Box<
        dyn Future<Output = Result<<O as Operation>::Output, Error<<O as Operation>::Error>>>
            + Send
            + 'static,
    >,
>;

impl<O> tower_service::Service<O::Args> for OperationService<O>
where
    O: Operation,
    O::Args: 'static,
    O::Output: 'static,
    O::Error: 'static,
{
    type Response = O::Output;
    type Error = Error<O::Error>;
    type Future = OperationFuture<O>;

    /// `Ready(Ok(()))` while the runtime admits calls, for `Wait` and
    /// `Reject` operations alike; `Ready(Err(Error::Stopping))` once it is
    /// closed. Never `Pending`.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.runtime.is_closed() {
            return Poll::Ready(Err(Error::Stopping { operation: O::NAME }));
        }
        Poll::Ready(Ok(()))
    }

    /// Calls the operation with `args` under its contract (see
    /// [`Operation::call_with`] for the errors).
    fn call(&mut self, args: O::Args) -> Self::Future {
        let op = self.op.clone();
        Box::pin(async move { op.call_with(args).await })
    }
}
