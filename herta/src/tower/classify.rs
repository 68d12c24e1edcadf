//! What one attempt of a [`ContractService`](super::ContractService) call
//! means: the inner service's error classified ([`ClassifyError`]), a
//! response classified as a failure ([`ClassifyResponse`]), and the
//! [`ServiceError`] that carries either to the caller.

use std::fmt;
use std::time::Duration;

use crate::outcome::{normalize, Classify, Outcome};

/// Why one attempt of a [`ContractService`](super::ContractService) call
/// failed: the `E` of `herta::Error<E>` that the service returns.
///
/// It implements [`Classify`] with the outcome and retry hint the layer
/// gave it, so [`Error::outcome`](crate::Error::outcome) and
/// [`Error::retry_after`](crate::Error::retry_after) answer for it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServiceError<E, R> {
    /// The inner service failed, in `poll_ready` or in `call`.
    Inner {
        /// The inner service's error.
        error: E,
        /// Its outcome, by [`ClassifyError`].
        outcome: Outcome,
        /// Its retry hint (`Classify::retry_after`), if any.
        retry_after: Option<Duration>,
    },
    /// The inner service answered, and the layer's `classify_response`
    /// called the answer a failure (an HTTP 429 or 503, say).
    Response {
        /// The response, as the inner service returned it.
        response: R,
        /// Its outcome, from `classify_response`.
        outcome: Outcome,
        /// Its retry hint, from `response_retry_after`, if any.
        retry_after: Option<Duration>,
    },
}

impl<E, R> ServiceError<E, R> {
    /// The outcome of `error` (a function pointer for the call pipeline).
    pub(super) fn outcome_of(error: &Self) -> Outcome {
        error.outcome()
    }

    /// The retry hint of `error` (a function pointer for the call pipeline).
    pub(super) fn retry_after_of(error: &Self) -> Option<Duration> {
        error.retry_after()
    }
}

impl<E, R> Classify for ServiceError<E, R> {
    fn outcome(&self) -> Outcome {
        match self {
            ServiceError::Inner { outcome, .. } | ServiceError::Response { outcome, .. } => {
                *outcome
            }
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ServiceError::Inner { retry_after, .. }
            | ServiceError::Response { retry_after, .. } => *retry_after,
        }
    }
}

/// `the inner service failed (Transient): <error>`, or `the response was
/// classified Throttled`.
impl<E: fmt::Display, R> fmt::Display for ServiceError<E, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Inner { error, outcome, .. } => {
                write!(f, "the inner service failed ({outcome}): {error}")
            }
            ServiceError::Response { outcome, .. } => {
                write!(f, "the response was classified {outcome}")
            }
        }
    }
}

/// `source()` is the inner service's error.
impl<E: std::error::Error + 'static, R: fmt::Debug> std::error::Error for ServiceError<E, R> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServiceError::Inner { error, .. } => Some(error),
            ServiceError::Response { .. } => None,
        }
    }
}

/// How a [`ContractLayer`](super::ContractLayer) classifies the inner
/// service's error `E`: by [`Classify`] ([`ByClassify`], the default) or by
/// the function given to
/// [`classify_error`](super::ContractLayer::classify_error).
#[diagnostic::on_unimplemented(
    message = "the inner service's error `{E}` does not implement `herta::Classify`, so the layer cannot tell which failures are worth retrying",
    label = "no classification for this error type",
    note = "give the layer one: `.classify_error(|e: &{E}| herta::Outcome::Transient)` (return `Permanent` for what must not be retried)"
)]
pub trait ClassifyError<E> {
    /// The outcome of `error` and its retry hint.
    fn classify(&self, error: &E) -> (Outcome, Option<Duration>);
}

/// Classifies the inner service's error by its own [`Classify`]
/// implementation (outcome and retry hint).
#[derive(Debug, Clone, Copy, Default)]
pub struct ByClassify;

#[diagnostic::do_not_recommend]
impl<E: Classify> ClassifyError<E> for ByClassify {
    fn classify(&self, error: &E) -> (Outcome, Option<Duration>) {
        (normalize(error.outcome()), error.retry_after())
    }
}

/// Classifies the inner service's error with a function
/// `Fn(&E) -> Outcome` (see
/// [`classify_error`](super::ContractLayer::classify_error)); no retry hint.
#[derive(Debug, Clone, Copy)]
pub struct ErrorFn<F>(pub(super) F);

impl<E, F: Fn(&E) -> Outcome> ClassifyError<E> for ErrorFn<F> {
    fn classify(&self, error: &E) -> (Outcome, Option<Duration>) {
        (normalize((self.0)(error)), None)
    }
}

/// How a [`ContractLayer`](super::ContractLayer) tells a failed response
/// from a good one: [`ByStatus`] (the default) or [`ResponseFn`], from
/// [`classify_response`](super::ContractLayer::classify_response).
pub trait ClassifyResponse<R> {
    /// `Some((outcome, retry hint))` when `response` is a failure.
    fn failure(&self, response: &R) -> Option<(Outcome, Option<Duration>)>;
}

/// The default: a `reqwest::Response` (feature `reqwest`) is a failure
/// when its status says so, by
/// `herta::http::outcome_of` (429 `Throttled`, 503 `Transient`, 502
/// `Uncertain`, 404 `Permanent`…), with its `Retry-After`
/// (`herta::http::retry_after`) as the retry hint; every other response
/// is a success.
///
/// The response is recognised by its type, a test the compiler settles
/// for each response type, so other responses cost nothing. An
/// `http::Response<B>`, or a type of yours, is a success here: say what
/// it means with [`classify_response`](super::ContractLayer::classify_response)
/// (`|r: &http::Response<B>| Some(herta::http::outcome_of(r.status()))`)
/// and [`response_retry_after`](super::ContractLayer::response_retry_after).
#[derive(Debug, Clone, Copy, Default)]
pub struct ByStatus;

impl<R: 'static> ClassifyResponse<R> for ByStatus {
    #[cfg(feature = "reqwest")]
    fn failure(&self, response: &R) -> Option<(Outcome, Option<Duration>)> {
        let response = (response as &dyn std::any::Any).downcast_ref::<reqwest::Response>()?;
        crate::http::response_failure(response.status(), response.headers())
    }

    #[cfg(not(feature = "reqwest"))]
    fn failure(&self, _: &R) -> Option<(Outcome, Option<Duration>)> {
        None
    }
}

/// A response is a failure when `classify` says so (`Fn(&R) ->
/// Option<Outcome>`), with the retry hint `hint` reads from it (`Fn(&R) ->
/// Option<Duration>`, or [`NoHint`]).
#[derive(Debug, Clone, Copy)]
pub struct ResponseFn<F, H = NoHint> {
    pub(super) classify: F,
    pub(super) hint: H,
}

/// No retry hint is read from failed responses.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHint;

/// Reading a retry hint from a response: `NoHint`, or a function.
pub trait HintOf<R> {
    /// The hint of `response`.
    fn hint(&self, response: &R) -> Option<Duration>;
}

impl<R> HintOf<R> for NoHint {
    fn hint(&self, _: &R) -> Option<Duration> {
        None
    }
}

impl<R, H: Fn(&R) -> Option<Duration>> HintOf<R> for H {
    fn hint(&self, response: &R) -> Option<Duration> {
        self(response)
    }
}

impl<R, F: Fn(&R) -> Option<Outcome>, H: HintOf<R>> ClassifyResponse<R> for ResponseFn<F, H> {
    fn failure(&self, response: &R) -> Option<(Outcome, Option<Duration>)> {
        let outcome = (self.classify)(response)?;
        (outcome != Outcome::Success).then(|| (outcome, self.hint.hint(response)))
    }
}
