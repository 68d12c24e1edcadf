//! What a handler returns ([`HandlerOutput`]) and what its error means:
//! [`Classify`] and [`Failure`].

use std::fmt;
use std::time::Duration;

pub use herta_contract::{Admission, Effect, Outcome};

/// The `Ok` and `Err` types of a handler's return type, so aliases such as
/// `io::Result<T>` work (the generated code names it through
/// `herta::__private`).
#[diagnostic::on_unimplemented(
    message = "an operation must return `Result<T, E>`, found `{Self}`",
    label = "not a `Result`",
    note = "herta needs the error to classify failures; return `Result<T, herta::Failure<E>>` or an error type with `#[derive(herta::Classify)]`"
)]
pub trait HandlerOutput {
    /// The success value.
    type Ok;
    /// The error.
    type Err;
    /// Splits into the standard `Result`.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
}

impl<T, E> HandlerOutput for Result<T, E> {
    type Ok = T;
    type Err = E;
    fn into_result(self) -> Result<T, E> {
        self
    }
}

/// How an error says what its failure means.
///
/// Implemented by [`Failure<E>`] and by `#[derive(herta::Classify)]` on your
/// own error enums. The handler of an operation returns `Result<T, E>`; when
/// `E: Classify` the runtime asks it for the [`Outcome`] of each failed
/// attempt. An error type that does **not** implement `Classify` is treated as
/// [`Outcome::Permanent`] and never retried: nobody vouched that repeating it
/// is safe (the seed rule "silence means do not guess").
///
/// Returning [`Outcome::Success`] for an error is a bug in the classifier; the
/// runtime treats it as [`Outcome::Permanent`].
pub trait Classify {
    /// The outcome of the attempt that produced this error.
    fn outcome(&self) -> Outcome;

    /// How long the failing service asked callers to wait before trying
    /// again (an HTTP `Retry-After`, a gRPC `RetryInfo`), if it said.
    ///
    /// With `retry(…, backoff(…))` the sleep before the next attempt is
    /// `max(hint, backoff delay)`; a hint above the backoff's `cap`, or one
    /// that would end past the call's deadline, ends the call at once with
    /// this error (and [`Error::retry_after`](crate::Error::retry_after)
    /// gives the hint to forward). Without `backoff`, any hint above zero
    /// ends the call at once: a contract without a delay cannot honour one.
    /// A zero hint (a `Retry-After` date already past, converted with
    /// `saturating_duration_since`) is no hint. The default is `None`.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

/// An error tagged with the [`Outcome`] of the attempt that produced it.
///
/// The handler is the code closest to the failure, so it says what the
/// failure means:
///
/// ```
/// use herta::{Failure, Outcome};
///
/// fn fetch(status: u16) -> Result<String, Failure<String>> {
///     match status {
///         200 => Ok("page".to_owned()),
///         503 => Err(Failure::transient("upstream busy".to_owned())),
///         _ => Err(Failure::permanent(format!("status {status}"))),
///     }
/// }
/// assert_eq!(fetch(503).unwrap_err().outcome(), Outcome::Transient);
/// ```
///
/// `Failure::new(Outcome::Success, e)` is normalized to
/// [`Outcome::Permanent`]: an error that claims success is a bug, and a bug is
/// never retried.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failure<E> {
    outcome: Outcome,
    error: E,
    retry_after: Option<Duration>,
}

impl<E> Failure<E> {
    /// Tags `error` with `outcome` (`Success` becomes `Permanent`).
    pub fn new(outcome: Outcome, error: E) -> Self {
        Failure {
            outcome: normalize(outcome),
            error,
            retry_after: None,
        }
    }

    /// Adds the failing service's hint of how long to wait before the next
    /// attempt (see [`Classify::retry_after`]):
    /// `Failure::throttled(e).with_retry_after(Duration::from_secs(2))`.
    pub fn with_retry_after(mut self, hint: Duration) -> Self {
        self.retry_after = Some(hint);
        self
    }

    /// The attempt did not take effect; trying again may succeed.
    pub fn transient(error: E) -> Self {
        Failure::new(Outcome::Transient, error)
    }

    /// The attempt may or may not have taken effect.
    pub fn uncertain(error: E) -> Self {
        Failure::new(Outcome::Uncertain, error)
    }

    /// Trying again will fail the same way.
    pub fn permanent(error: E) -> Self {
        Failure::new(Outcome::Permanent, error)
    }

    /// The work was refused for lack of capacity downstream.
    pub fn throttled(error: E) -> Self {
        Failure::new(Outcome::Throttled, error)
    }

    /// The outcome this failure was tagged with (never `Success`).
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The wrapped error.
    pub fn error(&self) -> &E {
        &self.error
    }

    /// Unwraps the error, dropping the outcome.
    pub fn into_error(self) -> E {
        self.error
    }
}

impl<E> Classify for Failure<E> {
    fn outcome(&self) -> Outcome {
        self.outcome
    }

    fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

/// Transparent: shows the wrapped error's message. The outcome is in
/// `herta::Error`'s own message, so a reported error chain names each cause
/// once.
impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

/// Transparent: the source is the wrapped error's source.
impl<E: std::error::Error> std::error::Error for Failure<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// `?` on an `E` in a handler that returns `Result<T, Failure<E>>`: the
/// error becomes a [`Failure`] tagged [`Outcome::Permanent`], never retried.
///
/// An error nobody classified is not guessed at (the seed rule "silence means
/// do not guess"). Where a line's failure *is* worth another attempt, say so
/// on that line with [`ResultExt`]: `read(path).await.transient()?`.
///
/// ```
/// use herta::{Failure, Outcome};
///
/// fn parse(text: &str) -> Result<u32, Failure<std::num::ParseIntError>> {
///     Ok(text.parse::<u32>()?)
/// }
/// assert_eq!(parse("x").unwrap_err().outcome(), Outcome::Permanent);
/// ```
impl<E> From<E> for Failure<E> {
    fn from(error: E) -> Self {
        Failure::permanent(error)
    }
}

/// Tags the error of a `Result` with an [`Outcome`], so that one line of a
/// handler says what its failure means: `fetch(url).await.transient()?`.
///
/// Each method maps `Err(e)` to `Err(Failure::…(e))` and leaves `Ok` as it
/// is; it is the same as `.map_err(Failure::transient)`. Without a tag, `?`
/// makes the error [`Outcome::Permanent`] (see [`Failure`]'s `From`).
///
/// ```
/// use herta::{Failure, Outcome, ResultExt as _};
///
/// fn fetch(up: bool) -> Result<&'static str, std::io::Error> {
///     if up { Ok("page") } else { Err(std::io::ErrorKind::ConnectionRefused.into()) }
/// }
///
/// fn page(up: bool) -> Result<&'static str, Failure<std::io::Error>> {
///     Ok(fetch(up).transient()?) // a refused connection may succeed next time
/// }
/// assert_eq!(page(false).unwrap_err().outcome(), Outcome::Transient);
/// ```
pub trait ResultExt<T, E> {
    /// `Err(e)` becomes [`Failure::transient`]`(e)`: worth another attempt.
    fn transient(self) -> Result<T, Failure<E>>;
    /// `Err(e)` becomes [`Failure::uncertain`]`(e)`: may have taken effect.
    fn uncertain(self) -> Result<T, Failure<E>>;
    /// `Err(e)` becomes [`Failure::permanent`]`(e)`: fails the same way again.
    fn permanent(self) -> Result<T, Failure<E>>;
    /// `Err(e)` becomes [`Failure::throttled`]`(e)`: refused for capacity.
    fn throttled(self) -> Result<T, Failure<E>>;
}

impl<T, E> ResultExt<T, E> for Result<T, E> {
    fn transient(self) -> Result<T, Failure<E>> {
        self.map_err(Failure::transient)
    }
    fn uncertain(self) -> Result<T, Failure<E>> {
        self.map_err(Failure::uncertain)
    }
    fn permanent(self) -> Result<T, Failure<E>> {
        self.map_err(Failure::permanent)
    }
    fn throttled(self) -> Result<T, Failure<E>> {
        self.map_err(Failure::throttled)
    }
}

/// The outcome the runtime acts on: `Success` from a classifier means a bug and
/// is read as `Permanent`.
pub(crate) fn normalize(outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Success => Outcome::Permanent,
        other => other,
    }
}
