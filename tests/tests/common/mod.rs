//! Shared test fixtures: a probe that handlers report into and wait on.
#![allow(dead_code)]

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};

/// What handlers report: how many are inside now, the most ever inside, and
/// how many ever entered. Handlers that call [`Probe::hold`] stay inside
/// until the test [`Probe::open`]s the gate for them.
pub struct Probe {
    inside: AtomicU32,
    peak: AtomicU32,
    attempts: AtomicU32,
    entered: watch::Sender<u32>,
    gate: Semaphore,
}

impl Probe {
    pub fn new() -> Arc<Self> {
        Arc::new(Probe {
            inside: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            attempts: AtomicU32::new(0),
            entered: watch::Sender::new(0),
            gate: Semaphore::new(0),
        })
    }

    /// Marks one handler inside until the returned guard drops.
    pub fn enter(self: &Arc<Self>) -> Inside {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.attempts.fetch_add(1, Ordering::SeqCst);
        self.entered.send_modify(|n| *n += 1);
        Inside(Arc::clone(self))
    }

    /// Enters, waits for the gate to let this handler out, then leaves.
    pub async fn hold(self: &Arc<Self>) {
        let _inside = self.enter();
        self.gate
            .acquire()
            .await
            .expect("gate never closes")
            .forget();
    }

    /// Lets `n` held handlers out.
    pub fn open(&self, n: usize) {
        self.gate.add_permits(n);
    }

    /// Waits until at least `n` handlers have ever entered.
    pub async fn entered(&self, n: u32) {
        let mut rx = self.entered.subscribe();
        within(rx.wait_for(|&e| e >= n))
            .await
            .expect("sender lives in the probe");
    }

    pub fn inside(&self) -> u32 {
        self.inside.load(Ordering::SeqCst)
    }

    pub fn peak(&self) -> u32 {
        self.peak.load(Ordering::SeqCst)
    }

    /// Handler attempts so far (each `enter` is one).
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::SeqCst)
    }
}

pub struct Inside(Arc<Probe>);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Awaits `fut`, failing the test if it does not finish: with a paused clock
/// this fires as soon as every task is idle, so a hang fails at once.
pub async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .expect("timed out: a call or a wait never finished (hang)")
}

/// Lets every other task run until it blocks (a few scheduler rounds).
pub async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// Waits until `cond` holds, re-checking every millisecond of tokio time
/// (instant under a paused clock), bounded by [`within`], so a condition
/// that never comes fails the test instead of hanging it.
pub async fn until(mut cond: impl FnMut() -> bool) {
    within(async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
}

/// Whether every budget of `rt` is fully free and no key is held.
pub fn all_free(rt: &herta::Runtime) -> bool {
    let s = rt.stats();
    s.keys == 0 && s.resources.iter().all(|r| r.in_use == 0 && r.waiting == 0)
}

/// Units held inside handlers, measured by the handlers themselves.
pub struct Gauge {
    now: AtomicU32,
    peak: AtomicU32,
}

impl Gauge {
    pub fn new() -> Arc<Self> {
        Arc::new(Gauge {
            now: AtomicU32::new(0),
            peak: AtomicU32::new(0),
        })
    }

    /// Holds `units` for a few scheduler turns, so other calls interleave.
    pub async fn occupy(&self, units: u32) {
        let now = self.now.fetch_add(units, Ordering::SeqCst) + units;
        self.peak.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.now.fetch_sub(units, Ordering::SeqCst);
    }

    pub fn peak(&self) -> u32 {
        self.peak.load(Ordering::SeqCst)
    }
}
