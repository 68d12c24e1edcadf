//! The [`Operation`] trait implemented by every generated wrapper type.

use std::future::Future;

use crate::{BindError, Contract, Error, Runtime};

/// An operation bound to a runtime: the type `#[herta::operation]` generates.
///
/// Generic code (a tower `Service` adapter, test helpers) uses any operation
/// through this trait. The wrapper also has inherent `NAME`, `CONTRACT`,
/// `bind` and `call(args…)` items, which is what application code uses.
///
/// The trait is implemented when every parameter of the function (apart from
/// a leading [`Context`](crate::Context)) is an owned type, so that the
/// arguments form the tuple [`Operation::Args`], and the operation has no
/// `#[state]` (its [`bind`](Operation::bind) takes no state; see
/// [operations that own state](crate::guide::state)).
///
/// ```
/// use herta::{Failure, Operation, Runtime, Resource};
///
/// #[herta::operation(effect = Pure, resources("cpu" = 1))]
/// async fn add(a: u32, b: u32) -> Result<u32, Failure<String>> { Ok(a + b) }
///
/// async fn call_any<O: Operation>(op: &O, args: O::Args) -> Option<O::Output> {
///     op.call_with(args).await.ok()
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let rt = Runtime::builder().resource(Resource::new("cpu", 2)).build().unwrap();
/// let op = Add::bind(&rt).unwrap();
/// assert_eq!(call_any(&op, (2, 3)).await, Some(5));
/// # }
/// ```
pub trait Operation: Clone + Send + Sync + Sized + 'static {
    /// The operation's name (the function's, or `name = "..."`).
    const NAME: &'static str;
    /// The declared policy.
    const CONTRACT: Contract;
    /// The call's arguments as a tuple, in declaration order.
    type Args: Send;
    /// The handler's success value.
    type Output;
    /// The handler's error type.
    type Error;

    /// Checks the contract against `runtime` and binds it (see [`BindError`]).
    ///
    /// # Panics
    ///
    /// If this binding would be the 65 537th distinct set of resources
    /// (names with their units) bound to `runtime`.
    fn bind(runtime: &Runtime) -> Result<Self, BindError>;

    /// Calls the operation with its arguments as a tuple.
    fn call_with(
        &self,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, Error<Self::Error>>> + Send + '_;
}
