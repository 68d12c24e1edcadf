//! Items the macros expand to. Not public API: no stability promise.
//!
//! A facade: re-exports of the runtime's items the generated code names,
//! and the items that exist only for it (the bound traits whose
//! `on_unimplemented` messages are the macro's errors, and the autoref
//! probes).
#![doc(hidden)]

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;

pub use crate::call::Bound;
pub use crate::contract::{ContractFields, ContractParts, Keyed, OneAttempt, Retried, Unkeyed};
pub use crate::error::{ErrorSource, NoSource, SourceIsError, SourceIsInner, SourceOf};
pub use crate::keys::NoKey;
pub use crate::outcome::HandlerOutput;
#[cfg(feature = "tower")]
pub use crate::tower::keying::{KeyDeclared, NoKeyDeclared};
#[cfg(feature = "tower")]
pub use crate::tower::service::RequestCopy;
pub use std::time::Duration;

use crate::contract::Contract;
use crate::error::BindError;
use crate::outcome::{Classify, Outcome};
use crate::runtime::Runtime;

/// Clones a parameter of type `T` of a retried operation for one more
/// attempt: implemented by [`Retry`] for every `T: Clone`.
///
/// Generic over `T` with an uninhabited `Self`, like [`KeyBound`], so that
/// rustc reports this trait's message for `Vec<Job>` as well as for `Job`
/// (not only "`Job: Clone` is not satisfied"), on the parameter's type.
#[diagnostic::on_unimplemented(
    message = "retried operations clone their parameters for every attempt, but `{T}` is not `Clone`",
    label = "this parameter is not `Clone`",
    note = "derive or implement `Clone` for `{T}` if it is your type (and for the types it contains), pass it behind an `Arc`, take `&T` instead of `&mut T` (a mutable borrow cannot be given to every attempt), or remove `retry(...)` from the contract"
)]
pub trait RetryArg<T> {
    /// A copy of `value` for the next attempt.
    fn retry_arg(value: &T) -> T;
}

/// The implementor of [`RetryArg`].
#[derive(Debug)]
pub enum Retry {}

#[diagnostic::do_not_recommend]
impl<T: Clone> RetryArg<T> for Retry {
    #[inline]
    fn retry_arg(value: &T) -> T {
        value.clone()
    }
}

/// The error type of an operation that retries must say which failures are
/// worth retrying, unless the contract retries its timeouts: implemented by
/// [`Classified`] for every `E: Classify`. Without `Classify` every failure
/// is `Permanent`, so the `retry(...)` could never fire — the contract would
/// promise retries it never makes. (A `timeout` is `Transient` for Pure and
/// Idempotent operations, so with `timeout` and `on` listing `Transient` the
/// retry is meaningful whatever `E` is; a NonIdempotent timeout is
/// `Uncertain`, which it may never retry.)
#[diagnostic::on_unimplemented(
    message = "this operation retries, but its error type `{E}` does not implement `herta::Classify`, so every failure is Permanent and no retry would ever happen",
    label = "this error type does not say which failures are worth retrying",
    note = "return `herta::Failure<{E}>` (e.g. `Failure::transient(e)`), derive `herta::Classify` on your error enum, for a Pure or Idempotent operation add a `timeout` and retry `Transient` (its timeouts are Transient), or remove `retry(...)`"
)]
pub trait RetryClassify<E> {
    /// The outcome of `error`.
    fn retry_outcome(error: &E) -> Outcome;
}

/// The implementor of [`RetryClassify`].
#[derive(Debug)]
pub enum Classified {}

#[diagnostic::do_not_recommend]
impl<E: Classify> RetryClassify<E> for Classified {
    #[inline]
    fn retry_outcome(error: &E) -> Outcome {
        error.outcome()
    }
}

/// Binds an operation whose `serialize_by` key type is `K`: implemented by
/// [`SerializeBy`] for every `K` that is `Clone + Hash + Eq + Send + Sync +
/// 'static`. `Clone` because the key table keeps its own copy of the key
/// parameter (a borrowed `&str`, `&[T]` or `&Path` is made owned with
/// `ToOwned`).
///
/// The generated `bind` calls `<SerializeBy as KeyBound<K>>::bind`: the only
/// item of the wrapper that needs the key bounds (`Bound::call` compiles for
/// any `K`), so a key type that is not one is exactly one error, spanned on
/// the key parameter's type. The trait is generic over `K`, with an
/// uninhabited `Self`, so that rustc reports this trait's message rather than
/// the first missing bound (`do_not_recommend`), and does not suggest
/// borrowing the key (which a bound on `K` itself would invite whenever `&K`
/// satisfies it).
#[diagnostic::on_unimplemented(
    message = "`serialize_by` needs a key that is `Clone + Hash + Eq + Send + Sync + 'static`, but `{K}` is not",
    label = "this parameter cannot be a serialization key",
    note = "serialize by a value such as a `String` or an integer id (a float is not `Eq` or `Hash`: use its bits, `f64::to_bits`), or, for a type of your own, derive `Clone, PartialEq, Eq, Hash` for `{K}`"
)]
pub trait KeyBound<K: 'static> {
    /// `Bound::bind`, for a key type known to be a key.
    fn bind(
        runtime: &Runtime,
        contract: &'static Contract,
        describe_key: fn(&K) -> String,
    ) -> Result<Bound<K>, BindError>;
}

/// The implementor of [`KeyBound`].
#[derive(Debug)]
pub enum SerializeBy {}

#[diagnostic::do_not_recommend]
impl<K: Clone + Hash + Eq + Send + Sync + 'static> KeyBound<K> for SerializeBy {
    #[inline]
    fn bind(
        runtime: &Runtime,
        contract: &'static Contract,
        describe_key: fn(&K) -> String,
    ) -> Result<Bound<K>, BindError> {
        Bound::bind(runtime, contract, describe_key)
    }
}

/// Shares the state of an operation with state (`#[state] name: &T`):
/// implemented by [`SharedState`] for every `T: Send + Sync + 'static`.
/// The generated `bind_with` calls `<SharedState as StateBound<T>>::share`
/// on the state, so a state type that is not thread-safe is one error,
/// spanned on the state parameter's type (as [`KeyBound`] does for keys).
#[diagnostic::on_unimplemented(
    message = "the state of an operation is shared by every call, on any thread, for as long as it is bound, so it must be `Send + Sync + 'static`, but `{T}` is not",
    label = "this state type is not `Send + Sync`",
    note = "make `{T}` thread-safe: an `Arc` instead of an `Rc`, a `Mutex`, an `RwLock` or an atomic instead of a `RefCell` or a `Cell`"
)]
pub trait StateBound<T: ?Sized> {
    /// The state, unchanged: the check is the bound.
    fn share(state: std::sync::Arc<T>) -> std::sync::Arc<T>;
}

/// The implementor of [`StateBound`].
#[derive(Debug)]
pub enum SharedState {}

#[diagnostic::do_not_recommend]
impl<T: ?Sized + Send + Sync + 'static> StateBound<T> for SharedState {
    #[inline]
    fn share(state: std::sync::Arc<T>) -> std::sync::Arc<T> {
        state
    }
}

/// A handler's attempt run in a [`herta::deadline`](crate::deadline)
/// scope of its call's deadline (`ctx`'s, the contract's `deadline` and the
/// enclosing scope, the earliest), so that calls it makes inherit it. The
/// generated `call` wraps the handler in this only when the contract
/// declares `deadline`. Cancel safety: dropping it drops `handler`.
#[inline]
pub fn within_call_deadline<F: std::future::Future>(
    ctx: crate::Context,
    handler: F,
) -> impl std::future::Future<Output = F::Output> {
    crate::deadline::within(ctx.call_deadline, handler)
}

/// The state type of a wrapper type of an operation with state: its
/// `state` field is `Arc<<Self as WrapperState>::State>`, so its
/// declaration names no type of the user's (as [`WrapperKey`]).
pub trait WrapperState {
    /// The state type.
    type State: ?Sized;
}

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

/// The retry hint of an error that implements [`Classify`].
pub trait HintViaTrait {
    /// [`Classify::retry_after`].
    fn __herta_retry_after(&self) -> Option<Duration>;
}
impl<T: Classify> HintViaTrait for Probe<'_, T> {
    #[inline]
    fn __herta_retry_after(&self) -> Option<Duration> {
        self.0.retry_after()
    }
}

/// No hint from an error that does not.
pub trait HintViaDefault {
    /// Always `None`.
    fn __herta_retry_after(&self) -> Option<Duration>;
}
impl<T> HintViaDefault for &Probe<'_, T> {
    #[inline]
    fn __herta_retry_after(&self) -> Option<Duration> {
        None
    }
}

/// A field marked `#[retry_after]` in `#[derive(Classify)]`: a `Duration`
/// or an `Option<Duration>`.
#[diagnostic::on_unimplemented(
    message = "a `#[retry_after]` field must be a `Duration` or an `Option<Duration>`, not `{Self}`",
    label = "not a `std::time::Duration`",
    note = "store the hint as `std::time::Duration` (or `Option<Duration>` when the server may not send one)"
)]
pub trait RetryAfterField {
    /// The hint.
    fn retry_after_hint(&self) -> Option<Duration>;
}

impl RetryAfterField for Duration {
    #[inline]
    fn retry_after_hint(&self) -> Option<Duration> {
        Some(*self)
    }
}

impl RetryAfterField for Option<Duration> {
    #[inline]
    fn retry_after_hint(&self) -> Option<Duration> {
        *self
    }
}

/// Describing a key with `Debug`.
pub trait DescribeViaDebug {
    /// The key as text.
    fn __herta_describe(&self) -> String;
}
impl<T: fmt::Debug> DescribeViaDebug for Probe<'_, T> {
    fn __herta_describe(&self) -> String {
        crate::keys::describe(self.0)
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

/// The `serialize_by` key type of a wrapper type (`NoKey` without one):
/// the wrapper's `bound` field is `Bound<<Self as WrapperKey>::Key>`, so
/// its declaration names no type of the user's.
pub trait WrapperKey {
    /// The key type.
    type Key: 'static;
}

/// Autoref specialization at the handler's error type `E`:
/// `(&&&SourceProbe::<E>::new()).__herta_source()` picks the first of
/// [`SourceViaError`], [`SourceViaAsRef`], [`SourceViaNone`] that applies.
pub struct SourceProbe<E>(PhantomData<E>);

impl<E> SourceProbe<E> {
    /// A probe for `E`.
    pub const fn new() -> Self {
        SourceProbe(PhantomData)
    }
}

impl<E> Default for SourceProbe<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// `E: std::error::Error`.
pub trait SourceViaError {
    /// The source kind.
    fn __herta_source(&self) -> SourceIsError;
}
impl<E: std::error::Error + 'static> SourceViaError for &&SourceProbe<E> {
    fn __herta_source(&self) -> SourceIsError {
        SourceIsError
    }
}

/// `E: AsRef<dyn Error + Send + Sync>`.
pub trait SourceViaAsRef {
    /// The source kind.
    fn __herta_source(&self) -> SourceIsInner;
}
impl<E: AsRef<dyn std::error::Error + Send + Sync + 'static>> SourceViaAsRef for &SourceProbe<E> {
    fn __herta_source(&self) -> SourceIsInner {
        SourceIsInner
    }
}

/// Any other `E`.
pub trait SourceViaNone {
    /// The source kind.
    fn __herta_source(&self) -> NoSource;
}
impl<E> SourceViaNone for SourceProbe<E> {
    fn __herta_source(&self) -> NoSource {
        NoSource
    }
}
