//! Items the macros expand to. Not public API: no stability promise.
#![doc(hidden)]

use std::fmt;
use std::hash::Hash;

pub use crate::call::Bound;
pub use std::time::Duration;

use crate::outcome::{Classify, Outcome};

/// The `Ok` and `Err` types of a handler's return type, so aliases such as
/// `io::Result<T>` work.
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

/// A parameter of a retried operation: cloned for every attempt.
#[diagnostic::on_unimplemented(
    message = "retried operations clone their parameters for every attempt, but `{Self}` is not `Clone`",
    label = "this parameter is not `Clone`",
    note = "derive or implement `Clone` for it, pass it behind an `Arc`, or remove `retry(...)` from the contract"
)]
pub trait RetryArg: Clone {}
impl<T: Clone> RetryArg for T {}

/// Clones a parameter for one more attempt.
#[inline]
pub fn retry_arg<T: RetryArg>(value: &T) -> T {
    value.clone()
}

/// A `serialize_by` key: stored in the runtime's key table while the call holds it.
#[diagnostic::on_unimplemented(
    message = "`serialize_by` needs a key that is `Hash + Eq + Send + Sync + 'static`, but `{Self}` is not",
    label = "this parameter cannot be a serialization key",
    note = "serialize by an owned value such as a `String` or an id, or implement `Hash` and `Eq` for it"
)]
pub trait KeyBound: Hash + Eq + Send + Sync + 'static {}
impl<T: Hash + Eq + Send + Sync + 'static> KeyBound for T {}

/// Marker key type for operations without `serialize_by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoKey {}

/// Autoref probe: `(&Probe(&value)).__herta_outcome()` uses [`Classify`] when
/// the type implements it and `Permanent` otherwise; likewise
/// `__herta_describe` uses `Debug` when available.
pub struct Probe<'a, T>(pub &'a T);

/// Chosen when the probed type implements the capability.
pub trait ViaTrait {
    /// The classification.
    fn __herta_outcome(&self) -> Outcome;
}
impl<T: Classify> ViaTrait for Probe<'_, T> {
    #[inline]
    fn __herta_outcome(&self) -> Outcome {
        self.0.outcome()
    }
}

/// Chosen when it does not.
pub trait ViaDefault {
    /// The fallback classification.
    fn __herta_outcome(&self) -> Outcome;
}
impl<T> ViaDefault for &Probe<'_, T> {
    #[inline]
    fn __herta_outcome(&self) -> Outcome {
        Outcome::Permanent
    }
}

/// Describing a key with `Debug`.
pub trait DescribeViaDebug {
    /// The key as text.
    fn __herta_describe(&self) -> String;
}
impl<T: fmt::Debug> DescribeViaDebug for Probe<'_, T> {
    fn __herta_describe(&self) -> String {
        let mut s = format!("{:?}", self.0);
        if s.len() > 64 {
            let mut cut = 61;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("...");
        }
        s
    }
}

/// Describing a key without `Debug`: its type name.
pub trait DescribeViaType {
    /// The key's type, as text.
    fn __herta_describe(&self) -> String;
}
impl<T> DescribeViaType for &Probe<'_, T> {
    fn __herta_describe(&self) -> String {
        format!("of type `{}`", std::any::type_name::<T>())
    }
}
