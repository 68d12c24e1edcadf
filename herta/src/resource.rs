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
}

impl Resource {
    /// A resource named `name` with `capacity` units (usable in `const`).
    pub const fn new(name: &'static str, capacity: u32) -> Self {
        Resource { name, capacity }
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
