//! [`Breaker`]: a named circuit breaker, shared by every operation that
//! names it (`breaker = PAYMENTS` in its contract).
//!
//! Its window is a span of time (`window.rs`) or the last N attempts
//! (`ring.rs`).
//!
//! Declared like a budget, with [`herta::breakers!`](crate::breakers) or
//! [`Breaker::new`], and given to the runtime with
//! [`RuntimeBuilder::breaker`](crate::RuntimeBuilder::breaker); each runtime
//! keeps its own state ([`circuit`]). The rules (what counts as a failure,
//! the states, the refusal) are in the guide's
//! [breakers page](crate::guide::breakers); the call stage that applies
//! them is `call/breaker.rs`.

pub(crate) mod circuit;
mod closed;
pub(crate) mod declaration;
#[cfg(all(test, loom))]
mod loom_tests;
pub(crate) mod report;
pub(crate) mod ring;
#[cfg(all(test, not(loom)))]
mod tests;
pub(crate) mod ticket;
pub(crate) mod window;
