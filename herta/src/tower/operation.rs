//! [`OperationService`]: a bound operation as a `tower::Service`.

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
/// reference-count increments); `Send + Sync`. See [the module docs](super)
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
    /// names is not declared by `runtime`, is named twice or is too small
    /// for one call, a shared key scope is keyed by another type, or the
    /// runtime is closed.
    ///
    /// # Panics
    ///
    /// As [`Operation::bind`](crate::Operation::bind): if this binding would
    /// be the 65 537th distinct set of resources bound to `runtime`.
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
