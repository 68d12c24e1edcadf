//! Budgets and admission modes (DESIGN §3: Admission Wait/Reject, Exactness).

use crate::common;

use std::sync::Arc;

use common::{all_free, until, within, Gauge, Probe};
use herta::{Busy, Error, Failure, Outcome, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn occupy(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), admission = Reject)]
async fn occupy_or_fail(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 3))]
async fn occupy_three(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn twenty_calls_on_capacity_eight_run_exactly_eight_at_once() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 8))
        .build()
        .unwrap();
    let op = Occupy::bind(&rt).unwrap();
    let probe = Probe::new();
    let calls: Vec<_> = (0..20)
        .map(|_| {
            tokio::spawn({
                let (op, probe) = (op.clone(), probe.clone());
                async move { op.call(probe).await }
            })
        })
        .collect();
    probe.entered(8).await;
    until(|| rt.stats().resource("slots").unwrap().waiting == 12).await;
    assert_eq!(probe.inside(), 8, "exactly capacity inside");
    probe.open(20);
    for c in calls {
        within(c).await.unwrap().unwrap();
    }
    assert_eq!(probe.peak(), 8, "never more than capacity");
    assert_eq!(rt.stats().resource("slots").unwrap().peak_in_use, 8);
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn reject_fails_fast_as_throttled_naming_the_resource() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap();
    let op = OccupyOrFail::bind(&rt).unwrap();
    let probe = Probe::new();
    let first = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(1).await;
    // The call returns at once, without the clock or the holder moving.
    let err = within(op.call(probe.clone())).await.unwrap_err();
    assert_eq!(err.outcome(), Outcome::Throttled);
    match &err {
        Error::Throttled {
            operation, busy, ..
        } => {
            assert_eq!(*operation, "occupy_or_fail");
            assert_eq!(busy, &Busy::Resource { resource: "slots" });
        }
        other => panic!("expected Throttled, got {other:?}"),
    }
    assert_eq!(probe.attempts(), 1, "the rejected call never ran");
    assert_eq!(rt.stats().throttled, 1);
    probe.open(1);
    within(first).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn reject_never_overtakes_a_queued_waiter() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 3))
        .build()
        .unwrap();
    let one = Occupy::bind(&rt).unwrap();
    let three = OccupyThree::bind(&rt).unwrap();
    let reject = OccupyOrFail::bind(&rt).unwrap();
    let probe = Probe::new();
    let holder = tokio::spawn({
        let (op, probe) = (one.clone(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(1).await;
    // 2 units are free, but a 3-unit waiter queues first.
    let big = tokio::spawn({
        let (op, probe) = (three.clone(), probe.clone());
        async move { op.call(probe).await }
    });
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    let err = within(reject.call(probe.clone())).await.unwrap_err();
    assert_eq!(err.outcome(), Outcome::Throttled);
    probe.open(2);
    within(holder).await.unwrap().unwrap();
    within(big).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn light(gauge: Arc<Gauge>) -> Result<(), Failure<String>> {
    gauge.occupy(1).await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 3))]
async fn heavy(gauge: Arc<Gauge>) -> Result<(), Failure<String>> {
    gauge.occupy(3).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_and_three_unit_operations_never_exceed_a_budget_of_four() {
    let rt = Runtime::builder()
        .resource(Resource::new("slots", 4))
        .build()
        .unwrap();
    let light = Light::bind(&rt).unwrap();
    let heavy = Heavy::bind(&rt).unwrap();
    let gauge = Gauge::new();
    let calls: Vec<_> = (0..300u32)
        .map(|i| {
            let (light, heavy, gauge) = (light.clone(), heavy.clone(), gauge.clone());
            tokio::spawn(async move {
                if i % 3 == 0 {
                    heavy.call(gauge).await
                } else {
                    light.call(gauge).await
                }
            })
        })
        .collect();
    for c in calls {
        tokio::time::timeout(std::time::Duration::from_secs(60), c)
            .await
            .expect("a call hung")
            .unwrap()
            .unwrap();
    }
    assert!(
        gauge.peak() <= 4,
        "units inside handlers peaked at {}",
        gauge.peak()
    );
    assert!(gauge.peak() >= 3, "the heavy calls did run");
    let stats = rt.stats();
    assert!(stats.resource("slots").unwrap().peak_in_use <= 4);
    assert_eq!(
        (stats.admitted, stats.finished, stats.started),
        (300, 300, 300)
    );
    assert!(all_free(&rt));
}
