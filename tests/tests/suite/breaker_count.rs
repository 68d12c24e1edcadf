//! Count windows (`window = N`: the last N attempts, whenever they ended),
//! on a paused clock: they open at the failure rate once they hold
//! `min_calls` attempts (a success can be the attempt that reaches it),
//! slide attempt by attempt and never expire on time, let probes through
//! half-open as a time window does, and are checked where they are
//! declared (`breakers!` at compile time, `Breaker` at `build`).

use std::time::Duration;

use herta::{
    Breaker, BreakerState, BreakerStats, BreakerWindow, Busy, ConfigError, Error, Failure,
    Resource, Runtime,
};

herta::breakers! {
    /// The last 4 attempts, judged from 4, opening at half of them failed.
    pub LAST_4: "last-4" = breaker(window = 4, min_calls = 4, failure_rate = 50,
                                   open_for = "10s", probes = 2);
    /// The last 4 attempts, judged from 2, opening at three quarters failed.
    pub SLIDING: "sliding" = breaker(window = 4, min_calls = 2, failure_rate = 75);
    /// The last 10 attempts, judged from 5, opening at every one failed.
    pub TEN: "ten" = breaker(window = 10, min_calls = 5, failure_rate = 100);
    /// The last 4 attempts; slow from 100 ms, opening at half of them slow.
    pub SLOW_4: "slow-4" = breaker(window = 4, min_calls = 2, failure_rate = 100,
                                   slow_call = "100ms", slow_rate = 50);
}

/// What one attempt does.
#[derive(Debug, Clone, Copy)]
enum Act {
    Ok,
    Fail,
    /// Succeeds after 150 ms.
    Slow,
}

type Reply = Result<(), Failure<&'static str>>;

async fn answer(act: Act) -> Reply {
    match act {
        Act::Ok => Ok(()),
        Act::Fail => Err(Failure::transient("unavailable")),
        Act::Slow => {
            tokio::time::sleep(Duration::from_millis(150)).await;
            Ok(())
        }
    }
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = LAST_4)]
async fn last_4(act: Act) -> Reply {
    answer(act).await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = SLIDING)]
async fn sliding(act: Act) -> Reply {
    answer(act).await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = TEN)]
async fn ten(act: Act) -> Reply {
    answer(act).await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = SLOW_4)]
async fn slow_4(act: Act) -> Reply {
    answer(act).await
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 4))
        .breaker(LAST_4)
        .breaker(SLIDING)
        .breaker(TEN)
        .breaker(SLOW_4)
        .build()
        .unwrap()
}

fn stats(rt: &Runtime, name: &str) -> BreakerStats {
    rt.stats().breaker(name).cloned().unwrap()
}

fn assert_refused<E: std::fmt::Debug>(result: Result<(), Error<E>>, name: &'static str) {
    match result {
        Err(Error::Throttled { busy, .. }) => assert_eq!(busy, Busy::Breaker { breaker: name }),
        other => panic!("expected `{name}`'s refusal, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_success_that_reaches_min_calls_opens_it_at_the_rate() {
    let rt = runtime();
    let op = Last4::bind(&rt).unwrap();
    for act in [Act::Fail, Act::Fail, Act::Ok] {
        let _ = op.call(act).await;
    }
    let b = stats(&rt, "last-4");
    assert_eq!(
        (b.state, b.calls, b.failure_rate, b.window),
        (BreakerState::Closed, 3, 66, BreakerWindow::Count(4)),
        "no verdict before 4 attempts"
    );
    op.call(Act::Ok).await.unwrap();
    let b = stats(&rt, "last-4");
    assert_eq!(
        (b.state, b.opened, b.calls, b.failure_rate),
        (BreakerState::Open, 1, 4, 50),
        "2 failures of the last 4, judged at the success that made them 4"
    );
    assert_refused(op.call(Act::Ok).await, "last-4");
    assert!(rt.stats().to_string().contains(
        "breaker last-4: open, failure rate 50% of 4 calls in the window (the last 4 attempts)"
    ));
}

#[tokio::test(start_paused = true)]
async fn it_slides_attempt_by_attempt_and_never_expires_on_time() {
    let rt = runtime();
    let op = Sliding::bind(&rt).unwrap();
    let mut rates = Vec::new();
    for act in [
        Act::Fail,
        Act::Ok,
        Act::Ok,
        Act::Ok,
        Act::Ok,
        Act::Fail,
        Act::Fail,
    ] {
        let _ = op.call(act).await;
        // An hour between attempts: a count window keeps them all.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let b = stats(&rt, "sliding");
        assert_eq!(b.state, BreakerState::Closed);
        rates.push((b.calls, b.failure_rate));
    }
    assert_eq!(
        rates,
        [
            (1, 100),
            (2, 50),
            (3, 33),
            (4, 25),
            (4, 0),
            (4, 25),
            (4, 50)
        ],
        "the oldest attempt leaves as each new one enters"
    );
    let _ = op.call(Act::Fail).await;
    let b = stats(&rt, "sliding");
    assert_eq!(
        (b.state, b.calls, b.failure_rate),
        (BreakerState::Open, 4, 75),
        "3 failures of the last 4"
    );
}

#[tokio::test(start_paused = true)]
async fn no_verdict_before_min_calls() {
    let rt = runtime();
    let op = Ten::bind(&rt).unwrap();
    for _ in 0..4 {
        let _ = op.call(Act::Fail).await;
    }
    assert_eq!(stats(&rt, "ten").state, BreakerState::Closed, "4 of 5");
    let _ = op.call(Act::Fail).await;
    let b = stats(&rt, "ten");
    assert_eq!(
        (b.state, b.calls, b.failure_rate),
        (BreakerState::Open, 5, 100)
    );
}

#[tokio::test(start_paused = true)]
async fn half_open_probes_close_it_with_an_empty_window_or_reopen_it() {
    let rt = runtime();
    let op = Last4::bind(&rt).unwrap();
    for _ in 0..4 {
        let _ = op.call(Act::Fail).await;
    }
    assert_eq!(stats(&rt, "last-4").state, BreakerState::Open);
    tokio::time::advance(Duration::from_secs(10)).await;
    // A failed probe: open again for a full `open_for`.
    let _ = op.call(Act::Fail).await;
    let b = stats(&rt, "last-4");
    assert_eq!((b.state, b.opened, b.probing), (BreakerState::Open, 2, 0));
    tokio::time::advance(Duration::from_secs(9)).await;
    assert_refused(op.call(Act::Ok).await, "last-4");
    tokio::time::advance(Duration::from_secs(1)).await;
    // Two successful probes: closed, and a new window starts.
    op.call(Act::Ok).await.unwrap();
    assert_eq!(stats(&rt, "last-4").state, BreakerState::HalfOpen);
    op.call(Act::Ok).await.unwrap();
    let b = stats(&rt, "last-4");
    assert_eq!(
        (b.state, b.calls, b.failure_rate),
        (BreakerState::Closed, 0, 0)
    );
    // The attempts before it opened are gone: 3 failures are no verdict.
    for _ in 0..3 {
        let _ = op.call(Act::Fail).await;
    }
    assert_eq!(stats(&rt, "last-4").state, BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn slow_attempts_count_with_a_slow_call_threshold() {
    let rt = runtime();
    let op = Slow4::bind(&rt).unwrap();
    op.call(Act::Ok).await.unwrap();
    op.call(Act::Slow).await.unwrap();
    let b = stats(&rt, "slow-4");
    assert_eq!(
        (b.state, b.calls, b.failure_rate),
        (BreakerState::Open, 2, 50),
        "1 slow of 2: 50 %"
    );
}

#[test]
fn build_checks_a_count_window() {
    let build = |b: Breaker| {
        Runtime::builder()
            .resource(Resource::new("slots", 1))
            .breaker(b)
            .build()
            .map(|_| ())
    };
    let reason = |b: Breaker| match build(b) {
        Err(ConfigError::InvalidBreaker { reason, .. }) => reason,
        other => panic!("expected InvalidBreaker, got {other:?}"),
    };
    assert_eq!(
        reason(Breaker::new("b").with_count_window(0).with_min_calls(1)),
        "`window` is 0 attempts; a count window holds at least 1"
    );
    assert_eq!(
        reason(Breaker::new("b").with_count_window(5)),
        "`window` holds 5 attempts, fewer than `min_calls` (10): it would never judge"
    );
    assert!(
        reason(Breaker::new("b").with_count_window(herta::MAX_WINDOW_CALLS + 1))
            .contains("more than 100000")
    );
    build(Breaker::new("b").with_count_window(10)).unwrap();
    let b = Breaker::new("b")
        .with_count_window(100)
        .with_window(Duration::from_secs(1));
    assert_eq!(
        b.window(),
        BreakerWindow::Time(Duration::from_secs(1)),
        "the last window set is the breaker's"
    );
}
