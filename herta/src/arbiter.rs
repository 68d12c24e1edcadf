//! The budget arbiter: all-or-nothing, fair acquisition of several weighted
//! budgets at once, with a lock-free fast path.
//!
//! # Interface
//!
//! One [`Arbiter`] owns every budget of a runtime. A call asks for a set of
//! [`Need`]s (resource index, units) and gets a [`Permit`] whose `Drop`
//! returns all of them: [`Arbiter::try_acquire`] never waits (admission
//! `Reject`), [`Arbiter::acquire`] queues (admission `Wait`).
//! [`Arbiter::close`] withdraws every waiter with [`AcquireError::Closed`].
//! `Arbiter::set_capacity` and `Arbiter::set_queue_limit` change a budget
//! while calls run, and `Arbiter::bind` registers the needs of a bound
//! operation, below which no capacity shrinks (`resize.rs`: a shrink below
//! the units in use leaves a *debt*, repaid by releases before they free
//! a unit).
//!
//! # Two layers
//!
//! **Per budget, one atomic word**: `free units << 1 | SLOW`. While `SLOW`
//! is clear, no queued waiter needs the budget, and a call takes and returns
//! units with one compare-and-swap per budget, without the lock (the
//! uncontended path). `SLOW` is set, under the lock, while some waiter
//! needing the budget is queued, while a lock holder works on the budget, and
//! for good once the arbiter is closed. While it is set, the word changes
//! only under the lock (the CAS of the fast path fails on it and falls back
//! to the lock), so every acquisition and release of a contended budget is
//! serialized with the queue, and a release always runs the grant pass.
//!
//! **Under one mutex**: the queue of waiters in arrival order (the shared
//! waiter core, [`crate::waiters`]: each waiter's node inside its own
//! `Acquire` future, so queueing allocates nothing and a cancelled waiter is
//! unlinked in O(1); wakers woken after the lock is released, no allocation
//! per pass), and per budget
//! the number of queued waiters needing it, a `blocked` flag, and the data
//! of the fairness bound below.
//!
//! **Several budgets without the lock**: a call reads every word (one
//! `SLOW`: take the lock; one short: busy, nothing taken), then takes them
//! in index order. A caller racing in between makes it give back what it
//! took (through the lock if `SLOW` by then) and take the lock; that
//! partial take looks to others like a call that took and gave back at
//! once (a `Reject` caller may be throttled by it; `peak_in_use` and the
//! in-use gauge count it). Under the lock, `SLOW`
//! is set on each budget before it is read: no partial take is seen.
//!
//! A waiter holds **no** unit until it is granted all of its units in one
//! step, so no waiter holds one budget while it waits for another: there is
//! no hold-and-wait, hence no deadlock, whatever order contracts name their
//! resources in.
//!
//! # Grant pass and the fairness bound
//!
//! Every acquisition gets a *stamp*, a point in arrival order: a queued
//! waiter its ticket (1, 2, …, one per waiter queued), a grant at once the
//! current ticket count, a lock-free grant 0 (the fast path runs only while
//! no waiter needs the budget, so it precedes every waiter that does). Per
//! budget, while waiters need it, the arbiter knows the smallest stamp among
//! the units held (units held before the first of those waiters queued count
//! as stamp 0; later ones are kept in a small sorted vector reused across
//! sessions).
//!
//! A waiter W (ticket t) is **mature** when, for each budget it needs, no
//! earlier queued waiter needs that budget and no unit of it is held with a
//! stamp below t: every unit held when W arrived, and every unit granted to
//! earlier waiters, has been released — part (1) of the bound.
//!
//! A *pass* runs, in arrival order, after every event that can change who may
//! be granted (a release on a budget with waiters, a waiter leaving). For
//! each waiter: if each of its budgets has enough free units and is not
//! `blocked`, it is granted; otherwise it marks `blocked` the budgets it is
//! short of — or, if mature, **all** of its budgets. A later waiter, and a
//! newcomer (whether `Wait` or `Reject`), is granted only on budgets that are
//! not `blocked`. The scan stops as soon as no budget with waiters has free
//! units and is unblocked: nothing after that point could be granted.
//!
//! **Bound.** A waiter W is granted no later than (1) every unit held at W's
//! arrival, and every unit granted to waiters that arrived before W, on the
//! budgets W needs, has been released, and then (2) the units that later
//! arrivals took on those budgets by passing W before that moment have been
//! released. Proof: the event that completes (1) runs a pass in which W is
//! mature; from then on W is the oldest waiter on each of its budgets (so no
//! earlier waiter competes) and blocks all of them (so no later arrival takes
//! a unit of them), and maturity never ends; the only units of those budgets
//! still held are the bypassers' of (2), and the release of the last of them
//! runs the pass that grants W. Before (1), a later arrival may pass W only
//! on budgets W is not short of (bypass keeps concurrency). Hence:
//!
//! * per budget, waiters short of it are granted in arrival order;
//! * no starvation: not a large waiter by small ones, not a multi-budget
//!   waiter by single-budget newcomers taking its budgets in turn;
//! * `Reject` never overtakes a queued waiter on a budget that waiter blocks.
//!
//! # Invariants (checked by the loom models, the unit tests, the fairness
//! property and the scenario tests)
//!
//! 1. `0 <= free <= capacity` for every budget; units held = `capacity -
//!    free + debt`, where `debt` (units held beyond a shrunk capacity) is
//!    0 whenever `free` is not, and `SLOW` is set while it is not 0.
//! 2. A budget some queued waiter needs has `SLOW` set.
//! 3. After every operation, no queued waiter could be granted (the pass ran),
//!    and the `blocked` flags are those of the last pass.
//! 4. A waiter's units are either all queued-for or all granted; a granted
//!    waiter dropped before it saw its grant returns them and a pass runs, so
//!    the units reach the next waiter at once (the same hand-on covers a
//!    later `max_wait` expiry).
//! 5. After `close`, the queue is empty, every waiter has seen [`AcquireError::Closed`],
//!    and `SLOW` stays set, so every later call takes the lock and is refused.
//!
//! # Costs
//!
//! Uncontended call: one CAS per budget to take, one per budget to give
//! back, no allocation. A cancelled waiter: O(budgets it needs) to unlink plus a pass,
//! which stops at once when no budget with waiters has free units (a full
//! budget's disconnect storm costs O(1) per waiter). While some budget with
//! waiters has free units (a multi-budget queue short elsewhere), a pass may
//! scan further, up to the queue's length: the price of letting waiters pass
//! on budgets an earlier waiter is not short of. A budget's queue length is
//! its `waiting` count, read in O(1) under the lock.
//!
//! A queued waiter's value in its node is 8 bytes (the node, in its
//! future, 48): it names its need list by an index into the arbiter's table
//! of distinct lists ([`Arbiter::needs`], filled at bind) and keeps its
//! ticket's low 48 bits ([`state::Waiter`]), so queueing and leaving touch
//! no shared reference count.

mod acquire;
mod bucket;
mod budget;
mod needs;
mod permits;
mod rate;
mod resize;
mod state;

pub(crate) use acquire::Acquire;
pub(crate) use needs::{Need, Needs};
pub(crate) use permits::{AcquireError, Arbiter, Kind, Permit, TryAcquireError};
#[cfg(all(test, loom))]
pub(crate) use state::Event;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, not(loom)))]
mod resize_tests;

#[cfg(all(test, not(loom)))]
mod fairness;

#[cfg(all(test, loom))]
mod loom_tests;
