//! What an attempt carries through its breaker: its [`Ticket`] (the state
//! word it was admitted under), and the [`Verdict`] its end is counted as.

/// The state's bits of a breaker's word.
pub(crate) const STATE: u64 = 0b11;
/// The state's value while closed.
pub(crate) const CLOSED: u64 = 0;

/// What one attempt did, as a breaker counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Succeeded, or failed `Permanent` (the dependency answered).
    Success,
    /// Failed `Transient` or `Uncertain`, or timed out.
    Failure,
    /// Cancelled, panicked, or `Throttled` by the handler: not counted.
    Neutral,
}

/// The word an attempt was admitted under, and when it started (only with
/// `slow_call`).
#[derive(Debug, Clone, Copy)]
#[must_use]
pub(crate) struct Ticket {
    /// The word (closed: its state and epoch, without `JUDGE`).
    pub(crate) word: u64,
    /// When it started, in ns of the breaker's clock (only with
    /// `slow_call`; else 0).
    pub(crate) started: u64,
}

impl Ticket {
    /// The ticket of a call whose first attempt has not started (its pass
    /// holds nothing), or whose breaker is missing (`bind` checks it
    /// exists): a closed ticket, so a pass dropped with it ends nothing.
    pub(crate) const NONE: Ticket = Ticket {
        word: 0,
        started: 0,
    };

    /// Whether it is a probe's (half-open) ticket.
    #[inline(always)]
    pub(crate) fn is_probe(self) -> bool {
        self.word & STATE != CLOSED
    }
}
