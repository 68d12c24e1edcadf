//! Items the macros expand to. Not public API: no stability promise.
#![doc(hidden)]

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;

pub use crate::call::Bound;
pub use std::time::Duration;

use crate::contract::{Contract, KeySpec, ResourceUse};
use crate::error::BindError;
use crate::outcome::{Admission, Classify, Effect, Outcome};
use crate::runtime::Runtime;

/// A contract, field by field: what `#[herta::operation]` writes as
/// `CONTRACT`, by name, so the generated code and [`Contract`] cannot
/// disagree on the order of its parts.
#[derive(Debug, Clone, Copy)]
pub struct ContractFields {
    /// The operation's name.
    pub operation: &'static str,
    /// The declared effect.
    pub effect: Effect,
    /// The admission mode.
    pub admission: Admission,
    /// The budgets one call holds.
    pub resources: &'static [ResourceUse],
    /// The outcomes retried (empty: no retry).
    pub retry_on: &'static [Outcome],
    /// The most attempts, the first included (1: no retry).
    pub max_attempts: u32,
    /// The per-attempt timeout.
    pub timeout: Option<Duration>,
    /// The serialization key, if any.
    pub serialize_by: Option<KeySpec>,
    /// The delay between attempts, if declared.
    pub backoff: Option<crate::retry::Backoff>,
    /// The longest wait for key and budgets together, from admission.
    pub max_wait: Option<Duration>,
    /// The whole-call deadline, from admission.
    pub deadline: Option<Duration>,
}

impl ContractFields {
    /// The [`Contract`] these fields declare.
    pub const fn into_contract(self) -> Contract {
        Contract::from_fields(self)
    }
}

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

/// The state type of a wrapper type of an operation with state: its
/// `state` field is `Arc<<Self as WrapperState>::State>`, so its
/// declaration names no type of the user's (as [`WrapperKey`]).
pub trait WrapperState {
    /// The state type.
    type State: ?Sized;
}

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

/// The `serialize_by` key type of a wrapper type (`NoKey` without one):
/// the wrapper's `bound` field is `Bound<<Self as WrapperKey>::Key>`, so
/// its declaration names no type of the user's.
pub trait WrapperKey {
    /// The key type.
    type Key: 'static;
}

/// How [`Error::Failed`](crate::Error::Failed) reaches the handler's error
/// as a `std::error::Error` source, chosen by the macro at the handler's
/// concrete error type (see [`SourceProbe`]): the error itself when it is a
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
/// zero-sized type chosen by the macro (see [`SourceProbe`]), so that a
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

/// What `#[herta::contract]` says about a contract beyond its [`Contract`]
/// value, as types, so that the tower layer's bounds can check it: whether
/// it declares `serialize_by` ([`Keyed`] or [`Unkeyed`]) and whether it
/// retries ([`Retried`] or [`OneAttempt`]).
pub trait ContractParts {
    /// [`Keyed`] or [`Unkeyed`].
    type Keying;
    /// [`Retried`] or [`OneAttempt`].
    type Requests;
}

/// A contract that declares `serialize_by`.
#[derive(Debug)]
pub enum Keyed {}

/// A contract without `serialize_by`.
#[derive(Debug)]
pub enum Unkeyed {}

/// `ContractLayer::bind`'s requirement: the contract declares no key.
#[diagnostic::on_unimplemented(
    message = "this contract declares `serialize_by`, so every request needs a key",
    label = "a keyed contract",
    note = "bind it with `ContractLayer::bind_keyed(&runtime, |request: &Req| key)`, which computes each request's key"
)]
pub trait NoKeyDeclared {}
impl NoKeyDeclared for Unkeyed {}

/// `ContractLayer::bind_keyed`'s requirement: the contract declares a key.
#[diagnostic::on_unimplemented(
    message = "this contract declares no `serialize_by`, so a key function would never be used",
    label = "a contract without a key",
    note = "bind it with `ContractLayer::bind(&runtime)`, or add `serialize_by = <key name>` to the contract"
)]
pub trait KeyDeclared {}
impl KeyDeclared for Keyed {}

/// A contract that retries: every attempt gets its own request.
#[derive(Debug)]
pub enum Retried {}

/// A contract that makes one attempt.
#[derive(Debug)]
pub enum OneAttempt {}

/// A request of type `Req` for one more attempt of a contract's call:
/// `Retried` clones it (so `Req: Clone`), `OneAttempt` never makes another.
#[diagnostic::on_unimplemented(
    message = "this contract retries, so each attempt needs its own request, but `{Req}` is not `Clone`",
    label = "requests of this service are not `Clone`",
    note = "implement `Clone` for the request (e.g. a small struct the inner service turns into an HTTP request), or remove `retry(...)` from the contract"
)]
pub trait RequestCopy<Req> {
    /// A copy of `request` for the next attempt.
    fn copy(request: &Req) -> Req;
}

impl<Req> RequestCopy<Req> for OneAttempt {
    fn copy(_: &Req) -> Req {
        unreachable!("a contract without retry makes one attempt")
    }
}

#[diagnostic::do_not_recommend]
impl<Req: Clone> RequestCopy<Req> for Retried {
    #[inline]
    fn copy(request: &Req) -> Req {
        request.clone()
    }
}
