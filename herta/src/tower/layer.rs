//! [`ContractLayer`]: a `#[herta::contract]` bound to a runtime, as a
//! `tower_layer::Layer`, and the builder methods that say how requests are
//! keyed and how failures are classified.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use super::classify::{ByClassify, ByStatus, ErrorFn, NoHint, ResponseFn};
use super::keying::{KeyDeclared, KeyedBy, NoKeyDeclared, Unkeyed};
use super::service::{ContractService, Shared};
use crate::call::Bound;
use crate::contract::DeclaredContract;
use crate::error::BindError;
use crate::keys::{describe, NoKey};
use crate::runtime::Runtime;

/// A contract `C` (a `#[herta::contract]` struct) bound to a runtime, as a
/// [`tower_layer::Layer`]: the services it makes run every request under
/// `C` (see [the module docs](super) for what that means for `poll_ready`,
/// `call` and the errors).
///
/// Made with [`bind`](ContractLayer::bind) (a contract without
/// `serialize_by`) or [`bind_keyed`](ContractLayer::bind_keyed) (with one);
/// then, optionally, [`classify_error`](ContractLayer::classify_error),
/// [`classify_response`](ContractLayer::classify_response) and
/// [`response_retry_after`](ContractLayer::response_retry_after). The type
/// parameters after `C` record those choices: `K` how requests are keyed
/// ([`Unkeyed`] or [`KeyedBy`]), `R` how responses are classified, `E` how
/// the inner service's errors are. Cloning is cheap when the functions
/// given are.
pub struct ContractLayer<C, K = Unkeyed, R = ByStatus, E = ByClassify> {
    pub(super) runtime: Runtime,
    pub(super) keying: K,
    pub(super) responses: R,
    pub(super) errors: E,
    pub(super) contract: PhantomData<fn() -> C>,
}

impl<C: DeclaredContract> ContractLayer<C> {
    /// Binds the contract `C`, which declares no `serialize_by`, to
    /// `runtime` (the checks of an operation's `bind`).
    ///
    /// # Errors
    ///
    /// [`BindError`]: a resource `C` names is not declared by `runtime` or
    /// is too small for one call, or `runtime` is closed.
    ///
    /// # Panics
    ///
    /// As [`Operation::bind`](crate::Operation::bind): if this binding would
    /// be the 65 537th distinct set of resources bound to `runtime`.
    pub fn bind(runtime: &Runtime) -> Result<Self, BindError>
    where
        C::Keying: NoKeyDeclared,
    {
        let bound = Bound::bind(
            runtime,
            &<C as DeclaredContract>::CONTRACT,
            describe::<NoKey>,
        )?;
        Ok(Self::with_keying(runtime, Unkeyed { bound }))
    }

    /// Binds the contract `C`, which declares `serialize_by`, to `runtime`,
    /// with `key` computing each request's key: requests with equal keys
    /// run one at a time (annotate the closure's argument, `|req: &Req|`,
    /// so that the request type is known).
    ///
    /// # Errors
    ///
    /// Those of [`bind`](ContractLayer::bind), and
    /// [`BindError::ScopeKeyMismatch`] when `C`'s key `scope` is already
    /// keyed by another type.
    ///
    /// # Panics
    ///
    /// As [`Operation::bind`](crate::Operation::bind): if this binding would
    /// be the 65 537th distinct set of resources bound to `runtime`.
    pub fn bind_keyed<Req, K, F>(
        runtime: &Runtime,
        key: F,
    ) -> Result<ContractLayer<C, KeyedBy<F, K>>, BindError>
    where
        C::Keying: KeyDeclared,
        F: Fn(&Req) -> K,
        K: Clone + Hash + Eq + Send + Sync + fmt::Debug + 'static,
    {
        let bound = Bound::bind(runtime, &<C as DeclaredContract>::CONTRACT, describe::<K>)?;
        Ok(ContractLayer::with_keying(runtime, KeyedBy { bound, key }))
    }
}

impl<C, K> ContractLayer<C, K> {
    fn with_keying(runtime: &Runtime, keying: K) -> Self {
        ContractLayer {
            runtime: runtime.clone(),
            keying,
            responses: ByStatus,
            errors: ByClassify,
            contract: PhantomData,
        }
    }
}

impl<C, K, R, E> ContractLayer<C, K, R, E> {
    /// Classifies the inner service's errors with `classify`
    /// (`Fn(&S::Error) -> herta::Outcome`) instead of their [`Classify`]
    /// implementation: for error types without one (`tower::BoxError`;
    /// `reqwest::Error` without herta's `reqwest` feature), or to classify
    /// differently. `Success` counts as `Permanent`.
    ///
    /// [`Classify`]: crate::Classify
    pub fn classify_error<F>(self, classify: F) -> ContractLayer<C, K, R, ErrorFn<F>> {
        ContractLayer {
            runtime: self.runtime,
            keying: self.keying,
            responses: self.responses,
            errors: ErrorFn(classify),
            contract: PhantomData,
        }
    }

    /// Makes some successful responses failures: `classify`
    /// (`Fn(&S::Response) -> Option<herta::Outcome>`) returns the outcome of a
    /// response that is one (an HTTP 429 → `Throttled`, a 503 →
    /// `Transient`), and `None` (or `Some(Success)`) for a good one. A
    /// failed response is retried like an error of that outcome; when the
    /// call ends on it, the caller gets it back inside
    /// [`ServiceError::Response`](super::ServiceError::Response).
    pub fn classify_response<F>(self, classify: F) -> ContractLayer<C, K, ResponseFn<F>, E> {
        ContractLayer {
            runtime: self.runtime,
            keying: self.keying,
            responses: ResponseFn {
                classify,
                hint: NoHint,
            },
            errors: self.errors,
            contract: PhantomData,
        }
    }

    /// The runtime the contract is bound to.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

impl<C, K, F, E> ContractLayer<C, K, ResponseFn<F>, E> {
    /// Reads the server's retry hint from a response that
    /// [`classify_response`](ContractLayer::classify_response) called a
    /// failure: `hint` (`Fn(&S::Response) -> Option<std::time::Duration>`) parses an
    /// HTTP `Retry-After`, say. It is used as
    /// [`Classify::retry_after`](crate::Classify::retry_after) is: with a
    /// `backoff`, the sleep before the next attempt is at least the hint;
    /// a hint above the backoff's `cap` (or any hint without `backoff`)
    /// ends the call with that response.
    pub fn response_retry_after<H>(self, hint: H) -> ContractLayer<C, K, ResponseFn<F, H>, E> {
        ContractLayer {
            runtime: self.runtime,
            keying: self.keying,
            responses: ResponseFn {
                classify: self.responses.classify,
                hint,
            },
            errors: self.errors,
            contract: PhantomData,
        }
    }
}

impl<C, K: Clone, R: Clone, E: Clone> Clone for ContractLayer<C, K, R, E> {
    fn clone(&self) -> Self {
        ContractLayer {
            runtime: self.runtime.clone(),
            keying: self.keying.clone(),
            responses: self.responses.clone(),
            errors: self.errors.clone(),
            contract: PhantomData,
        }
    }
}

impl<C: DeclaredContract, K, R, E> fmt::Debug for ContractLayer<C, K, R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContractLayer")
            .field("contract", &<C as DeclaredContract>::CONTRACT)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl<S, C, K: Clone, R: Clone, E: Clone> tower_layer::Layer<S> for ContractLayer<C, K, R, E> {
    type Service = ContractService<S, C, K, R, E>;

    fn layer(&self, inner: S) -> Self::Service {
        ContractService {
            inner,
            runtime: self.runtime.clone(),
            shared: Arc::new(Shared {
                keying: self.keying.clone(),
                responses: self.responses.clone(),
                errors: self.errors.clone(),
            }),
            contract: PhantomData,
        }
    }
}
