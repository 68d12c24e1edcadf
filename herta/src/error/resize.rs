//! [`ResizeError`]: why a live change of a budget was refused.

/// Why [`Runtime::set_capacity`](crate::Runtime::set_capacity) or
/// [`Runtime::set_queue_limit`](crate::Runtime::set_queue_limit) refused a
/// change. Nothing changed: the budget keeps its capacity, its queue limit,
/// its holders and its queue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResizeError {
    /// The runtime declares no resource of that name.
    #[error(
        "resource `{resource}` is not declared by this runtime{}",
        suggestion.as_ref().map_or_else(
            || "; only resources given to `Runtime::builder().resource(..)` can be changed".to_owned(),
            |s| format!("; did you mean `{s}`?"),
        )
    )]
    UnknownResource {
        /// The name given.
        resource: String,
        /// The closest declared name, if one is close.
        suggestion: Option<String>,
    },
    /// An operation bound to the runtime needs more units of the resource
    /// than the new capacity: its calls could never be granted, so the
    /// capacity never shrinks below the largest need of a bound operation.
    #[error(
        "cannot set the capacity of resource `{resource}` to {capacity}: operation \
         `{operation}` needs {units} units of it per call; keep the capacity at {units} or more"
    )]
    BelowNeed {
        /// The resource's name.
        resource: &'static str,
        /// The capacity asked for.
        capacity: u32,
        /// The first operation bound with the largest need.
        operation: &'static str,
        /// Its units per call.
        units: u32,
    },
    /// A capacity of 0: no call could ever be granted.
    #[error(
        "cannot set the capacity of resource `{resource}` to 0; a budget needs at least 1 unit \
         (to stop admitting calls, use `Runtime::close`)"
    )]
    ZeroCapacity {
        /// The resource's name.
        resource: &'static str,
    },
    /// A queue limit of 0: every call that has to wait would be refused.
    #[error(
        "cannot set the queue limit of resource `{resource}` to 0; give it at least 1, or \
         `None` for no limit (calls that must never queue use `admission = Reject`)"
    )]
    ZeroQueueLimit {
        /// The resource's name.
        resource: &'static str,
    },
    /// The setter does not fit the resource's kind: `set_capacity` of a
    /// rate budget (use `set_rate`, whose burst is its capacity) or
    /// `set_rate` of a concurrency budget.
    #[error(
        "resource `{resource}` is a {} budget; change it with `Runtime::{}`",
        if *rate { "rate" } else { "concurrency" },
        if *rate { "set_rate" } else { "set_capacity" }
    )]
    WrongKind {
        /// The resource's name.
        resource: &'static str,
        /// Whether it is a rate budget.
        rate: bool,
    },
    /// A rate of 0 units, a zero period or a burst of 0.
    #[error(
        "cannot set the rate of resource `{resource}` to {count} per {period:?} with burst {burst}; \
         the count, the period and the burst must not be 0"
    )]
    ZeroRate {
        /// The resource's name.
        resource: &'static str,
        /// The count asked for.
        count: u32,
        /// The period asked for.
        period: std::time::Duration,
        /// The burst asked for.
        burst: u32,
    },
}
