//! Classification, retry and per-attempt timeouts (DESIGN §3: Timeout, Retry).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{all_free, Probe};
use herta::{Context, Error, Failure, Outcome, Resource, Runtime};

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 2))
        .build()
        .unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("plain failure")]
struct PlainError;

// Retrying with an unclassified error type only compiles with a `timeout`
// (timeouts are Transient); the handler's own errors are still Permanent.
#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3),
                   timeout = "1s")]
async fn unclassified(probe: Arc<Probe>) -> Result<(), PlainError> {
    let _inside = probe.enter();
    Err(PlainError)
}

#[tokio::test]
async fn an_unclassified_error_is_permanent_and_never_retried() {
    let rt = runtime();
    let probe = Probe::new();
    let err = Unclassified::bind(&rt)
        .unwrap()
        .call(probe.clone())
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Permanent);
    assert_eq!(err.attempts(), 1);
    assert!(matches!(
        err,
        Error::Failed {
            source: PlainError,
            ..
        }
    ));
    assert_eq!(probe.attempts(), 1);
    assert_eq!(rt.stats().retried, 0);
}

#[derive(Debug, thiserror::Error, herta::Classify)]
enum DbError {
    #[error("database busy")]
    #[outcome(Transient)]
    Busy,
    #[error("connection lost mid-write")]
    #[outcome(Uncertain)]
    Lost,
    #[error("constraint violated")]
    Constraint,
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = [Transient, Uncertain], max = 4))]
async fn write(ctx: Context, failures: Arc<Vec<DbError>>) -> Result<u32, DbError> {
    match failures.get(ctx.attempt() as usize - 1) {
        Some(DbError::Busy) => Err(DbError::Busy),
        Some(DbError::Lost) => Err(DbError::Lost),
        Some(DbError::Constraint) => Err(DbError::Constraint),
        None => Ok(ctx.attempt()),
    }
}

#[tokio::test]
async fn listed_safe_outcomes_are_retried_up_to_max_attempts() {
    let rt = runtime();
    let op = Write::bind(&rt).unwrap();
    // Transient then Uncertain, then success on attempt 3.
    let ok = op
        .call(Arc::new(vec![DbError::Busy, DbError::Lost]))
        .await
        .unwrap();
    assert_eq!(ok, 3);
    // Permanent (unannotated variant) stops at once.
    let err = op
        .call(Arc::new(vec![DbError::Busy, DbError::Constraint]))
        .await
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Permanent, 2));
    // `max` counts all attempts: four Transient failures end the call.
    let err = op
        .call(Arc::new((0..10).map(|_| DbError::Busy).collect()))
        .await
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Transient, 4));
    assert_eq!(rt.stats().retried, 2 + 1 + 3);
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 3), timeout = "1s")]
async fn slow_then_fast(ctx: Context, steps: Arc<Vec<u64>>) -> Result<Duration, Failure<String>> {
    let started = tokio::time::Instant::now();
    let deadline = ctx.deadline().expect("a timeout is declared");
    assert_eq!(deadline - started, Duration::from_secs(1), "fresh deadline");
    tokio::time::sleep(Duration::from_millis(steps[ctx.attempt() as usize - 1])).await;
    if (ctx.attempt() as usize) < steps.len() {
        return Err(Failure::transient(format!("attempt {}", ctx.attempt())));
    }
    Ok(started.elapsed())
}

#[tokio::test(start_paused = true)]
async fn each_attempt_gets_a_fresh_timeout() {
    let rt = runtime();
    let op = SlowThenFast::bind(&rt).unwrap();
    let start = tokio::time::Instant::now();
    // Three attempts of 700 ms each: 2.1 s in all, each under its own 1 s.
    op.call(Arc::new(vec![700, 700, 700])).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(2100));
    assert_eq!(rt.stats().timed_out, 0);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_transient_for_idempotent_operations_and_retried() {
    let rt = runtime();
    let op = SlowThenFast::bind(&rt).unwrap();
    // Attempt 1 overruns (dropped at 1 s), attempt 2 succeeds.
    let start = tokio::time::Instant::now();
    op.call(Arc::new(vec![5_000, 10])).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(1010));
    // Every attempt overruns: TimedOut, Transient, after 3 attempts.
    let err = op.call(Arc::new(vec![5_000; 4])).await.unwrap_err();
    match err {
        Error::TimedOut {
            timeout,
            attempts,
            outcome,
            ..
        } => {
            assert_eq!(timeout, Duration::from_secs(1));
            assert_eq!(attempts, 3);
            assert_eq!(outcome, Outcome::Transient);
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
    assert_eq!(rt.stats().timed_out, 1 + 3);
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1),
                   retry(on = Transient, max = 3), timeout = "250ms")]
async fn charge(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_uncertain_for_non_idempotent_operations_and_not_retried() {
    let rt = runtime();
    let probe = Probe::new();
    let err = Charge::bind(&rt)
        .unwrap()
        .call(probe.clone())
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Uncertain);
    assert_eq!(err.attempts(), 1);
    assert_eq!(probe.attempts(), 1, "an Uncertain charge is never repeated");
    assert_eq!(probe.inside(), 0, "the timed-out attempt was dropped");
    assert!(all_free(&rt));
}

#[herta::operation(effect = Pure, resources("slots" = 1), retry(on = Transient, max = 2))]
async fn says_success(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Err(Failure::new(Outcome::Success, "claims success".to_owned()))
}

#[tokio::test]
async fn an_error_claiming_success_is_permanent() {
    let rt = runtime();
    let probe = Probe::new();
    let err = SaysSuccess::bind(&rt)
        .unwrap()
        .call(probe.clone())
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Permanent);
    assert_eq!(probe.attempts(), 1);
}
