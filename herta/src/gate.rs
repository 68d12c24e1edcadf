//! The admission gate: whether the runtime still admits calls, and the two
//! signals that shutdown raises.
//!
//! # Counting calls in and out without a shared write
//!
//! The gate keeps no count of its own. A call is counted in by its
//! operation's `admitted` counter and out by the counter of the way it ended
//! (`succeeded`, `failed`, `throttled`, `stopped_waiting`, `cancelled`,
//! `panicked`, `deadline_exceeded`): counters every call bumps anyway, in
//! its thread's shard ([`crate::stats`]), so two threads calling at once
//! never write one cache line. Calls in flight are the admissions minus the
//! endings, summed over every operation (`Registry::in_flight`). The gate
//! itself is one flag, written once (by [`Gate::close`]) and read by every
//! call twice: on cache lines of its own, it stays in every core's cache.
//!
//! The protocol is Dekker's: each side writes its own location, then reads
//! the other's, all `SeqCst`, so at least one side sees the other.
//!
//! * **Enter** ([`Gate::enter`]): bump `admitted`, then read the flag. Set:
//!   take the bump back, wake the drain (it may have counted the bump),
//!   refuse.
//! * **Exit** ([`Gate::exited`]): the call has released everything it held
//!   and bumped its ending counter; then read the flag. Set: wake the drain.
//! * **Close** ([`Gate::close`]): set the flag, then wake the `closed`
//!   waiters and the drain.
//! * **Drain** ([`Gate::drained`]): register for the wake-up, read the flag,
//!   then count: every ending counter first, then every `admitted`. Done
//!   when the flag is set and the two sums are equal.
//!
//! Why the drain cannot miss a call: a call that read the flag clear made
//! its bump before `close`'s write in the one `SeqCst` order, so a drain
//! that read the flag set counts that bump; a call that read it set wakes
//! the drain after its own bump. Endings are summed before admissions, and
//! every ending counted had its admission bumped before it, so equal sums
//! mean no admitted call is still in flight (a later admission can only
//! make the admissions larger, never equal by mistake).
//!
//! Both signals are cancel safe: dropping [`Gate::drained`] or
//! [`Gate::closed`] only drops its `Notified` registration.
//!
//! The flag and the signals come from the [`crate::loom`] facade, so the
//! loom models (`gate/loom_tests.rs`) check this code: calls entering while
//! the gate closes, the last call out racing the drain, `closed` waiters.
//! loom models `SeqCst` fences but not a `SeqCst` read after a `SeqCst`
//! write to another location (tokio-rs/loom#180), so under loom each side
//! adds a `SeqCst` fence between its write and its read
//! ([`crate::loom::seq_cst_point`]); in a real build that point is
//! nothing, the `SeqCst` operations alone give the guarantee.

use crate::loom::{seq_cst_point, AtomicBool, Notify, Ordering};
use crate::own_lines::OwnLines;

/// The admission gate of one runtime.
pub(crate) struct Gate {
    /// Read by every call twice, so on cache lines of its own: the
    /// signals' registrations (a backoff sleep registers on `closing`) must
    /// not evict it from other cores.
    closed: OwnLines<AtomicBool>,
    /// Woken by every call out of a closed gate (and by `close`).
    drained: Notify,
    /// Woken when the gate closes.
    closing: Notify,
}

impl Gate {
    /// An open gate.
    pub(crate) fn new() -> Self {
        Gate {
            closed: OwnLines(AtomicBool::new(false)),
            drained: Notify::new(),
            closing: Notify::new(),
        }
    }

    /// Counts a call in with `count_in` (a `SeqCst` add to the call's
    /// `admitted` counter), then checks the gate: `false` when it is
    /// closed, after `take_back` (a `SeqCst` subtraction of that add).
    #[inline]
    pub(crate) fn enter(&self, count_in: impl FnOnce(), take_back: impl FnOnce()) -> bool {
        count_in();
        if self.closed_after_a_count() {
            take_back();
            self.drained.notify_waiters();
            return false;
        }
        true
    }

    /// A call has left: it released what it held and counted its ending
    /// (a `SeqCst` add). Wakes the drain when the gate is closed.
    #[inline]
    pub(crate) fn exited(&self) {
        if self.closed_after_a_count() {
            self.drained.notify_waiters();
        }
    }

    /// The flag, read after a count (see the module's protocol).
    #[inline(always)]
    fn closed_after_a_count(&self) -> bool {
        seq_cst_point();
        self.closed.load(Ordering::SeqCst)
    }

    /// Closes the gate for good and wakes every [`closed`](Gate::closed)
    /// waiter and every [`drained`](Gate::drained) one (which counts
    /// again). Idempotent.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        seq_cst_point();
        self.closing.notify_waiters();
        self.drained.notify_waiters();
    }

    /// Whether [`close`](Gate::close) was called.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Resolves once the gate is closed (at once if it already is).
    ///
    /// The "closed" signal a wait inside a call (a backoff sleep) selects
    /// on, so that it ends as soon as the runtime closes.
    pub(crate) async fn closed(&self) {
        self.wait_for(&self.closing, || self.is_closed()).await;
    }

    /// Resolves once the gate is closed and `in_flight` (the calls
    /// admitted and not ended, counted endings first: see the module's
    /// protocol) reads zero.
    pub(crate) async fn drained(&self, in_flight: impl Fn() -> u64) {
        self.wait_for(&self.drained, || {
            self.is_closed() && {
                seq_cst_point();
                in_flight() == 0
            }
        })
        .await;
    }

    /// Waits on `notify` until `done` holds. The registration is enabled
    /// before `done` is checked, so a `notify_waiters` between the check and
    /// the await is not lost.
    async fn wait_for(&self, notify: &Notify, done: impl Fn() -> bool) {
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::slice::from_ref;
    use std::sync::Arc;
    use std::time::Duration;

    use super::count::{in_flight, Count};
    use super::*;

    #[test]
    fn a_closed_gate_refuses_and_counts_nothing() {
        let (gate, count) = (Gate::new(), Count::new());
        assert!(count.enter(&gate));
        assert_eq!(in_flight(from_ref(&count)), 1);
        gate.close();
        assert!(gate.is_closed());
        assert!(!count.enter(&gate));
        assert_eq!(in_flight(from_ref(&count)), 1);
        count.exit(&gate);
        assert_eq!(in_flight(from_ref(&count)), 0);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn closed_resolves_when_the_gate_closes_and_ends_a_sleep_racing_it() {
        let gate = Arc::new(Gate::new());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let gate = Arc::clone(&gate);
                tokio::spawn(async move {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(3600)) => false,
                        () = gate.closed() => true,
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(waiters.iter().all(|w| !w.is_finished()), "still open");
        let start = tokio::time::Instant::now();
        gate.close();
        for w in waiters {
            assert!(w.await.unwrap(), "closed before the sleep ended");
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
        // Already closed: at once.
        gate.closed().await;
    }

    #[tokio::test(flavor = "current_thread")]
    async fn drained_waits_for_the_last_call_out() {
        let (gate, count) = (Arc::new(Gate::new()), Arc::new(Count::new()));
        assert!(count.enter(&gate));
        gate.close();
        let drain = tokio::spawn({
            let (gate, count) = (Arc::clone(&gate), Arc::clone(&count));
            async move { gate.drained(|| in_flight(from_ref(&*count))).await }
        });
        tokio::task::yield_now().await;
        assert!(!drain.is_finished());
        count.exit(&gate);
        drain.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_drain_started_before_close_waits_for_close() {
        let (gate, count) = (Arc::new(Gate::new()), Arc::new(Count::new()));
        let drain = tokio::spawn({
            let (gate, count) = (Arc::clone(&gate), Arc::clone(&count));
            async move { gate.drained(|| in_flight(from_ref(&*count))).await }
        });
        tokio::task::yield_now().await;
        assert!(!drain.is_finished(), "no call in flight, but still open");
        gate.close();
        drain.await.unwrap();
    }
}

#[cfg(test)]
mod count;
#[cfg(all(test, loom))]
mod loom_tests;
