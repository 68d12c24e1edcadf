//! What a circuit breaker costs per call (issue 27), on one current-thread
//! runtime, one caller:
//! * `breaker/none`: a plain call, no breaker (the baseline);
//! * `breaker/closed`: the same call through a closed breaker (a pass
//!   before the call, the attempt counted in the window after it);
//! * `breaker/open`: the call refused by an open breaker (`Throttled`,
//!   nothing run, the error built and dropped);
//! * `breaker/reject`: the same call refused by a full budget under
//!   `admission = Reject` (the existing refusal, for comparison).
//!
//! `cargo bench -p herta-benches --bench breaker -- --warm-up-time 1 --measurement-time 2 --noplot`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use herta::{Admission, Failure, Resource, Runtime};

herta::breakers! {
    GUARD: "guard" = breaker(failure_rate = 50, min_calls = 10, window = "10s");
    TRIPPED: "tripped" = breaker(failure_rate = 1, min_calls = 1, open_for = "1h");
}

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn none(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1), breaker = GUARD)]
async fn closed(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1), breaker = TRIPPED)]
async fn open(x: u64) -> Result<u64, Failure<std::io::Error>> {
    if x == u64::MAX {
        return Err(Failure::transient(std::io::Error::other("trip")));
    }
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("full" = 1), admission = Reject)]
async fn rejected(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("full" = 1))]
async fn hold(gate: std::sync::Arc<tokio::sync::Notify>) -> Result<(), Failure<std::io::Error>> {
    gate.notified().await;
    Ok(())
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let rt = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(Resource::new("full", 1))
        .breaker(GUARD)
        .breaker(TRIPPED)
        .build()
        .unwrap();
    assert_eq!(Rejected::CONTRACT.admission(), Admission::Reject);
    let mut group = c.benchmark_group("breaker");
    let op = None::bind(&rt).unwrap();
    group.bench_function("none", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call(1).await.ok()) })
    });
    let op = Closed::bind(&rt).unwrap();
    group.bench_function("closed", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call(1).await.ok()) })
    });
    let op = Open::bind(&rt).unwrap();
    tokio.block_on(async {
        assert!(op.call(u64::MAX).await.is_err());
        assert!(op.call(1).await.is_err(), "the breaker is open");
    });
    group.bench_function("open", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call(1).await.is_err()) })
    });
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    let holder = Hold::bind(&rt).unwrap();
    let held = tokio.spawn({
        let gate = gate.clone();
        async move { holder.call(gate).await }
    });
    tokio.block_on(async {
        while rt.stats().resource("full").unwrap().in_use == 0 {
            tokio::task::yield_now().await;
        }
    });
    let op = Rejected::bind(&rt).unwrap();
    group.bench_function("reject", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call(1).await.is_err()) })
    });
    group.finish();
    gate.notify_one();
    tokio.block_on(held).unwrap().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
