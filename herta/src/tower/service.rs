//! [`ContractService`]: an inner `tower::Service` whose every request runs
//! under a contract, through the runtime's one call pipeline
//! (`Bound::call`): admission, key, budgets, then attempts (each with a
//! fresh timeout, a fresh clone of the inner service made ready, and a copy
//! of the request), classified and retried as the contract says.

use std::fmt;
use std::future::{poll_fn, Future};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use tower_service::Service;

use super::classify::{ClassifyError, ClassifyResponse, ServiceError};
use super::keying::KeyOf;
use crate::call::BreakerUse;
use crate::context::Context;
use crate::contract::{DeclaredContract, OneAttempt, Retried};
use crate::error::{Error, NoSource};
use crate::runtime::Runtime;

/// A request of type `Req` for one more attempt of a contract's call:
/// [`Retried`] clones it (so `Req: Clone`), [`OneAttempt`] never makes another.
#[diagnostic::on_unimplemented(
    message = "this contract retries, so each attempt needs its own request, but `{Req}` is not `Clone`",
    label = "requests of this service are not `Clone`",
    note = "implement `Clone` for the request (e.g. a small struct the inner service turns into an HTTP request), or remove `retry(...)` from the contract"
)]
pub trait RequestCopy<Req> {
    /// A copy of `request` for the next attempt.
    fn copy(request: &Req) -> Req;
}

impl<Req> RequestCopy<Req> for OneAttempt {
    fn copy(_: &Req) -> Req {
        unreachable!("a contract without retry makes one attempt")
    }
}

#[diagnostic::do_not_recommend]
impl<Req: Clone> RequestCopy<Req> for Retried {
    #[inline]
    fn copy(request: &Req) -> Req {
        request.clone()
    }
}

/// The service a [`ContractLayer`](super::ContractLayer) makes of an inner
/// service `S`: `Service<Req>` whenever `S` is, with `S`'s response and
/// the error `herta::Error<ServiceError<S::Error, S::Response>>`.
///
/// `S` must be `Clone` (each attempt calls its own clone, made ready
/// first, as tower's `Retry` does); with a contract that retries, `Req`
/// must be `Clone` too (each attempt sends its own copy; the last one sends
/// the original). Cloning the service is cheap: `S`'s clone and one
/// reference-count increment.
pub struct ContractService<S, C, K, R, E> {
    pub(super) inner: S,
    pub(super) runtime: Runtime,
    pub(super) shared: Arc<Shared<K, R, E>>,
    pub(super) contract: PhantomData<fn() -> C>,
}

/// What every clone of a service, and every call, shares.
pub(super) struct Shared<K, R, E> {
    pub(super) keying: K,
    pub(super) responses: R,
    pub(super) errors: E,
}

impl<S, C, K, R, E> ContractService<S, C, K, R, E> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The runtime the contract is bound to.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

impl<S: Clone, C, K, R, E> Clone for ContractService<S, C, K, R, E> {
    fn clone(&self) -> Self {
        ContractService {
            inner: self.inner.clone(),
            runtime: self.runtime.clone(),
            shared: Arc::clone(&self.shared),
            contract: PhantomData,
        }
    }
}

impl<S: fmt::Debug, C: DeclaredContract, K, R, E> fmt::Debug for ContractService<S, C, K, R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContractService")
            .field("contract", &<C as DeclaredContract>::CONTRACT.operation())
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The error of a [`ContractService`] over an inner service `S`.
pub type ContractError<S, Req> =
    Error<ServiceError<<S as Service<Req>>::Error, <S as Service<Req>>::Response>>;

/// The future of [`ContractService`]'s `call`: the whole call under the
/// contract, boxed so that it is `Send + 'static`.
pub type ContractFuture<S, Req> = Pin<
    Box<dyn Future<Output = Result<<S as Service<Req>>::Response, ContractError<S, Req>>> + Send>,
>;

impl<S, Req, C, K, R, E> Service<Req> for ContractService<S, C, K, R, E>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    Req: Send + 'static,
    C: DeclaredContract,
    C::Requests: RequestCopy<Req>,
    C::Breaker: BreakerUse + Default,
    K: KeyOf<Req> + Send + Sync + 'static,
    R: ClassifyResponse<S::Response> + Send + Sync + 'static,
    E: ClassifyError<S::Error> + Send + Sync + 'static,
{
    type Response = S::Response;
    type Error = ContractError<S, Req>;
    type Future = ContractFuture<S, Req>;

    /// `Ready(Ok(()))` while the runtime admits calls;
    /// `Ready(Err(Error::Stopping))` once it is closed. Never `Pending`:
    /// the contract's admission decides inside `call`, and the inner
    /// service's readiness is awaited in each attempt.
    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        if self.runtime.is_closed() {
            let operation = <C as DeclaredContract>::CONTRACT.operation();
            return Poll::Ready(Err(Error::Stopping { operation }));
        }
        Poll::Ready(Ok(()))
    }

    /// Runs `request` under the contract (see [the module docs](super)).
    fn call(&mut self, request: Req) -> Self::Future {
        let inner = self.inner.clone();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let key = shared.keying.key(&request);
            let max_attempts = <C as DeclaredContract>::CONTRACT.max_attempts();
            let mut request = Some(request);
            let each = Arc::clone(&shared);
            let handler = move |ctx: Context| {
                let request = match request.take() {
                    Some(last) if ctx.attempt() >= max_attempts => last,
                    Some(original) => {
                        let copy = C::Requests::copy(&original);
                        request = Some(original);
                        copy
                    }
                    None => unreachable!("the call pipeline makes at most max_attempts attempts"),
                };
                attempt(inner.clone(), request, Arc::clone(&each))
            };
            shared
                .keying
                .bound()
                .call(
                    key,
                    ServiceError::outcome_of,
                    ServiceError::retry_after_of,
                    NoSource,
                    C::Breaker::default(),
                    handler,
                )
                .await
        })
    }
}

/// One attempt: the inner service made ready, called, and its error or
/// response classified.
async fn attempt<S, Req, K, R, E>(
    mut service: S,
    request: Req,
    shared: Arc<Shared<K, R, E>>,
) -> Result<S::Response, ServiceError<S::Error, S::Response>>
where
    S: Service<Req>,
    R: ClassifyResponse<S::Response>,
    E: ClassifyError<S::Error>,
{
    let inner_error = |error: S::Error| {
        let (outcome, retry_after) = shared.errors.classify(&error);
        ServiceError::Inner {
            error,
            outcome,
            retry_after,
        }
    };
    poll_fn(|cx| service.poll_ready(cx))
        .await
        .map_err(inner_error)?;
    let response = service.call(request).await.map_err(inner_error)?;
    match shared.responses.failure(&response) {
        None => Ok(response),
        Some((outcome, retry_after)) => Err(ServiceError::Response {
            response,
            outcome,
            retry_after,
        }),
    }
}
