//! Caller cancellation and handler panics (DESIGN §3: Caller cancellation, Panic).

use crate::common;

use std::sync::Arc;

use common::{all_free, until, within, Probe};
use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = _key)]
async fn hold(_key: u32, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 5))]
async fn flaky(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Err(Failure::transient("try again".to_owned()))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = key)]
async fn explode(key: u32) -> Result<(), Failure<String>> {
    panic!("handler bug for key {key}");
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_budget_waiter_leaves_nothing_held() {
    let rt = runtime();
    let op = Hold::bind(&rt).unwrap();
    let probe = Probe::new();
    let holder = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call(1, probe).await }
    });
    probe.entered(1).await;
    // Another key, so it waits for the budget.
    let waiter = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call(2, probe).await }
    });
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    waiter.abort();
    assert!(within(waiter).await.unwrap_err().is_cancelled());
    let slots = *rt.stats().resource("slots").unwrap();
    assert_eq!((slots.in_use, slots.waiting), (1, 0));
    assert_eq!(rt.stats().keys, 1, "key 2 was given up");
    probe.open(1);
    within(holder).await.unwrap().unwrap();
    assert!(all_free(&rt));
    let stats = rt.stats();
    assert_eq!(stats.cancelled, 1);
    assert_eq!(stats.admitted, stats.finished);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_key_waiter_lets_the_next_one_in() {
    let rt = runtime();
    let op = Hold::bind(&rt).unwrap();
    let probe = Probe::new();
    let spawn = || {
        let (op, probe) = (op.clone(), probe.clone());
        tokio::spawn(async move { op.call(7, probe).await })
    };
    let holder = spawn();
    probe.entered(1).await;
    let cancelled = spawn();
    until(|| rt.stats().in_flight == 2).await;
    let next = spawn();
    until(|| rt.stats().in_flight == 3).await;
    cancelled.abort();
    assert!(within(cancelled).await.unwrap_err().is_cancelled());
    probe.open(1);
    probe.entered(2).await; // `next` got the key
    probe.open(1);
    within(holder).await.unwrap().unwrap();
    within(next).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_stops_the_retry_loop() {
    let rt = runtime();
    let op = Flaky::bind(&rt).unwrap();
    let probe = Probe::new();
    let call = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.open(1); // attempt 1 fails Transient
    probe.entered(2).await; // attempt 2 is inside
    call.abort();
    assert!(within(call).await.unwrap_err().is_cancelled());
    probe.open(10);
    common::settle().await;
    assert_eq!(probe.attempts(), 2, "no attempt after the caller gave up");
    let stats = rt.stats();
    assert_eq!((stats.cancelled, stats.retried), (1, 1));
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_panic_releases_key_and_budget_and_propagates_unchanged() {
    let rt = runtime();
    let op = Explode::bind(&rt).unwrap();
    let joined = tokio::spawn({
        let op = op.clone();
        async move { op.call(9).await }
    })
    .await;
    let panic = joined.unwrap_err().into_panic();
    let message = panic
        .downcast_ref::<String>()
        .expect("the handler's own payload");
    assert_eq!(message, "handler bug for key 9");
    assert!(all_free(&rt));
    let stats = rt.stats();
    assert_eq!(stats.panicked, 1);
    assert_eq!(stats.cancelled, 0);
    assert_eq!(stats.admitted, stats.finished);
    // Key 9 and the budget are usable again.
    let probe = Probe::new();
    probe.open(1);
    Hold::bind(&rt).unwrap().call(9, probe).await.unwrap();
}

/// An error type whose classification itself panics.
#[derive(Debug)]
struct Unclassifiable;

impl herta::Classify for Unclassifiable {
    fn outcome(&self) -> herta::Outcome {
        panic!("{} classify bug", common::DELIBERATE);
    }
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
async fn misclassified() -> Result<(), Unclassifiable> {
    Err(Unclassifiable)
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_classify_is_counted_as_a_panic_not_a_cancellation() {
    common::quiet_deliberate_panics();
    let rt = runtime();
    let op = Misclassified::bind(&rt).unwrap();
    let joined = tokio::spawn(async move { op.call().await }).await;
    let panic = joined.unwrap_err().into_panic();
    let message = panic.downcast_ref::<String>().expect("a formatted payload");
    assert!(message.ends_with("classify bug"), "{message}");
    assert!(all_free(&rt));
    let stats = rt.stats();
    assert_eq!((stats.panicked, stats.cancelled), (1, 0));
    assert_eq!(stats.admitted, stats.finished);
}
