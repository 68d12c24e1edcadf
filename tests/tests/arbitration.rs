//! Multi-budget arbitration (DESIGN §3: Multi-budget, Fairness).

mod common;

use std::sync::Arc;

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
    assert_eq!(rt.stats().resource("a").unwrap().in_use, 0, "X holds no unit of a");
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
