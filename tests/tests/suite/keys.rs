//! Keyed serialization (DESIGN §3: Keys, Key before budgets).

use crate::common;

use std::sync::Arc;

use common::{all_free, until, within, Probe};
use herta::{Busy, Error, Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = _brand)]
async fn replace(_brand: String, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), admission = Reject,
                   serialize_by = _brand)]
async fn replace_or_fail(_brand: String, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

fn runtime(slots: u32) -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", slots))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn same_key_runs_one_at_a_time_and_different_keys_run_together() {
    let rt = runtime(8);
    let op = Replace::bind(&rt).unwrap();
    let probe = Probe::new();
    let spawn = |brand: &str| {
        let (op, probe, brand) = (op.clone(), probe.clone(), brand.to_owned());
        tokio::spawn(async move { op.call(brand, probe).await })
    };
    let first = spawn("acme");
    probe.entered(1).await;
    let other_key = spawn("globex");
    probe.entered(2).await; // a different key runs alongside
    let second = spawn("acme");
    let third = spawn("acme");
    until(|| rt.stats().in_flight == 4).await;
    common::settle().await;
    assert_eq!(probe.attempts(), 2, "the other acme calls wait for the key");
    // Let the first acme and globex out: exactly one acme call follows.
    probe.open(2);
    probe.entered(3).await;
    until(|| rt.stats().in_flight == 2).await;
    common::settle().await;
    assert_eq!((probe.attempts(), probe.inside()), (3, 1));
    probe.open(1);
    probe.entered(4).await;
    probe.open(1);
    for c in [first, other_key, second, third] {
        within(c).await.unwrap().unwrap();
    }
    assert_eq!(probe.peak(), 2);
    assert!(all_free(&rt), "no key entry left behind");
}

#[tokio::test(start_paused = true)]
async fn a_same_key_waiter_holds_no_budget() {
    let rt = runtime(2);
    let op = Replace::bind(&rt).unwrap();
    let probe = Probe::new();
    let holder = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call("acme".into(), probe).await }
    });
    probe.entered(1).await;
    let waiter = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call("acme".into(), probe).await }
    });
    until(|| rt.stats().keys == 1 && rt.stats().in_flight == 2).await;
    common::settle().await;
    let slots = *rt.stats().resource("slots").unwrap();
    assert_eq!(slots.in_use, 1, "only the running call holds a unit");
    assert_eq!(slots.waiting, 0, "the key waiter is not queued for budget");
    // The free unit is really free: a Reject call with another key gets it.
    let other = tokio::spawn({
        let op = ReplaceOrFail::bind(&rt).unwrap();
        let probe = probe.clone();
        async move { op.call("globex".into(), probe).await }
    });
    probe.entered(2).await;
    probe.open(3);
    for c in [holder, waiter, other] {
        within(c).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn reject_does_not_wait_for_a_busy_key() {
    let rt = runtime(4);
    let op = ReplaceOrFail::bind(&rt).unwrap();
    let probe = Probe::new();
    let holder = tokio::spawn({
        let (op, probe) = (op.clone(), probe.clone());
        async move { op.call("acme".into(), probe).await }
    });
    probe.entered(1).await;
    let err = within(op.call("acme".into(), probe.clone()))
        .await
        .unwrap_err();
    match &err {
        Error::Throttled {
            busy: Busy::Key { parameter, value },
            ..
        } => assert_eq!((*parameter, value.as_deref()), ("_brand", None)),
        other => panic!("expected a busy key, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        !message.contains("acme"),
        "no key value by default: {message}"
    );
    assert!(message.contains("the key `_brand` is busy"), "{message}");
    probe.open(1);
    within(holder).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(_brand, scope = "catalogue"))]
async fn import(_brand: String, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(brand, scope = "catalogue"))]
async fn purge(brand: &str, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _ = brand;
    probe.hold().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_scope_shares_one_key_space_across_operations() {
    let rt = runtime(4);
    let import = Import::bind(&rt).unwrap();
    let purge = Purge::bind(&rt).unwrap();
    let probe = Probe::new();
    let first = tokio::spawn({
        let (op, probe) = (import.clone(), probe.clone());
        async move { op.call("acme".into(), probe).await }
    });
    probe.entered(1).await;
    let second = tokio::spawn({
        let (op, probe) = (purge.clone(), probe.clone());
        async move { op.call("acme", probe).await }
    });
    until(|| rt.stats().in_flight == 2).await;
    common::settle().await;
    assert_eq!(probe.attempts(), 1, "purge(acme) waits for import(acme)");
    probe.open(1);
    probe.entered(2).await;
    probe.open(1);
    within(first).await.unwrap().unwrap();
    within(second).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test]
async fn many_distinct_keys_leave_the_key_map_empty() {
    let rt = runtime(4);
    let op = Replace::bind(&rt).unwrap();
    let probe = Probe::new();
    probe.open(1 << 30);
    for i in 0..20_000u32 {
        op.call(i.to_string(), probe.clone()).await.unwrap();
    }
    assert_eq!(rt.stats().keys, 0);
}
