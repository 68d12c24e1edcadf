//! What herta costs per call, next to its baselines in the same run.
//!
//! Groups (each with its baselines, so one run gives the ratios):
//! * `uncontended`: one caller, free budget — herta vs a bare
//!   `tokio::sync::Semaphore` permit vs the equivalent tower stack;
//! * `contention/<callers>`: capacity 4, trivial handler, 1–64 concurrent
//!   tasks on a multi-thread runtime (the Go reference's BenchmarkContention);
//! * `keyed/<keys>`: 1, 8 and 10 000 keys over a budget of 4
//!   (BenchmarkKeyedSerialization and key-map churn);
//! * `multi_resource/<budgets>`: 2 and 3 budgets of 4 (BenchmarkMultiResource);
//! * `retry/<max>`: an always-Transient handler, max 1 vs 3
//!   (BenchmarkRetryOverhead);
//! * `threads/<n>`: 1 and 2 OS threads calling at once, each on its own
//!   current-thread runtime, one shared herta runtime (capacity 4) vs one
//!   shared `Semaphore` (4): the time of one call on each thread, so 2 vs 1
//!   is how much a second caller in parallel slows each call down.
//!
//! Before the timings, the bench prints heap allocations per call for each
//! scenario (a counting global allocator).
//!
//! Short run: `cargo bench -p herta-benches --bench overhead -- --quick`
//! (see BENCHMARKS.md for the full command and the figures).

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, BenchmarkGroup, BenchmarkId, Criterion};
use herta::{Failure, Operation, Runtime};
use tokio::sync::Semaphore;
use tower::{Service, ServiceBuilder, ServiceExt};

// ---------------------------------------------------------------- allocations

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ----------------------------------------------------------------- operations

herta::resources! {
    /// The contended budget of every scenario.
    WORKER: "worker" = 4;
    /// Second budget for the multi-resource scenarios.
    IO: "io" = 4;
    /// Third budget for the multi-resource scenarios.
    NET: "net" = 4;
}

type HandlerError = Failure<std::io::Error>;

/// The trivial handler of every scenario (the Go reference's counter).
static HANDLED: AtomicU64 = AtomicU64::new(0);

fn handle(x: u64) -> u64 {
    HANDLED.fetch_add(1, Ordering::Relaxed);
    black_box(x)
}

#[herta::operation(effect = Pure, resources(WORKER = 1))]
async fn work(x: u64) -> Result<u64, HandlerError> {
    Ok(handle(x))
}

#[herta::operation(effect = Idempotent, resources(WORKER = 1), retry(on = Transient, max = 3),
                   timeout = "2s")]
async fn guarded(x: u64) -> Result<u64, HandlerError> {
    Ok(handle(x))
}

#[herta::operation(effect = Pure, resources(WORKER = 1), serialize_by = key)]
async fn keyed(key: u64) -> Result<u64, HandlerError> {
    Ok(handle(key))
}

#[herta::operation(effect = Pure, resources(WORKER = 1, IO = 1))]
async fn two_budgets(x: u64) -> Result<u64, HandlerError> {
    Ok(handle(x))
}

#[herta::operation(effect = Pure, resources(WORKER = 1, IO = 1, NET = 1))]
async fn three_budgets(x: u64) -> Result<u64, HandlerError> {
    Ok(handle(x))
}

/// A Transient failure that allocates nothing itself, so the figures show
/// herta's cost, not the error's.
fn boom() -> HandlerError {
    Failure::transient(std::io::ErrorKind::ConnectionReset.into())
}

#[herta::operation(effect = Idempotent, resources(WORKER = 1), retry(on = Transient, max = 2))]
async fn flaky_once(x: u64) -> Result<u64, HandlerError> {
    handle(x);
    Err(boom())
}

#[herta::operation(effect = Idempotent, resources(WORKER = 1), retry(on = Transient, max = 3))]
async fn flaky_thrice(x: u64) -> Result<u64, HandlerError> {
    handle(x);
    Err(boom())
}

#[herta::operation(effect = Idempotent, resources(WORKER = 1))]
async fn flaky_no_retry(x: u64) -> Result<u64, HandlerError> {
    handle(x);
    Err(boom())
}

fn herta_runtime() -> Runtime {
    Runtime::builder()
        .resource(WORKER)
        .resource(IO)
        .resource(NET)
        .build()
        .expect("valid resources")
}

// ------------------------------------------------------------------ baselines

/// The floor: a bare semaphore permit around the same handler.
async fn semaphore_call(sem: &Semaphore, x: u64) -> u64 {
    let _permit = sem.acquire().await.expect("never closed");
    handle(x)
}

/// Semaphores for `n` budgets, taken in order around the same handler.
async fn semaphores_call(sems: &[Semaphore], x: u64) -> u64 {
    let mut permits = Vec::with_capacity(sems.len());
    for s in sems {
        permits.push(s.acquire().await.expect("never closed"));
    }
    handle(x)
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Retry policy for the tower stack: up to `n` attempts on any error.
#[derive(Clone)]
struct Attempts(usize);

impl<E> tower::retry::Policy<u64, u64, E> for Attempts {
    type Future = std::future::Ready<()>;
    fn retry(&mut self, _: &mut u64, result: &mut Result<u64, E>) -> Option<Self::Future> {
        match result {
            Err(_) if self.0 > 1 => {
                self.0 -= 1;
                Some(std::future::ready(()))
            }
            _ => None,
        }
    }
    fn clone_request(&mut self, req: &u64) -> Option<u64> {
        Some(*req)
    }
}

/// What users would assemble instead: ConcurrencyLimit(4) → Retry(3) →
/// Timeout(2 s) around the same handler. Clone one per caller task.
fn tower_stack(
    fail: bool,
    attempts: usize,
) -> impl Service<u64, Response = u64, Error = BoxError, Future: Send> + Clone + Send {
    ServiceBuilder::new()
        .concurrency_limit(4)
        .retry(Attempts(attempts))
        .timeout(Duration::from_secs(2))
        .service_fn(move |x: u64| async move {
            let v = handle(x);
            if fail {
                Err::<u64, BoxError>("boom".into())
            } else {
                Ok(v)
            }
        })
}

async fn tower_call<S>(svc: &mut S, x: u64)
where
    S: Service<u64, Response = u64, Error = BoxError>,
{
    let _ = black_box(svc.ready().await.expect("ready").call(x).await);
}

// ------------------------------------------------------------------ harness

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `iters` calls split over `callers` concurrent tasks; `make` builds
/// each task's caller state, `call` makes one call. Returns the wall time.
async fn parallel<S, M, C, F>(callers: u64, iters: u64, make: M, call: C) -> Duration
where
    S: Send + 'static,
    M: Fn() -> S,
    C: Fn(&mut S, u64) -> F + Clone + Send + 'static,
    F: Future<Output = ()> + Send,
{
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|t| {
            let n = iters / callers + u64::from(t < iters % callers);
            let mut state = make();
            let call = call.clone();
            tokio::spawn(async move {
                for i in 0..n {
                    call(&mut state, i).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("caller task");
    }
    start.elapsed()
}

const CALLERS: [u64; 4] = [1, 4, 16, 64];

// ---------------------------------------------------------------- benchmarks

fn bench_uncontended(c: &mut Criterion) {
    let rt = current_thread();
    let herta = herta_runtime();
    let work = Work::bind(&herta).expect("bind");
    let guarded = Guarded::bind(&herta).expect("bind");
    let sem = Semaphore::new(4);
    let mut svc = tower_stack(false, 3);
    let mut g = c.benchmark_group("uncontended");
    g.bench_function("semaphore", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(semaphore_call(&sem, 1).await) })
    });
    g.bench_function("herta", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(work.call(1).await.ok()) })
    });
    g.bench_function("herta_timeout_retry", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(guarded.call(1).await.ok()) })
    });
    g.bench_function("tower", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters {
                    tower_call(&mut svc, i).await;
                }
                start.elapsed()
            })
        })
    });
    g.finish();
}

fn bench_contention(c: &mut Criterion) {
    let rt = multi_thread();
    let herta = herta_runtime();
    let work = Work::bind(&herta).expect("bind");
    let guarded = Guarded::bind(&herta).expect("bind");
    let sem = Arc::new(Semaphore::new(4));
    let svc = tower_stack(false, 3);
    let mut g = c.benchmark_group("contention");
    for callers in CALLERS {
        g.bench_with_input(BenchmarkId::new("semaphore", callers), &callers, |b, &n| {
            b.iter_custom(|iters| {
                rt.block_on(parallel(
                    n,
                    iters,
                    || Arc::clone(&sem),
                    |s: &mut Arc<Semaphore>, i| {
                        let s = Arc::clone(s);
                        async move {
                            black_box(semaphore_call(&s, i).await);
                        }
                    },
                ))
            })
        });
        g.bench_with_input(BenchmarkId::new("herta", callers), &callers, |b, &n| {
            b.iter_custom(|iters| rt.block_on(parallel(n, iters, || work.clone(), herta_caller)))
        });
        g.bench_with_input(
            BenchmarkId::new("herta_timeout_retry", callers),
            &callers,
            |b, &n| {
                b.iter_custom(|iters| {
                    rt.block_on(parallel(n, iters, || guarded.clone(), herta_caller))
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("tower", callers), &callers, |b, &n| {
            b.iter_custom(|iters| rt.block_on(parallel(n, iters, || svc.clone(), tower_caller)))
        });
    }
    g.finish();
}

/// `op` called by `callers` concurrent tasks, as benchmark `id` of `g`.
fn bench_operation<O>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    rt: &tokio::runtime::Runtime,
    id: BenchmarkId,
    op: &O,
    callers: u64,
) where
    O: Operation<Args = (u64,)>,
{
    g.bench_function(id, |b| {
        b.iter_custom(|iters| rt.block_on(parallel(callers, iters, || op.clone(), herta_caller)))
    });
}

/// One call of any `u64 -> u64` operation from a task's own handle.
fn herta_caller<O>(op: &mut O, i: u64) -> impl Future<Output = ()> + Send
where
    O: Operation<Args = (u64,)>,
{
    let op = op.clone();
    async move {
        black_box(op.call_with((i,)).await.ok());
    }
}

/// One tower call from a task's own clone of the stack.
fn tower_caller<S>(svc: &mut S, i: u64) -> impl Future<Output = ()> + Send
where
    S: Service<u64, Response = u64, Error = BoxError, Future: Send> + Clone + Send + 'static,
{
    let mut svc = svc.clone();
    async move { tower_call(&mut svc, i).await }
}

fn bench_keyed(c: &mut Criterion) {
    let rt = multi_thread();
    let herta = herta_runtime();
    let op = Keyed::bind(&herta).expect("bind");
    let work = Work::bind(&herta).expect("bind");
    let mut g = c.benchmark_group("keyed");
    let callers = 4;
    g.bench_function("unkeyed", |b| {
        b.iter_custom(|iters| rt.block_on(parallel(callers, iters, || work.clone(), herta_caller)))
    });
    for keys in [1u64, 8, 10_000] {
        g.bench_with_input(BenchmarkId::new("herta", keys), &keys, |b, &keys| {
            b.iter_custom(|iters| {
                rt.block_on(parallel(
                    callers,
                    iters,
                    || op.clone(),
                    move |op: &mut Keyed, i| {
                        let op = op.clone();
                        // Callers interleave over the key space.
                        let key = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7) % keys;
                        async move {
                            black_box(op.call(key).await.ok());
                        }
                    },
                ))
            })
        });
    }
    g.finish();
}

fn bench_multi_resource(c: &mut Criterion) {
    let rt = multi_thread();
    let herta = herta_runtime();
    let two = TwoBudgets::bind(&herta).expect("bind");
    let three = ThreeBudgets::bind(&herta).expect("bind");
    let mut g = c.benchmark_group("multi_resource");
    let callers = 4;
    for budgets in [2usize, 3] {
        let sems: Arc<[Semaphore]> = (0..budgets).map(|_| Semaphore::new(4)).collect();
        g.bench_with_input(BenchmarkId::new("semaphores", budgets), &budgets, |b, _| {
            b.iter_custom(|iters| {
                rt.block_on(parallel(
                    callers,
                    iters,
                    || Arc::clone(&sems),
                    |s: &mut Arc<[Semaphore]>, i| {
                        let s = Arc::clone(s);
                        async move {
                            black_box(semaphores_call(&s, i).await);
                        }
                    },
                ))
            })
        });
    }
    g.bench_function(BenchmarkId::new("herta", 2), |b| {
        b.iter_custom(|iters| rt.block_on(parallel(callers, iters, || two.clone(), herta_caller)))
    });
    g.bench_function(BenchmarkId::new("herta", 3), |b| {
        b.iter_custom(|iters| rt.block_on(parallel(callers, iters, || three.clone(), herta_caller)))
    });
    g.finish();
}

fn bench_retry(c: &mut Criterion) {
    let rt = multi_thread();
    let herta = herta_runtime();
    let none = FlakyNoRetry::bind(&herta).expect("bind");
    let twice = FlakyOnce::bind(&herta).expect("bind");
    let thrice = FlakyThrice::bind(&herta).expect("bind");
    let mut g = c.benchmark_group("retry");
    let callers = 4;
    bench_operation(&mut g, &rt, BenchmarkId::new("herta", 1), &none, callers);
    bench_operation(&mut g, &rt, BenchmarkId::new("herta", 2), &twice, callers);
    bench_operation(&mut g, &rt, BenchmarkId::new("herta", 3), &thrice, callers);
    for attempts in [1usize, 3] {
        let svc = tower_stack(true, attempts);
        g.bench_function(BenchmarkId::new("tower", attempts), |b| {
            b.iter_custom(|iters| {
                rt.block_on(parallel(callers, iters, || svc.clone(), tower_caller))
            })
        });
    }
    g.finish();
}

// -------------------------------------------------------- allocation report

/// Heap allocations per call over `calls` calls after a warm-up.
fn allocations_per_call<F: Future>(rt: &tokio::runtime::Runtime, calls: u64, run: F) -> f64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    rt.block_on(run);
    (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / calls as f64
}

fn allocation_report() {
    const CALLS: u64 = 20_000;
    let single = current_thread();
    let multi = multi_thread();
    let herta = herta_runtime();
    let work = Work::bind(&herta).expect("bind");
    let guarded = Guarded::bind(&herta).expect("bind");
    let keyed = Keyed::bind(&herta).expect("bind");
    let two = TwoBudgets::bind(&herta).expect("bind");
    let thrice = FlakyThrice::bind(&herta).expect("bind");
    let sem = Arc::new(Semaphore::new(4));
    let mut svc = tower_stack(false, 3);

    let mut rows: Vec<(&str, f64)> = Vec::new();
    macro_rules! sequential {
        ($name:expr, $call:expr) => {{
            single.block_on(async {
                for i in 0..100u64 {
                    let _ = $call(i).await;
                }
            });
            let per = allocations_per_call(&single, CALLS, async {
                for i in 0..CALLS {
                    let _ = $call(i).await;
                }
            });
            rows.push(($name, per));
        }};
    }
    sequential!("uncontended/semaphore", |i| semaphore_call(&sem, i));
    sequential!("uncontended/herta", |i| work.call(i));
    sequential!("uncontended/herta_timeout_retry", |i| guarded.call(i));
    sequential!("uncontended/herta_keyed", |i| keyed.call(i % 8));
    sequential!("uncontended/herta_two_budgets", |i| two.call(i));
    sequential!("uncontended/herta_retry_max3", |i| thrice.call(i));
    let per = allocations_per_call(&single, CALLS, async {
        for i in 0..CALLS {
            tower_call(&mut svc, i).await;
        }
    });
    rows.push(("uncontended/tower", per));
    for callers in CALLERS {
        let per = allocations_per_call(
            &multi,
            CALLS,
            parallel(callers, CALLS, || work.clone(), herta_caller),
        );
        // The harness itself spawns `callers` tasks: report that apart.
        let harness = allocations_per_call(
            &multi,
            CALLS,
            parallel(callers, CALLS, || (), |_: &mut (), _| async {}),
        );
        rows.push((
            Box::leak(
                format!("contention/herta/{callers} (harness {harness:.4})").into_boxed_str(),
            ),
            per,
        ));
    }
    println!("\nheap allocations per call ({CALLS} calls each):");
    for (name, per) in rows {
        println!("  {name:<48} {per:>8.4}");
    }
    println!();
}

/// Each of `threads` OS threads makes `iters` calls on its own
/// current-thread runtime; returns the wall time (so per-iteration time is
/// the time of one call on each thread).
fn on_threads<F: Future<Output = ()>>(
    threads: u64,
    iters: u64,
    call: impl Fn(u64) -> F + Sync,
) -> Duration {
    let start = std::sync::Barrier::new(threads as usize);
    let took: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (call, start) = (&call, &start);
                scope.spawn(move || {
                    let rt = current_thread();
                    rt.block_on(async {
                        start.wait();
                        let began = Instant::now();
                        for i in 0..iters {
                            call(i).await;
                        }
                        began.elapsed()
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("caller thread"))
            .collect()
    });
    took.into_iter().max().unwrap_or_default()
}

fn bench_threads(c: &mut Criterion) {
    let herta = herta_runtime();
    let work = Work::bind(&herta).expect("bind");
    let sem = Semaphore::new(4);
    let mut g = c.benchmark_group("threads");
    for threads in [1u64, 2] {
        g.bench_with_input(BenchmarkId::new("semaphore", threads), &threads, |b, &n| {
            b.iter_custom(|iters| {
                on_threads(n, iters, |i| {
                    let sem = &sem;
                    async move {
                        black_box(semaphore_call(sem, i).await);
                    }
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("herta", threads), &threads, |b, &n| {
            b.iter_custom(|iters| {
                on_threads(n, iters, |i| {
                    let work = &work;
                    async move {
                        black_box(work.call(i).await.ok());
                    }
                })
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_threads,
    bench_uncontended,
    bench_contention,
    bench_keyed,
    bench_multi_resource,
    bench_retry
);

fn main() {
    allocation_report();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
