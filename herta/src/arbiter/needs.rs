//! What a call needs of the budgets: [`Need`] (units of one budget),
//! [`Needs`] (a contract's list, as the arbiter's table knows it) and
//! [`Largest`] (the most units of one budget a bound operation needs).

use std::sync::Arc;

/// Units of one budget, by the budget's index in the arbiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Need {
    pub(crate) resource: usize,
    pub(crate) units: u32,
}

/// A contract's needs as its arbiter knows them: the list (concurrency
/// budgets first, then rate budgets, each part sorted by budget index, each
/// budget once) and its index in the arbiter's table of need lists
/// (`Arbiter::needs`), so that a queued waiter names its needs in 2 bytes
/// instead of holding a counted reference to them (see `state::Waiter`).
#[derive(Debug, Clone)]
pub(crate) struct Needs {
    pub(super) list: Arc<[Need]>,
    /// The concurrency part of `list`: what a permit holds and gives back
    /// (a rate budget's units are consumed, never given back). Its own
    /// allocation, so that a permit's slice costs what it did before rate
    /// budgets existed.
    pub(super) held: Arc<[Need]>,
    pub(super) id: u16,
}

impl Needs {
    /// Whether the list names a rate budget.
    #[inline]
    pub(crate) fn has_rate(&self) -> bool {
        self.held.len() < self.list.len()
    }

    /// The concurrency part of the list: what a grant holds until its
    /// permit is dropped.
    #[inline]
    pub(crate) fn held(&self) -> &Arc<[Need]> {
        &self.held
    }

    /// The rate part of the list.
    #[inline]
    pub(super) fn rate(&self) -> &[Need] {
        &self.list[self.held.len()..]
    }
}

impl std::ops::Deref for Needs {
    type Target = [Need];

    #[inline]
    fn deref(&self) -> &[Need] {
        &self.list
    }
}

/// The most units of a budget a bound operation needs, and the first
/// operation bound with that need.
#[derive(Debug, Clone, Copy)]
pub(super) struct Largest {
    pub(super) units: u32,
    pub(super) operation: &'static str,
}

impl Largest {
    /// No operation bound.
    pub(super) const NONE: Largest = Largest {
        units: 0,
        operation: "",
    };
}
