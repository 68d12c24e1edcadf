//! Each operation's rolling latency quantiles (`OperationStats::p50`, `p99`).

use std::time::Duration;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn sleepy(ms: u64) -> Result<(), Failure<String>> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn quick() -> Result<(), Failure<String>> {
    Ok(())
}

/// `got` is within a sixteenth of `want` (the histogram's resolution).
fn near(got: Option<Duration>, want: Duration) -> bool {
    got.is_some_and(|got| got.abs_diff(want) <= want / 16)
}

#[tokio::test(start_paused = true)]
async fn p50_and_p99_are_the_latencies_callers_saw_in_the_last_minute() {
    let rt = Runtime::builder()
        .resource(Resource::new("cpu", 4))
        .build()
        .unwrap();
    let (sleepy, quick) = (Sleepy::bind(&rt).unwrap(), Quick::bind(&rt).unwrap());
    assert_eq!(rt.stats().operation("sleepy").unwrap().p50, None);
    for _ in 0..90 {
        sleepy.call(10).await.unwrap();
    }
    for _ in 0..10 {
        sleepy.call(400).await.unwrap();
    }
    quick.call().await.unwrap();

    let s = rt.stats();
    let op = s.operation("sleepy").unwrap();
    // Each call ends at least 10 ms after the last: every one is timed.
    assert_eq!(op.timed, 100);
    assert!(near(op.p50, Duration::from_millis(10)), "{:?}", op.p50);
    assert!(near(op.p99, Duration::from_millis(400)), "{:?}", op.p99);
    let quick_stats = s.operation("quick").unwrap();
    assert_eq!(quick_stats.p50, Some(Duration::ZERO));
    assert_eq!(quick_stats.timed, 1);

    // A minute later, the window holds none of them.
    tokio::time::advance(Duration::from_secs(61)).await;
    let op = rt.stats().operation("sleepy").unwrap().clone();
    assert_eq!((op.p50, op.p99, op.timed), (None, None, 0));
    assert_eq!(op.succeeded, 100);
}
