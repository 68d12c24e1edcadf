//! How draining queued waiters scales (RELIABILITY.md, "Findings" 1).
//!
//! Found by the key-space burst: when N calls queue for one budget, every
//! release ran the arbiter's grant pass over the whole queue, so draining
//! them cost O(N²). Quadrupling N should cost about 4× (tokio's `Semaphore`
//! does); before the fix it cost 16×. The arbiter's pass now stops once no
//! budget is open, and the ratio is about 4. A timing ratio is not a CI
//! test, so it runs by hand: `cargo test -p herta-tests --release --test
//! queue_scaling -- --ignored --nocapture`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

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
