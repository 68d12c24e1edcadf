//! [`ConfigError`]: why a runtime could not be built.

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No resource was declared. A runtime arbitrates budgets, so it needs at
    /// least one; operations themselves may name none.
    #[error("a runtime needs at least one resource; add one with `.resource(Resource::new(\"worker\", 4))`")]
    NoResources,
    /// A resource has an empty name.
    #[error("a resource name must not be empty")]
    EmptyName,
    /// A resource has capacity 0, so nothing could ever run on it.
    #[error("resource `{resource}` has capacity 0; a budget needs at least 1 unit")]
    ZeroCapacity {
        /// The resource's name.
        resource: String,
    },
    /// Two resources share a name.
    #[error("resource `{resource}` is declared twice; resource names must be unique")]
    DuplicateResource {
        /// The repeated name.
        resource: String,
    },
    /// A resource has a queue limit of 0, so every call that has to wait
    /// would be refused: that is `admission = Reject`.
    #[error("resource `{resource}` has a queue limit of 0; give it at least 1, or use `admission = Reject` for calls that never queue")]
    ZeroQueueLimit {
        /// The resource's name.
        resource: String,
    },
    /// A rate budget of 0 units per period: no call could ever be granted.
    #[error("rate budget `{resource}` grants 0 units per period; give it at least 1")]
    ZeroRate {
        /// The resource's name.
        resource: String,
    },
    /// A rate budget with a zero period.
    #[error("rate budget `{resource}` has a zero period; give it a period of at least 1 ns (`\"1s\"`, `\"24h\"`)")]
    ZeroPeriod {
        /// The resource's name.
        resource: String,
    },
    /// `with_burst` on a concurrency budget (its capacity is its burst).
    #[error("resource `{resource}` is a concurrency budget, which has no burst; set its capacity with `Resource::new`, or declare a rate with `Resource::rate`")]
    BurstWithoutRate {
        /// The resource's name.
        resource: String,
    },
    /// A breaker's values cannot make a breaker (a rate outside 1–100,
    /// `min_calls` or `probes` 0, a window shorter than its buckets, …).
    #[error("breaker `{breaker}` is invalid: {reason}")]
    InvalidBreaker {
        /// The breaker's name.
        breaker: String,
        /// What is wrong, and the valid range.
        reason: String,
    },
    /// Two breakers share a name.
    #[error("breaker `{breaker}` is declared twice; breaker names must be unique")]
    DuplicateBreaker {
        /// The repeated name.
        breaker: String,
    },
}
