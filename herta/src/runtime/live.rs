//! Live capacity: [`Runtime::set_capacity`] and [`Runtime::set_queue_limit`],
//! a budget changed while calls run (the arbiter's `resize.rs` keeps the
//! units exact).

use super::Runtime;
use crate::error::ResizeError;
use crate::events;
use crate::resource::Resource;

impl Runtime {
    /// Sets the capacity of resource `name` to `capacity` units, now, while
    /// calls run. Synchronous: it takes the budget's lock for a moment and
    /// returns; it never waits for a holder and evicts no queued call.
    ///
    /// - **Growing** grants queued calls at once, in queue order and under
    ///   the usual fairness rules: a call needing 2 units queued ahead of
    ///   calls needing 1 keeps its turn (they do not pass it while it is
    ///   short).
    /// - **Shrinking** revokes nothing: calls holding units keep them until
    ///   they end, and no call is granted until `in_use + units <= capacity`.
    ///   Every release is credited against the budget as it is then, so any
    ///   sequence of changes under load leaves exactly `capacity` units free
    ///   once every call has ended.
    ///
    /// [`Runtime::stats`] (`capacity`, `in_use`, `peak_in_use`), the
    /// `herta_budget_capacity` gauge (feature `metrics`) and a `capacity
    /// changed` tracing event (`INFO`, target `herta`) follow at once. A
    /// capacity raised above the one declared lets operations needing up to
    /// the new capacity bind from then on.
    ///
    /// # Errors
    ///
    /// Nothing changes when it fails:
    /// - [`ResizeError::UnknownResource`] when the runtime declares no
    ///   resource `name` (with the closest declared name, if one is close);
    /// - [`ResizeError::ZeroCapacity`] for 0;
    /// - [`ResizeError::BelowNeed`] when an operation bound to this runtime
    ///   needs more than `capacity` units of it per call (its calls could
    ///   never be granted). Registrations last as long as the runtime.
    ///
    /// ```
    /// use herta::{Failure, ResizeError, Resource, Runtime};
    ///
    /// #[herta::operation(effect = Idempotent, resources("db" = 2))]
    /// async fn write(row: u32) -> Result<u32, Failure<std::io::Error>> {
    ///     Ok(row)
    /// }
    ///
    /// let rt = Runtime::builder().resource(Resource::new("db", 4)).build()?;
    /// let _write = Write::bind(&rt)?;
    /// rt.set_capacity("db", 16)?; // an incident: more connections
    /// assert_eq!(rt.stats().resource("db").unwrap().capacity, 16);
    /// assert!(matches!(
    ///     rt.set_capacity("db", 1),
    ///     Err(ResizeError::BelowNeed { operation: "write", units: 2, .. })
    /// ));
    /// assert!(matches!(
    ///     rt.set_capacity("dbb", 8),
    ///     Err(ResizeError::UnknownResource { suggestion: Some(_), .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_capacity(&self, name: &str, capacity: u32) -> Result<(), ResizeError> {
        let (index, resource) = self.declared(name)?;
        if capacity == 0 {
            return Err(ResizeError::ZeroCapacity { resource });
        }
        if self.inner.arbiter.is_rate(index) {
            return Err(ResizeError::WrongKind {
                resource,
                rate: true,
            });
        }
        let resized = self
            .inner
            .arbiter
            .set_capacity(index, capacity)
            .map_err(|below| ResizeError::BelowNeed {
                resource,
                capacity,
                operation: below.operation,
                units: below.units,
            })?;
        events::capacity_changed(resource, resized.before, capacity, resized.in_use);
        Ok(())
    }

    /// Sets how many calls may queue for resource `name` (`None`: no
    /// limit), now. It applies to the next call that would queue: a `Wait`
    /// call that would be waiter number `limit + 1` returns
    /// `Error::Throttled` at once. No queued call is evicted, so after a
    /// lowered limit the queue drains down to it. Synchronous, like
    /// [`set_capacity`](Runtime::set_capacity); [`Runtime::stats`]
    /// (`queue_limit`) and a `queue limit changed` tracing event (`INFO`)
    /// follow at once.
    ///
    /// # Errors
    ///
    /// Nothing changes when it fails: [`ResizeError::UnknownResource`] when
    /// the runtime declares no resource `name`; [`ResizeError::ZeroQueueLimit`]
    /// for `Some(0)` (calls that must never queue use `admission = Reject`).
    ///
    /// ```
    /// use herta::{Resource, Runtime};
    ///
    /// let rt = Runtime::builder().resource(Resource::new("db", 4)).build()?;
    /// rt.set_queue_limit("db", Some(64))?;
    /// assert_eq!(rt.stats().resource("db").unwrap().queue_limit, Some(64));
    /// rt.set_queue_limit("db", None)?;
    /// assert_eq!(rt.stats().resource("db").unwrap().queue_limit, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_queue_limit(&self, name: &str, limit: Option<u32>) -> Result<(), ResizeError> {
        let (index, resource) = self.declared(name)?;
        if limit == Some(0) {
            return Err(ResizeError::ZeroQueueLimit { resource });
        }
        let previous = self.inner.arbiter.set_queue_limit(index, limit);
        events::queue_limit_changed(resource, previous, limit);
        Ok(())
    }

    /// Sets the rate of rate budget `name` to `count` units per `period`,
    /// at most `burst` at once, now, while calls run. Synchronous, like
    /// [`set_capacity`](Runtime::set_capacity): it never waits and evicts
    /// no queued call.
    ///
    /// The units the bucket holds at the change are kept (at most the new
    /// `burst`); from then on they accrue at the new rate, so the bound
    /// "at most `burst + count × T / period` in any interval `T`" holds on
    /// each side of the change. Queued calls are looked at again at once: a
    /// faster rate grants them sooner, in queue order. [`Runtime::stats`]
    /// (`capacity` is the burst, `rate`), the `herta_budget_capacity` gauge
    /// and a `rate changed` tracing event (`INFO`, target `herta`) follow at
    /// once.
    ///
    /// # Errors
    ///
    /// Nothing changes when it fails:
    /// - [`ResizeError::UnknownResource`] when the runtime declares no
    ///   resource `name`;
    /// - [`ResizeError::WrongKind`] when `name` is a concurrency budget;
    /// - [`ResizeError::ZeroRate`] for a `count`, `period` or `burst` of 0;
    /// - [`ResizeError::BelowNeed`] when a bound operation needs more than
    ///   `burst` units of it per call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herta::{Failure, ResizeError, Resource, Runtime};
    ///
    /// #[herta::operation(effect = Idempotent, resources("api" = 2))]
    /// async fn fetch(id: u32) -> Result<u32, Failure<std::io::Error>> {
    ///     Ok(id)
    /// }
    ///
    /// let api = Resource::rate("api", 100, Duration::from_secs(1))?;
    /// let rt = Runtime::builder().resource(api).build()?;
    /// let _fetch = Fetch::bind(&rt)?;
    /// rt.set_rate("api", 20, Duration::from_secs(1), 5)?; // the upstream asks us to slow down
    /// let stats = rt.stats();
    /// let api = stats.resource("api").unwrap();
    /// assert_eq!((api.capacity, api.rate.unwrap().count), (5, 20));
    /// assert!(matches!(
    ///     rt.set_rate("api", 20, Duration::from_secs(1), 1),
    ///     Err(ResizeError::BelowNeed { operation: "fetch", units: 2, .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(
        &self,
        name: &str,
        count: u32,
        period: std::time::Duration,
        burst: u32,
    ) -> Result<(), ResizeError> {
        let (index, resource) = self.declared(name)?;
        if !self.inner.arbiter.is_rate(index) {
            return Err(ResizeError::WrongKind {
                resource,
                rate: false,
            });
        }
        if count == 0 || period.is_zero() || burst == 0 {
            return Err(ResizeError::ZeroRate {
                resource,
                count,
                period,
                burst,
            });
        }
        let before = self
            .inner
            .arbiter
            .set_rate(index, count, period, burst)
            .map_err(|below| ResizeError::BelowNeed {
                resource,
                capacity: burst,
                operation: below.operation,
                units: below.units,
            })?;
        events::rate_changed(
            resource,
            (before.count, before.period, before.burst),
            (count, period, burst),
        );
        Ok(())
    }

    /// The arbiter index and name of the declared resource `name`.
    fn declared(&self, name: &str) -> Result<(usize, &'static str), ResizeError> {
        let declared = &self.inner.resources;
        match declared.iter().position(|r| r.name() == name) {
            Some(index) => Ok((index, declared[index].name())),
            None => Err(ResizeError::UnknownResource {
                resource: name.to_owned(),
                suggestion: herta_contract::closest(name, declared.iter().map(Resource::name))
                    .map(str::to_owned),
            }),
        }
    }
}
