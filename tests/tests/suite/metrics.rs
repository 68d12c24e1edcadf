//! The `metrics` feature: the names, labels and values herta exports through
//! the `metrics` facade (see `herta::metrics`), read from `metrics-util`'s
//! debugging recorder, made current only while the runtime is built and the
//! operations bound (herta takes its handles then, never per call).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{quiet_deliberate_panics, within, Probe, DELIBERATE};
use herta::{Error, Failure, Resource, Runtime};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// What a `fetch` handler does.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Ok,
    /// Transient on the first attempt.
    FailOnce,
    /// Never ends: every attempt times out.
    Hang,
    /// Held at the probe's gate.
    Hold,
    Panic,
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = user,
                   retry(on = Transient, max = 2), timeout = "1s")]
async fn fetch(
    ctx: herta::Context,
    user: String,
    mode: Mode,
    probe: Arc<Probe>,
) -> Result<(), Failure<String>> {
    let _ = &user;
    match mode {
        Mode::Ok => Ok(()),
        Mode::FailOnce if ctx.attempt() == 1 => Err(Failure::transient("dropped".to_owned())),
        Mode::FailOnce => Ok(()),
        Mode::Hang => std::future::pending().await,
        Mode::Hold => {
            probe.hold().await;
            Ok(())
        }
        Mode::Panic => panic!("{DELIBERATE}: fetch"),
    }
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), admission = Reject)]
async fn charge(_customer: String) -> Result<(), Failure<String>> {
    Ok(())
}

/// Every metric read so far. The debugging recorder's snapshot drains what
/// it reads (counters and gauges swapped to 0, histograms emptied), so each
/// read adds to what was seen (herta moves the budget gauges by increments
/// and decrements, and sets only the capacity, once).
#[derive(Default)]
struct Seen {
    /// (name, labels as `k=v` sorted) → value.
    scalars: BTreeMap<(String, Vec<String>), f64>,
    samples: BTreeMap<(String, Vec<String>), Vec<f64>>,
}

impl Seen {
    fn read(&mut self, snapshotter: &Snapshotter) {
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            let id = (key.name().to_owned(), labels);
            match value {
                DebugValue::Counter(n) => *self.scalars.entry(id).or_default() += n as f64,
                DebugValue::Gauge(g) => *self.scalars.entry(id).or_default() += g.into_inner(),
                DebugValue::Histogram(values) => self
                    .samples
                    .entry(id)
                    .or_default()
                    .extend(values.into_iter().map(|v| v.into_inner())),
            }
        }
    }

    fn id(name: &str, labels: &[&str]) -> (String, Vec<String>) {
        let mut labels: Vec<String> = labels.iter().map(|l| (*l).to_owned()).collect();
        labels.sort();
        (name.to_owned(), labels)
    }

    fn value(&self, name: &str, labels: &[&str]) -> f64 {
        *self
            .scalars
            .get(&Self::id(name, labels))
            .unwrap_or_else(|| panic!("no metric {name}{labels:?}; have {:?}", self.scalars))
    }

    fn samples(&self, name: &str, labels: &[&str]) -> Vec<f64> {
        self.samples
            .get(&Self::id(name, labels))
            .cloned()
            .unwrap_or_default()
    }
}

const FETCH: &str = "operation=fetch";

#[tokio::test(start_paused = true)]
async fn a_scripted_run_exports_each_outcome_by_operation_never_by_key() {
    quiet_deliberate_panics();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, fetch, charge) = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        let fetch = Fetch::bind(&rt).unwrap();
        let charge = Charge::bind(&rt).unwrap();
        (rt, fetch, charge)
    });
    let probe = Probe::new();
    let call = |user: &str, mode| {
        let (fetch, probe) = (fetch.clone(), probe.clone());
        let user = user.to_owned();
        async move { fetch.call(user, mode, probe).await }
    };
    let mut seen = Seen::default();

    // Success; success after a retry; two timed-out attempts.
    call("alice", Mode::Ok).await.unwrap();
    call("bob", Mode::FailOnce).await.unwrap();
    let err = call("carol", Mode::Hang).await.unwrap_err();
    assert!(
        matches!(err, Error::TimedOut { attempts: 2, .. }),
        "{err:?}"
    );

    // Dave holds the slot: a charge is throttled, Erin waits 50 ms for it.
    let dave = tokio::spawn(call("dave", Mode::Hold));
    probe.entered(1).await;
    let err = within(charge.call("zoe".to_owned())).await.unwrap_err();
    assert!(matches!(err, Error::Throttled { .. }), "{err:?}");
    let erin = tokio::spawn(call("erin", Mode::Ok));
    // Yield (no clock advance) until Erin queues.
    for _ in 0..100 {
        if rt.stats().resource("slots").unwrap().waiting == 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(rt.stats().resource("slots").unwrap().waiting, 1);
    seen.read(&snapshotter);
    assert_eq!(seen.value("herta_budget_in_use", &["resource=slots"]), 1.0);
    assert_eq!(seen.value("herta_budget_waiting", &["resource=slots"]), 1.0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    probe.open(1);
    within(dave).await.unwrap().unwrap();
    within(erin).await.unwrap().unwrap();

    // Frank is cancelled while running; Gina's handler panics.
    let frank = tokio::spawn(call("frank", Mode::Hold));
    probe.entered(2).await;
    frank.abort();
    assert!(within(frank).await.unwrap_err().is_cancelled());
    let gina = within(tokio::spawn(call("gina", Mode::Panic))).await;
    assert!(gina.unwrap_err().is_panic());

    seen.read(&snapshotter);
    let calls =
        |outcome: &str| seen.value("herta_calls_total", &[FETCH, &format!("outcome={outcome}")]);
    // alice, bob, dave, erin; carol's last attempt timed out (Transient).
    assert_eq!(calls("success"), 4.0);
    assert_eq!(calls("transient"), 1.0);
    for none in ["uncertain", "permanent", "stopping", "deadline"] {
        assert_eq!(calls(none), 0.0, "{none}");
    }
    // Throttled calls are counted by which limit refused them, never in a
    // series without that label.
    for throttle in herta::Throttle::ALL {
        let throttle = format!("throttle={}", throttle.label());
        let labels = [FETCH, "outcome=throttled", throttle.as_str()];
        assert_eq!(seen.value("herta_calls_total", &labels), 0.0, "{throttle}");
    }
    assert!(!seen.scalars.contains_key(&Seen::id(
        "herta_calls_total",
        &[FETCH, "outcome=throttled"]
    )));
    assert_eq!(
        seen.value(
            "herta_calls_total",
            &["operation=charge", "outcome=throttled", "throttle=no_room"]
        ),
        1.0
    );
    let counter = |name: &str| seen.value(name, &[FETCH]);
    // alice 1, bob 2, carol 2, dave 1, erin 1, frank 1, gina 1.
    assert_eq!(counter("herta_attempts_total"), 9.0);
    assert_eq!(counter("herta_retries_total"), 2.0);
    assert_eq!(counter("herta_timeouts_total"), 2.0);
    assert_eq!(counter("herta_cancelled_total"), 1.0);
    assert_eq!(counter("herta_panics_total"), 1.0);
    assert_eq!(counter("herta_retries_denied_total"), 0.0);
    assert_eq!(
        seen.value("herta_attempts_total", &["operation=charge"]),
        0.0
    );

    // Erin's one budget wait, 50 ms; nobody waited for a key.
    assert_eq!(
        seen.samples("herta_wait_seconds", &[FETCH, "stage=budgets"]),
        [0.05]
    );
    assert!(seen
        .samples("herta_wait_seconds", &[FETCH, "stage=key"])
        .is_empty());
    // Attempts in seconds: carol's two 1 s timeouts, dave's 50 ms hold;
    // frank's attempt was dropped with the call, not sampled.
    let mut attempts = seen.samples("herta_attempt_seconds", &[FETCH]);
    attempts.sort_by(f64::total_cmp);
    assert_eq!(attempts, [0.0, 0.0, 0.0, 0.0, 0.0, 0.05, 1.0, 1.0]);
    assert!(seen.samples("herta_backoff_seconds", &[FETCH]).is_empty());

    // Budgets: capacity, and nothing held or waiting at the end.
    assert_eq!(
        seen.value("herta_budget_capacity", &["resource=slots"]),
        1.0
    );
    assert_eq!(seen.value("herta_budget_in_use", &["resource=slots"]), 0.0);
    assert_eq!(seen.value("herta_budget_waiting", &["resource=slots"]), 0.0);

    // The stats say the same.
    let s = rt.stats();
    let op = s.operation("fetch").unwrap();
    assert_eq!(op.started + op.retried, 9);
    assert_eq!(op.finished - op.cancelled - op.panicked, 5);

    // Labels: only these five, and never a key value.
    let users = [
        "alice", "bob", "carol", "dave", "erin", "frank", "gina", "zoe",
    ];
    let all = seen.scalars.keys().chain(seen.samples.keys());
    for (name, labels) in all {
        assert!(name.starts_with("herta_"), "{name}");
        for label in labels {
            let (k, v) = label.split_once('=').unwrap();
            assert!(
                ["operation", "outcome", "throttle", "stage", "resource"].contains(&k),
                "{name}: label {label}"
            );
            assert!(!users.contains(&v), "{name}: a key value in {label}");
        }
    }
}

/// Many keys add no series: the set of metric names and labels after calls
/// on 1 000 distinct keys is the set after one call.
#[tokio::test(start_paused = true)]
async fn a_thousand_keys_add_no_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let fetch = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        Fetch::bind(&rt).unwrap()
    });
    let probe = Probe::new();
    let series = || -> Vec<_> {
        let mut seen = Seen::default();
        seen.read(&snapshotter);
        seen.scalars
            .into_keys()
            .chain(seen.samples.into_keys())
            .collect()
    };
    fetch
        .call("user-0".to_owned(), Mode::Ok, probe.clone())
        .await
        .unwrap();
    let after_one = series();
    for i in 1..1000 {
        fetch
            .call(format!("user-{i}"), Mode::Ok, probe.clone())
            .await
            .unwrap();
    }
    assert_eq!(series(), after_one);
}

/// Two bindings of one operation (e.g. one per request) share its series.
#[tokio::test(start_paused = true)]
async fn two_bindings_of_one_operation_count_in_one_series() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (a, b) = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        (Charge::bind(&rt).unwrap(), Charge::bind(&rt).unwrap())
    });
    a.call("x".to_owned()).await.unwrap();
    b.call("y".to_owned()).await.unwrap();
    let mut seen = Seen::default();
    seen.read(&snapshotter);
    assert_eq!(
        seen.value(
            "herta_calls_total",
            &["operation=charge", "outcome=success"]
        ),
        2.0
    );
}

/// A call refused at the closed gate counts under `outcome="stopping"` but
/// is not admitted, so `herta_calls_total` summed over outcomes is
/// `finished - cancelled - panicked + refused_stopping` (herta::metrics).
#[tokio::test(start_paused = true)]
async fn calls_refused_at_shutdown_are_counted_beside_the_finished_ones() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, charge) = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        let charge = Charge::bind(&rt).unwrap();
        (rt, charge)
    });
    charge.call("ada".to_owned()).await.unwrap();
    rt.shutdown().await;
    for customer in ["bo", "cy"] {
        let refused = charge.call(customer.to_owned()).await.unwrap_err();
        assert!(matches!(refused, Error::Stopping { .. }), "{refused:?}");
    }
    let mut seen = Seen::default();
    seen.read(&snapshotter);
    let calls = |outcome: &str| {
        seen.value(
            "herta_calls_total",
            &["operation=charge", &format!("outcome={outcome}")],
        )
    };
    assert_eq!(calls("success"), 1.0);
    assert_eq!(calls("stopping"), 2.0);
    let stats = rt.stats();
    let op = stats.operation("charge").unwrap();
    assert_eq!((op.finished, op.refused_stopping), (1, 2));
    assert_eq!(
        calls("success") + calls("stopping"),
        (op.finished - op.cancelled - op.panicked + op.refused_stopping) as f64
    );
}

/// `Runtime::set_capacity` moves the `herta_budget_capacity` gauge at once;
/// the in-use gauge stays exact across the change.
#[tokio::test(start_paused = true)]
async fn the_capacity_gauge_follows_a_resize() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, charge) = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        let charge = Charge::bind(&rt).unwrap();
        (rt, charge)
    });
    rt.set_capacity("slots", 6).unwrap();
    charge.call("x".to_owned()).await.unwrap();
    let mut seen = Seen::default();
    seen.read(&snapshotter);
    assert_eq!(
        seen.value("herta_budget_capacity", &["resource=slots"]),
        6.0
    );
    assert_eq!(seen.value("herta_budget_in_use", &["resource=slots"]), 0.0);
}

#[herta::operation(effect = Idempotent, resources("api" = 1))]
async fn ping() -> Result<(), Failure<String>> {
    Ok(())
}

/// A rate budget's `herta_budget_available` is its bucket after its last
/// grant; the capacity gauge is its burst.
#[tokio::test(start_paused = true)]
async fn a_rate_budget_exports_the_units_left_after_each_grant() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, ping) = metrics::with_local_recorder(&recorder, || {
        let api = Resource::rate("api", 10, Duration::from_secs(1))
            .unwrap()
            .with_burst(3);
        let rt = Runtime::builder().resource(api).build().unwrap();
        let ping = Ping::bind(&rt).unwrap();
        (rt, ping)
    });
    ping.call().await.unwrap();
    ping.call().await.unwrap();
    let mut seen = Seen::default();
    seen.read(&snapshotter);
    assert_eq!(seen.value("herta_budget_available", &["resource=api"]), 1.0);
    assert_eq!(seen.value("herta_budget_capacity", &["resource=api"]), 3.0);
    assert_eq!(rt.stats().resource("api").unwrap().available, 1);
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn upstream(throttle: bool) -> Result<(), Failure<String>> {
    if throttle {
        Err(Failure::throttled("429".to_owned()))
    } else {
        Err(Failure::permanent("400".to_owned()))
    }
}

/// A dependency's own `Throttled` on the last attempt is `Error::Failed`
/// with that outcome for the caller, and `throttled` in both the metrics and
/// the stats (one mapping), never `failed` in one and `throttled` in the other.
#[tokio::test(start_paused = true)]
async fn a_handlers_throttled_counts_as_throttled_in_metrics_and_stats() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let (rt, upstream) = metrics::with_local_recorder(&recorder, || {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .build()
            .unwrap();
        let upstream = Upstream::bind(&rt).unwrap();
        (rt, upstream)
    });
    for throttle in [true, true, true, false] {
        let err = upstream.call(throttle).await.unwrap_err();
        assert!(matches!(err, Error::Failed { .. }), "{err:?}");
    }
    let mut seen = Seen::default();
    seen.read(&snapshotter);
    let label = |outcome: &str| {
        let mut labels = vec![
            "operation=upstream".to_owned(),
            format!("outcome={outcome}"),
        ];
        if outcome == "throttled" {
            // The handler's own `Throttled`: the dependency pushed back.
            labels.push("throttle=dependency".to_owned());
        }
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        seen.value("herta_calls_total", &labels) as u64
    };
    let stats = rt.stats();
    let op = stats.operation("upstream").unwrap();
    assert_eq!(
        (label("throttled"), op.throttled, stats.throttled),
        (3, 3, 3)
    );
    assert_eq!((label("permanent"), op.failed, stats.failed), (1, 1, 1));
    assert_eq!(label("throttled") + label("permanent"), op.admitted);
}
