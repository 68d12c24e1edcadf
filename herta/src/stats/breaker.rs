//! [`BreakerStats`]: one circuit breaker's figures.

/// One circuit breaker's figures, read now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerStats {
    /// The breaker's name.
    pub name: &'static str,
    /// Its state as last changed (an open breaker whose open period is
    /// over turns half-open at the next call).
    pub state: crate::BreakerState,
    /// What its rates are measured over: a span of time
    /// ([`BreakerWindow::Time`](crate::BreakerWindow::Time)) or the last N
    /// attempts ([`BreakerWindow::Count`](crate::BreakerWindow::Count)).
    pub window: crate::BreakerWindow,
    /// Half-open: the probes in flight now (at most its `probes`); 0 in
    /// any other state. A probe's slot is given back when its attempt
    /// ends, however it ends (cancelled and panicked included).
    pub probing: u16,
    /// The failure rate of its window now, in percent (slow attempts
    /// included).
    pub failure_rate: u8,
    /// The attempts its window holds now (of a count window: at most its
    /// size).
    pub calls: u64,
    /// Times it opened (from closed or half-open).
    pub opened: u64,
    /// Calls and retries it refused.
    pub refused: u64,
    /// While `state` is open: how long until it lets a probe through
    /// (turns half-open); zero in any other state.
    pub open_left: std::time::Duration,
}
