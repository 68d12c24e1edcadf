//! What a retry may cost, kept apart as tower's `retry/` keeps policy,
//! backoff and budget apart:
//!
//! * [`backoff`]: the delay before the next attempt (capped exponential, with
//!   jitter), computed without overflow for any attempt number;
//! * [`budget`]: the runtime-wide retry budget that stops retry storms;
//! * [`random`]: where jitter draws its randomness (seedable for tests).
//!
//! Whether an attempt is retried at all (the contract's `retry(on = …)`, the
//! effect × outcome table, `max`, a closing runtime, the deadline), and
//! after what (the backoff's delay or the server's hint, a token from the
//! retry budget), is decided in one place: the retry policy of the call's
//! attempts stage, which reads these three.

pub(crate) mod backoff;
pub(crate) mod budget;
pub(crate) mod random;

pub use backoff::{Backoff, Jitter};
pub use budget::RetryBudget;
