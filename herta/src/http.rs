//! HTTP without glue (feature `http`): what a response's status means for
//! the request ([`outcome_of`]) and how long the server asked callers to
//! wait ([`retry_after`]), over the `http` crate's types (those of hyper,
//! axum, reqwest and tower-http).
//!
//! These functions state facts about one response; the contract decides
//! what to do with them. An `Uncertain` status is retried by an
//! `Idempotent` operation that lists it in `retry(on = …)`, and never by a
//! `NonIdempotent` one (a compile error, and checked again at run time).
//!
//! | status | [`Outcome`] | why (RFC 9110) |
//! |---|---|---|
//! | 1xx, 2xx, 3xx | `Success` | the request was received, understood and, for 2xx, done (§15.2–15.4); a redirect is followed by the client, not retried |
//! | 429 Too Many Requests | `Throttled` | the server refused the request for its rate: it did not act, and asks for less load, often with `Retry-After` (RFC 6585 §4) |
//! | 503 Service Unavailable | `Transient` | the server cannot handle the request now (overload, maintenance) and did not act; may carry `Retry-After` (§15.6.4) |
//! | 408 Request Timeout | `Transient` | the server did not receive a complete request in time, so it did not act; the client may repeat it (§15.5.9) |
//! | 500 Internal Server Error | `Uncertain` | an unexpected condition, at any point of the handling: the request may have taken effect (§15.6.1) |
//! | 502 Bad Gateway | `Uncertain` | a gateway got an invalid answer from the server behind it, which may have acted (§15.6.3) |
//! | 504 Gateway Timeout | `Uncertain` | a gateway stopped waiting for the server behind it, which may still act (§15.6.5) |
//! | 501 Not Implemented, 505 HTTP Version Not Supported | `Permanent` | the server cannot do this request at all: it did not act, and will not (§15.6.2, §15.6.6) |
//! | any other 5xx | `Uncertain` | an unknown status is read as the `x00` of its class (§15): a 500 |
//! | any other 4xx | `Permanent` | the request itself is at fault: sending it again fails the same way (§15.5) |
//! | anything else (600–999) | `Permanent` | not a status of HTTP: nothing says a repeat would fare better |
//!
//! ```
//! use herta::http::{outcome_of, retry_after};
//! use herta::Outcome;
//! use http::{header::RETRY_AFTER, HeaderMap, HeaderValue, StatusCode};
//! use std::time::{Duration, SystemTime};
//!
//! assert_eq!(outcome_of(StatusCode::SERVICE_UNAVAILABLE), Outcome::Transient);
//! assert_eq!(outcome_of(StatusCode::BAD_GATEWAY), Outcome::Uncertain);
//!
//! let mut headers = HeaderMap::new();
//! headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
//! assert_eq!(retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(120)));
//! ```
//!
//! With the `reqwest` feature, `reqwest::Error` implements
//! [`Classify`](crate::Classify) (see its impl), and with `tower` too,
//! [`ContractLayer`](crate::tower::ContractLayer) classifies a
//! `reqwest::Response` with these two functions unless told otherwise.
//! With the `axum` feature, [`Error<E>`](crate::Error) is an axum
//! `IntoResponse` (see its impl for the table).

use std::time::{Duration, SystemTime};

use ::http::header::RETRY_AFTER;
use ::http::{HeaderMap, StatusCode};

use crate::outcome::Outcome;

#[cfg(feature = "axum")]
mod axum_response;
#[cfg(feature = "reqwest")]
mod reqwest_error;

/// The longest hint [`retry_after`] returns: 2³¹ seconds (about 68 years).
///
/// A larger `Retry-After`, in either form, is read as this, never as an
/// overflow or an error: the value RFC 9111 §1.2.2 tells a cache to use
/// for a delta-seconds it cannot represent. The runtime never sleeps that
/// long: a hint above a contract's backoff `cap` ends the call at once (see
/// [`Classify::retry_after`](crate::Classify::retry_after)).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(1 << 31);

/// What a response with `status` means for the request: the table in
/// [the module docs](self) (`Success` for 1xx–3xx).
///
/// ```
/// use herta::http::outcome_of;
/// use herta::Outcome;
/// use http::StatusCode;
///
/// assert_eq!(outcome_of(StatusCode::OK), Outcome::Success);
/// assert_eq!(outcome_of(StatusCode::TOO_MANY_REQUESTS), Outcome::Throttled);
/// assert_eq!(outcome_of(StatusCode::REQUEST_TIMEOUT), Outcome::Transient);
/// assert_eq!(outcome_of(StatusCode::GATEWAY_TIMEOUT), Outcome::Uncertain);
/// assert_eq!(outcome_of(StatusCode::NOT_FOUND), Outcome::Permanent);
/// ```
pub fn outcome_of(status: StatusCode) -> Outcome {
    match status.as_u16() {
        100..=399 => Outcome::Success,
        429 => Outcome::Throttled,
        408 | 503 => Outcome::Transient,
        501 | 505 => Outcome::Permanent,
        500..=599 => Outcome::Uncertain,
        _ => Outcome::Permanent,
    }
}

/// The server's `Retry-After` in `headers`, as a wait from `now`: either
/// form of RFC 9110 §10.2.3.
///
/// - delta-seconds (`Retry-After: 120`): that many seconds;
/// - an HTTP-date (`Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`, or the
///   obsolete RFC 850 and asctime forms every recipient must accept): the
///   time from `now` to it, and [`Duration::ZERO`] for a date at or
///   before `now` (the server's wait is over; a zero hint is no hint to
///   the runtime).
///
/// Both are at most [`MAX_RETRY_AFTER`]. Whitespace around the value is
/// ignored. `None` when there is no `Retry-After`, when there are several
/// (it is a singleton field), and when the value is neither form: a
/// negative or signed number, a fraction, text, an impossible date.
///
/// `now` is the wall clock (`SystemTime::now()`), because an HTTP-date is;
/// taking it as a parameter keeps the function pure and testable.
///
/// ```
/// use herta::http::retry_after;
/// use http::{header::RETRY_AFTER, HeaderMap, HeaderValue};
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_445_412_460); // 07:27:40 GMT
/// let mut headers = HeaderMap::new();
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
/// assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(20)));
///
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("-1"));
/// assert_eq!(retry_after(&headers, now), None);
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let mut values = headers.get_all(RETRY_AFTER).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = value
        .to_str()
        .ok()?
        .trim_matches(|c: char| c == ' ' || c == '\t');
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        // Digits only: delta-seconds. Too many digits for a u64 is still a
        // number, just a huge one.
        let seconds = text.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds).min(MAX_RETRY_AFTER));
    }
    let date = httpdate::parse_http_date(text).ok()?;
    Some(
        date.duration_since(now)
            .map_or(Duration::ZERO, |wait| wait.min(MAX_RETRY_AFTER)),
    )
}

/// The failure a response with `status` and `headers` is, if it is one:
/// its outcome and its `Retry-After` from `SystemTime::now()`.
#[cfg(all(feature = "tower", feature = "reqwest"))]
pub(crate) fn response_failure(
    status: StatusCode,
    headers: &HeaderMap,
) -> Option<(Outcome, Option<Duration>)> {
    match outcome_of(status) {
        Outcome::Success => None,
        outcome => Some((outcome, retry_after(headers, SystemTime::now()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::http::HeaderValue;
    use std::time::UNIX_EPOCH;

    /// Every status from 100 to 999 against the table, written out again
    /// by class so that a change to either shows.
    #[test]
    fn every_status_has_the_documented_outcome() {
        for code in 100..=999u16 {
            let status = StatusCode::from_u16(code).unwrap();
            let expected = match code {
                100..=399 => Outcome::Success,
                429 => Outcome::Throttled,
                408 => Outcome::Transient,
                400..=499 => Outcome::Permanent,
                503 => Outcome::Transient,
                500 | 502 | 504 => Outcome::Uncertain,
                501 | 505 => Outcome::Permanent,
                506..=599 => Outcome::Uncertain,
                _ => Outcome::Permanent,
            };
            assert_eq!(outcome_of(status), expected, "status {code}");
        }
    }

    #[test]
    fn named_statuses_match_the_table() {
        use Outcome::*;
        let table = [
            (StatusCode::OK, Success),
            (StatusCode::NO_CONTENT, Success),
            (StatusCode::NOT_MODIFIED, Success),
            (StatusCode::TEMPORARY_REDIRECT, Success),
            (StatusCode::TOO_MANY_REQUESTS, Throttled),
            (StatusCode::SERVICE_UNAVAILABLE, Transient),
            (StatusCode::REQUEST_TIMEOUT, Transient),
            (StatusCode::INTERNAL_SERVER_ERROR, Uncertain),
            (StatusCode::BAD_GATEWAY, Uncertain),
            (StatusCode::GATEWAY_TIMEOUT, Uncertain),
            (StatusCode::BAD_REQUEST, Permanent),
            (StatusCode::UNAUTHORIZED, Permanent),
            (StatusCode::FORBIDDEN, Permanent),
            (StatusCode::NOT_FOUND, Permanent),
            (StatusCode::CONFLICT, Permanent),
            (StatusCode::UNPROCESSABLE_ENTITY, Permanent),
        ];
        for (status, outcome) in table {
            assert_eq!(outcome_of(status), outcome, "{status}");
        }
    }

    /// 2015-10-21 07:27:40 GMT.
    const NOW: u64 = 1_445_412_460;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(NOW)
    }

    fn hint(value: &'static [u8]) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_bytes(value).unwrap());
        retry_after(&headers, now())
    }

    fn secs(n: u64) -> Option<Duration> {
        Some(Duration::from_secs(n))
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(hint(b"0"), secs(0));
        assert_eq!(hint(b"1"), secs(1));
        assert_eq!(hint(b"120"), secs(120));
        assert_eq!(hint(b"007"), secs(7), "leading zeros are digits");
        assert_eq!(hint(b" 30\t"), secs(30), "optional whitespace is ignored");
    }

    #[test]
    fn a_future_date_is_the_time_until_it() {
        assert_eq!(hint(b"Wed, 21 Oct 2015 07:28:00 GMT"), secs(20));
        assert_eq!(hint(b"Thu, 22 Oct 2015 07:27:40 GMT"), secs(86_400));
        // The obsolete forms every recipient must accept (RFC 9110 §5.6.7).
        assert_eq!(hint(b"Wednesday, 21-Oct-15 07:28:00 GMT"), secs(20));
        assert_eq!(hint(b"Wed Oct 21 07:28:00 2015"), secs(20));
    }

    #[test]
    fn a_past_or_present_date_is_zero() {
        assert_eq!(hint(b"Wed, 21 Oct 2015 07:27:40 GMT"), secs(0));
        assert_eq!(hint(b"Wed, 21 Oct 2015 07:27:39 GMT"), secs(0));
        assert_eq!(hint(b"Thu, 01 Jan 1970 00:00:00 GMT"), secs(0));
    }

    #[test]
    fn negative_and_malformed_values_are_none() {
        for value in [
            &b"-1"[..],
            b"-0",
            b"+5",
            b"1.5",
            b"1e3",
            b"0x10",
            b"",
            b"   ",
            b"soon",
            b"5 s",
            b"5,6",
            b"Wed, 32 Oct 2015 07:28:00 GMT",
            b"Wed, 21 Oct 2015 25:28:00 GMT",
            b"Wed, 21 Oct 2015 07:28:00 PST",
            b"21 Oct 2015",
            b"\xff\xfe",
        ] {
            assert_eq!(hint(value), None, "{:?}", String::from_utf8_lossy(value));
        }
    }

    #[test]
    fn huge_values_are_clamped() {
        assert_eq!(MAX_RETRY_AFTER, Duration::from_secs(2_147_483_648));
        assert_eq!(hint(b"2147483647"), secs(2_147_483_647));
        assert_eq!(hint(b"2147483648"), Some(MAX_RETRY_AFTER));
        assert_eq!(hint(b"2147483649"), Some(MAX_RETRY_AFTER));
        assert_eq!(hint(b"18446744073709551615"), Some(MAX_RETRY_AFTER));
        assert_eq!(
            hint(b"99999999999999999999999999999999999999999999"),
            Some(MAX_RETRY_AFTER),
            "past u64: still a number, clamped"
        );
        // The latest date httpdate reads, over 7 000 years away.
        assert_eq!(
            hint(b"Fri, 31 Dec 9999 23:59:59 GMT"),
            Some(MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn no_header_or_several_is_none() {
        assert_eq!(retry_after(&HeaderMap::new(), now()), None);
        let mut headers = HeaderMap::new();
        headers.append(RETRY_AFTER, HeaderValue::from_static("5"));
        headers.append(RETRY_AFTER, HeaderValue::from_static("5"));
        assert_eq!(retry_after(&headers, now()), None);
    }
}
