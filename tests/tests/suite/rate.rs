//! Rate budgets (`Resource::rate`): units per period, consumed, taken in
//! the same all-or-nothing grant as concurrency budgets. Paused clock: every
//! instant below is exact (a waiter is granted as of the instant its units
//! exist; tokio's timer may fire up to 1 ms later, which is not charged).

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{settle, Probe};
use herta::{BindError, Busy, Error, Failure, ResizeError, Resource, Runtime};
use tokio::time::Instant;

const SEC: Duration = Duration::from_secs(1);

fn runtime(count: u32, period: Duration, burst: u32) -> Runtime {
    Runtime::builder()
        .resource(
            Resource::rate("api", count, period)
                .unwrap()
                .with_burst(burst),
        )
        .resource(Resource::new("pool", 1))
        .build()
        .unwrap()
}

#[herta::operation(effect = Idempotent, admission = Reject, resources("api" = 1))]
async fn reject_one() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("api" = 1))]
async fn wait_one(log: Arc<Mutex<Vec<Instant>>>) -> Result<(), Failure<String>> {
    log.lock().unwrap().push(Instant::now());
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("api" = 1), max_wait = "100ms")]
async fn short_wait() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("api" = 1), deadline = "100ms")]
async fn short_deadline() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("api" = 5))]
async fn five() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("pool" = 1))]
async fn hold_pool(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("pool" = 1, "api" = 1))]
async fn both(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

#[herta::operation(
    effect = Idempotent,
    resources("api" = 1),
    retry(on = Transient, max = 3)
)]
async fn flaky(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _inside = probe.enter();
    Err(Failure::transient("upstream 503".to_owned()))
}

fn available(rt: &Runtime, name: &str) -> u32 {
    rt.stats().resource(name).unwrap().available
}

fn granted(rt: &Runtime) -> u64 {
    rt.stats().resource("api").unwrap().rate.unwrap().granted
}

#[tokio::test(start_paused = true)]
async fn a_rate_budget_starts_full_and_an_idle_one_holds_at_most_its_burst() {
    let rt = runtime(10, SEC, 3);
    let op = RejectOne::bind(&rt).unwrap();
    for _ in 0..3 {
        op.call().await.unwrap();
    }
    let err = op.call().await.unwrap_err();
    assert!(matches!(
        err,
        Error::Throttled {
            busy: Busy::Resource { resource: "api" },
            ..
        }
    ));
    // One unit every 100 ms: the refusal says when.
    assert_eq!(err.retry_after(), Some(Duration::from_millis(100)));
    tokio::time::advance(Duration::from_millis(40)).await;
    let err = op.call().await.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(60)));
    // A long idle spell saves no more than the burst.
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(available(&rt, "api"), 3);
    for _ in 0..3 {
        op.call().await.unwrap();
    }
    assert!(op.call().await.is_err());
    assert_eq!(granted(&rt), 6);
}

#[tokio::test(start_paused = true)]
async fn any_window_of_1000_waiting_calls_holds_the_bound_and_each_is_granted_on_time() {
    let (count, burst) = (7u32, 2u32);
    let rt = runtime(count, SEC, burst);
    let op = WaitOne::bind(&rt).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    for _ in 0..1000 {
        op.call(log.clone()).await.unwrap();
    }
    let times: Vec<u128> = log
        .lock()
        .unwrap()
        .iter()
        .map(|t| (*t - start).as_nanos())
        .collect();
    // Call k (0-based) past the burst has its unit at ceil((k + 1 - burst) / 7 s);
    // the timer fires on the next millisecond at the latest.
    for (k, &t) in times.iter().enumerate() {
        let due = ((k as u128 + 1).saturating_sub(u128::from(burst)) * 1_000_000_000)
            .div_ceil(u128::from(count));
        assert!(
            t >= due && t <= due + 1_000_000,
            "call {k} at {t} ns, due {due}"
        );
    }
    // Any window [t_i, t_j] holds at most burst + count × (t_j - t_i) / period,
    // counted as of the instants the units existed.
    let as_of: Vec<u128> = (0..times.len() as u128)
        .map(|k| ((k + 1).saturating_sub(u128::from(burst)) * 1_000_000_000).div_ceil(7))
        .collect();
    for i in 0..as_of.len() {
        for j in (i..as_of.len()).step_by(37) {
            let n = (j - i + 1) as u128;
            let allowed =
                u128::from(burst) + u128::from(count) * (as_of[j] - as_of[i]) / 1_000_000_000;
            assert!(n <= allowed, "{n} calls in [{}, {}]", as_of[i], as_of[j]);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn huge_periods_and_gaps_saturate_and_a_daily_quota_is_valid() {
    let rt = Runtime::builder()
        .resource(Resource::rate("api", 1000, Duration::from_secs(86_400)).unwrap())
        .resource(Resource::rate("forever", 1, Duration::MAX).unwrap())
        .build()
        .unwrap();
    assert_eq!(available(&rt, "api"), 1000);
    assert_eq!(available(&rt, "forever"), 1);
    // A gap of a century: still at most the burst, no overflow.
    tokio::time::advance(Duration::from_secs(100 * 365 * 86_400)).await;
    assert_eq!(available(&rt, "api"), 1000);
    assert_eq!(available(&rt, "forever"), 1);
}

#[tokio::test(start_paused = true)]
async fn units_above_the_burst_do_not_bind_and_touch_nothing() {
    let rt = runtime(10, SEC, 3);
    let before = *rt.stats().resource("api").unwrap();
    let err = Five::bind(&rt).map(|_| ()).unwrap_err();
    assert!(matches!(
        err,
        BindError::UnitsAboveCapacity {
            units: 5,
            capacity: 3,
            ..
        }
    ));
    assert_eq!(rt.stats().resource("api").unwrap(), &before);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_cancelled_mid_wait_gives_its_place_and_reserves_nothing() {
    let rt = runtime(1, SEC, 1);
    let op = WaitOne::bind(&rt).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    op.call(log.clone()).await.unwrap();
    let first = tokio::spawn({
        let (op, log) = (op.clone(), log.clone());
        async move { op.call(log).await }
    });
    settle().await;
    let second = tokio::spawn({
        let (op, log) = (op.clone(), log.clone());
        async move { op.call(log).await }
    });
    settle().await;
    assert_eq!(rt.stats().resource("api").unwrap().waiting, 2);
    tokio::time::advance(Duration::from_millis(500)).await;
    first.abort();
    settle().await;
    assert_eq!(rt.stats().resource("api").unwrap().waiting, 1);
    second.await.unwrap().unwrap();
    let times = log.lock().unwrap().clone();
    assert_eq!(times.len(), 2);
    // The second waiter got the unit the first would have had, at 1 s.
    let at = times[1] - start;
    assert!(at >= SEC && at <= SEC + Duration::from_millis(1), "{at:?}");
    assert_eq!(granted(&rt), 2);
}

#[tokio::test(start_paused = true)]
async fn a_max_wait_or_deadline_that_units_cannot_meet_fails_at_once() {
    let rt = runtime(1, SEC, 1);
    RejectOne::bind(&rt).unwrap().call().await.unwrap();
    let start = Instant::now();
    let err = ShortWait::bind(&rt).unwrap().call().await.unwrap_err();
    assert!(matches!(
        err,
        Error::Throttled {
            busy: Busy::Resource { resource: "api" },
            ..
        }
    ));
    let err = ShortDeadline::bind(&rt).unwrap().call().await.unwrap_err();
    assert!(matches!(err, Error::DeadlineExceeded { .. }), "{err:?}");
    assert_eq!(Instant::now(), start, "no sleep known to end in failure");
    assert_eq!(rt.stats().resource("api").unwrap().waiting, 0);
}

#[herta::operation(effect = Idempotent, resources("api" = 1), max_wait = "1500ms")]
async fn wait_1500ms() -> Result<(), Failure<String>> {
    Ok(())
}

/// Calls queued ahead count: their units exist first, one after another,
/// even when the queue is deeper than the burst (so a `Reject` call's
/// `retry_after` stays the time until its turn, never "never").
#[tokio::test(start_paused = true)]
async fn calls_queued_ahead_count_for_max_wait_and_retry_after_beyond_the_burst() {
    let rt = runtime(1, SEC, 1);
    RejectOne::bind(&rt).unwrap().call().await.unwrap();
    let drained = Instant::now();
    let op = WaitOne::bind(&rt).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let queued: Vec<_> = (0..3)
        .map(|_| {
            let (op, log) = (op.clone(), log.clone());
            tokio::spawn(async move { op.call(log).await })
        })
        .collect();
    settle().await;
    assert_eq!(rt.stats().resource("api").unwrap().waiting, 3);
    let start = Instant::now();
    // Three units ahead, then its own: 4 s after the bucket was drawn
    // empty, past its 1.5 s max_wait.
    let turn = drained + 4 * SEC - start;
    let err = Wait1500ms::bind(&rt).unwrap().call().await.unwrap_err();
    assert_eq!(Instant::now(), start, "no sleep known to end in failure");
    assert_eq!(err.retry_after(), Some(turn), "{err:?}");
    // A `Reject` call behind a queue three times the burst: its turn too.
    let err = RejectOne::bind(&rt).unwrap().call().await.unwrap_err();
    assert_eq!(err.retry_after(), Some(turn), "{err:?}");
    for call in queued {
        call.await.unwrap().unwrap();
    }
    let last = *log.lock().unwrap().last().unwrap() - drained;
    assert!(
        last >= 3 * SEC && last <= 3 * SEC + Duration::from_millis(1),
        "{last:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_slot_and_units_are_taken_together() {
    let rt = runtime(1, SEC, 1);
    let probe = Probe::new();
    // No unit burned while queued for a slot.
    let holder = tokio::spawn({
        let (op, probe) = (HoldPool::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    probe.entered(1).await;
    let caller = tokio::spawn({
        let (op, probe) = (Both::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    settle().await;
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(
        available(&rt, "api"),
        1,
        "no unit taken while waiting for the slot"
    );
    assert_eq!(granted(&rt), 0);
    probe.open(1);
    holder.await.unwrap().unwrap();
    probe.entered(2).await;
    assert_eq!(available(&rt, "api"), 0);
    probe.open(1);
    caller.await.unwrap().unwrap();
    // No slot held while waiting for a unit.
    let start = Instant::now();
    let waiter = tokio::spawn({
        let (op, probe) = (Both::bind(&rt).unwrap(), probe.clone());
        async move { op.call(probe).await }
    });
    settle().await;
    let pool = *rt.stats().resource("pool").unwrap();
    assert_eq!((pool.in_use, pool.waiting), (0, 1));
    probe.entered(3).await;
    // Its unit exists 1 s after the last one was taken, a moment before
    // `start`.
    let at = Instant::now() - start;
    assert!(at > SEC / 2 && at <= SEC, "{at:?}");
    probe.open(1);
    waiter.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn every_attempt_takes_its_units() {
    let rt = runtime(10, SEC, 10);
    let probe = Probe::new();
    let err = Flaky::bind(&rt)
        .unwrap()
        .call(probe.clone())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Failed { attempts: 3, .. }), "{err:?}");
    assert_eq!(probe.attempts(), 3);
    assert_eq!(granted(&rt), 3);
    assert_eq!(available(&rt, "api"), 7);
}

#[tokio::test(start_paused = true)]
async fn set_rate_changes_the_rate_live_and_refuses_what_it_must() {
    let rt = runtime(1, Duration::from_secs(10), 1);
    let op = WaitOne::bind(&rt).unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    op.call(log.clone()).await.unwrap();
    let waiter = tokio::spawn({
        let (op, log) = (op.clone(), log.clone());
        async move { op.call(log).await }
    });
    settle().await;
    // Faster: the waiter's unit exists 1 s after the change, not 10 s.
    rt.set_rate("api", 1, SEC, 1).unwrap();
    waiter.await.unwrap().unwrap();
    let at = log.lock().unwrap()[1] - start;
    assert!(at >= SEC && at <= SEC + Duration::from_millis(1), "{at:?}");
    let stats = rt.stats();
    let api = stats.resource("api").unwrap();
    assert_eq!((api.capacity, api.rate.unwrap().period), (1, SEC));
    assert!(matches!(
        rt.set_rate("api", 0, SEC, 1),
        Err(ResizeError::ZeroRate { .. })
    ));
    assert!(matches!(
        rt.set_rate("pool", 1, SEC, 1),
        Err(ResizeError::WrongKind { rate: false, .. })
    ));
    assert!(matches!(
        rt.set_capacity("api", 4),
        Err(ResizeError::WrongKind { rate: true, .. })
    ));
    let big = Runtime::builder()
        .resource(Resource::rate("api", 10, SEC).unwrap())
        .build()
        .unwrap();
    let _bound = Five::bind(&big).unwrap();
    assert!(matches!(
        big.set_rate("api", 10, SEC, 4),
        Err(ResizeError::BelowNeed {
            operation: "five",
            units: 5,
            ..
        })
    ));
    assert_eq!(big.stats().resource("api").unwrap().capacity, 10);
}

#[test]
fn bad_rates_are_config_errors_not_panics() {
    assert!(matches!(
        Resource::rate("api", 0, SEC),
        Err(herta::ConfigError::ZeroRate { .. })
    ));
    assert!(matches!(
        Resource::rate("api", 1, Duration::ZERO),
        Err(herta::ConfigError::ZeroPeriod { .. })
    ));
    let zero_burst = Runtime::builder()
        .resource(Resource::rate("api", 1, SEC).unwrap().with_burst(0))
        .build();
    assert!(matches!(
        zero_burst,
        Err(herta::ConfigError::ZeroCapacity { .. })
    ));
    let plain_burst = Runtime::builder()
        .resource(Resource::new("pool", 1).with_burst(2))
        .build();
    assert!(matches!(
        plain_burst,
        Err(herta::ConfigError::BurstWithoutRate { .. })
    ));
}
