//! [`Classify`] for `reqwest::Error` (feature `reqwest`): how far the
//! request got decides what its failure means.

use std::error::Error as _;

use crate::outcome::{normalize, Classify, Outcome};

/// How far the request got says what its failure means:
///
/// | `reqwest::Error` | outcome | why |
/// |---|---|---|
/// | with a status (`error_for_status`) | [`outcome_of`](super::outcome_of) of it | the server answered; its status says whether it acted |
/// | `is_builder()` | `Permanent` | the request could not be built (a bad URL, a bad header): it never left, and never will |
/// | `is_connect()` | `Transient` | no connection (refused, unreachable, a connect timeout, TLS): the request never left |
/// | `is_timeout()` | `Uncertain` | the request was sent, and no complete answer came in time: the server may have acted |
/// | `is_redirect()` | `Permanent` | the redirect policy stopped it (a loop, too many hops): the same request ends the same way |
/// | `is_decode()` of a body that broke off | `Uncertain` | the answer was cut: the server may have acted |
/// | any other `is_decode()` | `Permanent` | the answer arrived whole but cannot be read as asked (JSON of another shape): again, it would be the same |
/// | `is_upgrade()` | `Permanent` | the server refused the protocol upgrade |
/// | anything else (`is_request()`, `is_body()`) | `Uncertain` | a failure after the request started out: the connection closed before the answer, say |
///
/// A connect error is `Transient` even when it is a timeout: nothing was
/// sent. An operation whose effect is `NonIdempotent` never retries
/// `Uncertain` (the contract's rule), so a request that may have reached
/// the server is not sent twice.
///
/// [`retry_after`](Classify::retry_after) is `None`: a `reqwest::Error`
/// keeps a response's status, not its headers. To honour the server's
/// `Retry-After`, read it where the response is still at hand, with
/// [`herta::http::retry_after`](super::retry_after):
/// [`ContractLayer`](crate::tower::ContractLayer) does so for a
/// `reqwest::Response` (features `tower` and `reqwest`).
///
/// ```
/// use herta::{Classify, Outcome};
///
/// let err = reqwest::Client::new().get("no scheme").build().unwrap_err();
/// assert!(err.is_builder());
/// assert_eq!(err.outcome(), Outcome::Permanent);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl Classify for reqwest::Error {
    fn outcome(&self) -> Outcome {
        if let Some(status) = self.status() {
            // `error_for_status` makes no error of a success; if one came,
            // it is read as any claimed success is.
            return normalize(super::outcome_of(status));
        }
        if self.is_builder() {
            Outcome::Permanent
        } else if self.is_connect() {
            Outcome::Transient
        } else if self.is_timeout() {
            Outcome::Uncertain
        } else if self.is_redirect() || self.is_upgrade() {
            Outcome::Permanent
        } else if self.is_decode() {
            if broke_off(self) {
                Outcome::Uncertain
            } else {
                Outcome::Permanent
            }
        } else {
            Outcome::Uncertain
        }
    }
}

/// Whether a decode error is a body that broke off: reqwest reports a
/// failed read of the body (`text`, `bytes`, `json`) as a decode error
/// whose source is its body error, or an I/O error.
fn broke_off(error: &reqwest::Error) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_body)
            || cause.is::<std::io::Error>()
        {
            return true;
        }
        source = cause.source();
    }
    false
}
