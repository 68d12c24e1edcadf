//! [`Resource`]: a named, weighted budget.

/// A named budget of `capacity` units, shared by every operation that names it.
///
/// Declare them with [`herta::resources!`](crate::resources) (compile-time
/// checked constants) or with [`Resource::new`] (the capacity may come from
/// configuration at run time), then hand them to
/// [`RuntimeBuilder::resource`](crate::RuntimeBuilder::resource). Invalid
/// values (empty name, capacity 0) are reported by
/// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) as a
/// [`ConfigError`](crate::ConfigError), never by a panic.
///
/// ```
/// use herta::{Resource, Runtime};
///
/// const WORKER: Resource = Resource::new("worker", 4);
/// let pool_size = 3; // from configuration
/// let rt = Runtime::builder()
///     .resource(WORKER)
///     .resource(Resource::new("db-write", pool_size))
///     .build()?;
/// assert_eq!(rt.stats().resources.len(), 2);
/// # Ok::<(), herta::ConfigError>(())
/// ```
///
/// Names are `&'static str` because contracts name resources statically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    name: &'static str,
    capacity: u32,
    queue_limit: Option<u32>,
}

impl Resource {
    /// A resource named `name` with `capacity` units (usable in `const`).
    pub const fn new(name: &'static str, capacity: u32) -> Self {
        Resource {
            name,
            capacity,
            queue_limit: None,
        }
    }

    /// The same resource with at most `limit` calls queued for it (usable in
    /// `const`; `resources!` writes it `= 4, queue = 64;`).
    ///
    /// A `Wait` call that would be waiter number `limit + 1` for this budget
    /// returns `Error::Throttled` at once, naming it, instead of queuing; a
    /// waiter that leaves the queue (granted, cancelled, or expired by its
    /// `max_wait` or deadline) frees its place at once. Without a limit the
    /// queue is unbounded. A limit of 0 is refused by
    /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) (use
    /// `admission = Reject` for calls that never queue).
    ///
    /// ```
    /// use herta::{Resource, Runtime};
    ///
    /// let rt = Runtime::builder()
    ///     .resource(Resource::new("db-write", 4).with_queue_limit(64))
    ///     .build()?;
    /// assert_eq!(rt.stats().resource("db-write").unwrap().queue_limit, Some(64));
    /// # Ok::<(), herta::ConfigError>(())
    /// ```
    pub const fn with_queue_limit(mut self, limit: u32) -> Self {
        self.queue_limit = Some(limit);
        self
    }

    /// The most calls that may queue for it, if limited.
    pub const fn queue_limit(&self) -> Option<u32> {
        self.queue_limit
    }

    /// The resource's name, as contracts refer to it.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// How many units calls may hold at once.
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }
}
