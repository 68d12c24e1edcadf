//! Rate budgets at their edges: waiters handing the timer on under a
//! multi-thread load of `Wait` and `Reject` calls, units decades away,
//! and units given back by a grant whose attempt never ran.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Idempotent, resources("api" = 1))]
async fn waits() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, admission = Reject, resources("api" = 1))]
async fn rejects() -> Result<(), Failure<String>> {
    Ok(())
}

/// Four tasks looping on a `Wait` call and four on a `Reject` call share
/// one rate budget on four workers: once the loops stop, every `Wait` call
/// still queued is granted as its units come (a head handed on, never
/// lost over a full bucket). The guard is real time, generous: the last
/// waiter's unit exists a few milliseconds after the loops stop.
#[test]
fn waiters_on_a_rate_budget_contended_by_rejecters_all_finish() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        let rt = Runtime::builder()
            .resource(
                Resource::rate("api", 1_000, Duration::from_secs(1))
                    .unwrap()
                    .with_burst(10),
            )
            .build()
            .unwrap();
        let (wait, reject) = (Waits::bind(&rt).unwrap(), Rejects::bind(&rt).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (wait, halt) = (wait.clone(), Arc::clone(&stop));
            tasks.push(tokio::spawn(async move {
                while !halt.load(Ordering::Relaxed) {
                    wait.call().await.unwrap();
                }
            }));
            let (reject, halt) = (reject.clone(), Arc::clone(&stop));
            tasks.push(tokio::spawn(async move {
                while !halt.load(Ordering::Relaxed) {
                    let _ = reject.call().await;
                    tokio::task::yield_now().await;
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.store(true, Ordering::Relaxed);
        let joined = tokio::time::timeout(Duration::from_secs(10), async {
            for t in tasks {
                t.await.unwrap();
            }
        })
        .await;
        let api = rt.stats().resource("api").unwrap().clone();
        assert!(
            joined.is_ok(),
            "waiters lost: {} of 10 available, {} waiting",
            api.available,
            api.waiting
        );
        assert_eq!(api.waiting, 0);
    });
}
