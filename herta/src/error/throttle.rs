//! [`Throttle`]: which limit throttled a call.

use std::fmt;

/// Which limit throttled a call: what an operator reads to tell a full
/// queue from a spent `max_wait`, a `Reject` from a rate budget or an open
/// breaker, and herta's own refusals from a dependency that pushed back.
///
/// [`Error::throttle`](super::Error::throttle) gives it for any error that
/// counts as throttled; [`label`](Throttle::label) is the `throttle` label
/// of `herta_calls_total{outcome="throttled"}` (feature `metrics`) and the
/// `throttle` field of the `throttled` tracing event. New limits may add
/// variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Throttle {
    /// An `admission = Reject` call found its key, or a concurrency budget,
    /// busy (or earlier waiters queued on the budget); nothing ran.
    NoRoom,
    /// An `admission = Reject` call found a rate budget without the units
    /// it needs (they exist again at `retry_after`); nothing ran.
    Rate,
    /// A `Wait` call found a budget's queue at its `queue_limit`.
    QueueFull,
    /// A `Wait` call waited its whole `max_wait` (counted from admission)
    /// for its key or budgets, or would have: a rate budget's units could
    /// not exist before it ran out, so the call was refused at once.
    MaxWait,
    /// The operation's circuit breaker was open (or half-open with every
    /// probe out); `retry_after` is the time left open, when open.
    BreakerOpen,
    /// The handler's own `Throttled`: the dependency pushed back (an HTTP
    /// 429, `Failure::throttled`) on the last attempt. The error is
    /// [`Error::Failed`](super::Error::Failed) with outcome `Throttled`, not
    /// [`Error::Throttled`](super::Error::Throttled).
    Dependency,
}

impl Throttle {
    /// Every reason, each at its own index: `ALL[t as usize] == t`.
    pub const ALL: [Throttle; 6] = [
        Throttle::NoRoom,
        Throttle::Rate,
        Throttle::QueueFull,
        Throttle::MaxWait,
        Throttle::BreakerOpen,
        Throttle::Dependency,
    ];

    /// The reason in one stable snake_case word (`no_room`, `rate`,
    /// `queue_full`, `max_wait`, `breaker_open`, `dependency`): the value of
    /// the `throttle` metrics label and tracing field.
    pub const fn label(self) -> &'static str {
        match self {
            Throttle::NoRoom => "no_room",
            Throttle::Rate => "rate",
            Throttle::QueueFull => "queue_full",
            Throttle::MaxWait => "max_wait",
            Throttle::BreakerOpen => "breaker_open",
            Throttle::Dependency => "dependency",
        }
    }
}

// `Throttle::ALL` lists each reason at its own index.
const _: () = {
    let mut i = 0;
    while i < Throttle::ALL.len() {
        assert!(Throttle::ALL[i] as usize == i);
        i += 1;
    }
};

/// A short phrase: `rejected, no room`, `rate budget spent`, `queue full`,
/// `max_wait ran out`, `circuit breaker open`, `the dependency pushed back`.
impl fmt::Display for Throttle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Throttle::NoRoom => "rejected, no room",
            Throttle::Rate => "rate budget spent",
            Throttle::QueueFull => "queue full",
            Throttle::MaxWait => "max_wait ran out",
            Throttle::BreakerOpen => "circuit breaker open",
            Throttle::Dependency => "the dependency pushed back",
        })
    }
}
