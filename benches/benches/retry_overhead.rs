//! What a retry costs, with and without a backoff (DESIGN §8.3).
//!
//! Every call fails `Transient` on every attempt:
//! * `retry_overhead/one_attempt`: no `retry` (the baseline: one attempt);
//! * `retry_overhead/immediate`: `retry(max = 2)`, no backoff: the second
//!   attempt follows after a pass through the scheduler;
//! * `retry_overhead/backoff`: `retry(max = 2, backoff(...))`: a jitter draw,
//!   the budgets given back and re-acquired, and a timer registered for the
//!   sleep. The sleep itself is excluded: the runtime's clock is paused, so
//!   tokio advances it to the timer at once when the runtime is idle.
//! * `retry_overhead/backoff_budget`: the same with a runtime-wide
//!   `RetryBudget` (a deposit and a withdrawal per call).
//!
//! `cargo bench -p herta-benches --bench retry_overhead -- --quick`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use herta::{Failure, Resource, RetryBudget, Runtime};

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn once() -> Result<(), Failure<u32>> {
    Err(Failure::transient(black_box(1)))
}

#[herta::operation(effect = Pure, resources("worker" = 1), retry(on = Transient, max = 2))]
async fn immediate() -> Result<(), Failure<u32>> {
    Err(Failure::transient(black_box(1)))
}

#[herta::operation(effect = Pure, resources("worker" = 1),
                   retry(on = Transient, max = 2, backoff(base = "1ms", cap = "1ms")))]
async fn backed_off() -> Result<(), Failure<u32>> {
    Err(Failure::transient(black_box(1)))
}

fn runtime(budget: bool) -> Runtime {
    let builder = Runtime::builder().resource(Resource::new("worker", 4));
    let builder = if budget {
        builder.retry_budget(
            RetryBudget::new()
                .ratio(1000.0)
                .min_per_second(1000)
                .window(Duration::from_secs(1)),
        )
    } else {
        builder
    };
    builder.build().unwrap()
}

fn bench(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let mut group = c.benchmark_group("retry_overhead");
    let rt = runtime(false);
    let op = Once::bind(&rt).unwrap();
    group.bench_function("one_attempt", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call().await.unwrap_err()) })
    });
    let op = Immediate::bind(&rt).unwrap();
    group.bench_function("immediate", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call().await.unwrap_err()) })
    });
    let op = BackedOff::bind(&rt).unwrap();
    group.bench_function("backoff", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call().await.unwrap_err()) })
    });
    let budgeted = runtime(true);
    let op = BackedOff::bind(&budgeted).unwrap();
    group.bench_function("backoff_budget", |b| {
        b.to_async(&tokio)
            .iter(|| async { black_box(op.call().await.unwrap_err()) })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
