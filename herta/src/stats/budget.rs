//! [`ResourceStats`] and [`RateStats`]: one budget's figures.

/// One budget's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceStats {
    /// The resource's name.
    pub name: &'static str,
    /// Units in all.
    pub capacity: u32,
    /// Units held by running calls now.
    pub in_use: u32,
    /// Calls queued for this budget now.
    pub waiting: u32,
    /// The most units ever held at once.
    pub peak_in_use: u32,
    /// The most calls that may queue for it (`Resource::with_queue_limit`,
    /// `resources!`'s `queue = n`); `None`: unbounded. `waiting` never
    /// exceeds it.
    pub queue_limit: Option<u32>,
    /// Units a call could be granted now: `capacity - in_use` for a
    /// concurrency budget, the units a rate budget's bucket holds now (at
    /// most its burst, `capacity`).
    pub available: u32,
    /// A rate budget's rate and the units it granted; `None` for a
    /// concurrency budget (whose units are held, so `in_use` and
    /// `peak_in_use` count them; a rate budget's are consumed, and those
    /// read 0).
    pub rate: Option<RateStats>,
}

/// A rate budget's figures ([`ResourceStats::rate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateStats {
    /// Units granted per `period`.
    pub count: u32,
    /// The period.
    pub period: std::time::Duration,
    /// Units granted since the runtime was built (every attempt's).
    pub granted: u64,
}
