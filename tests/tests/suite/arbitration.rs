//! Multi-budget arbitration (DESIGN §3: Multi-budget, Fairness; §8.1: the
//! fairness bound).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use common::{all_free, until, within, Probe};
use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("a" = 1, "b" = 1))]
async fn both(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("b" = 1, "a" = 1))]
async fn both_reversed(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("b" = 1))]
async fn only_b(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("a" = 1), admission = Reject)]
async fn only_a_or_fail(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

fn runtime(a: u32, b: u32) -> Runtime {
    Runtime::builder()
        .resource(Resource::new("a", a))
        .resource(Resource::new("b", b))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_waiter_hoards_nothing_while_another_budget_is_full() {
    let rt = runtime(1, 1);
    let probe = Probe::new();
    // H holds b.
    let h = tokio::spawn({
        let (op, probe) = (OnlyB::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(1).await;
    // X needs {a, b} and waits for b...
    let x = tokio::spawn({
        let (op, probe) = (Both::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    until(|| rt.stats().resource("b").unwrap().waiting == 1).await;
    assert_eq!(
        rt.stats().resource("a").unwrap().in_use,
        0,
        "X holds no unit of a"
    );
    // ...so Y, needing only a with Reject, gets it at once.
    let y = tokio::spawn({
        let (op, probe) = (OnlyAOrFail::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(2).await;
    probe.open(3);
    for c in [h, x, y] {
        within(c).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_declaration_orders_never_deadlock() {
    let rt = runtime(1, 1);
    let probe = Probe::new();
    probe.open(1 << 20);
    let (ab, ba) = (Both::bind(&rt).unwrap(), BothReversed::bind(&rt).unwrap());
    let calls: Vec<_> = (0..400)
        .map(|i| {
            let (ab, ba, probe) = (ab.clone(), ba.clone(), probe.clone());
            tokio::spawn(async move {
                if i % 2 == 0 {
                    ab.call(probe).await
                } else {
                    ba.call(probe).await
                }
            })
        })
        .collect();
    for c in calls {
        tokio::time::timeout(std::time::Duration::from_secs(60), c)
            .await
            .expect("deadlock")
            .unwrap()
            .unwrap();
    }
    assert_eq!(probe.peak(), 1);
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("a" = 1))]
async fn small(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

/// Returns how many small calls had entered when it ran.
#[herta::operation(effect = Idempotent, resources("a" = 4))]
async fn large(small_calls: Arc<Probe>) -> Result<u32, Failure<String>> {
    Ok(small_calls.attempts())
}

#[herta::operation(effect = Idempotent, resources("a" = 10))]
async fn whole(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("a" = 5))]
async fn half(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_large_waiter_is_not_starved_by_a_stream_of_small_ones() {
    let rt = runtime(4, 1);
    let (small, large) = (Small::bind(&rt).unwrap(), Large::bind(&rt).unwrap());
    let probe = Probe::new();
    let spawn_small = || {
        let (op, probe) = (small.clone(), probe.clone());
        tokio::spawn(async move { op.call(probe).await })
    };
    // Two holders present when the large waiter arrives.
    let holders = [spawn_small(), spawn_small()];
    probe.entered(2).await;
    let big = tokio::spawn({
        let (op, probe) = (large.clone(), probe.clone());
        async move { op.call(probe).await }
    });
    until(|| rt.stats().resource("a").unwrap().waiting == 1).await;
    // A stream of small callers arrives; 2 units are free, yet they queue
    // behind the large waiter instead of overtaking it.
    let stream: Vec<_> = (0..10).map(|_| spawn_small()).collect();
    until(|| rt.stats().resource("a").unwrap().waiting == 11).await;
    assert_eq!(
        probe.attempts(),
        2,
        "no small caller overtook the large waiter"
    );
    // The holders leave: the large waiter runs next, before any newcomer.
    probe.open(2);
    for h in holders {
        within(h).await.unwrap().unwrap();
    }
    let small_calls_before_large = within(big).await.unwrap().unwrap();
    assert_eq!(
        small_calls_before_large, 2,
        "the large call ran before the stream"
    );
    probe.open(10);
    for c in stream {
        within(c).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_large_waiter_grants_the_small_one_behind_it_at_once() {
    // The x/sync semaphore bug: capacity 10, 5 held, a 10-unit waiter queues,
    // a 1-unit waiter queues behind it; cancelling the 10-unit waiter must
    // grant the 1-unit waiter now, not at the next release.
    let rt = runtime(10, 1);
    let probe = Probe::new();
    let held = tokio::spawn({
        let (op, probe) = (Half::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(1).await;
    let big = tokio::spawn({
        let (op, probe) = (Whole::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    until(|| rt.stats().resource("a").unwrap().waiting == 1).await;
    let one = tokio::spawn({
        let (op, probe) = (Small::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    until(|| rt.stats().resource("a").unwrap().waiting == 2).await;
    assert_eq!(
        probe.attempts(),
        1,
        "the 1-unit waiter queues behind the 10"
    );
    big.abort();
    assert!(within(big).await.unwrap_err().is_cancelled());
    probe.entered(2).await; // granted with the 5 units still held
    assert_eq!(rt.stats().resource("a").unwrap().in_use, 6);
    probe.open(2);
    within(held).await.unwrap().unwrap();
    within(one).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("a" = 1))]
async fn hold_a(for_: Duration) -> Result<(), Failure<String>> {
    tokio::time::sleep(for_).await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("b" = 1))]
async fn hold_b(for_: Duration) -> Result<(), Failure<String>> {
    tokio::time::sleep(for_).await;
    Ok(())
}

type Holding = tokio::task::JoinHandle<Result<(), herta::Error<Failure<String>>>>;

/// Returns when, after `start`, it was granted both budgets.
#[herta::operation(effect = Idempotent, resources("a" = 1, "b" = 1))]
async fn both_at(start: Instant) -> Result<Duration, Failure<String>> {
    Ok(start.elapsed())
}

/// DESIGN §8.1 (issue 14, finding 1). `b` is held until 10 ms; at 1 ms W
/// queues for {a, b}; from 5 ms on, newcomers take `a` for 10 ms every
/// 10 ms (5, 15, 25 … ms) and `b` for 10 ms every 10 ms (11, 21, 31 … ms),
/// 100 of each. Each budget is free whenever the other is held, so a waiter
/// that blocks only what it is short of waits for the last newcomer
/// (1011 ms before the fix). The bound: part (1) ends at 10 ms (the unit
/// held at W's arrival is released); part (2) is the `a` unit the 5 ms
/// newcomer took by passing W, released at 15 ms. So W is granted at 15 ms,
/// and no newcomer arriving from 10 ms on takes `a` or `b` before it.
#[tokio::test(start_paused = true)]
async fn a_multi_budget_waiter_is_not_starved_by_newcomers_taking_its_budgets_in_turn() {
    let rt = runtime(1, 1);
    let (a, b, w) = (
        HoldA::bind(&rt).unwrap(),
        HoldB::bind(&rt).unwrap(),
        BothAt::bind(&rt).unwrap(),
    );
    let ms = Duration::from_millis;
    let start = Instant::now();
    let first = tokio::spawn({
        let b = b.clone();
        async move { b.call(ms(10)).await }
    });
    tokio::time::sleep_until(start + ms(1)).await;
    let waiter = tokio::spawn(async move { w.call(start).await });
    let stream = |offset: u64, call: Arc<dyn Fn() -> Holding + Send + Sync>| {
        tokio::spawn(async move {
            let mut calls = Vec::new();
            for i in 0..100 {
                tokio::time::sleep_until(start + ms(offset + 10 * i)).await;
                calls.push(call());
            }
            for c in calls {
                c.await.unwrap().unwrap();
            }
        })
    };
    let on_a = stream(
        5,
        Arc::new(move || {
            let a = a.clone();
            tokio::spawn(async move { a.call(ms(10)).await })
        }),
    );
    let on_b = stream(
        11,
        Arc::new(move || {
            let b = b.clone();
            tokio::spawn(async move { b.call(ms(10)).await })
        }),
    );
    let granted_after = within(waiter).await.unwrap().unwrap();
    assert_eq!(
        granted_after,
        ms(15),
        "W is granted when the a-holder that passed it leaves"
    );
    first.await.unwrap().unwrap();
    on_a.await.unwrap();
    on_b.await.unwrap();
    assert!(all_free(&rt));
}
