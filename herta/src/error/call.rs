//! [`Error`]: why a call of an operation did not return the handler's value,
//! and [`SourceOf`], how its `Failed` variant reaches the handler's error.

use std::fmt;
use std::time::Duration;

use super::busy::Busy;
use super::throttle::Throttle;
use crate::outcome::Outcome;

/// Why a call of an operation did not return the handler's value.
///
/// `E` is the handler's own error type. [`Error::outcome`] gives the
/// [`Outcome`] of any variant, so callers can branch on meaning rather than on
/// messages.
#[non_exhaustive]
// The tag is a byte of its own: packed into a niche of a field (as the
// compiler lays it out with two variants carrying a `Busy`), every caller
// copies a call's result before reading it.
#[repr(u8)]
pub enum Error<E> {
    /// The handler's last attempt failed with its own error.
    Failed {
        /// The operation's name.
        operation: &'static str,
        /// The outcome of the last attempt (never `Success`; an unclassified
        /// error is `Permanent`).
        outcome: Outcome,
        /// How many attempts ran, the failed one included.
        attempts: u32,
        /// The handler's error.
        source: E,
        /// How the handler's error is this error's `source()` (chosen by
        /// the macro at the error type; see `std::error::Error` below).
        #[doc(hidden)]
        chain: SourceOf<E>,
    },
    /// The last attempt ran past the contract's `timeout` and was dropped.
    TimedOut {
        /// The operation's name.
        operation: &'static str,
        /// The per-attempt limit that expired.
        timeout: Duration,
        /// How many attempts ran, the timed-out one included.
        attempts: u32,
        /// `Transient` for Pure/Idempotent, `Uncertain` for NonIdempotent
        /// operations (the dropped attempt may have taken effect).
        outcome: Outcome,
    },
    /// A `Reject` operation found its key or a budget busy, or a `Wait`
    /// operation waited its whole `max_wait` (or found a budget's queue
    /// full); nothing is held. Nothing ran, with one exception: a call
    /// retrying with `backoff` gives its budgets back while it sleeps, and
    /// if it cannot take them again (the same rules: `Reject` finds them
    /// busy, `max_wait` — counted from admission — runs out, a queue is
    /// full) it ends `Throttled` after attempts that did run (see [failure semantics](crate::guide::failure_semantics);
    /// `attempts()` still reads 0, and the attempts' own error is not kept).
    /// `throttle` says which of these limits refused it.
    Throttled {
        /// Which limit refused the call: `NoRoom` or `Rate` (`Reject`),
        /// `QueueFull`, `MaxWait`, `BreakerOpen` (never `Dependency`: that
        /// is `Failed`). [`Error::throttle`] returns it.
        // First: with the tag's byte as `repr(u8)` lays a variant out, it
        // fills padding, so the error is no larger for it.
        throttle: Throttle,
        /// The operation's name.
        operation: &'static str,
        /// What was busy.
        busy: Busy,
        /// How long until what was busy can admit the call, when herta
        /// knows it: a rate budget's time until the units exist, a
        /// breaker's time left open. `None` for a concurrency budget or a
        /// key (their room frees when a holder finishes, at no known time).
        /// [`Error::retry_after`] returns it; the axum response sends it as
        /// `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// The runtime is shutting down: the call was refused at admission or
    /// withdrawn while it waited; nothing ran.
    Stopping {
        /// The operation's name.
        operation: &'static str,
    },
    /// The call's deadline passed: the contract's `deadline = "…"` or an
    /// enclosing [`herta::deadline`](crate::deadline) scope, whichever is
    /// earliest. While waiting (`attempts` 0, outcome `Transient`) nothing
    /// ran; during an attempt, the attempt was dropped and the outcome is
    /// the one a timeout has (`Transient` for Pure/Idempotent, `Uncertain`
    /// for NonIdempotent operations).
    DeadlineExceeded {
        /// The operation's name.
        operation: &'static str,
        /// How many attempts ran, the dropped one included (0: it was
        /// still waiting for its key or budgets).
        attempts: u32,
        /// `Transient` when nothing ran; else the timeout outcome of the
        /// operation's effect.
        outcome: Outcome,
    },
    /// A call made inside a handler (a nested call) queued for what its own
    /// calling chain holds, so it could never be granted: the same key in
    /// the same key space as a call it runs inside, or more units of a
    /// budget than its capacity minus what the calls it runs inside hold
    /// (the capacity when the call queued). It fails at once instead of
    /// hanging; nothing is held, and nothing ran — unless this happened when
    /// a retry took its budgets back after a backoff sleep (as for
    /// `Throttled`, `attempts()` then reads 0). A bug in the program, not
    /// a load condition: retrying it fails the same way (its outcome is
    /// `Permanent`). Fix the nesting: take the key or the units once, in
    /// the outer call, and pass what the inner work needs down as plain
    /// functions, or give the inner operation its own key scope or budget.
    /// A nested call that only waits for others to release still waits; a
    /// `Reject` call never waits, and is `Throttled` as before; a call in a
    /// task spawned from a handler is not in its chain (see
    /// [nested calls](crate::guide::execution_model)).
    ///
    /// ```no_run
    /// use herta::{Error, Failure};
    ///
    /// herta::resources! { pub DB: "db" = 2; }
    ///
    /// #[herta::operation(effect = Idempotent, resources(DB = 1),
    ///                    serialize_by(customer, scope = "customer"))]
    /// async fn credit(customer: String) -> Result<(), Failure<std::io::Error>> {
    ///     Ok(())
    /// }
    ///
    /// /// Holds `customer` in the shared scope, then calls `credit` for it:
    /// /// that call could never be granted.
    /// #[herta::operation(effect = Idempotent, resources(DB = 1),
    ///                    serialize_by(customer, scope = "customer"))]
    /// async fn refund(credit: Credit, customer: String) -> Result<(), Failure<std::io::Error>> {
    ///     match credit.call(customer).await {
    ///         Err(Error::WouldDeadlock { busy, .. }) => panic!("a bug: the chain holds {busy}"),
    ///         _ => Ok(()),
    ///     }
    /// }
    /// # fn main() {}
    /// ```
    WouldDeadlock {
        /// The nested call's operation.
        operation: &'static str,
        /// What its chain holds that it needed: the key (its value only
        /// with `show_key = true`), or the budget it needs more units of
        /// than the chain leaves.
        busy: Busy,
    },
}

/// Every field but the hidden one that picks the error's `source()`.
impl<E: fmt::Debug> fmt::Debug for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed {
                operation,
                outcome,
                attempts,
                source,
                chain: _,
            } => f
                .debug_struct("Failed")
                .field("operation", operation)
                .field("outcome", outcome)
                .field("attempts", attempts)
                .field("source", source)
                .finish(),
            Error::TimedOut {
                operation,
                timeout,
                attempts,
                outcome,
            } => f
                .debug_struct("TimedOut")
                .field("operation", operation)
                .field("timeout", timeout)
                .field("attempts", attempts)
                .field("outcome", outcome)
                .finish(),
            Error::Throttled {
                throttle,
                operation,
                busy,
                retry_after,
            } => f
                .debug_struct("Throttled")
                .field("throttle", throttle)
                .field("operation", operation)
                .field("busy", busy)
                .field("retry_after", retry_after)
                .finish(),
            Error::Stopping { operation } => f
                .debug_struct("Stopping")
                .field("operation", operation)
                .finish(),
            Error::DeadlineExceeded {
                operation,
                attempts,
                outcome,
            } => f
                .debug_struct("DeadlineExceeded")
                .field("operation", operation)
                .field("attempts", attempts)
                .field("outcome", outcome)
                .finish(),
            Error::WouldDeadlock { operation, busy } => f
                .debug_struct("WouldDeadlock")
                .field("operation", operation)
                .field("busy", busy)
                .finish(),
        }
    }
}

/// One line naming the operation and what happened; the handler's error is
/// the [`source`](std::error::Error::source), not part of the line.
impl<E> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Failed {
                operation,
                outcome,
                attempts,
                ..
            } => write!(f, "operation `{operation}` failed ({outcome}) after {attempts} attempt(s)"),
            Error::TimedOut {
                operation,
                timeout,
                attempts,
                outcome,
            } => write!(
                f,
                "operation `{operation}` timed out after {} ms on attempt {attempts} ({outcome})",
                timeout.as_millis()
            ),
            Error::Throttled {
                throttle,
                operation,
                busy,
                retry_after: None,
            } => write!(f, "operation `{operation}` throttled ({throttle}): {busy}"),
            Error::Throttled {
                throttle,
                operation,
                busy,
                retry_after: Some(after),
            } => write!(
                f,
                "operation `{operation}` throttled ({throttle}): {busy}; retry after {} ms",
                after.as_millis()
            ),
            Error::Stopping { operation } => {
                write!(f, "operation `{operation}` refused: the runtime is stopping")
            }
            Error::DeadlineExceeded {
                operation,
                attempts,
                outcome,
            } => write!(
                f,
                "operation `{operation}` missed its deadline after {attempts} attempt(s) ({outcome})"
            ),
            Error::WouldDeadlock { operation, busy } => {
                write!(f, "operation `{operation}` would deadlock: ")?;
                match busy {
                    Busy::Key {
                        parameter,
                        value: None,
                    } => write!(f, "its calling chain holds its key `{parameter}`"),
                    Busy::Key {
                        parameter,
                        value: Some(value),
                    } => write!(f, "its calling chain holds its key `{parameter}` = {value}"),
                    Busy::Resource { resource } => write!(
                        f,
                        "it needs more units of resource `{resource}` than its capacity \
                         leaves beside what its calling chain holds"
                    ),
                    other => write!(f, "its calling chain holds what it needs ({other})"),
                }
            }
        }
    }
}

/// A `std::error::Error` whenever the handler's error can be shown
/// (`Debug + Display`), so `?` works in functions returning
/// `anyhow::Result` or `Box<dyn Error + Send + Sync>`, whatever the handler's
/// error type. `source()` of `Failed` keeps the chain: the handler's error
/// itself when it is a `std::error::Error`, the error it holds when it is an
/// `anyhow::Error` or a `Box<dyn Error + Send + Sync>` (anything
/// `AsRef<dyn Error + Send + Sync>`), else none.
impl<E: fmt::Debug + fmt::Display + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Failed { source, chain, .. } => chain.of(source),
            _ => None,
        }
    }
}

impl<E> Error<E> {
    /// The outcome of the call: the last attempt's outcome for `Failed`,
    /// `TimedOut` and `DeadlineExceeded`, [`Outcome::Throttled`] for `Throttled`, and
    /// [`Outcome::Permanent`] for `Stopping` (this runtime will not run it)
    /// and `WouldDeadlock` (it would fail the same way again).
    pub fn outcome(&self) -> Outcome {
        match self {
            Error::Failed { outcome, .. }
            | Error::TimedOut { outcome, .. }
            | Error::DeadlineExceeded { outcome, .. } => *outcome,
            Error::Throttled { .. } => Outcome::Throttled,
            Error::Stopping { .. } | Error::WouldDeadlock { .. } => Outcome::Permanent,
        }
    }

    /// The operation's name.
    pub fn operation(&self) -> &'static str {
        match self {
            Error::Failed { operation, .. }
            | Error::TimedOut { operation, .. }
            | Error::Throttled { operation, .. }
            | Error::Stopping { operation }
            | Error::DeadlineExceeded { operation, .. }
            | Error::WouldDeadlock { operation, .. } => operation,
        }
    }

    /// How many attempts ran, as the error records them: 0 for `Stopping`
    /// and `WouldDeadlock` (nothing ran) and for `Throttled`, which also reads 0 in its one case
    /// where attempts did run (a retry that could not take its budgets back
    /// after a backoff sleep: see [`Error::Throttled`]).
    pub fn attempts(&self) -> u32 {
        match self {
            Error::Failed { attempts, .. }
            | Error::TimedOut { attempts, .. }
            | Error::DeadlineExceeded { attempts, .. } => *attempts,
            Error::Throttled { .. } | Error::Stopping { .. } | Error::WouldDeadlock { .. } => 0,
        }
    }

    /// Which limit throttled the call, for every error whose
    /// [`outcome`](Error::outcome) is `Throttled`: the `throttle` of
    /// `Throttled`, and [`Throttle::Dependency`] for `Failed` with outcome
    /// `Throttled` (the dependency pushed back). `None` for any other error.
    /// The same reason is the `throttle` label of the call's
    /// `herta_calls_total{outcome="throttled"}` (feature `metrics`).
    pub fn throttle(&self) -> Option<Throttle> {
        match self {
            Error::Throttled { throttle, .. } => Some(*throttle),
            Error::Failed {
                outcome: Outcome::Throttled,
                ..
            } => Some(Throttle::Dependency),
            _ => None,
        }
    }

    /// The handler's error, for `Failed`.
    pub fn handler_error(&self) -> Option<&E> {
        match self {
            Error::Failed { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The handler's error by value, for `Failed`.
    pub fn into_handler_error(self) -> Option<E> {
        match self {
            Error::Failed { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl<E: crate::outcome::Classify> Error<E> {
    /// How long to wait before trying again, when known: for `Throttled`,
    /// its `retry_after` (a rate budget's time until the units exist, a
    /// breaker's time left open); for `Failed`, the failing service's hint
    /// ([`Classify::retry_after`](crate::Classify::retry_after) of the
    /// handler's last error), what an HTTP service forwards as its own
    /// `Retry-After` when the call ended because the hint was above the
    /// backoff's `cap` or past the deadline. `None` otherwise.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Throttled { retry_after, .. } => *retry_after,
            _ => self
                .handler_error()
                .and_then(crate::outcome::Classify::retry_after),
        }
    }
}

/// How [`Error::Failed`] reaches the handler's error as a
/// `std::error::Error` source, chosen by the macro at the handler's
/// concrete error type (its probe is `__private::SourceProbe`): the error itself when it is a
/// `std::error::Error`; the error it holds when it is
/// `AsRef<dyn Error + Send + Sync>` (`anyhow::Error`,
/// `Box<dyn Error + Send + Sync>`); else none.
pub struct SourceOf<E>(pub(crate) fn(&E) -> Option<&(dyn std::error::Error + 'static)>);

impl<E> Clone for SourceOf<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for SourceOf<E> {}

impl<E> fmt::Debug for SourceOf<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SourceOf")
    }
}

impl<E> SourceOf<E> {
    /// The handler's error as a source, if it can be one.
    pub(crate) fn of<'a>(&self, error: &'a E) -> Option<&'a (dyn std::error::Error + 'static)> {
        (self.0)(error)
    }
}

/// How a handler error type reaches its `std::error::Error` source, as a
/// zero-sized type chosen by the macro (`__private::SourceProbe`), so that a
/// call carries nothing for it until an `Error::Failed` is built.
pub trait ErrorSource<E>: Copy {
    /// The handler's error as a source, if it can be one.
    fn source(error: &E) -> Option<&(dyn std::error::Error + 'static)>;

    /// The function `Error::Failed` keeps.
    fn source_of() -> SourceOf<E> {
        SourceOf(Self::source)
    }
}

/// `E: std::error::Error`: the error is the source.
#[derive(Debug, Clone, Copy)]
pub struct SourceIsError;
impl<E: std::error::Error + 'static> ErrorSource<E> for SourceIsError {
    fn source(error: &E) -> Option<&(dyn std::error::Error + 'static)> {
        Some(error)
    }
}

/// `E: AsRef<dyn Error + Send + Sync>` (`anyhow::Error`, a boxed error):
/// the error it holds is the source, so the chain is kept.
#[derive(Debug, Clone, Copy)]
pub struct SourceIsInner;
impl<E: AsRef<dyn std::error::Error + Send + Sync + 'static>> ErrorSource<E> for SourceIsInner {
    fn source(error: &E) -> Option<&(dyn std::error::Error + 'static)> {
        Some(error.as_ref())
    }
}

/// Any other `E`: no source.
#[derive(Debug, Clone, Copy)]
pub struct NoSource;
impl<E> ErrorSource<E> for NoSource {
    fn source(_: &E) -> Option<&(dyn std::error::Error + 'static)> {
        None
    }
}
