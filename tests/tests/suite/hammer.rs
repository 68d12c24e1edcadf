//! Race hammer (RELIABILITY.md §1): iterations of 16 tasks × 50 calls on a
//! multi-thread tokio runtime, over seven operations that mix the contract
//! features (Wait / Reject, keys in own and shared scopes, one to three
//! budgets with different units, retries, timeouts), with handlers that
//! succeed, fail Transient / Permanent, panic or outlive their timeout,
//! callers that drop their call after a random number of polls or have it
//! aborted from another task (possibly between a grant and its poll), and a
//! `shutdown` racing the calls at a different point in every iteration.
//!
//! Every iteration checks: every call resolved (a hang fails the test after
//! a generous bound, naming the iteration and its stats), `admitted ==
//! finished`, `started <= admitted`, every budget fully free and no key
//! left, capacity and per-key exclusivity never broken (measured inside
//! the handlers), and the stats' rejected / throttled / cancelled / panicked
//! counts equal to what the callers saw.
//!
//! An eighth operation names a circuit breaker (a count window of 8
//! attempts, open for 1 ms, 2 probes), which the handlers' transient
//! failures open again and again: inside its handlers the breaker never
//! has more probes in flight than it allows, and after every iteration
//! every probe's slot is back (the calls cancelled or panicked included),
//! its refusals are the breaker-refused calls the callers saw, and it
//! opened before it refused or left closed.
//!
//! `HERTA_HAMMER_ITERATIONS` sets the number of iterations (default 200);
//! `HERTA_HAMMER_SEED` varies the schedule of calls and shutdown points.

use crate::common;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use common::{all_free, env_count, quiet_deliberate_panics, Rng, DELIBERATE};
use futures_util::FutureExt;
use herta::{BreakerState, Busy, Context, Contract, Error, Failure, Resource, Runtime};
use tokio::sync::Notify;

const TASKS: u64 = 16;
const CALLS: u64 = 50;
/// How long one iteration may take before it counts as a hang.
const BOUND: Duration = Duration::from_secs(60);

const RESOURCES: [Resource; 3] = [
    Resource::new("cpu", 4),
    Resource::new("io", 3),
    Resource::new("mem", 6),
];

/// The probes the breaker lets through in one half-open period.
const PROBES: u16 = 2;

herta::breakers! {
    /// Opened by a quarter of the last 8 attempts failed, for 1 ms.
    GUARD: "guard" = breaker(window = 8, min_calls = 4, failure_rate = 25, open_for = "1ms",
                             probes = 2);
}

/// What one call's handler does.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// Yield this many times, then succeed.
    Ok(u8),
    /// Fail Transient on the first attempt, then succeed.
    TransientOnce,
    /// Fail Permanent.
    Permanent,
    /// Sleep 5 ms: outlives a 2 ms timeout.
    Slow,
    /// Panic.
    Panic,
}

type Reply = Result<u32, Failure<u32>>;

#[herta::operation(effect = Idempotent, resources("cpu" = 1))]
async fn plain(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Plain::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = Idempotent, resources("cpu" = 2, "io" = 1), serialize_by = key,
                   retry(on = Transient, max = 3), timeout = "10s")]
async fn keyed(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Keyed::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = NonIdempotent, resources("io" = 2), admission = Reject,
                   serialize_by = key)]
async fn reject_keyed(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(RejectKeyed::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = Pure, resources("cpu" = 4, "io" = 3, "mem" = 6),
                   retry(on = [Transient, Uncertain], max = 2))]
async fn everything(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Everything::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = Idempotent, resources("mem" = 2), serialize_by(key, scope = "s"))]
async fn scoped(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Scoped::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = NonIdempotent, resources("mem" = 3, "cpu" = 1), admission = Reject,
                   serialize_by(key, scope = "s"))]
async fn scoped_reject(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(ScopedReject::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1, "mem" = 1),
                   retry(on = Transient, max = 2), timeout = "2ms")]
async fn hasty(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Hasty::CONTRACT, ctx, key, act, &meter).await
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1, "io" = 1), breaker = GUARD,
                   retry(on = Transient, max = 2))]
async fn guarded(ctx: Context, key: u8, act: Act, meter: Arc<Meter>) -> Reply {
    work(Guarded::CONTRACT, ctx, key, act, &meter).await
}

#[derive(Clone)]
struct Ops {
    plain: Plain,
    keyed: Keyed,
    reject_keyed: RejectKeyed,
    everything: Everything,
    scoped: Scoped,
    scoped_reject: ScopedReject,
    hasty: Hasty,
    guarded: Guarded,
}

type CallResult = Result<u32, Error<Failure<u32>>>;

impl Ops {
    fn bind(rt: &Runtime) -> Self {
        Ops {
            plain: Plain::bind(rt).unwrap(),
            keyed: Keyed::bind(rt).unwrap(),
            reject_keyed: RejectKeyed::bind(rt).unwrap(),
            everything: Everything::bind(rt).unwrap(),
            scoped: Scoped::bind(rt).unwrap(),
            scoped_reject: ScopedReject::bind(rt).unwrap(),
            hasty: Hasty::bind(rt).unwrap(),
            guarded: Guarded::bind(rt).unwrap(),
        }
    }

    async fn call(&self, op: u64, key: u8, act: Act, meter: Arc<Meter>) -> CallResult {
        match op {
            0 => self.plain.call(key, act, meter).await,
            1 => self.keyed.call(key, act, meter).await,
            2 => self.reject_keyed.call(key, act, meter).await,
            3 => self.everything.call(key, act, meter).await,
            4 => self.scoped.call(key, act, meter).await,
            5 => self.scoped_reject.call(key, act, meter).await,
            6 => self.hasty.call(key, act, meter).await,
            _ => self.guarded.call(key, act, meter).await,
        }
    }
}

/// Units and keys held inside handlers, measured by the handlers.
struct Meter {
    in_use: [AtomicU32; 3],
    /// Per key space (own spaces of `keyed`, `reject_keyed`; scope "s") and key.
    keys: [[AtomicU32; 8]; 3],
    violations: AtomicU64,
    first_violation: Mutex<Option<String>>,
    /// The runtime, whose breaker's probes the handlers read.
    rt: Runtime,
}

impl Meter {
    fn new(rt: &Runtime) -> Arc<Self> {
        Arc::new(Meter {
            rt: rt.clone(),
            in_use: Default::default(),
            keys: Default::default(),
            violations: AtomicU64::new(0),
            first_violation: Mutex::new(None),
        })
    }

    fn violation(&self, what: String) {
        self.violations.fetch_add(1, Ordering::SeqCst);
        self.first_violation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(what);
    }
}

fn resource_index(name: &str) -> usize {
    RESOURCES.iter().position(|r| r.name() == name).unwrap()
}

fn key_space(contract: &Contract) -> Option<usize> {
    let spec = contract.serialize_by()?;
    Some(match (spec.scope(), contract.operation()) {
        (Some(_), _) => 2,
        (None, "keyed") => 0,
        (None, _) => 1,
    })
}

/// Marks a handler inside until dropped.
struct Inside<'a> {
    meter: &'a Meter,
    contract: Contract,
    key: Option<(usize, u8)>,
}

impl<'a> Inside<'a> {
    fn enter(meter: &'a Meter, contract: Contract, key: u8) -> Self {
        for used in contract.resources() {
            let i = resource_index(used.resource());
            let now = meter.in_use[i].fetch_add(used.units(), Ordering::SeqCst) + used.units();
            if now > RESOURCES[i].capacity() {
                meter.violation(format!(
                    "{now} units of `{}` inside handlers, capacity {}",
                    used.resource(),
                    RESOURCES[i].capacity()
                ));
            }
        }
        let key = key_space(&contract).map(|space| {
            let before = meter.keys[space][key as usize].fetch_add(1, Ordering::SeqCst);
            if before != 0 {
                meter.violation(format!(
                    "key {key} of space {space} run twice at once ({})",
                    contract.operation()
                ));
            }
            (space, key)
        });
        Inside {
            meter,
            contract,
            key,
        }
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        for used in self.contract.resources() {
            let i = resource_index(used.resource());
            self.meter.in_use[i].fetch_sub(used.units(), Ordering::SeqCst);
        }
        if let Some((space, key)) = self.key {
            self.meter.keys[space][key as usize].fetch_sub(1, Ordering::SeqCst);
        }
    }
}

async fn work(contract: Contract, ctx: Context, key: u8, act: Act, meter: &Meter) -> Reply {
    let _inside = Inside::enter(meter, contract, key);
    if contract.breaker().is_some() {
        let probing = meter.rt.stats().breaker("guard").map_or(0, |b| b.probing);
        if probing > PROBES {
            meter.violation(format!("{probing} probes in flight, at most {PROBES}"));
        }
    }
    if ctx.attempt() > ctx.max_attempts() {
        meter.violation(format!(
            "attempt {} of {}",
            ctx.attempt(),
            ctx.max_attempts()
        ));
    }
    match act {
        Act::Ok(yields) => {
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            Ok(ctx.attempt())
        }
        Act::TransientOnce if ctx.attempt() == 1 => Err(Failure::transient(1)),
        Act::TransientOnce => Ok(ctx.attempt()),
        Act::Permanent => Err(Failure::permanent(ctx.attempt())),
        Act::Slow => {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(ctx.attempt())
        }
        Act::Panic => panic!("{DELIBERATE} in {}", contract.operation()),
    }
}

/// Awaits `fut`, dropping it instead once it has returned `Pending` `polls`
/// times: the caller gives up at a point decided by the race itself.
async fn give_up_after<F: Future>(fut: F, polls: u32) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut left = polls;
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        Poll::Ready(v) => Poll::Ready(Some(v)),
        Poll::Pending if left <= 1 => Poll::Ready(None),
        Poll::Pending => {
            left -= 1;
            Poll::Pending
        }
    })
    .await
}

/// What the callers of one task saw.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    ok: u64,
    failed: u64,
    timed_out: u64,
    throttled: u64,
    /// Of `throttled`, refused by the breaker.
    broken: u64,
    stopping: u64,
    panicked: u64,
    cancelled: u64,
}

impl Seen {
    fn add(&mut self, o: Seen) {
        self.ok += o.ok;
        self.failed += o.failed;
        self.timed_out += o.timed_out;
        self.throttled += o.throttled;
        self.broken += o.broken;
        self.stopping += o.stopping;
        self.panicked += o.panicked;
        self.cancelled += o.cancelled;
    }

    fn total(&self) -> u64 {
        self.ok
            + self.failed
            + self.timed_out
            + self.throttled
            + self.stopping
            + self.panicked
            + self.cancelled
    }
}

async fn caller(
    ops: Ops,
    meter: Arc<Meter>,
    mut rng: Rng,
    issued: Arc<AtomicU64>,
    threshold: u64,
    go: Arc<Notify>,
) -> Seen {
    let mut seen = Seen::default();
    for _ in 0..CALLS {
        let op = match rng.below(32) {
            0 => 6, // hasty: real-clock timeouts are slow, keep them rare
            1..=5 => 7,
            n => n % 6,
        };
        let key = rng.below(8) as u8;
        let act = match rng.below(64) {
            0 => Act::Panic,
            1 if op == 6 => Act::Slow,
            1..=6 => Act::TransientOnce,
            7..=9 => Act::Permanent,
            n => Act::Ok((n % 4) as u8),
        };
        if issued.fetch_add(1, Ordering::SeqCst) + 1 == threshold {
            go.notify_one();
        }
        let result = match rng.below(16) {
            // The caller gives up after a few polls of its own.
            0 => {
                let call = AssertUnwindSafe(ops.call(op, key, act, meter.clone())).catch_unwind();
                give_up_after(call, 1 + rng.below(4) as u32).await
            }
            // Another task aborts the call, maybe while it was woken (a
            // grant on its way) but not yet polled.
            1 => {
                let polled = Arc::new(AtomicBool::new(false));
                let task = tokio::spawn({
                    let (ops, meter, polled) = (ops.clone(), meter.clone(), polled.clone());
                    async move {
                        polled.store(true, Ordering::SeqCst);
                        AssertUnwindSafe(ops.call(op, key, act, meter))
                            .catch_unwind()
                            .await
                    }
                });
                // Once polled, the call was admitted or refused at once.
                while !polled.load(Ordering::SeqCst) {
                    tokio::task::yield_now().await;
                }
                for _ in 0..rng.below(4) {
                    tokio::task::yield_now().await;
                }
                task.abort();
                match task.await {
                    Ok(result) => Some(result),
                    Err(e) if e.is_cancelled() => None,
                    Err(e) => panic!("call task failed: {e}"),
                }
            }
            _ => Some(
                AssertUnwindSafe(ops.call(op, key, act, meter.clone()))
                    .catch_unwind()
                    .await,
            ),
        };
        match result {
            None => seen.cancelled += 1,
            Some(Err(payload)) => {
                let message = common::panic_message(&*payload);
                assert!(
                    message.starts_with(DELIBERATE),
                    "unexpected panic: {message}"
                );
                seen.panicked += 1;
            }
            Some(Ok(Ok(_))) => seen.ok += 1,
            Some(Ok(Err(Error::Failed { .. }))) => seen.failed += 1,
            Some(Ok(Err(Error::TimedOut { .. }))) => seen.timed_out += 1,
            Some(Ok(Err(Error::Throttled { busy, .. }))) => {
                seen.throttled += 1;
                seen.broken += u64::from(matches!(busy, Busy::Breaker { .. }));
            }
            Some(Ok(Err(Error::Stopping { .. }))) => seen.stopping += 1,
            Some(Ok(Err(other))) => panic!("unexpected error {other:?}"),
        }
    }
    seen
}

async fn iteration(i: u64, seed: u64) -> Seen {
    let rt = RESOURCES
        .iter()
        .fold(Runtime::builder(), |b, r| b.resource(*r))
        .breaker(GUARD)
        .build()
        .unwrap();
    let ops = Ops::bind(&rt);
    let meter = Meter::new(&rt);
    let mut rng = Rng::new(seed ^ i.wrapping_mul(0x1000_0001));
    // Shut down after this many calls were issued: anywhere in the
    // iteration, and in some iterations only after every call.
    let threshold = 1 + rng.below(TASKS * CALLS * 5 / 4);
    let issued = Arc::new(AtomicU64::new(0));
    let go = Arc::new(Notify::new());
    let shutdown = tokio::spawn({
        let (rt, go) = (rt.clone(), go.clone());
        async move {
            go.notified().await;
            rt.shutdown().await;
            // Shutdown returns only once every admitted call has finished
            // and released what it held. A call being refused at the closed
            // gate counts itself in `admitted` for an instant (then takes it
            // back), so up to one per worker thread may show here.
            let s = rt.stats();
            (s.admitted - s.finished, all_free(&rt))
        }
    });
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let rng = Rng::new(rng.next_u64() ^ t);
            tokio::spawn(caller(
                ops.clone(),
                meter.clone(),
                rng,
                issued.clone(),
                threshold,
                go.clone(),
            ))
        })
        .collect();

    let context = |what: &str| {
        format!(
            "iteration {i} (HERTA_HAMMER_SEED={seed}, shutdown after call {threshold}): {what}\nstats: {}",
            rt.stats()
        )
    };
    let mut seen = Seen::default();
    let joined = tokio::time::timeout(BOUND, async {
        for task in tasks {
            seen.add(task.await.expect("a caller task failed"));
        }
    })
    .await;
    assert!(
        joined.is_ok(),
        "{}",
        context(&format!("hang: calls unresolved after {BOUND:?}"))
    );
    go.notify_one(); // shutdown after every call, where the threshold was not reached
    let drained = tokio::time::timeout(BOUND, shutdown).await;
    let (left, free) = match drained {
        Ok(Ok(left)) => left,
        _ => panic!(
            "{}",
            context(&format!("hang: shutdown did not drain in {BOUND:?}"))
        ),
    };
    assert!(
        left <= WORKERS && free,
        "{}",
        context(&format!(
            "shutdown returned before every admitted call finished \
             ({left} not finished, all released: {free})"
        ))
    );

    let s = rt.stats();
    let ctx = context("");
    assert_eq!(seen.total(), TASKS * CALLS, "every call resolved; {ctx}");
    assert_eq!(s.admitted, s.finished, "admitted == finished; {ctx}");
    assert!(s.started <= s.admitted, "started <= admitted; {ctx}");
    assert_eq!(s.in_flight, 0, "{ctx}");
    assert!(all_free(&rt), "every budget free, no key left; {ctx}");
    assert_eq!(
        s.refused_stopping + s.stopped_waiting,
        seen.stopping,
        "refused_stopping + stopped_waiting = Stopping seen; {ctx}"
    );
    assert_eq!(s.throttled, seen.throttled, "throttled; {ctx}");
    assert_eq!(s.panicked, seen.panicked, "panicked; {ctx}");
    assert_eq!(
        s.cancelled, seen.cancelled,
        "cancelled = calls dropped; {ctx}"
    );
    assert!(
        s.started >= seen.ok + seen.failed + seen.timed_out + seen.panicked,
        "{ctx}"
    );
    assert!(s.admitted + seen.stopping >= TASKS * CALLS, "{ctx}");
    let guard = s.breaker("guard").expect("declared");
    assert_eq!(guard.probing, 0, "every probe's slot given back; {ctx}");
    assert_eq!(guard.refused, seen.broken, "breaker refusals; {ctx}");
    if guard.refused > 0 || guard.state != BreakerState::Closed {
        assert!(guard.opened > 0, "it opened before it refused; {ctx}");
    }
    let violations = meter.violations.load(Ordering::SeqCst);
    assert_eq!(
        violations,
        0,
        "measured inside handlers: {:?}; {ctx}",
        meter.first_violation.lock().unwrap()
    );
    assert!(meter.in_use.iter().all(|u| u.load(Ordering::SeqCst) == 0));
    seen
}

/// The hammer's worker threads (its test runtime's).
const WORKERS: u64 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hammer_with_shutdown_racing() {
    quiet_deliberate_panics();
    let iterations = env_count("HERTA_HAMMER_ITERATIONS", 200);
    let seed = env_count("HERTA_HAMMER_SEED", 0x00C0_FFEE);
    let started = Instant::now();
    let mut total = Seen::default();
    for i in 0..iterations {
        total.add(iteration(i, seed).await);
    }
    println!(
        "hammer: {iterations} iterations x {TASKS} tasks x {CALLS} calls = {} calls in {:.2?}\n\
         results: {total:?}",
        total.total(),
        started.elapsed()
    );
}
