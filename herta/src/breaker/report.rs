//! What a breaker reports: its [`BreakerState`] (stats, the gauge, the
//! events) and a [`Transition`] (the event of a state change). A leaf:
//! the sinks (`events`, `metrics`, `trace`, `stats`) name it, it names
//! nothing of theirs.

use super::window::Counts;

/// A breaker's state, as [`Stats`](crate::Stats) and the events report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls pass; attempts are counted.
    Closed,
    /// Calls are refused until the open period ends.
    Open,
    /// Up to `probes` attempts pass; their results decide.
    HalfOpen,
}

impl BreakerState {
    /// The gauge's value: 0 closed, 1 open, 2 half-open.
    pub const fn gauge(self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
        }
    }

    /// The name events and metrics use: `closed`, `open`, `half_open`.
    pub const fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

impl std::fmt::Display for BreakerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        })
    }
}

/// A state change, reported once by the caller that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transition {
    /// The state left.
    pub(crate) from: BreakerState,
    /// The state entered.
    pub(crate) to: BreakerState,
    /// The window when it happened.
    pub(crate) counts: Counts,
}
