//! herta in the shapes of the Go reference's benchmarks (`bench_test.go` of
//! the Go module `arahe-dev/HertaSDK` v0.2.0), for a side-by-side table with
//! `go test -bench . -cpu 1,2` (BENCHMARKS.md, "Go reference").
//!
//! Go's `b.RunParallel` starts one goroutine per `GOMAXPROCS` (`-cpu N`), and
//! each loops `op.Do(ctx, i)` until a shared counter of `b.N` calls runs out;
//! the result is wall time ÷ `b.N` (ns/op). Here: **N caller tasks on an
//! N-worker tokio multi-thread runtime** (N = 1, 2), each looping
//! `op.call(..)` and taking its calls in batches from one shared counter (as
//! `RunParallel` takes them in "grains" of about 100 µs); the figure is wall
//! time ÷ calls, in **nanoseconds per call**.
//!
//! The four shapes (each with its own herta runtime, as each Go benchmark
//! builds its own):
//! * `Contention`: budget `worker` = 4, a `Pure` operation taking 1 unit,
//!   `Wait` admission, handler increments a counter;
//! * `KeyedSerialization`: the same plus `serialize_by` over 8 keys
//!   (`"key-0"` … `"key-7"`, key = the caller's own call index `& 7`);
//! * `MultiResource`: budgets `cpu` = 4 and `io` = 4, one unit of each;
//! * `RetryOverhead/max_attempts={1,3}`: `Idempotent`, `worker` = 1 unit, the
//!   handler always fails `Transient`; 1 attempt (no `retry`: Go's
//!   `MaxAttempts: 1` is one attempt too) or `retry(on = Transient, max = 3)`
//!   (`max` counts attempts, as Go's `MaxAttempts` does). No timeout, no
//!   backoff (Go v0.2.0 has neither in these benchmarks).
//!
//! **Placement** is checked, not assumed: every worker thread gets an index at
//! start (`on_thread_start`), each caller records on which worker it started
//! each batch of calls, and the bench prints each caller's share per worker
//! and how many batches ended on another worker than they started on
//! (callers that wait on a key move: a woken task runs on the waker's worker
//! until the other steals it). Each batch's start and end time are recorded
//! too: with 2 workers the bench says `parallel` only when, **in every
//! sample, batches started on both workers were running at the same time
//! for at least 80 % of the wall time**.
//!
//! **Method**: per shape and worker count, a calibration picks the number of
//! calls for one sample (about `--sample-ms`, default 400 ms) and the batch
//! size (about 100 µs of calls, at most 10 000, like Go 1.19's grain); then
//! one unmeasured sample and `--samples` (default 5) samples; the median is
//! reported with min and max.
//!
//! `cargo bench -p herta-benches --bench go_shapes` (filter: a substring of a
//! shape's name, e.g. `-- Keyed`; `--workers N` for one worker count only;
//! `--calls N` for a fixed number of calls per sample instead of the
//! calibration, e.g. to count CPU time per call with `perf stat`). Under
//! `cargo test` (no `--bench` argument) it runs each shape with 1 and 2
//! workers once, 20 000 calls after as many unmeasured, as a smoke test.

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use herta::{Failure, Operation, Resource, Runtime};

// ------------------------------------------------------------------ the shapes

type HandlerError = Failure<std::io::Error>;

/// The Go handlers' `counter.Add(1)`.
static COUNTER: AtomicU64 = AtomicU64::new(0);

#[herta::operation(effect = Pure, resources("worker" = 1), admission = Wait)]
async fn work(_i: u64) -> Result<u64, HandlerError> {
    COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(0)
}

#[herta::operation(effect = Pure, resources("worker" = 1), admission = Wait,
                   serialize_by = key)]
async fn keyed(key: &'static str) -> Result<u64, HandlerError> {
    black_box(key);
    COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(0)
}

#[herta::operation(effect = Pure, resources("cpu" = 1, "io" = 1), admission = Wait)]
async fn multi(_i: u64) -> Result<u64, HandlerError> {
    COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(0)
}

/// Go's `Fail(Transient, boom)`; this error allocates nothing itself.
fn boom() -> HandlerError {
    Failure::transient(std::io::ErrorKind::ConnectionReset.into())
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), admission = Wait)]
async fn flaky_one_attempt(_i: u64) -> Result<u64, HandlerError> {
    COUNTER.fetch_add(1, Ordering::Relaxed);
    Err(boom())
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), admission = Wait,
                   retry(on = Transient, max = 3))]
async fn flaky_three_attempts(_i: u64) -> Result<u64, HandlerError> {
    COUNTER.fetch_add(1, Ordering::Relaxed);
    Err(boom())
}

/// The Go benchmarks' keys: `SerializeKey` maps `i & 7` to one of these.
const KEYS: [&str; 8] = [
    "key-0", "key-1", "key-2", "key-3", "key-4", "key-5", "key-6", "key-7",
];

/// A herta runtime with the named budgets, capacity 4 each (as in Go).
fn herta_runtime(budgets: &[&'static str]) -> Runtime {
    budgets
        .iter()
        .fold(Runtime::builder(), |b, name| {
            b.resource(Resource::new(name, 4))
        })
        .build()
        .expect("valid resources")
}

// ------------------------------------------------------------------ placement

thread_local! {
    /// This thread's worker index in the current tokio runtime (`usize::MAX`
    /// on threads that are not workers).
    static WORKER: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A multi-thread tokio runtime of `workers` workers, each thread numbered
/// in `WORKER` as it starts.
fn tokio_runtime(workers: usize) -> tokio::runtime::Runtime {
    let next = Arc::new(AtomicUsize::new(0));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .on_thread_start(move || WORKER.with(|w| w.set(next.fetch_add(1, Ordering::Relaxed))))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// One batch of a caller's calls: when it ran, on which worker it started
/// and ended, and how many calls it made.
struct Batch {
    start: Instant,
    end: Instant,
    worker: usize,
    end_worker: usize,
    calls: u64,
}

/// One sample: `callers` tasks, each with its own handle of `op`, make
/// `iters` calls in all, taking `grain` at a time from a shared counter (the
/// input of a call is the caller's own call index, as in Go's loop). Returns
/// the wall time and each caller's batches.
fn sample<O: Operation>(
    rt: &tokio::runtime::Runtime,
    op: &O,
    args: fn(u64) -> O::Args,
    callers: usize,
    iters: u64,
    grain: u64,
) -> (Duration, Vec<Vec<Batch>>) {
    let next = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (next, op) = (Arc::clone(&next), op.clone());
                tokio::spawn(async move {
                    let mut batches = Vec::new();
                    let mut i = 0u64;
                    loop {
                        let base = next.fetch_add(grain, Ordering::Relaxed);
                        if base >= iters {
                            return batches;
                        }
                        let calls = grain.min(iters - base);
                        let (start, worker) = (Instant::now(), WORKER.with(Cell::get));
                        for _ in 0..calls {
                            drop(black_box(op.call_with(args(i)).await));
                            i += 1;
                        }
                        let (end, end_worker) = (Instant::now(), WORKER.with(Cell::get));
                        batches.push(Batch {
                            start,
                            end,
                            worker,
                            end_worker,
                            calls,
                        });
                    }
                })
            })
            .collect();
        let mut batches = Vec::with_capacity(callers);
        for t in tasks {
            batches.push(t.await.expect("caller task"));
        }
        (start.elapsed(), batches)
    })
}

/// Each caller's share of calls per worker (by the worker a batch started
/// on), and the batches that ended on another worker than they started on.
fn describe(callers: &[Vec<Batch>]) -> String {
    let parts: Vec<String> = callers
        .iter()
        .enumerate()
        .map(|(c, batches)| {
            let mut per_worker = Vec::<u64>::new();
            for b in batches {
                if per_worker.len() <= b.worker {
                    per_worker.resize(b.worker + 1, 0);
                }
                per_worker[b.worker] += b.calls;
            }
            let total = per_worker.iter().sum::<u64>().max(1) as f64;
            let shares: Vec<String> = per_worker
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(w, n)| format!("w{w} {:.0}%", 100.0 * *n as f64 / total))
                .collect();
            let moved = batches.iter().filter(|b| b.worker != b.end_worker).count();
            format!(
                "caller {c}: {}, {moved}/{} batches moved",
                shares.join(" "),
                batches.len()
            )
        })
        .collect();
    parts.join("; ")
}

/// The share of `wall` during which batches were running on `workers`
/// different workers at once (by the worker each batch started on).
fn parallel_share(callers: &[Vec<Batch>], wall: Duration, workers: usize) -> f64 {
    let mut events: Vec<(Instant, bool, usize)> = callers
        .iter()
        .flatten()
        .flat_map(|b| [(b.start, true, b.worker), (b.end, false, b.worker)])
        .collect();
    events.sort_by_key(|&(t, starts, _)| (t, starts));
    let mut active = vec![0usize; workers];
    let mut together = Duration::ZERO;
    let mut last = events.first().map(|e| e.0);
    for (t, starts, w) in events {
        if let Some(since) = last {
            if active.iter().all(|n| *n > 0) {
                together += t - since;
            }
        }
        last = Some(t);
        if let Some(n) = active.get_mut(w) {
            if starts {
                *n += 1;
            } else {
                *n -= 1;
            }
        }
    }
    together.as_secs_f64() / wall.as_secs_f64()
}

// ------------------------------------------------------------------ harness

/// The command line: `--bench` (full run), `--samples N`, `--sample-ms M`,
/// `--calls N`, `--workers N`, and a name filter.
struct Options {
    full: bool,
    samples: usize,
    sample: Duration,
    calls: Option<u64>,
    workers: Vec<usize>,
    filter: Option<String>,
}

/// Parses the command line (cargo's own `--bench` included).
fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Options {
        full: args.iter().any(|a| a == "--bench"),
        samples: 5,
        sample: Duration::from_millis(400),
        calls: None,
        workers: vec![1, 2],
        filter: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--samples" => o.samples = it.next().and_then(|v| v.parse().ok()).expect("--samples N"),
            "--sample-ms" => {
                let ms = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--sample-ms M");
                o.sample = Duration::from_millis(ms);
            }
            "--calls" => o.calls = Some(it.next().and_then(|v| v.parse().ok()).expect("--calls N")),
            "--workers" => {
                o.workers = vec![it.next().and_then(|v| v.parse().ok()).expect("--workers N")]
            }
            s if !s.starts_with('-') => o.filter = Some(s.to_owned()),
            _ => {}
        }
    }
    o
}

/// The calls per sample and the grain (about 100 µs of calls), from runs
/// of growing size.
fn calibrate<O: Operation>(
    rt: &tokio::runtime::Runtime,
    op: &O,
    args: fn(u64) -> O::Args,
    workers: usize,
    o: &Options,
) -> (u64, u64) {
    let mut iters = 1_000u64;
    loop {
        let (t, _) = sample(rt, op, args, workers, iters, 100);
        if t >= Duration::from_millis(50) || iters >= 1 << 30 {
            let per_call = t.as_nanos().max(1) as f64 / iters as f64;
            let calls = (o.sample.as_nanos() as f64 / per_call) as u64;
            let grain = (100_000.0 / per_call) as u64;
            return (calls.max(1_000), grain.clamp(1, 10_000));
        }
        iters *= 4;
    }
}

/// The median time per call of `op` with `workers` callers on as many
/// workers; prints the samples and the placement.
fn measure<O: Operation>(
    shape: &str,
    op: &O,
    args: fn(u64) -> O::Args,
    workers: usize,
    o: &Options,
) -> f64 {
    let rt = tokio_runtime(workers);
    let (iters, grain, samples) = match (o.full, o.calls) {
        (true, Some(calls)) => (calls, calls.min(1_000), o.samples),
        (true, None) => {
            let (iters, grain) = calibrate(&rt, op, args, workers, o);
            (iters, grain, o.samples)
        }
        (false, _) => (20_000, 100, 1),
    };
    // A first sample unmeasured: threads started, caches and key table warm.
    sample(&rt, op, args, workers, iters, grain);
    let mut times = Vec::with_capacity(samples);
    let mut last = Vec::new();
    let mut least_parallel = f64::INFINITY;
    for _ in 0..samples {
        let (t, batches) = sample(&rt, op, args, workers, iters, grain);
        times.push(t.as_nanos() as f64 / iters as f64);
        least_parallel = least_parallel.min(parallel_share(&batches, t, workers));
        last = batches;
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let placement = describe(&last);
    let together = format!(
        "batches on {workers} workers at once >= {:.0}% of every sample",
        100.0 * least_parallel
    );
    let verdict = match workers {
        1 => "one worker".to_owned(),
        _ if least_parallel >= 0.8 => format!("parallel: {together}"),
        _ => format!("NOT parallel: {together}"),
    };
    println!(
        "{shape:<30} workers={workers}  {median:>8.1} ns/call (min {:.1}, max {:.1}; \
         {samples} x {iters} calls, grain {grain})  [{placement}] {verdict}",
        times[0],
        times[times.len() - 1],
    );
    median
}

/// `shape` measured with 1 and 2 workers, if the filter selects it.
fn shape<O: Operation>(
    name: &'static str,
    op: &O,
    args: fn(u64) -> O::Args,
    o: &Options,
    table: &mut Vec<(&'static str, usize, f64)>,
) {
    if o.filter.as_deref().is_some_and(|f| !name.contains(f)) {
        return;
    }
    for &workers in &o.workers {
        table.push((name, workers, measure(name, op, args, workers, o)));
    }
}

fn main() {
    let o = options();
    let mut table = Vec::new();
    // One herta runtime per shape, as each Go benchmark builds its own.
    let worker = |_| herta_runtime(&["worker"]);
    let rts: Vec<Runtime> = (0..4).map(worker).collect();
    let multi_rt = herta_runtime(&["cpu", "io"]);
    let work = Work::bind(&rts[0]).expect("bind");
    shape("Contention", &work, |i| (i,), &o, &mut table);
    let keyed = Keyed::bind(&rts[1]).expect("bind");
    let key = |i: u64| (KEYS[(i & 7) as usize],);
    shape("KeyedSerialization", &keyed, key, &o, &mut table);
    let multi = Multi::bind(&multi_rt).expect("bind");
    shape("MultiResource", &multi, |i| (i,), &o, &mut table);
    let one = FlakyOneAttempt::bind(&rts[2]).expect("bind");
    shape(
        "RetryOverhead/max_attempts=1",
        &one,
        |i| (i,),
        &o,
        &mut table,
    );
    let three = FlakyThreeAttempts::bind(&rts[3]).expect("bind");
    shape(
        "RetryOverhead/max_attempts=3",
        &three,
        |i| (i,),
        &o,
        &mut table,
    );

    println!("\n| shape | workers | ns/call (median) |\n|---|---|---|");
    for (name, workers, median) in &table {
        println!("| {name} | {workers} | {median:.1} |");
    }
    assert!(
        table.is_empty() || COUNTER.load(Ordering::Relaxed) > 0,
        "the handlers ran"
    );
}
