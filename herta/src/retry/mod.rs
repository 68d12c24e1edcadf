//! What a retry may cost, kept apart as tower's `retry/` keeps policy,
//! backoff and budget apart:
//!
//! * [`backoff`]: the delay before the next attempt (capped exponential, with
//!   jitter), computed without overflow for any attempt number;
//! * [`budget`]: the runtime-wide retry budget that stops retry storms;
//! * [`random`]: where jitter draws its randomness (seedable for tests).
//!
//! Whether an attempt is retried at all (the contract's `retry(on = …)`, the
//! effect × outcome table, `max`, a closing runtime) is decided in one place,
//! the attempts stage of the call.

pub(crate) mod backoff;
pub(crate) mod budget;
pub(crate) mod random;

pub use backoff::{Backoff, Jitter};
pub use budget::RetryBudget;
