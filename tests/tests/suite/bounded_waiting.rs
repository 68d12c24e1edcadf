//! Bounded waiting (DESIGN §8.2, §8.6): `max_wait` is one limit, from
//! admission, over the key wait and the budget wait together; on expiry the
//! call is throttled naming what it waited for, ran nothing, holds nothing;
//! a grant racing with the expiry is used or handed on, never lost.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{all_free, until, within, Probe};
use herta::{Busy, Error, Failure, Outcome, Resource, Runtime, Throttle};
use tokio::time::{sleep, Instant};

/// Holds a slot until the probe lets it go.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn hog(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

/// Holds a slot for `ms` milliseconds.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn hog_for(ms: u64) -> Result<(), Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(())
}

/// Holds the key `brand` (no budget) for `ms` milliseconds.
#[herta::operation(effect = Idempotent, serialize_by(_brand, scope = "brands"))]
async fn hold_key(_brand: String, ms: u64) -> Result<(), Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(())
}

/// The bounded call: key, then a slot, waiting at most 100 ms for both.
#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(_brand, scope = "brands"), max_wait = "100ms")]
async fn bounded(_brand: String, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Ok(())
}

/// A slot, waiting at most 100 ms for it.
#[herta::operation(effect = Idempotent, resources("slots" = 1), max_wait = "100ms")]
async fn slot_or_give_up(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Ok(())
}

/// Spawns a call of `$op` bound to `$rt`.
macro_rules! spawn {
    ($op:ident, $rt:expr, $($arg:expr),*) => {{
        let op = $op::bind(&$rt).unwrap();
        tokio::spawn(async move { op.call($($arg),*).await })
    }};
}

fn runtime(slots: u32) -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", slots))
        .build()
        .unwrap()
}

fn expect_throttled(err: &Error<Failure<String>>, operation: &str, expected: &Busy) {
    assert_eq!(err.outcome(), Outcome::Throttled);
    assert_eq!(err.attempts(), 0);
    match err {
        Error::Throttled {
            throttle,
            operation: op,
            busy,
            retry_after,
        } => {
            assert_eq!(*throttle, Throttle::MaxWait, "{err}");
            assert_eq!(
                *retry_after, None,
                "a concurrency budget or key has no known time"
            );
            assert_eq!(*op, operation);
            assert_eq!(busy, expected);
        }
        other => panic!("expected Throttled, got {other:?}"),
    }
}

#[test]
fn the_contract_states_max_wait() {
    assert_eq!(
        SlotOrGiveUp::CONTRACT.max_wait(),
        Some(Duration::from_millis(100))
    );
    assert_eq!(Hog::CONTRACT.max_wait(), None);
}

#[tokio::test(start_paused = true)]
async fn max_wait_expires_while_waiting_for_the_key() {
    let rt = runtime(4);
    let holder = spawn!(HoldKey, rt, "acme".into(), 500);
    until(|| rt.stats().keys == 1).await;
    let probe = Probe::new();
    let started = Instant::now();
    let err = within(
        Bounded::bind(&rt)
            .unwrap()
            .call("acme".into(), probe.clone()),
    )
    .await
    .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    expect_throttled(
        &err,
        "bounded",
        &Busy::Key {
            parameter: "_brand",
            value: None,
        },
    );
    assert_eq!(probe.attempts(), 0, "nothing ran");
    let stats = rt.stats();
    assert_eq!((stats.throttled, stats.admitted, stats.started), (1, 2, 1));
    assert_eq!(stats.resource("slots").unwrap().in_use, 0, "holds nothing");
    within(holder).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn max_wait_expires_while_waiting_for_budgets() {
    let rt = runtime(1);
    let probe = Probe::new();
    let hog = {
        let probe = probe.clone();
        spawn!(Hog, rt, probe)
    };
    probe.entered(1).await;
    let started = Instant::now();
    let err = within(SlotOrGiveUp::bind(&rt).unwrap().call(probe.clone()))
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    expect_throttled(
        &err,
        "slot_or_give_up",
        &Busy::Resource { resource: "slots" },
    );
    assert_eq!(probe.attempts(), 1, "only the hog ran");
    assert_eq!(
        rt.stats().resource("slots").unwrap().waiting,
        0,
        "withdrawn"
    );
    probe.open(1);
    within(hog).await.unwrap().unwrap();
    assert!(all_free(&rt));
    assert_eq!(rt.stats().throttled, 1);
}

#[tokio::test(start_paused = true)]
async fn one_limit_across_key_and_budgets_80ms_then_20ms() {
    let rt = runtime(1);
    // The key is held for 80 ms, the slot for 500 ms: the call waits 80 ms
    // for its key, then has only 20 ms left for the slot.
    let key = spawn!(HoldKey, rt, "acme".into(), 80);
    let slot = spawn!(HogFor, rt, 500);
    until(|| rt.stats().keys == 1 && rt.stats().resource("slots").unwrap().in_use == 1).await;
    let started = Instant::now();
    let probe = Probe::new();
    let err = within(
        Bounded::bind(&rt)
            .unwrap()
            .call("acme".into(), probe.clone()),
    )
    .await
    .unwrap_err();
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(100),
        "80 ms + 20 ms"
    );
    expect_throttled(&err, "bounded", &Busy::Resource { resource: "slots" });
    assert_eq!(probe.attempts(), 0);
    assert_eq!(rt.stats().keys, 0, "the key it got is given back");
    within(key).await.unwrap().unwrap();
    within(slot).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_call_granted_within_max_wait_runs() {
    let rt = runtime(1);
    let key = spawn!(HoldKey, rt, "acme".into(), 80);
    let slot = spawn!(HogFor, rt, 95);
    until(|| rt.stats().keys == 1 && rt.stats().resource("slots").unwrap().in_use == 1).await;
    let started = Instant::now();
    let probe = Probe::new();
    within(
        Bounded::bind(&rt)
            .unwrap()
            .call("acme".into(), probe.clone()),
    )
    .await
    .unwrap();
    assert!(started.elapsed() < Duration::from_millis(100));
    assert_eq!(probe.attempts(), 1);
    within(key).await.unwrap().unwrap();
    within(slot).await.unwrap().unwrap();
    assert_eq!(rt.stats().throttled, 0);
}

#[tokio::test(start_paused = true)]
async fn a_grant_at_the_expiry_instant_is_used_or_handed_on() {
    // The hog releases at exactly 100 ms, the instant `max_wait` expires. The
    // bounded waiter either uses the slot or hands it on: the unbounded
    // waiter behind it always gets it, and nothing is left held.
    let rt = runtime(1);
    let hog = spawn!(HogFor, rt, 100);
    until(|| rt.stats().resource("slots").unwrap().in_use == 1).await;
    let probe = Probe::new();
    let bounded = {
        let probe = probe.clone();
        spawn!(SlotOrGiveUp, rt, probe)
    };
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    let behind = spawn!(HogFor, rt, 1);
    until(|| rt.stats().resource("slots").unwrap().waiting == 2).await;
    within(hog).await.unwrap().unwrap();
    let bounded = within(bounded).await.unwrap();
    within(behind).await.unwrap().unwrap();
    match bounded {
        Ok(()) => assert_eq!(probe.attempts(), 1),
        Err(e) => {
            assert_eq!(e.outcome(), Outcome::Throttled);
            assert_eq!(probe.attempts(), 0);
        }
    }
    let stats = rt.stats();
    assert_eq!(stats.admitted, stats.finished);
    assert!(all_free(&rt));
}

#[test]
fn racing_grants_and_expiries_on_a_multi_thread_runtime_lose_no_unit() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        for trial in 0..200 {
            let rt = runtime(2);
            let probe = Probe::new();
            let ends = Arc::new(std::sync::atomic::AtomicU32::new(0));
            let mut calls = Vec::new();
            for i in 0..12u64 {
                let (rt, probe, ends) = (rt.clone(), probe.clone(), ends.clone());
                calls.push(tokio::spawn(async move {
                    let r = if i % 3 == 0 {
                        HogFor::bind(&rt).unwrap().call(1 + i % 2).await.map(|_| ())
                    } else {
                        SlotWithin2ms::bind(&rt).unwrap().call(probe).await
                    };
                    ends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    r
                }));
            }
            for c in calls {
                let r = tokio::time::timeout(Duration::from_secs(10), c)
                    .await
                    .unwrap_or_else(|_| panic!("trial {trial}: a call hung"))
                    .unwrap();
                if let Err(e) = r {
                    assert_eq!(e.outcome(), Outcome::Throttled, "trial {trial}");
                }
            }
            assert_eq!(ends.load(std::sync::atomic::Ordering::SeqCst), 12);
            let stats = rt.stats();
            assert_eq!(stats.admitted, 12, "trial {trial}");
            assert_eq!(stats.finished, 12, "trial {trial}");
            assert!(all_free(&rt), "trial {trial}: {stats}");
        }
    });
}

/// A slot, waiting at most 2 ms: expiries race with the 1-2 ms holders.
#[herta::operation(effect = Idempotent, resources("slots" = 1), max_wait = "2ms")]
async fn slot_within_2ms(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    sleep(Duration::from_millis(1)).await;
    Ok(())
}

#[test]
fn expiries_at_grant_time_on_a_multi_thread_runtime_end_each_waiter_once() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let (mut ok, mut throttled) = (0, 0);
        for trial in 0..300 {
            let rt = runtime(1);
            let probe = Probe::new();
            let calls: Vec<_> = (0..6)
                .map(|_| {
                    let (rt, probe) = (rt.clone(), probe.clone());
                    tokio::spawn(async move { SlotWithin2ms::bind(&rt).unwrap().call(probe).await })
                })
                .collect();
            let mut ended = 0;
            for c in calls {
                match tokio::time::timeout(Duration::from_secs(10), c)
                    .await
                    .unwrap_or_else(|_| panic!("trial {trial}: a call hung"))
                    .unwrap()
                {
                    Ok(()) => ok += 1,
                    Err(e) => {
                        assert_eq!(e.outcome(), Outcome::Throttled, "trial {trial}");
                        throttled += 1;
                    }
                }
                ended += 1;
            }
            assert_eq!(ended, 6);
            assert_eq!(probe.peak(), 1, "trial {trial}: the slot was given twice");
            let stats = rt.stats();
            assert_eq!(stats.throttled + stats.started, 6, "trial {trial}: {stats}");
            assert_eq!(u64::from(probe.attempts()), stats.started);
            assert!(all_free(&rt), "trial {trial}: {stats}");
        }
        assert!(
            ok > 0 && throttled > 0,
            "both ends seen: {ok} ok, {throttled} throttled"
        );
    });
}

#[tokio::test(start_paused = true)]
async fn a_dropped_bounded_waiter_is_counted_cancelled_not_throttled() {
    let rt = runtime(1);
    let probe = Probe::new();
    let hog = {
        let probe = probe.clone();
        spawn!(Hog, rt, probe)
    };
    probe.entered(1).await;
    let op = SlotOrGiveUp::bind(&rt).unwrap();
    let dropped = tokio::time::timeout(Duration::from_millis(50), op.call(probe.clone())).await;
    assert!(dropped.is_err());
    let stats = rt.stats();
    assert_eq!((stats.cancelled, stats.throttled), (1, 0));
    assert_eq!(stats.resource("slots").unwrap().waiting, 0);
    probe.open(1);
    within(hog).await.unwrap().unwrap();
    assert!(all_free(&rt));
}
