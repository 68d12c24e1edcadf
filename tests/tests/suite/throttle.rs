//! Which limit throttled a call (`herta::Throttle`): each of herta's own
//! refusals and a dependency's push-back are told apart by
//! `Error::throttle`, the error's message and the `throttle` label of
//! `herta_calls_total{outcome="throttled"}`, so an operator can see whether
//! a queue is full, a `max_wait` too short, a rate spent or a breaker open.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{until, within, Probe};
use herta::{Busy, Error, Failure, Outcome, Resource, Runtime, Throttle};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

herta::resources! {
    pub SLOT: "slot" = 1, queue = 1;
}

herta::breakers! {
    /// Opens once half of at least 2 attempts failed, for 30 s.
    pub FLAKY: "flaky" = breaker(failure_rate = 50, min_calls = 2, open_for = "30s");
}

/// Holds the slot until the probe opens.
#[herta::operation(effect = Idempotent, resources(SLOT = 1))]
async fn hold(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

/// Refused at once when the slot is held.
#[herta::operation(effect = Idempotent, resources(SLOT = 1), admission = Reject)]
async fn reject() -> Result<(), Failure<String>> {
    Ok(())
}

/// Refused at once when the slot is held by a key of its own: the key.
#[herta::operation(effect = Idempotent, resources("free" = 1), admission = Reject,
                   serialize_by = user)]
async fn reject_keyed(user: u32, probe: Arc<Probe>) -> Result<(), Failure<String>> {
    let _ = user;
    probe.hold().await;
    Ok(())
}

/// Refused at once when the rate budget is spent.
#[herta::operation(effect = Idempotent, resources("api" = 1), admission = Reject)]
async fn rate_call() -> Result<(), Failure<String>> {
    Ok(())
}

/// Waits for the slot (in its queue of one).
#[herta::operation(effect = Idempotent, resources(SLOT = 1))]
async fn wait() -> Result<(), Failure<String>> {
    Ok(())
}

/// Waits for the slot at most 50 ms.
#[herta::operation(effect = Idempotent, resources(SLOT = 1), max_wait = "50ms")]
async fn brief() -> Result<(), Failure<String>> {
    Ok(())
}

/// Fails `Transient` behind the breaker `flaky`.
#[herta::operation(effect = Idempotent, resources("free" = 1), breaker = FLAKY)]
async fn flaky() -> Result<(), Failure<String>> {
    Err(Failure::transient("down".to_owned()))
}

/// The dependency pushes back.
#[herta::operation(effect = Idempotent, resources("free" = 1))]
async fn pushed_back() -> Result<(), Failure<String>> {
    Err(Failure::throttled("429".to_owned()))
}

struct Ops {
    hold: Hold,
    reject: Reject,
    reject_keyed: RejectKeyed,
    rate: RateCall,
    wait: Wait,
    brief: Brief,
    flaky: Flaky,
    pushed_back: PushedBack,
}

/// A runtime of a one-unit `slot` (queue of one), a rate budget `api` of
/// one unit per minute and the breaker `flaky`, its operations bound while
/// `recorder` is current.
fn setup(recorder: &DebuggingRecorder) -> (Runtime, Ops) {
    metrics::with_local_recorder(recorder, || {
        let rt = Runtime::builder()
            .resource(SLOT)
            .resource(Resource::rate("api", 1, Duration::from_secs(60)).unwrap())
            .resource(Resource::new("free", 8))
            .breaker(FLAKY)
            .build()
            .unwrap();
        let ops = Ops {
            hold: Hold::bind(&rt).unwrap(),
            reject: Reject::bind(&rt).unwrap(),
            reject_keyed: RejectKeyed::bind(&rt).unwrap(),
            rate: RateCall::bind(&rt).unwrap(),
            wait: Wait::bind(&rt).unwrap(),
            brief: Brief::bind(&rt).unwrap(),
            flaky: Flaky::bind(&rt).unwrap(),
            pushed_back: PushedBack::bind(&rt).unwrap(),
        };
        (rt, ops)
    })
}

/// `herta_calls_total` of `operation` with `outcome=throttled` and this
/// `throttle`, summed over what `snapshotter` has not yet drained.
fn throttled(snapshotter: &Snapshotter, operation: &str) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        if key.name() != "herta_calls_total" {
            continue;
        }
        let labels: Vec<(String, String)> = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        let has = |k: &str, v: &str| labels.iter().any(|(lk, lv)| lk == k && lv == v);
        if !has("operation", operation) || !has("outcome", "throttled") {
            continue;
        }
        let throttle = labels
            .iter()
            .find(|(k, _)| k == "throttle")
            .map_or_else(|| "(none)".to_owned(), |(_, v)| v.clone());
        if let DebugValue::Counter(n) = value {
            if n > 0 {
                found.push((throttle, n));
            }
        }
    }
    found.sort();
    found
}

/// `err` is `Throttled` by `throttle` on `busy`, and says so.
fn assert_throttled<E: std::fmt::Debug>(err: &Error<E>, throttle: Throttle, busy: &Busy) {
    assert_eq!(err.outcome(), Outcome::Throttled);
    assert_eq!(err.throttle(), Some(throttle), "{err:?}");
    match err {
        Error::Throttled {
            throttle: t,
            busy: b,
            ..
        } => {
            assert_eq!((t, b), (&throttle, busy));
        }
        other => panic!("expected Throttled, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&format!("({throttle})")), "{message}");
}

#[tokio::test(start_paused = true)]
async fn each_limit_is_its_own_reason_in_the_error_and_the_metric() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, ops) = setup(&recorder);
    let slot = Busy::Resource { resource: "slot" };
    let probe = Probe::new();

    // The slot is held: `Reject` finds no room.
    let holder = {
        let (op, probe) = (ops.hold.clone(), probe.clone());
        tokio::spawn(async move { op.call(probe).await })
    };
    probe.entered(1).await;
    let err = within(ops.reject.call()).await.unwrap_err();
    assert_throttled(&err, Throttle::NoRoom, &slot);
    assert_eq!(err.retry_after(), None);
    assert_eq!(throttled(&snapshotter, "reject"), [("no_room".into(), 1)]);

    // A `max_wait` of 50 ms runs out behind the holder.
    let err = within(ops.brief.call()).await.unwrap_err();
    assert_throttled(&err, Throttle::MaxWait, &slot);
    assert_eq!(throttled(&snapshotter, "brief"), [("max_wait".into(), 1)]);

    // One call queues (the queue's limit is one): the next finds it full.
    let queued = {
        let op = ops.wait.clone();
        tokio::spawn(async move { op.call().await })
    };
    until(|| rt.stats().resource("slot").unwrap().waiting == 1).await;
    let err = within(ops.wait.call()).await.unwrap_err();
    assert_throttled(&err, Throttle::QueueFull, &slot);
    assert_eq!(throttled(&snapshotter, "wait"), [("queue_full".into(), 1)]);
    probe.open(1);
    within(holder).await.unwrap().unwrap();
    within(queued).await.unwrap().unwrap();

    // The rate budget's one unit a minute is spent: `Reject` finds it short,
    // and knows when the unit exists again.
    within(ops.rate.call()).await.unwrap();
    let err = within(ops.rate.call()).await.unwrap_err();
    assert_throttled(&err, Throttle::Rate, &Busy::Resource { resource: "api" });
    assert!(err.retry_after().is_some(), "{err:?}");
    assert_eq!(throttled(&snapshotter, "rate_call"), [("rate".into(), 1)]);

    // Two failures open the breaker: the next call is refused by it.
    for _ in 0..2 {
        let err = within(ops.flaky.call()).await.unwrap_err();
        assert_eq!(err.throttle(), None, "{err:?}");
    }
    let err = within(ops.flaky.call()).await.unwrap_err();
    assert_throttled(
        &err,
        Throttle::BreakerOpen,
        &Busy::Breaker { breaker: "flaky" },
    );
    assert_eq!(
        throttled(&snapshotter, "flaky"),
        [("breaker_open".into(), 1)]
    );

    // The dependency pushed back: `Failed`, throttled by the dependency.
    let err = within(ops.pushed_back.call()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Failed {
                outcome: Outcome::Throttled,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.throttle(), Some(Throttle::Dependency));
    assert_eq!(
        throttled(&snapshotter, "pushed_back"),
        [("dependency".into(), 1)]
    );

    // Every operation's throttled calls sum into its `throttled` counter.
    let stats = rt.stats();
    for op in [
        "reject",
        "brief",
        "wait",
        "rate_call",
        "flaky",
        "pushed_back",
    ] {
        assert_eq!(stats.operation(op).unwrap().throttled, 1, "{op}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_busy_key_under_reject_is_no_room() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (_rt, ops) = setup(&recorder);
    let probe = Probe::new();
    let first = {
        let (op, probe) = (ops.reject_keyed.clone(), probe.clone());
        tokio::spawn(async move { op.call(7, probe).await })
    };
    probe.entered(1).await;
    let err = within(ops.reject_keyed.call(7, probe.clone()))
        .await
        .unwrap_err();
    let key = Busy::Key {
        parameter: "user",
        value: None,
    };
    assert_throttled(&err, Throttle::NoRoom, &key);
    assert_eq!(
        throttled(&snapshotter, "reject_keyed"),
        [("no_room".into(), 1)]
    );
    probe.open(1);
    within(first).await.unwrap().unwrap();
}

#[test]
fn labels_are_stable_snake_case_words_one_per_reason() {
    let labels: Vec<&str> = Throttle::ALL.iter().map(|t| t.label()).collect();
    assert_eq!(
        labels,
        [
            "no_room",
            "rate",
            "queue_full",
            "max_wait",
            "breaker_open",
            "dependency"
        ]
    );
}
