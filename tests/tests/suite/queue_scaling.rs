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
//! queue_scaling -- --ignored --nocapture --test-threads 1`.
//!
//! The cancellation tests queue N calls on a full budget (and N on one held
//! key), then drop them in a scrambled order and time the drops: each drop
//! unlinks its waiter in O(1) (before the waiter core it scanned the queue,
//! 9.3x for 4x the waiters).

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn queued(i: u64) -> Result<u64, Failure<String>> {
    tokio::task::yield_now().await;
    Ok(i)
}

/// Time to drain `n` calls queued for a budget of 64 (best of three).
fn drain(n: u64) -> Duration {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (0..3)
        .map(|_| {
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
                let started = Instant::now();
                for c in calls {
                    c.await.unwrap().unwrap();
                }
                started.elapsed()
            })
        })
        .min()
        .unwrap()
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md); \
            it guards the arbiter's early-exit pass against O(N^2) draining"]
fn draining_queued_waiters_scales_linearly() {
    let n = common::env_count("HERTA_QUEUE_SCALING_N", 8000);
    let small = drain(n);
    let large = drain(4 * n);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    println!(
        "drain {n} queued calls: {small:.2?}; {}: {large:.2?}; ratio {ratio:.1}",
        4 * n
    );
    assert!(
        ratio < 8.0,
        "4x the waiters took {ratio:.1}x as long ({small:.2?} -> {large:.2?}): \
         linear would be about 4x, quadratic 16x"
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

/// Time to drop `n` queued calls in a scrambled order (best of three).
/// `call(None)` queues behind `call(Some(hold))`, which holds the resource.
fn cancel<'a, F: Future<Output = ()> + 'a>(
    n: u64,
    call: impl Fn(Option<Arc<Notify>>) -> F,
) -> Duration {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = tokio_rt.enter();
    (0..3)
        .map(|_| {
            let mut holder: Parked<'_> = Box::pin(call(Some(Arc::new(Notify::new()))));
            park(&mut holder);
            // Queue them in a scrambled order (multiplying by an odd
            // constant modulo a power of two is a permutation; indices past
            // n are skipped), then drop them in creation order: each drop
            // removes a waiter from an arbitrary place in the queue, while
            // the futures themselves are visited in memory order (so the
            // figure measures the queue, not cache misses on the futures).
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
            let started = Instant::now();
            drop_all(&mut queued);
            let took = started.elapsed();
            assert!(queued.iter().all(Option::is_none));
            drop(holder);
            took
        })
        .min()
        .unwrap()
}

/// The timed part, a function of its own so that callgrind can count its
/// instructions alone (`--toggle-collect='*drop_all*'`, RELIABILITY.md).
#[inline(never)]
fn drop_all(queued: &mut [Option<Parked<'_>>]) {
    for slot in queued {
        drop(slot.take());
    }
}

fn assert_linear(what: &str, small: Duration, large: Duration, n: u64) {
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    println!(
        "cancel {n} queued {what}: {small:.2?}; {}: {large:.2?}; ratio {ratio:.1}",
        4 * n
    );
    assert!(
        ratio <= 5.0,
        "cancelling 4x the waiters took {ratio:.1}x as long ({small:.2?} -> {large:.2?}): \
         linear would be about 4x"
    );
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md)"]
fn cancelling_waiters_queued_on_a_budget_scales_linearly() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap();
    let op = OnBudget::bind(&rt).unwrap();
    let n = common::env_count("HERTA_QUEUE_SCALING_N", 10_000);
    let call = |hold| {
        let op = op.clone();
        async move {
            let _ = op.call(hold).await;
        }
    };
    let (small, large) = (cancel(n, call), cancel(4 * n, call));
    assert_eq!(rt.stats().resource("slots").unwrap().waiting, 0);
    assert_linear("calls on a full budget", small, large, n);
}

#[test]
#[ignore = "a timing ratio, not a behaviour: run it by hand (see RELIABILITY.md)"]
fn cancelling_waiters_queued_on_a_key_scales_linearly() {
    let rt = Runtime::builder()
        .resource(Resource::new("wide", 1))
        .build()
        .unwrap();
    let op = OnKey::bind(&rt).unwrap();
    let n = common::env_count("HERTA_QUEUE_SCALING_N", 10_000);
    let call = |hold| {
        let op = op.clone();
        async move {
            let _ = op.call(7, hold).await;
        }
    };
    let (small, large) = (cancel(n, call), cancel(4 * n, call));
    assert_eq!(rt.stats().keys, 0);
    assert_linear("calls on one key", small, large, n);
}
