//! [`Resource`]: a named, weighted budget: concurrency (units held while
//! a call runs) or rate (units per period, consumed).

use std::time::Duration;

use crate::error::ConfigError;

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
///
/// A **rate budget** ([`Resource::rate`]) grants at most `count` units per
/// `period`, at most `burst` at once: its units are consumed by each
/// attempt, never given back, and taken in the same all-or-nothing grant
/// as the call's concurrency budgets (see [`Resource::rate`] and the
/// [limits guide](crate::guide)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    name: &'static str,
    /// Units at once: the capacity, or a rate budget's burst.
    capacity: u32,
    queue_limit: Option<u32>,
    /// A rate budget's units per period and period; `None`: concurrency.
    rate: Option<(u32, Duration)>,
    /// `with_burst` was called (on a concurrency budget: refused at build).
    burst_set: bool,
}

impl Resource {
    /// A resource named `name` with `capacity` units (usable in `const`).
    pub const fn new(name: &'static str, capacity: u32) -> Self {
        Resource {
            name,
            capacity,
            queue_limit: None,
            rate: None,
            burst_set: false,
        }
    }

    /// A rate budget named `name`: at most `count` units granted per
    /// `period`, at most `count` at once after an idle spell (change it
    /// with [`with_burst`](Self::with_burst)). It starts full.
    ///
    /// Contracts name it like any budget (`resources(API = 1)`); each
    /// attempt of a call consumes its units, in the same all-or-nothing
    /// grant as its concurrency budgets: nothing is consumed while the call
    /// waits for a slot, and no slot is held while it waits for units. Over
    /// any interval `T`, at most `burst + count × T / period` units are
    /// granted (exact: GCRA in integer ticks on tokio's clock, no rounding,
    /// no drift; see [limits](crate::guide::limits)). A
    /// `Reject` call finding no units gets `Error::Throttled` with
    /// `retry_after()` the time until they exist; a `Wait` call queues and
    /// is woken by a timer at that instant, or fails at once when that
    /// instant is past its `max_wait` or deadline. Long periods are valid:
    /// `Resource::rate("daily", 1000, Duration::from_secs(86_400))` is a
    /// daily quota.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ZeroRate`] for a `count` of 0, [`ConfigError::ZeroPeriod`]
    /// for a zero `period`; never panics.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herta::{Resource, Runtime};
    ///
    /// let api = Resource::rate("api", 100, Duration::from_secs(1))?.with_burst(10);
    /// let rt = Runtime::builder().resource(api).build()?;
    /// let stats = rt.stats();
    /// let api = stats.resource("api").unwrap();
    /// assert_eq!((api.capacity, api.available), (10, 10));
    /// # Ok::<(), herta::ConfigError>(())
    /// ```
    pub fn rate(name: &'static str, count: u32, period: Duration) -> Result<Self, ConfigError> {
        if count == 0 {
            return Err(ConfigError::ZeroRate {
                resource: name.to_owned(),
            });
        }
        if period.is_zero() {
            return Err(ConfigError::ZeroPeriod {
                resource: name.to_owned(),
            });
        }
        Ok(Self::rate_unchecked(name, count, period))
    }

    /// [`rate`](Self::rate) without its checks, for `resources!`' constants
    /// (the macro checks `count` and `period` at compile time; a zero one
    /// is refused by [`RuntimeBuilder::build`](crate::RuntimeBuilder::build)).
    #[doc(hidden)]
    pub const fn rate_unchecked(name: &'static str, count: u32, period: Duration) -> Self {
        Resource {
            name,
            capacity: count,
            queue_limit: None,
            rate: Some((count, period)),
            burst_set: false,
        }
    }

    /// The same rate budget with at most `burst` units at once (usable in
    /// `const`; `resources!` writes it `= 100 per "1s", burst = 10;`): an
    /// idle bucket fills up to `burst` (or up to what accrues in 2⁶¹ ticks,
    /// if refilling `burst` would take longer: see
    /// [limits](crate::guide::limits)), and a contract needing more units
    /// than `burst` per call does not bind. A burst of 0, or a burst given
    /// to a concurrency budget, is refused by
    /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build).
    pub const fn with_burst(mut self, burst: u32) -> Self {
        self.capacity = burst;
        self.burst_set = true;
        self
    }

    /// A rate budget's units per period and its period; `None` for a
    /// concurrency budget.
    pub const fn rate_of(&self) -> Option<(u32, Duration)> {
        self.rate
    }

    /// Whether `with_burst` was given to a concurrency budget.
    pub(crate) const fn burst_without_rate(&self) -> bool {
        self.burst_set && self.rate.is_none()
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

    /// How many units calls may hold at once; a rate budget's burst (the
    /// most units it grants at once).
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }
}
