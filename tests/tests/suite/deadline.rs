//! The whole-call deadline (DESIGN §8.2, §8.6): the contract's `deadline`
//! from admission and the `herta::deadline` scope (earliest wins) cover
//! waiting and every attempt. Expiry while waiting: `DeadlineExceeded`,
//! attempts 0, `Transient`; during an attempt: the attempt is dropped and
//! classified like a timeout. Its own counter, `deadline_exceeded`.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{all_free, until, within, Probe};
use herta::{Context, Error, Failure, Outcome, Resource, Runtime};
use tokio::time::{sleep, Instant};

/// Holds a slot until the probe lets it go.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn hog(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

/// Sleeps `ms` on a slot, reporting the deadline it saw.
#[herta::operation(effect = Idempotent, resources("slots" = 1), timeout = "2s")]
async fn work(ctx: Context, ms: u64) -> Result<Option<Instant>, Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(ctx.deadline())
}

/// The same without a timeout.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn untimed(ctx: Context, ms: u64) -> Result<Option<Instant>, Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(ctx.deadline())
}

/// A contract deadline of 100 ms.
#[herta::operation(effect = Idempotent, resources("slots" = 1), deadline = "100ms")]
async fn within_100ms(ms: u64) -> Result<(), Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(())
}

/// A non-idempotent write.
#[herta::operation(effect = NonIdempotent, resources("slots" = 1), deadline = "100ms")]
async fn charge(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    sleep(Duration::from_secs(1)).await;
    Ok(())
}

/// Retries timeouts: 40 ms per attempt, 100 ms for the call.
#[herta::operation(effect = Idempotent, resources("slots" = 1), timeout = "40ms",
                   retry(on = Transient, max = 5), deadline = "100ms")]
async fn retried(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    sleep(Duration::from_secs(1)).await;
    Ok(())
}

/// Waits at most 100 ms for a slot.
#[herta::operation(effect = Idempotent, resources("slots" = 1), max_wait = "100ms")]
async fn bounded(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Ok(())
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn expect_deadline<E: std::fmt::Debug>(err: &Error<E>, attempts: u32, outcome: Outcome) {
    match err {
        Error::DeadlineExceeded {
            attempts: a,
            outcome: o,
            ..
        } => assert_eq!((*a, *o), (attempts, outcome), "{err:?}"),
        other => panic!("expected DeadlineExceeded, got {other:?}"),
    }
    assert_eq!(err.attempts(), attempts);
    assert_eq!(err.outcome(), outcome);
}

/// Occupies the one slot until the returned probe is opened.
async fn occupy(
    rt: &Runtime,
) -> (
    Arc<Probe>,
    tokio::task::JoinHandle<Result<(), Error<Failure<String>>>>,
) {
    let probe = Probe::new();
    let op = Hog::bind(rt).unwrap();
    let p = probe.clone();
    let hog = tokio::spawn(async move { op.call(p).await });
    probe.entered(1).await;
    (probe, hog)
}

#[test]
fn the_contract_states_its_deadline() {
    assert_eq!(Within100ms::CONTRACT.deadline(), Some(ms(100)));
    assert_eq!(Work::CONTRACT.deadline(), None);
}

#[tokio::test(start_paused = true)]
async fn the_contract_deadline_expires_while_waiting() {
    let rt = runtime();
    let (probe, hog) = occupy(&rt).await;
    let started = Instant::now();
    let err = within(Within100ms::bind(&rt).unwrap().call(0))
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), ms(100));
    expect_deadline(&err, 0, Outcome::Transient);
    let stats = rt.stats();
    assert_eq!(stats.deadline_exceeded, 1);
    assert_eq!((stats.throttled, stats.timed_out, stats.started), (0, 0, 1));
    assert_eq!(stats.resource("slots").unwrap().waiting, 0);
    probe.open(1);
    within(hog).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn the_contract_deadline_runs_from_admission_over_waiting_and_the_attempt() {
    let rt = runtime();
    let (probe, hog) = occupy(&rt).await;
    let op = Within100ms::bind(&rt).unwrap();
    let started = Instant::now();
    let call = tokio::spawn(async move { op.call(50).await });
    sleep(ms(60)).await;
    probe.open(1);
    // Waited 60 ms, then a 50 ms attempt: the deadline drops it at 100 ms.
    let err = within(call).await.unwrap().unwrap_err();
    assert_eq!(started.elapsed(), ms(100));
    expect_deadline(&err, 1, Outcome::Transient);
    within(hog).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_scope_shorter_than_the_attempt_timeout_drops_the_attempt() {
    let rt = runtime();
    let op = Work::bind(&rt).unwrap();
    let at = Instant::now() + ms(50);
    let err = within(herta::deadline(at, op.call(1_000)))
        .await
        .unwrap_err();
    assert_eq!(Instant::now(), at);
    expect_deadline(&err, 1, Outcome::Transient);
    let stats = rt.stats();
    assert_eq!((stats.deadline_exceeded, stats.timed_out), (1, 0));
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn context_deadline_is_the_earliest_of_timeout_and_scope() {
    let rt = runtime();
    let now = Instant::now();
    let (near, far) = (now + ms(50), now + ms(5_000));
    let work = Work::bind(&rt).unwrap();
    assert_eq!(work.call(0).await.unwrap(), Some(now + ms(2_000)));
    assert_eq!(
        herta::deadline(near, work.call(0)).await.unwrap(),
        Some(near)
    );
    assert_eq!(
        herta::deadline(far, work.call(0)).await.unwrap(),
        Some(now + ms(2_000))
    );
    let untimed = Untimed::bind(&rt).unwrap();
    assert_eq!(untimed.call(0).await.unwrap(), None);
    assert_eq!(
        herta::deadline(far, untimed.call(0)).await.unwrap(),
        Some(far)
    );
}

#[tokio::test(start_paused = true)]
async fn nested_scopes_take_the_earliest() {
    let rt = runtime();
    let op = Untimed::bind(&rt).unwrap();
    let now = Instant::now();
    let err = within(herta::deadline(
        now + ms(100),
        herta::deadline(now + ms(300), op.call(1_000)),
    ))
    .await
    .unwrap_err();
    assert_eq!(Instant::now(), now + ms(100));
    expect_deadline(&err, 1, Outcome::Transient);
    // An inner scope may shorten the outer one.
    let now = Instant::now();
    let seen = herta::deadline(now + ms(300), herta::deadline(now + ms(100), op.call(0)))
        .await
        .unwrap();
    assert_eq!(seen, Some(now + ms(100)));
}

#[tokio::test(start_paused = true)]
async fn a_scope_bounds_the_wait_of_a_contract_without_deadline() {
    let rt = runtime();
    let (probe, hog) = occupy(&rt).await;
    let op = Untimed::bind(&rt).unwrap();
    let at = Instant::now() + ms(30);
    let err = within(herta::deadline(at, op.call(0))).await.unwrap_err();
    assert_eq!(Instant::now(), at);
    expect_deadline(&err, 0, Outcome::Transient);
    assert_eq!(rt.stats().resource("slots").unwrap().waiting, 0);
    probe.open(1);
    within(hog).await.unwrap().unwrap();
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_already_passed_runs_nothing() {
    let rt = runtime();
    let op = Untimed::bind(&rt).unwrap();
    let at = Instant::now();
    sleep(ms(1)).await;
    let err = herta::deadline(at, op.call(0)).await.unwrap_err();
    expect_deadline(&err, 0, Outcome::Transient);
    assert_eq!(rt.stats().started, 0);
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_attempt_dropped_at_the_deadline_is_uncertain() {
    let rt = runtime();
    let probe = Probe::new();
    let err = within(Charge::bind(&rt).unwrap().call(probe.clone()))
        .await
        .unwrap_err();
    expect_deadline(&err, 1, Outcome::Uncertain);
    assert_eq!(probe.attempts(), 1);
    assert_eq!(probe.inside(), 0, "the attempt was dropped");
    assert_eq!(rt.stats().deadline_exceeded, 1);
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_deadline() {
    let rt = runtime();
    let probe = Probe::new();
    let started = Instant::now();
    let err = within(Retried::bind(&rt).unwrap().call(probe.clone()))
        .await
        .unwrap_err();
    // Attempts end at 40 and 80 ms (timeouts), the third at the deadline.
    assert_eq!(started.elapsed(), ms(100));
    expect_deadline(&err, 3, Outcome::Transient);
    let stats = rt.stats();
    assert_eq!(
        (stats.timed_out, stats.retried, stats.deadline_exceeded),
        (2, 2, 1)
    );
    assert_eq!(probe.attempts(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_earlier_of_max_wait_and_deadline_decides_the_error() {
    let rt = runtime();
    let (probe, hog) = occupy(&rt).await;
    let op = Bounded::bind(&rt).unwrap();
    // The deadline comes first: DeadlineExceeded.
    let err = herta::deadline(Instant::now() + ms(50), op.call(probe.clone()))
        .await
        .unwrap_err();
    expect_deadline(&err, 0, Outcome::Transient);
    // max_wait comes first: Throttled.
    let err = herta::deadline(Instant::now() + ms(500), op.call(probe.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Throttled);
    let stats = rt.stats();
    assert_eq!((stats.deadline_exceeded, stats.throttled), (1, 1));
    probe.open(1);
    within(hog).await.unwrap().unwrap();
    until(|| all_free(&rt)).await;
}

#[tokio::test(start_paused = true)]
async fn a_spawned_task_does_not_inherit_the_scope() {
    let rt = runtime();
    let op = Untimed::bind(&rt).unwrap();
    let seen = herta::deadline(Instant::now() + ms(50), async move {
        tokio::spawn(async move { op.call(100).await }).await
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(seen, None);
}

/// Fails `Transient` at once; retried with a 200 ms backoff, within a
/// contract deadline of 100 ms.
#[herta::operation(effect = Idempotent, resources("slots" = 1), deadline = "100ms",
                   retry(on = Transient, max = 3,
                         backoff(base = "200ms", cap = "200ms", jitter = None)))]
async fn flaky_within_100ms(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.enter();
    Err(Failure::transient("down".to_owned()))
}

#[tokio::test(start_paused = true)]
async fn a_backoff_sleep_past_the_contract_deadline_is_not_started() {
    let rt = runtime();
    let op = FlakyWithin100ms::bind(&rt).unwrap();
    let probe = Probe::new();
    let start = Instant::now();
    let err = within(op.call(probe.clone())).await.unwrap_err();
    assert!(
        matches!(err, Error::Failed { .. }),
        "the last error: {err:?}"
    );
    assert_eq!(err.attempts(), 1, "no second attempt");
    assert_eq!(start.elapsed(), Duration::ZERO, "ended at once, no sleep");
    assert!(all_free(&rt));
}
