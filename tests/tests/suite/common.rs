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

/// Returns once every other task has run until it blocks. Under the paused
/// clock these tests use (`start_paused = true`), tokio advances time only
/// when no task can make progress, so a 1 ms sleep is an exact idle barrier,
/// not a guess at how many scheduler rounds are enough.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
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

// ---------------------------------------------------------------------------
// Helpers for the reliability suites (hammer, cancellation sweep, schedules,
// key space, bad input). See RELIABILITY.md.

/// Polls `fut` once with a waker that does nothing, so that a grant or a
/// wake-up it receives afterwards stays unseen until the test polls again
/// (or drops it): this reaches the "granted but not yet polled" states.
pub fn poll_once<F: Future + ?Sized>(fut: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    fut.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// The start of every deliberate panic's message; [`quiet_deliberate_panics`]
/// keeps them off stderr.
pub const DELIBERATE: &str = "herta-tests deliberate panic";

/// Installs (once per process) a panic hook that stays silent for panics
/// whose message starts with [`DELIBERATE`] and reports every other panic
/// as the previous hook would.
pub fn quiet_deliberate_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !message.starts_with(DELIBERATE) {
                previous(info);
            }
        }));
    });
}

/// The text of a panic payload (`String` or `&str`), or `"<non-string>"`.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "<non-string>".to_owned())
}

/// A field of `/proc/self/status` in KiB (`"VmHWM"`: peak resident set,
/// `"VmRSS"`: resident set now); `None` where there is no procfs.
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// A positive number from the environment variable `name`, else `default`.
pub fn env_count(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// A small deterministic generator (xorshift64*), so a failing iteration
/// of a stress test can be named by its seed and replayed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Never zero: xorshift would stay at zero.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-enough in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}
