//! How draining and cancelling queued waiters scale (RELIABILITY.md,
//! "Findings" 1; issue 14, finding 2; DESIGN §8.2: a disconnect storm of N
//! queued callers costs O(N)).
//!
//! Found by the key-space burst: when N calls queue for one budget, every
//! release ran the arbiter's grant pass over the whole queue, so draining
//! them cost O(N²). Quadrupling N should cost about 4× (tokio's `Semaphore`
//! does); before the fix it cost 16×. The arbiter's pass now stops once no
//! budget is open, and the ratio is about 4. A timing ratio is not a CI
//! test, so it runs by hand: `cargo test -p herta-tests --release --test
//! suite queue_scaling:: -- --ignored --nocapture --test-threads 1`.
//!
//! The cancellation tests queue N calls on a full budget (and N on one held
//! key), then drop them in a scrambled order and time the drops: each drop
//! unlinks its waiter in O(1) (before the waiter core it scanned the queue,
//! 9.3x for 4x the waiters, i.e. N^1.61). Every size is timed from **cold
//! caches** (a sweep over a buffer larger than the last-level cache comes
//! before the drops), as in a disconnect storm, where the callers had been
//! queued a while: timed straight after queueing, small queues still sit
//! in the caches and large ones do not, and the figure then measures the
//! cache's size, not the queue (RELIABILITY.md, finding 5: tokio's
//! `Semaphore` in the same harness read 4.7–8.9x warm with its futures
//! padded to 128–400 bytes, the ratio moving with the padding alone). The
//! warm exponent and pairs are printed beside the cold ones, unchecked.
//!
//! Robust on a loaded machine: the measuring thread's CPU time is measured
//! (not wall-clock time, which counts the other processes' time slices);
//! each check takes a fixed number of rounds, every size once per round
//! (upwards and downwards in turn), and checks medians over the rounds, so
//! that a disturbed round is an outlier whichever size it hit. The
//! cancellation checks fit the exponent of the cost over five sizes, 10 000
//! to 160 000 queued waiters ([`cancel_sizes`] says why not one pair
//! alone), and check the issue's own pair (10 000 -> 40 000) beside it;
//! every 4x pair's ratio is printed. `--cfg herta_scan_on_cancel` puts a
//! walk of the whole queue back into every cancel (`Node::leave`;
//! RELIABILITY.md has the command): it reads an exponent of about 2, and
//! the check fails.

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

use tokio::sync::Notify;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn queued(i: u64) -> Result<u64, Failure<String>> {
    tokio::task::yield_now().await;
    Ok(i)
}

/// The calling thread's CPU time: what the measured work cost, without the
/// time slices that other processes took meanwhile. On a loaded machine a
/// wall-clock measurement longer than a time slice (the 4x size) is almost
/// never undisturbed, while a short one (the 1x size) often is, so even the
/// best of many wall-clock rounds overstates the ratio (it read 9–19x for
/// the budget case with the load average at 8 on 2 cores).
#[cfg(unix)]
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec, and the clock is one
    // every unix kernel that tokio supports provides.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Elsewhere, wall-clock time since the first call (run it on a quiet
/// machine).
#[cfg(not(unix))]
fn cpu_time() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// Rounds per measurement (`HERTA_QUEUE_SCALING_ROUNDS`, default 12: an
/// even number, so that as many rounds run the sizes upwards as downwards).
fn rounds() -> usize {
    (common::env_count("HERTA_QUEUE_SCALING_ROUNDS", 12) as usize).max(1)
}

/// The median of `values` (not empty).
fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The least-squares slope of `ln y` against `ln x`: the exponent `k` of
/// the power law `y ∝ x^k` that fits the points best (1 for a linear cost,
/// 2 for a quadratic one).
fn exponent(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let covariance: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    covariance / variance
}

/// What [`measure`] found: medians over the rounds.
struct Scaling {
    /// The median of the per-round fitted exponents ([`exponent`]).
    exponent: f64,
    /// The median of the per-round `time(4n) / time(n)`, for each size `n`
    /// of the list that has one four times as large.
    quadruplings: Vec<(u64, f64)>,
}

/// Times `run(n)` for every size of `sizes` (ascending, each twice the one
/// before), in [`rounds`] rounds: each round runs every size once, upwards
/// in even rounds and downwards in odd ones (so that no size always runs
/// first or last). Per round, it fits the exponent of the power law through
/// the sizes' times and takes each 4x step's ratio; the **medians over the
/// rounds** are reported. A round that something else disturbed (another
/// process's cache traffic, a frequency change) is an outlier the medians
/// ignore, whichever size it hit; the number of rounds is fixed in advance.
///
/// (Until session 7 the best time of each of two sizes was compared, with
/// more rounds taken while the ratio failed. Bests are biased here: the
/// small round is short and its time spreads more (cold, 1.5–4.7 ms for a
/// budget case whose median was 2.9 ms), so its best falls further with
/// more rounds than the large one's, and the ratio of bests drifted up:
/// 5.4–6.1x where the median of the paired ratios read 4.6–5.0x.)
///
/// Prints the median time of each size, the 4x ratios and the exponent,
/// also the exponent of the upward and the downward rounds apart.
fn measure(what: &str, sizes: &[u64], mut run: impl FnMut(u64) -> Duration) -> Scaling {
    let rounds = rounds();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut exponents = [Vec::new(), Vec::new()];
    let quadruple: Vec<usize> = (0..sizes.len())
        .filter(|&i| sizes.get(i + 2) == Some(&(4 * sizes[i])))
        .collect();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); quadruple.len()];
    for round in 0..rounds {
        let mut this = vec![0.0; sizes.len()];
        let order: Vec<usize> = if round % 2 == 0 {
            (0..sizes.len()).collect()
        } else {
            (0..sizes.len()).rev().collect()
        };
        for i in order {
            this[i] = run(sizes[i]).as_secs_f64().max(1e-9);
            times[i].push(this[i]);
        }
        let points: Vec<(f64, f64)> = sizes
            .iter()
            .map(|&n| n as f64)
            .zip(this.iter().copied())
            .collect();
        exponents[round % 2].push(exponent(&points));
        for (r, &i) in ratios.iter_mut().zip(&quadruple) {
            r.push(this[i + 2] / this[i]);
        }
    }
    let all: Vec<f64> = exponents.concat();
    let scaling = Scaling {
        exponent: median(&all),
        quadruplings: quadruple
            .iter()
            .zip(&ratios)
            .map(|(&i, r)| (sizes[i], median(r)))
            .collect(),
    };
    let medians: Vec<String> = sizes
        .iter()
        .zip(&times)
        .map(|(n, t)| format!("{n}: {:.2?}", Duration::from_secs_f64(median(t))))
        .collect();
    let steps: Vec<String> = scaling
        .quadruplings
        .iter()
        .map(|(n, r)| format!("{n} -> {}: {r:.2}x", 4 * n))
        .collect();
    let (low, high) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &e| {
            (l.min(e), h.max(e))
        });
    let by_order = |e: &[f64]| if e.is_empty() { f64::NAN } else { median(e) };
    println!(
        "{what}: {} (medians); 4x the waiters: {}; exponent {:.3} (median of {rounds} rounds, \
         min {low:.3}, max {high:.3}; upwards {:.3}, downwards {:.3})",
        medians.join(", "),
        steps.join(", "),
        scaling.exponent,
        by_order(&exponents[0]),
        by_order(&exponents[1]),
    );
    scaling
}

/// Time to drain `n` calls queued for a budget of 64.
fn drain(tokio_rt: &tokio::runtime::Runtime, n: u64) -> Duration {
    tokio_rt.block_on(async {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 64))
            .build()
            .unwrap();
        let op = Arc::new(Queued::bind(&rt).unwrap());
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let op = op.clone();
                tokio::spawn(async move { op.call(i).await })
            })
            .collect();
        while rt.stats().admitted < n {
            tokio::task::yield_now().await;
        }
        let started = cpu_time();
        for c in calls {
            c.await.unwrap().unwrap();
        }
        cpu_time() - started
    })
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md); \
            it guards the arbiter's early-exit pass against O(N^2) draining"]
fn draining_queued_waiters_scales_linearly() {
    let n = common::env_count("HERTA_QUEUE_SCALING_N", 8000);
    let tokio_rt = current_thread();
    let scaling = measure("drain queued calls", &[n, 2 * n, 4 * n], |n| {
        drain(&tokio_rt, n)
    });
    let ratio = scaling.quadruplings[0].1;
    assert!(
        ratio < 8.0,
        "4x the waiters took {ratio:.1}x as long to drain: linear would be about 4x, \
         quadratic 16x"
    );
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn on_budget(hold: Option<Arc<Notify>>) -> Result<(), Failure<String>> {
    if let Some(hold) = hold {
        hold.notified().await;
    }
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("wide" = 1), serialize_by = key)]
async fn on_key(key: u64, hold: Option<Arc<Notify>>) -> Result<(), Failure<String>> {
    let _ = key;
    if let Some(hold) = hold {
        hold.notified().await;
    }
    Ok(())
}

type Parked<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Polls `fut` once; it must be pending (holding or queued).
fn park(fut: &mut Parked<'_>) {
    let pending = fut
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending();
    assert!(pending, "the call should hold or queue");
}

/// How the caches stand when the timed drops begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caches {
    /// Straight after queueing: what fits in the caches is still there.
    Warm,
    /// After [`evict`]: every size starts from memory.
    Cold,
}

/// Bytes of the sweep that evicts the caches (`HERTA_QUEUE_SCALING_EVICT_MIB`,
/// default 128 MiB: four times this machine's 32 MiB last-level cache; set
/// it above yours).
fn evict_bytes() -> usize {
    (common::env_count("HERTA_QUEUE_SCALING_EVICT_MIB", 128) as usize) << 20
}

/// Writes every cache line of a buffer larger than the last-level cache, so
/// that nothing measured afterwards is still cached. The buffer is made
/// once per thread and reused.
fn evict() {
    thread_local! {
        static SWEEP: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SWEEP.with_borrow_mut(|sweep| {
        sweep.resize(evict_bytes(), 0);
        for line in sweep.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        std::hint::black_box(&sweep);
    });
}

/// Time to drop `n` queued calls in a scrambled order, from `caches`.
/// `call(None)` queues behind `call(Some(hold))`, which holds the resource.
fn cancel<'a, F: Future<Output = ()> + 'a>(
    n: u64,
    caches: Caches,
    call: impl Fn(Option<Arc<Notify>>) -> F,
) -> Duration {
    let mut holder: Parked<'_> = Box::pin(call(Some(Arc::new(Notify::new()))));
    park(&mut holder);
    // Queue them in a scrambled order (multiplying by an odd constant
    // modulo a power of two is a permutation; indices past n are skipped),
    // then drop them in creation order: each drop removes a waiter from an
    // arbitrary place in the queue, while the futures themselves are
    // visited in memory order (so the figure measures the queue, not cache
    // misses on the futures).
    let mut queued: Vec<Option<Parked<'_>>> = (0..n)
        .map(|_| Some(Box::pin(call(None)) as Parked<'_>))
        .collect();
    let size = n.next_power_of_two();
    for i in 0..size {
        let j = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (size - 1)) as usize;
        if let Some(Some(fut)) = queued.get_mut(j) {
            park(fut);
        }
    }
    if caches == Caches::Cold {
        evict();
    }
    let started = cpu_time();
    drop_all(&mut queued);
    let took = cpu_time() - started;
    assert!(queued.iter().all(Option::is_none));
    drop(holder);
    took
}

/// The timed part, a function of its own so that callgrind can count its
/// instructions alone (`--toggle-collect='*drop_all*'`, RELIABILITY.md).
#[inline(never)]
fn drop_all(queued: &mut [Option<Parked<'_>>]) {
    for slot in queued {
        drop(slot.take());
    }
}

/// The largest exponent a cancellation storm's cost may grow with: 4x the
/// waiters costing 5x the time (issue 14) is the power law `N^log4(5)`,
/// `N^1.161`. A linear cost is 1; a scan per cancel (the bug) about 2.
const MAX_EXPONENT: f64 = 1.160_964_047_443_681; // ln 5 / ln 4

/// The sizes of the cancellation checks: N, 2N, 4N, 8N and 16N queued
/// waiters, N = `HERTA_CANCEL_SCALING_N` (default 10 000, the issue's
/// smaller size; 160 000 at the top).
///
/// Why a fitted exponent over five sizes and not only the ratio of one pair:
/// the cost per cancel is not one constant but steps where the waiters'
/// memory outgrows a cache, and a pair of sizes that happens to straddle a
/// step reads high while one past it reads low (session 7, budget: 10 000 →
/// 40 000 4.4–5.4x, 20 000 → 80 000 6.0–7.2x, 40 000 → 160 000 4.0–4.5x;
/// RELIABILITY.md finding 5). The fit over the range weighs every step
/// once, and the pairs are printed beside it.
fn cancel_sizes() -> [u64; 5] {
    let n = common::env_count("HERTA_CANCEL_SCALING_N", 10_000).max(1);
    [n, 2 * n, 4 * n, 8 * n, 16 * n]
}

/// Cancelling 4x the waiters costs at most 5x the time (issue 14), from
/// cold caches: on average over [`cancel_sizes`] as a fitted power law (the
/// cost's exponent is at most [`MAX_EXPONENT`]), and for the issue's own
/// pair, the smallest size to 4x it (median ratio at most 5). Every 4x
/// pair is printed; so is the same from warm caches, not checked.
/// `round(n, caches)` measures one round on a fresh runtime;
/// `future_bytes` is the size of one queued call's future.
fn assert_linear(what: &str, future_bytes: usize, round: impl Fn(u64, Caches) -> Duration) {
    let tokio_rt = current_thread();
    let _guard = tokio_rt.enter();
    let sizes = cancel_sizes();
    println!("{what}: each queued call's future is {future_bytes} bytes");
    measure(&format!("{what}, warm (not checked)"), &sizes, |n| {
        round(n, Caches::Warm)
    });
    let cold = measure(&format!("{what}, cold"), &sizes, |n| round(n, Caches::Cold));
    assert!(
        cold.exponent <= MAX_EXPONENT,
        "cancelling N queued waiters cost N^{:.2} (4x the waiters: {:?}): linear would be N^1, \
         and 4x the waiters may cost at most 5x (N^{MAX_EXPONENT:.3})",
        cold.exponent,
        cold.quadruplings,
    );
    let (n, ratio) = cold.quadruplings[0];
    assert!(
        ratio <= 5.0,
        "cancelling {} queued waiters cost {ratio:.2}x as much as cancelling {n}: \
         4x the waiters may cost at most 5x (the fit over all sizes: N^{:.3})",
        4 * n,
        cold.exponent,
    );
}

/// Each round on a fresh runtime: every round starts from an empty queue,
/// as in the scenario. (Before the waiter nodes moved into the call
/// futures, one reused runtime's waiter slab handed its free slots back in
/// the order earlier rounds freed them, so queue neighbours ended up at
/// random places of a slab as large as the largest round: the ratio then
/// measured cache misses left by history.)
fn fresh(resource: &'static str) -> Runtime {
    Runtime::builder()
        .resource(Resource::new(resource, 1))
        .build()
        .unwrap()
}

/// One call queued on (or, with `hold`, holding) the budget.
fn budget_call(op: &OnBudget, hold: Option<Arc<Notify>>) -> impl Future<Output = ()> + use<> {
    let op = op.clone();
    async move {
        let _ = op.call(hold).await;
    }
}

/// One call queued on (or, with `hold`, holding) key 7.
fn key_call(op: &OnKey, hold: Option<Arc<Notify>>) -> impl Future<Output = ()> + use<> {
    let op = op.clone();
    async move {
        let _ = op.call(7, hold).await;
    }
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md)"]
fn cancelling_waiters_queued_on_a_budget_scales_linearly() {
    let bytes = std::mem::size_of_val(&budget_call(
        &OnBudget::bind(&fresh("slots")).unwrap(),
        None,
    ));
    assert_linear(
        "cancel queued calls on a full budget",
        bytes,
        |n, caches| {
            let rt = fresh("slots");
            let op = OnBudget::bind(&rt).unwrap();
            let took = cancel(n, caches, |hold| budget_call(&op, hold));
            assert_eq!(rt.stats().resource("slots").unwrap().waiting, 0);
            took
        },
    );
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md)"]
fn cancelling_waiters_queued_on_a_key_scales_linearly() {
    let bytes = std::mem::size_of_val(&key_call(&OnKey::bind(&fresh("wide")).unwrap(), None));
    assert_linear("cancel queued calls on one key", bytes, |n, caches| {
        let rt = fresh("wide");
        let op = OnKey::bind(&rt).unwrap();
        let took = cancel(n, caches, |hold| key_call(&op, hold));
        assert_eq!(rt.stats().keys, 0);
        took
    });
}

/// One acquire queued on (or, with `hold`, holding) `semaphore`, its future
/// padded by `PAD` bytes that live across the await (written when the
/// future first runs, never read on drop), to compare footprints.
fn semaphore_call<const PAD: usize>(
    semaphore: &Arc<tokio::sync::Semaphore>,
    hold: Option<Arc<Notify>>,
) -> impl Future<Output = ()> + use<PAD> {
    let semaphore = Arc::clone(semaphore);
    async move {
        let pad = [0u8; PAD];
        let _permit = semaphore.acquire().await;
        std::hint::black_box(&pad);
        if let Some(hold) = hold {
            hold.notified().await;
        }
    }
}

/// The semaphore baseline, warm and cold, over [`cancel_sizes`], with its
/// futures padded by `PAD` bytes.
fn semaphore_baseline<const PAD: usize>() {
    let bytes = std::mem::size_of_val(&semaphore_call::<PAD>(
        &Arc::new(tokio::sync::Semaphore::new(1)),
        None,
    ));
    let what =
        format!("baseline: cancel queued acquires on a tokio Semaphore, {bytes}-byte futures");
    for caches in [Caches::Warm, Caches::Cold] {
        measure(&format!("{what}, {caches:?}"), &cancel_sizes(), |n| {
            let semaphore = Arc::new(tokio::sync::Semaphore::new(1));
            cancel(n, caches, |hold| semaphore_call::<PAD>(&semaphore, hold))
        });
    }
}

/// The same cancellation storm on a bare `tokio::sync::Semaphore` (its
/// waiters are intrusive in the futures, unlinked in O(1)): no assertion,
/// a baseline for the two checks above on the machine at hand (how much of
/// their ratio is the memory hierarchy, not the queue). Its futures as they
/// are, then padded to a queued herta call's size on a budget (560 bytes
/// in session 7; the keyed call's is 608).
#[test]
#[ignore = "a timing baseline, not a behaviour: run it by hand (see RELIABILITY.md)"]
fn cancelling_waiters_queued_on_a_tokio_semaphore_for_comparison() {
    let tokio_rt = current_thread();
    let _guard = tokio_rt.enter();
    semaphore_baseline::<0>();
    semaphore_baseline::<432>();
}
