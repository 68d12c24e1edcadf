//! `IntoResponse` for [`Error<E>`] (feature `axum`): a handler can return
//! `Result<_, herta::Error<E>>` and use `?` on a call.

use ::http::header::{CONNECTION, RETRY_AFTER};
use ::http::{HeaderValue, StatusCode};
use axum_core::response::{IntoResponse, Response};

use crate::error::Error;
use crate::outcome::Outcome;

/// What a client reads when the outcome is `Uncertain`.
const UNKNOWN: &str =
    "outcome unknown: the request may or may not have taken effect; check before retrying\n";

/// The HTTP response for a call that did not return its value, so that an
/// axum handler returning `Result<_, herta::Error<E>>` can use `?` on a
/// call, for any handler error type `E`:
///
/// | `herta::Error` | status | headers | body |
/// |---|---|---|---|
/// | `Throttled` (no room here, now) | 429 Too Many Requests | `Retry-After: 1` | `busy; retry after 1 s` |
/// | `Stopping` (the runtime is shutting down) | 503 Service Unavailable | `Connection: close` | `shutting down` |
/// | `TimedOut` | 504 Gateway Timeout | — | `timed out` |
/// | `DeadlineExceeded` | 504 Gateway Timeout | — | `request deadline exceeded` |
/// | `Failed`, outcome `Uncertain` | 502 Bad Gateway | — | `outcome unknown: the request may or may not have taken effect; check before retrying` |
/// | `Failed`, outcome `Transient` | 503 Service Unavailable | — | `temporarily unavailable` |
/// | `Failed`, outcome `Throttled` (a service behind this one refused for load) | 503 Service Unavailable | — | `busy downstream` |
/// | `Failed`, outcome `Permanent` | 500 Internal Server Error | — | `failed` |
///
/// A `TimedOut` or `DeadlineExceeded` whose outcome is `Uncertain` (a
/// `NonIdempotent` attempt was dropped) adds the `Uncertain` sentence to
/// its body: the client must know the request may have taken effect.
///
/// Bodies are short `text/plain` lines of herta's own: they never contain
/// the handler's error, the operation's name, a resource's name or a key's
/// value (keys are often personal data). Log the error before answering
/// if you need it (`tracing::warn!(error = %err)`, with its
/// [`source`](std::error::Error::source) chain: see
/// [failure semantics](crate::guide::failure_semantics)).
///
/// `Retry-After` is 1 second: herta does not know when room will free.
/// A handler error's own hint ([`Error::retry_after`], for `E: Classify`)
/// is not forwarded, because this implementation is for every `E`; to
/// forward it, answer that case yourself before converting.
///
/// ```
/// use axum_core::response::IntoResponse;
/// use http::StatusCode;
///
/// #[herta::operation(effect = NonIdempotent, resources("payments" = 1))]
/// async fn charge(cents: u64) -> Result<u64, herta::Failure<std::io::Error>> {
///     Err(herta::Failure::uncertain(std::io::ErrorKind::ConnectionReset.into()))
/// }
///
/// // An axum handler: `?` turns a herta error into its response.
/// async fn charge_route(op: Charge) -> Result<String, herta::Error<herta::Failure<std::io::Error>>> {
///     let id = op.call(1200).await?;
///     Ok(format!("charged: {id}\n"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let rt = herta::Runtime::builder().resource(herta::Resource::new("payments", 1)).build()?;
/// let response = charge_route(Charge::bind(&rt)?).await.into_response();
/// assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
/// # Ok(())
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
impl<E> IntoResponse for Error<E> {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            Error::Throttled { .. } => {
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(RETRY_AFTER, HeaderValue::from(1))],
                    "busy; retry after 1 s\n",
                )
                    .into_response();
            }
            Error::Stopping { .. } => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(CONNECTION, HeaderValue::from_static("close"))],
                    "shutting down\n",
                )
                    .into_response();
            }
            Error::TimedOut { outcome, .. } => {
                (StatusCode::GATEWAY_TIMEOUT, dropped("timed out", *outcome))
            }
            Error::DeadlineExceeded { outcome, .. } => (
                StatusCode::GATEWAY_TIMEOUT,
                dropped("request deadline exceeded", *outcome),
            ),
            Error::Failed { outcome, .. } => match outcome {
                Outcome::Uncertain => (StatusCode::BAD_GATEWAY, UNKNOWN.to_owned()),
                Outcome::Transient => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily unavailable\n".to_owned(),
                ),
                Outcome::Throttled => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy downstream\n".to_owned(),
                ),
                Outcome::Permanent | Outcome::Success => {
                    (StatusCode::INTERNAL_SERVER_ERROR, "failed\n".to_owned())
                }
            },
        };
        (status, body).into_response()
    }
}

/// The body of a dropped attempt or call: `what`, and, when the outcome
/// is `Uncertain`, that the request may have taken effect.
fn dropped(what: &str, outcome: Outcome) -> String {
    let mut body = String::from(what);
    if outcome == Outcome::Uncertain {
        body.push_str("; ");
        body.push_str(UNKNOWN);
    } else {
        body.push('\n');
    }
    body
}
