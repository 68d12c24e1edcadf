//! Retries production can use (DESIGN §8.3, §8.6): backoff with jitter,
//! server hints, `Throttled` with backoff, no budget held while sleeping,
//! a pass through the scheduler between attempts, shutdown and drop during
//! a sleep, and the runtime-wide retry budget. Paused clock, seeded jitter.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::all_free;
use herta::{Context, Error, Failure, Outcome, Resource, RetryBudget, Runtime};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .jitter_seed(7)
        .build()
        .unwrap()
}

/// When each attempt started.
#[derive(Default)]
struct Log(Mutex<Vec<Instant>>);

impl Log {
    fn new() -> Arc<Self> {
        Arc::new(Log::default())
    }
    fn mark(&self) {
        self.0.lock().unwrap().push(Instant::now());
    }
    fn gaps(&self) -> Vec<Duration> {
        let at = self.0.lock().unwrap();
        at.windows(2).map(|w| w[1] - w[0]).collect()
    }
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 201, backoff(base = "10ms", cap = "1s", jitter = None)))]
async fn always_fails(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn delays_double_from_base_up_to_cap_exactly_over_200_attempts() {
    let rt = runtime();
    let log = Log::new();
    let start = Instant::now();
    let err = AlwaysFails::bind(&rt)
        .unwrap()
        .call(log.clone())
        .await
        .unwrap_err();
    assert_eq!(err.attempts(), 201);
    let gaps = log.gaps();
    let expected: Vec<Duration> = (0..200u32)
        .map(|n| (10 * MS * 2u32.saturating_pow(n)).min(1000 * MS))
        .collect();
    assert_eq!(gaps, expected);
    assert_eq!(start.elapsed(), expected.iter().sum::<Duration>());
    assert_eq!(rt.stats().retried, 200);
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 200, backoff(base = "10ms", cap = "80ms")))]
async fn full_jitter(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn full_jitter_stays_under_the_capped_delay_and_spreads() {
    let rt = runtime();
    let log = Log::new();
    FullJitter::bind(&rt)
        .unwrap()
        .call(log.clone())
        .await
        .unwrap_err();
    let gaps = log.gaps();
    for (n, gap) in gaps.iter().enumerate() {
        let capped = (10 * MS * 2u32.saturating_pow(n as u32)).min(80 * MS);
        // The timer rounds up to the next millisecond.
        assert!(*gap <= capped + MS, "attempt {n}: {gap:?} above {capped:?}");
    }
    let at_cap = gaps[3..].iter().filter(|g| **g >= 79 * MS).count();
    assert!(
        at_cap < gaps.len() / 4,
        "not collapsed onto the cap: {at_cap}"
    );
    let short = gaps[3..].iter().filter(|g| **g <= 40 * MS).count();
    assert!(short > gaps.len() / 4, "spread down to zero: {short}");
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_gives_the_same_delays() {
    let gaps = || async {
        let log = Log::new();
        FullJitter::bind(&runtime())
            .unwrap()
            .call(log.clone())
            .await
            .unwrap_err();
        log.gaps()
    };
    assert_eq!(gaps().await, gaps().await);
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1),
                   retry(on = [Transient, Throttled], max = 50, backoff(base = "100ms", cap = "1s")))]
async fn throttled_upstream(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::throttled("429"))
}

#[tokio::test(start_paused = true)]
async fn a_throttled_retry_never_sleeps_less_than_base() {
    let rt = runtime();
    let log = Log::new();
    let err = ThrottledUpstream::bind(&rt)
        .unwrap()
        .call(log.clone())
        .await
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Throttled, 50));
    assert!(
        log.gaps().iter().all(|g| *g >= 100 * MS),
        "{:?}",
        log.gaps()
    );
    assert!(log.gaps().iter().all(|g| *g <= 1001 * MS));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1s", jitter = None)))]
async fn hinted(log: Arc<Log>, hint: Duration) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("busy").with_retry_after(hint))
}

#[tokio::test(start_paused = true)]
async fn the_sleep_is_the_longer_of_hint_and_backoff() {
    let rt = runtime();
    let op = Hinted::bind(&rt).unwrap();
    let log = Log::new();
    op.call(log.clone(), 300 * MS).await.unwrap_err();
    assert_eq!(log.gaps(), [300 * MS, 300 * MS]);
    // A hint shorter than the backoff: the backoff wins.
    let log = Log::new();
    op.call(log.clone(), 15 * MS).await.unwrap_err();
    assert_eq!(log.gaps(), [15 * MS, 20 * MS]);
    // A hint equal to `cap` is honoured.
    let log = Log::new();
    let err = op.call(log.clone(), 1000 * MS).await.unwrap_err();
    assert_eq!(log.gaps(), [1000 * MS, 1000 * MS]);
    assert_eq!(err.retry_after(), Some(1000 * MS));
}

#[tokio::test(start_paused = true)]
async fn odd_hints_have_defined_behaviour() {
    let rt = runtime();
    let op = Hinted::bind(&rt).unwrap();
    // Zero (a `Retry-After` date already past): no hint, the backoff applies.
    let log = Log::new();
    op.call(log.clone(), Duration::ZERO).await.unwrap_err();
    assert_eq!(log.gaps(), [10 * MS, 20 * MS]);
    // Above `cap`: the call ends at once with the error and its hint.
    for hint in [1001 * MS, Duration::from_secs(3600), Duration::MAX] {
        let log = Log::new();
        let start = Instant::now();
        let err = op.call(log.clone(), hint).await.unwrap_err();
        assert_eq!((err.attempts(), log.count()), (1, 1));
        assert_eq!(err.retry_after(), Some(hint));
        assert_eq!(start.elapsed(), Duration::ZERO);
    }
    // Past the deadline: the sleep is not started.
    let log = Log::new();
    let start = Instant::now();
    let err = herta::deadline(start + 200 * MS, op.call(log.clone(), 300 * MS))
        .await
        .unwrap_err();
    assert_eq!((err.attempts(), start.elapsed()), (1, Duration::ZERO));
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
async fn hinted_without_backoff(
    log: Arc<Log>,
    hint: Duration,
) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("busy").with_retry_after(hint))
}

#[tokio::test(start_paused = true)]
async fn without_backoff_a_hint_ends_the_call() {
    let rt = runtime();
    let op = HintedWithoutBackoff::bind(&rt).unwrap();
    let err = op.call(Log::new(), 5 * MS).await.unwrap_err();
    assert_eq!((err.attempts(), err.retry_after()), (1, Some(5 * MS)));
    let err = op.call(Log::new(), Duration::ZERO).await.unwrap_err();
    assert_eq!(err.attempts(), 3);
}

#[derive(Debug, thiserror::Error, herta::Classify)]
enum ApiError {
    #[error("rate limited")]
    #[outcome(Throttled)]
    RateLimited {
        #[retry_after]
        retry_after: Duration,
    },
    #[error("unavailable")]
    #[outcome(Transient)]
    Unavailable(#[retry_after] Option<Duration>),
    #[error("bad request")]
    BadRequest,
}

#[derive(Debug, thiserror::Error, herta::Classify)]
#[error("busy")]
#[outcome(Transient)]
struct Busy {
    #[retry_after]
    wait: Option<Duration>,
}

#[test]
fn derive_classify_reads_the_retry_after_field() {
    use herta::Classify;
    let limited = ApiError::RateLimited {
        retry_after: 2 * MS,
    };
    assert_eq!(limited.retry_after(), Some(2 * MS));
    assert_eq!(limited.outcome(), Outcome::Throttled);
    assert_eq!(
        ApiError::Unavailable(Some(3 * MS)).retry_after(),
        Some(3 * MS)
    );
    assert_eq!(ApiError::Unavailable(None).retry_after(), None);
    assert_eq!(ApiError::BadRequest.retry_after(), None);
    assert_eq!(Busy { wait: Some(MS) }.retry_after(), Some(MS));
    assert_eq!(Failure::transient(()).retry_after(), None);
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = [Transient, Throttled], max = 3, backoff(base = "10ms", cap = "1s", jitter = None)))]
async fn api(log: Arc<Log>) -> Result<(), ApiError> {
    log.mark();
    Err(ApiError::RateLimited {
        retry_after: 250 * MS,
    })
}

#[tokio::test(start_paused = true)]
async fn a_derived_hint_is_honoured() {
    let log = Log::new();
    let err = Api::bind(&runtime())
        .unwrap()
        .call(log.clone())
        .await
        .unwrap_err();
    assert_eq!(log.gaps(), [250 * MS, 250 * MS]);
    assert_eq!(err.retry_after(), Some(250 * MS));
}

// --- No budget is held during a backoff sleep. ---

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by(key, scope = "k"),
                   retry(on = Transient, max = 2, backoff(base = "10s", cap = "10s")))]
async fn keyed_flaky(
    ctx: Context,
    key: u32,
    order: Arc<Mutex<Vec<&'static str>>>,
) -> Result<(), Failure<&'static str>> {
    let _ = key;
    order.lock().unwrap().push("flaky attempt");
    if ctx.attempt() == 1 {
        return Err(Failure::transient("once"));
    }
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by(key, scope = "k"))]
async fn keyed_other(
    key: u32,
    order: Arc<Mutex<Vec<&'static str>>>,
) -> Result<(), Failure<&'static str>> {
    let _ = key;
    order.lock().unwrap().push("same key");
    Ok(())
}

#[herta::operation(effect = Pure, resources("slots" = 1), admission = Reject)]
async fn reject_probe() -> Result<(), Failure<&'static str>> {
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn budgets_are_free_during_the_sleep_and_the_key_is_kept() {
    let rt = runtime();
    let order = Arc::new(Mutex::new(Vec::new()));
    let flaky = KeyedFlaky::bind(&rt).unwrap();
    let call = tokio::spawn({
        let order = order.clone();
        async move { flaky.call(1, order).await }
    });
    tokio::time::sleep(MS).await; // attempt 1 failed; the call sleeps 10 s
    assert_eq!(rt.stats().resource("slots").unwrap().in_use, 0);
    RejectProbe::bind(&rt).unwrap().call().await.unwrap();
    let other = tokio::spawn({
        let op = KeyedOther::bind(&rt).unwrap();
        let order = order.clone();
        async move { op.call(1, order).await }
    });
    call.await.unwrap().unwrap();
    other.await.unwrap().unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        ["flaky attempt", "flaky attempt", "same key"]
    );
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), admission = Reject,
                   retry(on = Transient, max = 3, backoff(base = "100ms", cap = "100ms", jitter = None)))]
async fn reject_flaky(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[herta::operation(effect = Pure, resources("slots" = 1))]
async fn hold_slot(for_: Duration) -> Result<(), Failure<&'static str>> {
    tokio::time::sleep(for_).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn reject_finding_its_budgets_busy_after_the_sleep_is_throttled() {
    let rt = runtime();
    let log = Log::new();
    let op = RejectFlaky::bind(&rt).unwrap();
    let call = tokio::spawn(async move { op.call(log).await });
    tokio::time::sleep(MS).await;
    let hold = HoldSlot::bind(&rt).unwrap();
    let holder = tokio::spawn(async move { hold.call(Duration::from_secs(1)).await });
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Throttled { .. }), "{err:?}");
    holder.await.unwrap().unwrap();
    assert_eq!(rt.stats().throttled, 1);
    assert!(all_free(&rt));
}

// --- Shutdown and drop during a sleep. ---

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 5, backoff(base = "10s", cap = "10s")))]
async fn long_backoff(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn shutdown_during_a_sleep_returns_at_once_with_the_last_error() {
    let rt = runtime();
    let log = Log::new();
    let op = LongBackoff::bind(&rt).unwrap();
    let call = tokio::spawn({
        let log = log.clone();
        async move { op.call(log).await }
    });
    tokio::time::sleep(MS).await;
    let start = Instant::now();
    rt.shutdown().await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Failed { attempts: 1, .. }), "{err:?}");
    assert_eq!(log.count(), 1);
    assert!(all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_caller_drop_during_a_sleep_is_cancelled_and_frees_the_key() {
    let rt = runtime();
    let order = Arc::new(Mutex::new(Vec::new()));
    let flaky = KeyedFlaky::bind(&rt).unwrap();
    let call = tokio::spawn({
        let order = order.clone();
        async move { flaky.call(1, order).await }
    });
    tokio::time::sleep(MS).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let stats = rt.stats();
    assert_eq!((stats.cancelled, stats.keys, stats.in_flight), (1, 0, 0));
    KeyedOther::bind(&rt).unwrap().call(1, order).await.unwrap();
    assert!(all_free(&rt));
}

// --- Every retry passes through the scheduler. ---

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 100))]
async fn spins(
    other_ran: Arc<AtomicBool>,
    attempts: Arc<AtomicU32>,
) -> Result<u32, Failure<&'static str>> {
    // Never awaits: fails until another task of this one-thread runtime ran.
    let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
    if other_ran.load(Ordering::SeqCst) {
        Ok(attempt)
    } else {
        Err(Failure::transient("never awaits"))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_handler_that_never_awaits_lets_other_tasks_run_between_attempts() {
    let herta = runtime();
    let op = Spins::bind(&herta).unwrap();
    let other_ran = Arc::new(AtomicBool::new(false));
    let attempts = Arc::new(AtomicU32::new(0));
    tokio::spawn({
        let other_ran = other_ran.clone();
        async move { other_ran.store(true, Ordering::SeqCst) }
    });
    // On one thread the spawned task runs only when the call yields: if the
    // 100 attempts ran inside one poll, every one would fail.
    let attempt = op.call(other_ran, attempts).await.unwrap();
    assert_eq!(
        attempt, 2,
        "the other task ran right after the first attempt"
    );
    assert!(all_free(&herta));
}

// --- The retry budget. ---

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
async fn outage(up: Arc<AtomicBool>) -> Result<(), Failure<&'static str>> {
    if up.load(Ordering::SeqCst) {
        Ok(())
    } else {
        Err(Failure::transient("down"))
    }
}

fn budgeted(budget: RetryBudget) -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .retry_budget(budget)
        .jitter_seed(11)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_outage_stops_retries_at_the_budget_which_refills_with_time() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.0)
            .min_per_second(2)
            .window(Duration::from_secs(1)),
    );
    let op = Outage::bind(&rt).unwrap();
    let down = Arc::new(AtomicBool::new(false));
    let attempts: Vec<u32> = futures_util::future::join_all((0..5).map(|_| op.call(down.clone())))
        .await
        .into_iter()
        .map(|r| r.unwrap_err().attempts())
        .collect();
    assert_eq!(attempts.iter().sum::<u32>(), 5 + 2, "{attempts:?}");
    let stats = rt.stats();
    assert_eq!((stats.started, stats.retried), (5, 2));
    // One call made its 3 attempts on the 2 tokens; the other 4 were denied.
    assert_eq!(stats.retries_denied, 4);
    tokio::time::advance(Duration::from_secs(1)).await;
    let err = op.call(down.clone()).await.unwrap_err();
    assert_eq!(err.attempts(), 3, "refilled with time alone");
}

#[tokio::test(start_paused = true)]
async fn first_attempts_deposit_and_are_never_refused() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.5)
            .min_per_second(0)
            .window(Duration::from_secs(10)),
    );
    let op = Outage::bind(&rt).unwrap();
    let down = Arc::new(AtomicBool::new(false));
    for _ in 0..100 {
        let _ = op.call(down.clone()).await;
    }
    let stats = rt.stats();
    assert_eq!(stats.started, 100, "no first attempt refused");
    // 100 deposits of 0.5: every second call finds one token for one
    // retry; every call ends with a refused retry.
    assert_eq!((stats.retried, stats.retries_denied), (50, 100), "{stats}");
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 2, backoff(base = "500ms", cap = "500ms", jitter = None)))]
async fn budgeted_backoff(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn a_retry_that_never_starts_costs_nothing() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.0)
            .min_per_second(1)
            .window(Duration::from_secs(1)),
    );
    let op = BudgetedBackoff::bind(&rt).unwrap();
    // Dropped mid-sleep: the token is refunded.
    let call = tokio::spawn({
        let op = op.clone();
        async move { op.call(Log::new()).await }
    });
    tokio::time::sleep(100 * MS).await;
    call.abort();
    let _ = call.await;
    let err = op.call(Log::new()).await.unwrap_err();
    assert_eq!(err.attempts(), 2, "the refunded token paid for this retry");
    let stats = rt.stats();
    assert_eq!(
        (stats.retried, stats.retries_denied, stats.cancelled),
        (1, 0, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_cut_off_by_shutdown_is_neither_counted_nor_denied() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.0)
            .min_per_second(1)
            .window(Duration::from_secs(1)),
    );
    let op = BudgetedBackoff::bind(&rt).unwrap();
    let log = Log::new();
    let call = tokio::spawn({
        let (op, log) = (op.clone(), log.clone());
        async move { op.call(log).await }
    });
    // In its 500 ms backoff sleep, holding the budget's one token.
    tokio::time::sleep(100 * MS).await;
    tokio::time::timeout(Duration::from_secs(1), rt.shutdown())
        .await
        .expect("the drain is not delayed by the sleep");
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::Failed { .. }),
        "the last error: {err:?}"
    );
    assert_eq!(err.attempts(), 1, "no attempt after the close");
    let stats = rt.stats();
    assert_eq!(
        (
            stats.retried,
            stats.retries_denied,
            stats.failed,
            stats.finished
        ),
        (0, 0, 1, 1),
        "{stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounting_is_exact_under_many_concurrent_tasks() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.25)
            .min_per_second(0)
            .window(Duration::from_secs(60)),
    );
    let op = Outage::bind(&rt).unwrap();
    let down = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let (op, down) = (op.clone(), down.clone());
            tokio::spawn(async move { op.call(down).await.unwrap_err().attempts() })
        })
        .collect();
    let mut attempts = Vec::new();
    for task in tasks {
        attempts.push(u64::from(task.await.unwrap()));
    }
    let stats = rt.stats();
    assert_eq!(stats.started, 200);
    assert_eq!(stats.retried, attempts.iter().map(|a| a - 1).sum::<u64>());
    assert!(stats.retried <= 50, "200 × 0.25 tokens: {stats}");
    // Every call ended by reaching `max` or by a refused retry, never both.
    let denied = attempts.iter().filter(|a| **a < 3).count() as u64;
    assert_eq!(stats.retries_denied, denied, "{stats}");
    assert_eq!((stats.admitted, stats.finished), (200, 200));
}

#[tokio::test(start_paused = true)]
async fn a_reject_call_throttled_after_its_sleep_gives_its_token_back() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(0.0)
            .min_per_second(1)
            .window(Duration::from_secs(1)),
    );
    let op = RejectFlaky::bind(&rt).unwrap();
    let call = tokio::spawn(async move { op.call(Log::new()).await });
    tokio::time::sleep(MS).await;
    let hold = HoldSlot::bind(&rt).unwrap();
    let holder = tokio::spawn(async move { hold.call(200 * MS).await });
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Throttled { .. }), "{err:?}");
    holder.await.unwrap().unwrap();
    // The one token of the reserve is whole again.
    let down = Arc::new(AtomicBool::new(false));
    let err = Outage::bind(&rt).unwrap().call(down).await.unwrap_err();
    assert_eq!(err.attempts(), 2);
    assert_eq!(rt.stats().retries_denied, 1);
}

#[tokio::test(start_paused = true)]
async fn every_first_attempt_deposits_whatever_its_end() {
    let rt = budgeted(
        RetryBudget::new()
            .ratio(1.0)
            .min_per_second(0)
            .window(Duration::from_secs(60)),
    );
    let op = Outage::bind(&rt).unwrap();
    let up = Arc::new(AtomicBool::new(true));
    // Two successes deposit one token each.
    op.call(up.clone()).await.unwrap();
    op.call(up.clone()).await.unwrap();
    up.store(false, Ordering::SeqCst);
    // This call deposits its own: 3 tokens, 2 retries (max 3), 1 left.
    assert_eq!(op.call(up.clone()).await.unwrap_err().attempts(), 3);
    // 1 + 1: 2 retries again, 0 left.
    assert_eq!(op.call(up.clone()).await.unwrap_err().attempts(), 3);
    // 0 + 1: one retry, then the budget is empty.
    assert_eq!(op.call(up.clone()).await.unwrap_err().attempts(), 2);
    let stats = rt.stats();
    assert_eq!((stats.retried, stats.retries_denied), (5, 1), "{stats}");
    // A refused call of a retrying operation runs nothing and deposits
    // nothing: the next failing call has its own token only.
    let hold = HoldSlot::bind(&rt).unwrap();
    let holder = tokio::spawn(async move { hold.call(100 * MS).await });
    tokio::task::yield_now().await;
    let refused = RejectFlaky::bind(&rt)
        .unwrap()
        .call(Log::new())
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Throttled { .. }));
    holder.await.unwrap().unwrap();
    assert_eq!(op.call(up.clone()).await.unwrap_err().attempts(), 2);
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), timeout = "50ms",
                   retry(on = Transient, max = 2, backoff(base = "10ms", cap = "10ms", jitter = None)))]
async fn ends_every_way(mode: u8) -> Result<(), Failure<&'static str>> {
    match mode {
        0 => tokio::time::sleep(Duration::from_secs(1)).await, // times out
        1 => panic!("{} in a budgeted call", common::DELIBERATE),
        _ => {}
    }
    Err(Failure::transient("down"))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 4))]
async fn four_tries() -> Result<(), Failure<&'static str>> {
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn accounting_is_exact_for_timeouts_panics_and_deadlines() {
    common::quiet_deliberate_panics();
    let rt = budgeted(
        RetryBudget::new()
            .ratio(1.0)
            .min_per_second(0)
            .window(Duration::from_secs(60)),
    );
    let op = EndsEveryWay::bind(&rt).unwrap();
    // A panic: its first attempt deposits (1), it is never retried.
    let panicking = tokio::spawn({
        let op = op.clone();
        async move { op.call(1).await }
    });
    assert!(panicking.await.unwrap_err().is_panic());
    // Two timeouts: deposit (2), one retry withdraws (1).
    let err = op.call(0).await.unwrap_err();
    assert!(
        matches!(err, Error::TimedOut { attempts: 2, .. }),
        "{err:?}"
    );
    // A sleep past the deadline is not started and withdraws nothing (2).
    let err = herta::deadline(Instant::now() + 5 * MS, op.call(2))
        .await
        .unwrap_err();
    assert_eq!(err.attempts(), 1);
    // So a call of four attempts finds 2 + its own 1 = 3 tokens: all used.
    let four = FourTries::bind(&rt).unwrap();
    assert_eq!(four.call().await.unwrap_err().attempts(), 4);
    // And the next one only its own token: one retry, then denied.
    assert_eq!(four.call().await.unwrap_err().attempts(), 2);
    let stats = rt.stats();
    assert_eq!(
        (
            stats.retried,
            stats.retries_denied,
            stats.panicked,
            stats.timed_out
        ),
        (5, 1, 1, 2),
        "{stats}"
    );
    assert!(all_free(&rt));
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), max_wait = "300ms",
                   retry(on = Transient, max = 2,
                         backoff(base = "100ms", cap = "100ms", jitter = None)))]
async fn bounded_flaky(log: Arc<Log>) -> Result<(), Failure<&'static str>> {
    log.mark();
    Err(Failure::transient("down"))
}

#[tokio::test(start_paused = true)]
async fn re_acquiring_budgets_after_a_sleep_is_bounded_by_max_wait() {
    let rt = runtime();
    let op = BoundedFlaky::bind(&rt).unwrap();
    let hog = HoldSlot::bind(&rt).unwrap();
    let start = Instant::now();
    let log = Log::new();
    let call = tokio::spawn({
        let (op, log) = (op.clone(), log.clone());
        async move { op.call(log).await }
    });
    // The call is in its 100 ms sleep, holding no budget: another takes it.
    tokio::time::sleep(50 * MS).await;
    let holder = tokio::spawn(async move { hog.call(Duration::from_secs(10)).await });
    let err = call.await.unwrap().unwrap_err();
    // `max_wait` counts from admission: the re-acquire gives up at 300 ms.
    assert!(
        matches!(
            &err,
            Error::Throttled {
                busy: herta::Busy::Resource { resource: "slots" },
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(start.elapsed(), 300 * MS);
    assert_eq!(log.count(), 1, "no second attempt");
    holder.abort();
    let _ = holder.await;
    assert_eq!(rt.stats().throttled, 1);
}
