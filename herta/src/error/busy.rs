//! [`Busy`]: what a refused call found busy.

use std::fmt;

/// What a throttled call found busy (a `Reject` call), or was still
/// waiting for when its `max_wait` ran out, or found with a full queue;
/// for [`Error::WouldDeadlock`](super::Error::WouldDeadlock), what its calling chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Busy {
    /// A budget had no room for the call's units (or earlier waiters queue on it).
    Resource {
        /// The resource's name.
        resource: &'static str,
    },
    /// Another call with the same key was running or queued.
    Key {
        /// The `serialize_by` parameter whose value was busy.
        parameter: &'static str,
        /// The key's value, as its `Debug` output (at most 64 bytes: a
        /// longer one is cut at a character boundary and ends in `...`),
        /// only when the operation opts in with
        /// `serialize_by(param, show_key = true)`; else `None`.
        value: Option<String>,
    },
    /// The operation's circuit breaker was open (or half-open with every
    /// probe out): the call was refused before it queued for anything.
    Breaker {
        /// The breaker's name.
        breaker: &'static str,
    },
}

impl fmt::Display for Busy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Busy::Resource { resource } => write!(f, "resource `{resource}` has no room"),
            Busy::Key {
                parameter,
                value: None,
            } => write!(f, "the key `{parameter}` is busy"),
            Busy::Key {
                parameter,
                value: Some(value),
            } => write!(f, "the key `{parameter}` = {value} is busy"),
            Busy::Breaker { breaker } => write!(
                f,
                "circuit breaker `{breaker}` is open (or half-open with every probe out)"
            ),
        }
    }
}
