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
        let api = *rt.stats().resource("api").unwrap();
        assert!(
            joined.is_ok(),
            "waiters lost: {} of 10 available, {} waiting",
            api.available,
            api.waiting
        );
        assert_eq!(api.waiting, 0);
    });
}

#[herta::operation(effect = Idempotent, resources("eon" = 1))]
async fn eon_wait() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, admission = Reject, resources("eon" = 1))]
async fn eon_reject() -> Result<(), Failure<String>> {
    Ok(())
}

/// One unit per 10^10 s (three centuries): once drawn, a `Wait` call under
/// a 30-year deadline ends `DeadlineExceeded` at once (its unit exists
/// long after), and a `Reject` call is throttled; nothing sleeps or spins.
#[tokio::test(start_paused = true)]
async fn a_unit_centuries_away_fails_a_30_year_deadline_at_once() {
    let rt = Runtime::builder()
        .resource(Resource::rate("eon", 1, Duration::from_secs(10_000_000_000)).unwrap())
        .build()
        .unwrap();
    EonReject::bind(&rt).unwrap().call().await.unwrap();
    let start = tokio::time::Instant::now();
    let thirty_years = start + Duration::from_secs(86_400 * 365 * 30);
    let wait = EonWait::bind(&rt).unwrap();
    let ended = tokio::time::timeout(
        Duration::from_secs(1),
        herta::deadline(thirty_years, wait.call()),
    )
    .await
    .expect("ends at once, not after a sleep");
    assert!(
        matches!(ended, Err(herta::Error::DeadlineExceeded { .. })),
        "{ended:?}"
    );
    assert_eq!(tokio::time::Instant::now(), start, "no time passed");
    let err = EonReject::bind(&rt).unwrap().call().await.unwrap_err();
    assert!(matches!(err, herta::Error::Throttled { .. }));
    assert_eq!(rt.stats().resource("eon").unwrap().waiting, 0);
}
