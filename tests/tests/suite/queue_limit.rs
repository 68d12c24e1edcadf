//! The per-budget queue limit (DESIGN §8.2): a `Wait` call that would be
//! waiter number `limit + 1` for a budget is throttled at once; cancelled
//! and expired waiters free their place at once; `waiting` never exceeds
//! the limit; `ResourceStats` shows it.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{all_free, settle, until, within, Probe};
use herta::{Busy, ConfigError, Error, Failure, Outcome, Resource, Runtime};
use tokio::time::Instant;

herta::resources! {
    pub SLOT: "slot" = 1, queue = 2;
    pub OTHER: "other" = 1;
}

#[herta::operation(effect = Idempotent, resources(SLOT = 1))]
async fn hold(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources(SLOT = 1), max_wait = "50ms")]
async fn hold_briefly(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(SLOT)
        .resource(OTHER)
        .build()
        .unwrap()
}

type Call = tokio::task::JoinHandle<Result<(), Error<Failure<String>>>>;

fn spawn_hold(rt: &Runtime, probe: &Arc<Probe>) -> Call {
    let (op, probe) = (Hold::bind(rt).unwrap(), probe.clone());
    tokio::spawn(async move { op.call(probe).await })
}

fn spawn_brief(rt: &Runtime, probe: &Arc<Probe>) -> Call {
    let (op, probe) = (HoldBriefly::bind(rt).unwrap(), probe.clone());
    tokio::spawn(async move { op.call(probe).await })
}

fn waiting(rt: &Runtime) -> u32 {
    rt.stats().resource("slot").unwrap().waiting
}

#[test]
fn the_limit_is_declared_and_shown() {
    assert_eq!(SLOT.queue_limit(), Some(2));
    assert_eq!(OTHER.queue_limit(), None);
    assert_eq!(
        Resource::new("db-write", 4)
            .with_queue_limit(64)
            .queue_limit(),
        Some(64)
    );
    let stats = runtime().stats();
    assert_eq!(stats.resource("slot").unwrap().queue_limit, Some(2));
    assert_eq!(stats.resource("other").unwrap().queue_limit, None);
    assert!(stats
        .to_string()
        .contains("slot: 0 of 1 in use, 0 waiting, peak 0, queue limit 2"));
}

#[test]
fn a_zero_queue_limit_is_a_config_error() {
    let err = Runtime::builder()
        .resource(Resource::new("db", 1).with_queue_limit(0))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::ZeroQueueLimit {
            resource: "db".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn the_waiter_past_the_limit_is_throttled_at_once() {
    let rt = runtime();
    let probe = Probe::new();
    let holder = spawn_hold(&rt, &probe);
    probe.entered(1).await;
    let queued = [spawn_hold(&rt, &probe), spawn_hold(&rt, &probe)];
    until(|| waiting(&rt) == 2).await;
    let before = Instant::now();
    let err = within(Hold::bind(&rt).unwrap().call(probe.clone()))
        .await
        .unwrap_err();
    assert_eq!(Instant::now(), before, "refused without waiting");
    assert_eq!(err.outcome(), Outcome::Throttled);
    match err {
        Error::Throttled { busy, .. } => assert_eq!(busy, Busy::Resource { resource: "slot" }),
        other => panic!("expected Throttled, got {other:?}"),
    }
    let stats = rt.stats();
    assert_eq!((stats.throttled, stats.admitted), (1, 4));
    assert_eq!(waiting(&rt), 2);
    probe.open(3);
    within(holder).await.unwrap().unwrap();
    for q in queued {
        within(q).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_waiter_frees_its_place_at_once() {
    let rt = runtime();
    let probe = Probe::new();
    let holder = spawn_hold(&rt, &probe);
    probe.entered(1).await;
    let first = spawn_hold(&rt, &probe);
    let second = spawn_hold(&rt, &probe);
    until(|| waiting(&rt) == 2).await;
    second.abort();
    assert!(second.await.unwrap_err().is_cancelled());
    assert_eq!(waiting(&rt), 1, "the place is free at once");
    let third = spawn_hold(&rt, &probe);
    settle().await;
    assert_eq!(waiting(&rt), 2, "and reusable at once");
    assert_eq!(rt.stats().throttled, 0);
    probe.open(3);
    for c in [holder, first, third] {
        within(c).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
    assert_eq!(rt.stats().cancelled, 1);
}

#[tokio::test(start_paused = true)]
async fn expired_waiters_free_their_places_at_once() {
    let rt = runtime();
    let probe = Probe::new();
    let holder = spawn_hold(&rt, &probe);
    probe.entered(1).await;
    let brief = [spawn_brief(&rt, &probe), spawn_brief(&rt, &probe)];
    until(|| waiting(&rt) == 2).await;
    // A newcomer now is refused; once the two expire (50 ms), it queues.
    let refused = within(Hold::bind(&rt).unwrap().call(probe.clone()))
        .await
        .unwrap_err();
    assert_eq!(refused.outcome(), Outcome::Throttled);
    for b in brief {
        assert_eq!(
            within(b).await.unwrap().unwrap_err().outcome(),
            Outcome::Throttled
        );
    }
    assert_eq!(waiting(&rt), 0, "expired waiters left the queue");
    let later = [spawn_hold(&rt, &probe), spawn_hold(&rt, &probe)];
    settle().await;
    assert_eq!(waiting(&rt), 2);
    assert_eq!(rt.stats().throttled, 3);
    probe.open(3);
    within(holder).await.unwrap().unwrap();
    for c in later {
        within(c).await.unwrap().unwrap();
    }
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn waiting_never_exceeds_the_limit_under_churn() {
    let rt = runtime();
    let probe = Probe::new();
    let holder = spawn_hold(&rt, &probe);
    probe.entered(1).await;
    let mut live: Vec<Call> = Vec::new();
    let mut seed = 0x2545_f491_u32;
    for step in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        match seed % 4 {
            0 if !live.is_empty() => {
                let c = live.swap_remove(seed as usize / 4 % live.len());
                c.abort();
                let _ = c.await;
            }
            1 => live.push(spawn_brief(&rt, &probe)),
            _ => live.push(spawn_hold(&rt, &probe)),
        }
        if step % 7 == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        } else {
            tokio::task::yield_now().await;
        }
        assert!(waiting(&rt) <= 2, "step {step}: {}", rt.stats());
        live.retain(|c| !c.is_finished());
    }
    for c in live {
        c.abort();
        let _ = c.await;
    }
    probe.open(1);
    within(holder).await.unwrap().unwrap();
    assert!(all_free(&rt));
    let stats = rt.stats();
    assert_eq!(stats.admitted, stats.finished);
    assert!(stats.throttled > 0);
}

/// A slot for 1 ms, waiting at most 2 ms for it.
#[herta::operation(effect = Idempotent, resources(SLOT = 1), max_wait = "2ms")]
async fn quick() -> Result<(), Failure<String>> {
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(())
}

#[test]
fn on_a_multi_thread_runtime_waiting_never_exceeds_the_limit() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        for trial in 0..20 {
            let rt = runtime();
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let sampler = tokio::spawn({
                let (rt, done) = (rt.clone(), done.clone());
                async move {
                    let mut peak = 0;
                    while !done.load(std::sync::atomic::Ordering::SeqCst) {
                        peak = peak.max(waiting(&rt));
                        tokio::task::yield_now().await;
                    }
                    peak
                }
            });
            let calls: Vec<_> = (0..40)
                .map(|i| {
                    let op = Quick::bind(&rt).unwrap();
                    tokio::spawn(async move {
                        if i % 5 == 0 {
                            // Some callers give up early (cancelled waiters).
                            let _ =
                                tokio::time::timeout(Duration::from_micros(500), op.call()).await;
                            Ok(())
                        } else {
                            op.call().await
                        }
                    })
                })
                .collect();
            for c in calls {
                if let Err(e) = tokio::time::timeout(Duration::from_secs(10), c)
                    .await
                    .unwrap_or_else(|_| panic!("trial {trial}: a call hung"))
                    .unwrap()
                {
                    assert_eq!(e.outcome(), Outcome::Throttled, "trial {trial}");
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            assert!(sampler.await.unwrap() <= 2, "trial {trial}");
            let stats = rt.stats();
            assert_eq!(stats.admitted, stats.finished, "trial {trial}: {stats}");
            assert!(all_free(&rt), "trial {trial}: {stats}");
        }
    });
}
