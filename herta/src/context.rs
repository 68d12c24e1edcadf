//! [`Context`]: what a handler may know about the attempt it runs in.

use tokio::time::Instant;

/// The attempt a handler is running in.
///
/// Declare it as the **first** parameter of an operation to receive it; it is
/// not a parameter of the generated `call`:
///
/// ```
/// use herta::{Context, Failure};
///
/// #[herta::operation(effect = Idempotent, resources("worker" = 1),
///                    retry(on = Transient, max = 3), timeout = "2s")]
/// async fn render(ctx: Context, job: String) -> Result<String, Failure<String>> {
///     Ok(format!("{job} (attempt {} of {})", ctx.attempt(), ctx.max_attempts()))
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    pub(crate) operation: &'static str,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) deadline: Option<Instant>,
    /// The call's deadline (the contract's `deadline` and the enclosing
    /// scope, the earliest), without the attempt's `timeout`: the scope a
    /// contract that declares `deadline` runs its handler in (see
    /// `herta::__private::within_call_deadline`).
    pub(crate) call_deadline: Option<Instant>,
}

impl Context {
    /// The operation's name (the function name, or `name = "..."`).
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// This attempt's number, starting at 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The most attempts this call may make (`retry(max = …)`, else 1).
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// When this attempt must end (tokio clock): the earlier of its
    /// `timeout` (each attempt gets a fresh one) and the call's deadline
    /// (the contract's `deadline`, or an enclosing
    /// [`herta::deadline`](crate::deadline) scope). `None` when neither
    /// applies.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}
