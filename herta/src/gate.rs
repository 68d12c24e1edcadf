//! The admission gate: counts calls in and out, and closes for good.
//!
//! One word holds `in_flight << 1 | closed`. A call enters by adding 2 and
//! checking the closed bit of the old value in the same atomic step, so no
//! call can slip in after [`Gate::close`] and escape the drain: either it sees
//! the bit, or the drain's waiter sees its count.
//!
//! Two signals can be awaited: [`Gate::drained`] (closed and no call in
//! flight: what `Runtime::shutdown` waits for) and [`Gate::closed`] (the gate
//! has closed: what a wait inside a call, such as a backoff sleep, races so
//! that it ends at once on shutdown). Both are cancel safe: dropping the
//! future only drops its `Notified` registration.
//!
//! The word and the signals come from the [`crate::loom`] facade, so the
//! loom models (`gate/loom_tests.rs`) check this code: a call entering while
//! the gate closes, the last call out racing the drain, `closed` waiters.

use crate::loom::{AtomicU64, Notify, Ordering};

/// The admission gate of one runtime, on cache lines of its own: every call
/// writes its word twice, and the runtime's fields every call reads (the
/// budgets, the resources) must not share a line with it.
#[repr(align(128))]
pub(crate) struct Gate {
    state: AtomicU64,
    /// Woken when the last call leaves a closed gate.
    drained: Notify,
    /// Woken when the gate closes.
    closed: Notify,
}

const CLOSED: u64 = 1;
const ONE: u64 = 2;

impl Gate {
    /// An open gate with no call in flight.
    pub(crate) fn new() -> Self {
        Gate {
            state: AtomicU64::new(0),
            drained: Notify::new(),
            closed: Notify::new(),
        }
    }

    /// Counts a call in; `false` (and nothing counted) when closed.
    #[inline]
    pub(crate) fn enter(&self) -> bool {
        let prev = self.state.fetch_add(ONE, Ordering::SeqCst);
        if prev & CLOSED != 0 {
            self.exit();
            return false;
        }
        true
    }

    /// Counts a call out, waking the drain when it was the last one.
    #[inline]
    pub(crate) fn exit(&self) {
        let prev = self.state.fetch_sub(ONE, Ordering::SeqCst);
        if prev == ONE | CLOSED {
            self.drained.notify_waiters();
        }
    }

    /// Closes the gate for good and wakes every [`closed`](Gate::closed)
    /// waiter (and every [`drained`](Gate::drained) one, when no call is in
    /// flight). Idempotent.
    pub(crate) fn close(&self) {
        let prev = self.state.fetch_or(CLOSED, Ordering::SeqCst);
        self.closed.notify_waiters();
        if prev < ONE {
            self.drained.notify_waiters();
        }
    }

    /// Whether [`close`](Gate::close) was called.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::SeqCst) & CLOSED != 0
    }

    /// Calls counted in and not yet out, now.
    pub(crate) fn in_flight(&self) -> u64 {
        self.state.load(Ordering::SeqCst) >> 1
    }

    /// Resolves once the gate is closed (at once if it already is).
    ///
    /// The "closed" signal a wait inside a call (a backoff sleep) selects
    /// on, so that it ends as soon as the runtime closes.
    pub(crate) async fn closed(&self) {
        self.wait_for(&self.closed, || self.is_closed()).await;
    }

    /// Resolves once the gate is closed and no call is in flight.
    pub(crate) async fn drained(&self) {
        self.wait_for(&self.drained, || {
            self.state.load(Ordering::SeqCst) == CLOSED
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
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_closed_gate_refuses_and_counts_nothing() {
        let gate = Gate::new();
        assert!(gate.enter());
        assert_eq!(gate.in_flight(), 1);
        gate.close();
        assert!(gate.is_closed());
        assert!(!gate.enter());
        assert_eq!(gate.in_flight(), 1);
        gate.exit();
        assert_eq!(gate.in_flight(), 0);
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
        let gate = Arc::new(Gate::new());
        assert!(gate.enter());
        gate.close();
        let drain = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.drained().await }
        });
        tokio::task::yield_now().await;
        assert!(!drain.is_finished());
        gate.exit();
        drain.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_drain_started_before_close_waits_for_close() {
        let gate = Arc::new(Gate::new());
        let drain = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.drained().await }
        });
        tokio::task::yield_now().await;
        assert!(!drain.is_finished(), "no call in flight, but still open");
        gate.close();
        drain.await.unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
