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
/// | `Throttled` (no room here, now) | 429 Too Many Requests | `Retry-After: N` | `busy; retry after N s` |
/// | `Stopping` (the runtime is shutting down) | 503 Service Unavailable | `Connection: close` | `shutting down` |
/// | `TimedOut` | 504 Gateway Timeout | — | `timed out` |
/// | `DeadlineExceeded` | 504 Gateway Timeout | — | `request deadline exceeded` |
/// | `Failed`, outcome `Uncertain` | 502 Bad Gateway | — | `outcome unknown: the request may or may not have taken effect; check before retrying` |
/// | `Failed`, outcome `Transient` | 503 Service Unavailable | — | `temporarily unavailable` |
/// | `Failed`, outcome `Throttled` (a service behind this one refused for load) | 503 Service Unavailable | — | `busy downstream` |
/// | `Failed`, outcome `Permanent` | 500 Internal Server Error | — | `failed` |
/// | `WouldDeadlock` (a nested call needed what its own calling chain holds: a bug) | 500 Internal Server Error | — | `internal error` |
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
/// `N` is the throttled call's own
/// [`retry_after`](Error::Throttled::retry_after) in whole seconds,
/// rounded up (a rate budget knows when its units exist, a breaker when it
/// half-opens), at least 1; and 1 where herta does not know when room will
/// free (a concurrency budget, a key). A handler error's own hint ([`Error::retry_after`], for `E: Classify`)
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
            Error::Throttled { retry_after, .. } => {
                let seconds = retry_after.map_or(1, whole_seconds);
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(RETRY_AFTER, HeaderValue::from(seconds))],
                    format!("busy; retry after {seconds} s\n"),
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
            // A bug in the program (a nested call needing what its own
            // calling chain holds), not a load condition: never worth a retry.
            Error::WouldDeadlock { .. } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error\n".to_owned(),
            ),
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

/// `Retry-After`'s seconds for a wait of `after`: rounded up, so a client
/// that waits them finds the room, and at least 1 (`Retry-After: 0` reads
/// as "at once" and invites a storm).
fn whole_seconds(after: std::time::Duration) -> u64 {
    let rounded_up = after.as_secs() + u64::from(after.subsec_nanos() > 0);
    rounded_up.max(1)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::Busy;

    fn throttled(retry_after: Option<Duration>) -> Response {
        Error::<()>::Throttled {
            throttle: crate::Throttle::NoRoom,
            operation: "op",
            busy: Busy::Resource { resource: "api" },
            retry_after,
        }
        .into_response()
    }

    fn header(response: &Response) -> &str {
        response.headers()[RETRY_AFTER].to_str().unwrap()
    }

    #[test]
    fn throttled_retry_after_is_whole_seconds_rounded_up_at_least_one() {
        for (after, seconds) in [
            (None, "1"),
            (Some(Duration::ZERO), "1"),
            (Some(Duration::from_millis(1)), "1"),
            (Some(Duration::from_secs(1)), "1"),
            (Some(Duration::from_millis(1_001)), "2"),
            (Some(Duration::from_secs(30)), "30"),
        ] {
            let response = throttled(after);
            assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(header(&response), seconds, "{after:?}");
        }
    }

    #[test]
    fn would_deadlock_is_a_server_error_never_worth_a_retry() {
        let response = Error::<()>::WouldDeadlock {
            operation: "credit",
            busy: Busy::Key {
                parameter: "customer",
                value: Some("\"ada\"".to_owned()),
            },
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!response.headers().contains_key(RETRY_AFTER));
    }
}
