//! The `tracing` feature (on by default): one `herta.operation` span per call
//! and events at waits, throttling, failed attempts, retries, timeouts,
//! cancellation, panics and shutdown, at the documented levels and with the
//! documented fields (see `herta::trace`).
//!
//! A small capturing [`Layer`] records every span (at close, with the fields
//! recorded after creation) and every event of target `herta`, with the span
//! it happened in. Each test installs it as the thread's default subscriber
//! and runs a current-thread runtime, so every poll is seen.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herta::{Failure, Resource, Runtime};
use tokio::sync::Semaphore;
use tracing::field::{Field, Visit};
use tracing::{span, Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---------------------------------------------------------------- capture

/// Field name → value as text (`&str` values without quotes).
#[derive(Debug, Clone, Default, PartialEq)]
struct Fields(BTreeMap<&'static str, String>);

impl Fields {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
    fn num(&self, name: &str) -> f64 {
        self.get(name)
            .unwrap_or_else(|| panic!("no field `{name}` in {self:?}"))
            .parse()
            .unwrap_or_else(|_| panic!("field `{name}` is not a number in {self:?}"))
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }
}

/// One event of target `herta`.
#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    message: String,
    fields: Fields,
    /// The name and fields of the span it happened in.
    span: Option<(&'static str, Fields)>,
}

#[derive(Debug, Clone)]
struct ClosedSpan {
    name: &'static str,
    level: Level,
    fields: Fields,
}

#[derive(Clone, Default)]
struct Capture {
    events: Arc<Mutex<Vec<Captured>>>,
    spans: Arc<Mutex<Vec<ClosedSpan>>>,
}

impl Capture {
    fn events(&self) -> Vec<Captured> {
        self.events.lock().unwrap().clone()
    }
    fn messages(&self) -> Vec<String> {
        self.events().into_iter().map(|e| e.message).collect()
    }
    fn spans(&self) -> Vec<ClosedSpan> {
        self.spans.lock().unwrap().clone()
    }
    /// The one event with `message`.
    fn event(&self, message: &str) -> Captured {
        let all = self.events();
        let found: Vec<_> = all.iter().filter(|e| e.message == message).collect();
        assert_eq!(found.len(), 1, "one `{message}` event expected in {all:#?}");
        found[0].clone()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let mut extensions = span.extensions_mut();
        values.record(extensions.get_mut::<Fields>().unwrap());
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != "herta" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let message = fields.0.remove("message").unwrap_or_default();
        let span = ctx.event_span(event).map(|s| {
            let fields = s.extensions().get::<Fields>().cloned().unwrap_or_default();
            (s.name(), fields)
        });
        self.events.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            message,
            fields,
            span,
        });
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        if span.metadata().target() != "herta" {
            return;
        }
        let fields = span
            .extensions()
            .get::<Fields>()
            .cloned()
            .unwrap_or_default();
        self.spans.lock().unwrap().push(ClosedSpan {
            name: span.name(),
            level: *span.metadata().level(),
            fields,
        });
    }
}

/// Runs `test` on a paused current-thread runtime with `capture` (filtered
/// at `max`) as this thread's subscriber.
fn captured<F: Future>(max: LevelFilter, test: impl FnOnce(Capture) -> F) -> Capture {
    let _serial = crate::serial();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(max)
        .with(capture.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(60), test(capture.clone()))
                .await
                .expect("the test finished within its bound");
        });
    capture
}

/// Yields until `cond` holds (bounded).
async fn until(mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition not reached");
}

// ---------------------------------------------------------------- operations

/// A gate handlers wait at until the test lets them through.
type Gate = Arc<Semaphore>;

fn gate() -> Gate {
    Arc::new(Semaphore::new(0))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(key, show_key = true))]
async fn hold(key: u32, gate: Gate) -> Result<(), Failure<String>> {
    let _ = key;
    gate.acquire().await.unwrap().forget();
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn unkeyed(gate: Gate) -> Result<(), Failure<String>> {
    gate.acquire().await.unwrap().forget();
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(brand, show_key = true))]
async fn replace(brand: String) -> Result<usize, Failure<String>> {
    Ok(brand.len())
}

/// Keyed by personal data, without `show_key`: no value in any trace.
#[herta::operation(effect = Idempotent, resources("slots" = 1), serialize_by = email)]
async fn notify(email: String) -> Result<usize, Failure<String>> {
    Ok(email.len())
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), admission = Reject)]
async fn charge(cents: u64) -> Result<u64, Failure<String>> {
    Ok(cents)
}

#[herta::operation(effect = NonIdempotent, resources("other" = 1), admission = Reject,
                   serialize_by = customer)]
async fn charge_customer(customer: u32, gate: Gate) -> Result<(), Failure<String>> {
    gate.acquire().await.unwrap().forget();
    let _ = customer;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
async fn flaky() -> Result<(), Failure<String>> {
    Err(Failure::transient("try again".to_owned()))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Uncertain, max = 2))]
async fn unsure() -> Result<(), Failure<String>> {
    Err(Failure::uncertain("lost the reply".to_owned()))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), timeout = "50ms")]
async fn slow_render() -> Result<(), Failure<String>> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), timeout = "50ms")]
async fn slow_charge() -> Result<(), Failure<String>> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn explode() -> Result<(), Failure<String>> {
    panic!("handler bug");
}

thread_local! {
    static FORMATTED: Cell<u32> = const { Cell::new(0) };
}

/// A key that counts how often it is formatted.
#[derive(Clone, PartialEq, Eq, Hash)]
struct CountedKey(u32);

impl fmt::Debug for CountedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        FORMATTED.with(|n| n.set(n.get() + 1));
        write!(f, "CountedKey({})", self.0)
    }
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   serialize_by(key, show_key = true))]
async fn counted(key: CountedKey) -> Result<(), Failure<String>> {
    let _ = key;
    Ok(())
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .resource(Resource::new("other", 4))
        .build()
        .unwrap()
}

fn in_span<'a>(event: &'a Captured, operation: &str) -> &'a Fields {
    let (name, fields) = event
        .span
        .as_ref()
        .unwrap_or_else(|| panic!("`{}` outside any span", event.message));
    assert_eq!(*name, "herta.operation");
    assert_eq!(fields.get("operation"), Some(operation));
    fields
}

// ---------------------------------------------------------------- tests

#[test]
fn every_call_runs_in_a_span_naming_operation_effect_and_key() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        Replace::bind(&rt)
            .unwrap()
            .call("acme".to_owned())
            .await
            .unwrap();
        let long = "x".repeat(100);
        Replace::bind(&rt).unwrap().call(long).await.unwrap();
        Charge::bind(&rt).unwrap().call(42).await.unwrap();
        Notify::bind(&rt)
            .unwrap()
            .call("jane.doe@example.com".to_owned())
            .await
            .unwrap();
    });
    let spans = capture.spans();
    assert_eq!(spans.len(), 4, "{spans:#?}");
    assert!(spans
        .iter()
        .all(|s| s.name == "herta.operation" && s.level == Level::DEBUG));
    assert_eq!(spans[0].fields.get("operation"), Some("replace"));
    assert_eq!(spans[0].fields.get("effect"), Some("Idempotent"));
    assert_eq!(spans[0].fields.get("key"), Some("\"acme\""));
    let long = spans[1].fields.get("key").unwrap();
    assert_eq!(long.chars().count(), 64, "truncated: {long}");
    assert!(long.starts_with("\"xxx") && long.ends_with("..."), "{long}");
    assert_eq!(spans[2].fields.get("operation"), Some("charge"));
    assert_eq!(spans[2].fields.get("effect"), Some("NonIdempotent"));
    assert_eq!(spans[2].fields.get("key"), None, "no serialize_by, no key");
    assert_eq!(spans[3].fields.get("operation"), Some("notify"));
    assert_eq!(
        spans[3].fields.get("key"),
        None,
        "no show_key, no key value"
    );
    assert!(
        capture.events().is_empty(),
        "an uncontended successful call emits no event: {:#?}",
        capture.events()
    );
}

#[test]
fn waits_for_a_key_and_for_budgets_report_how_long_they_took() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let op = Hold::bind(&rt).unwrap();
        let gate = gate();
        let call = |key| {
            let (op, gate) = (op.clone(), gate.clone());
            tokio::spawn(async move { op.call(key, gate).await })
        };

        // Same key: the second call waits for the key.
        let holder = call(1);
        until(|| rt.stats().started == 1).await;
        let key_waiter = call(1);
        until(|| rt.stats().in_flight == 2).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        gate.add_permits(2);
        holder.await.unwrap().unwrap();
        key_waiter.await.unwrap().unwrap();

        // Another key: the second call waits for the budget.
        let holder = call(2);
        until(|| rt.stats().started == 3).await;
        let budget_waiter = call(3);
        until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        gate.add_permits(2);
        holder.await.unwrap().unwrap();
        budget_waiter.await.unwrap().unwrap();
    });
    assert_eq!(
        capture.messages(),
        ["waited for key", "waited for budgets"],
        "one wait each; uncontended calls say nothing"
    );
    let key = capture.event("waited for key");
    assert_eq!(key.level, Level::DEBUG);
    let wait_ms = key.fields.num("wait_ms");
    assert!((250.0..260.0).contains(&wait_ms), "waited {wait_ms} ms");
    assert_eq!(in_span(&key, "hold").get("key"), Some("1"));

    let budgets = capture.event("waited for budgets");
    assert_eq!(budgets.level, Level::DEBUG);
    let wait_ms = budgets.fields.num("wait_ms");
    assert!((400.0..410.0).contains(&wait_ms), "waited {wait_ms} ms");
    assert_eq!(in_span(&budgets, "hold").get("key"), Some("3"));
}

#[test]
fn throttled_calls_name_the_busy_resource_or_key() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let gate = gate();
        let hold = Unkeyed::bind(&rt).unwrap();
        let holder = tokio::spawn({
            let gate = gate.clone();
            async move { hold.call(gate).await }
        });
        until(|| rt.stats().started == 1).await;
        let err = Charge::bind(&rt).unwrap().call(1).await.unwrap_err();
        assert!(matches!(err, herta::Error::Throttled { .. }));

        let charge = ChargeCustomer::bind(&rt).unwrap();
        let first = tokio::spawn({
            let (charge, gate) = (charge.clone(), gate.clone());
            async move { charge.call(7, gate).await }
        });
        until(|| rt.stats().started == 2).await;
        let err = charge.call(7, gate.clone()).await.unwrap_err();
        assert!(matches!(err, herta::Error::Throttled { .. }));
        gate.add_permits(2);
        holder.await.unwrap().unwrap();
        first.await.unwrap().unwrap();
    });
    let events = capture.events();
    assert_eq!(capture.messages(), ["throttled", "throttled"]);
    assert!(events.iter().all(|e| e.level == Level::DEBUG));
    assert_eq!(events[0].fields.get("resource"), Some("slots"));
    in_span(&events[0], "charge");
    // No `show_key`: the event names the parameter, never the value.
    assert_eq!(events[1].fields.get("key"), Some("customer"));
    assert_eq!(events[1].fields.get("value"), None);
    in_span(&events[1], "charge_customer");
}

#[test]
fn failed_attempts_and_retries_are_reported_with_attempt_n_of_max() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let err = Flaky::bind(&rt).unwrap().call().await.unwrap_err();
        assert_eq!(err.attempts(), 3);
        let err = Unsure::bind(&rt).unwrap().call().await.unwrap_err();
        assert_eq!(err.attempts(), 2);
    });
    let events = capture.events();
    let summary: Vec<(String, Level, Option<&str>, f64, f64)> = events
        .iter()
        .map(|e| {
            (
                e.message.clone(),
                e.level,
                e.fields.get("outcome"),
                e.fields.num("attempt"),
                e.fields.num("max_attempts"),
            )
        })
        .collect();
    let failed =
        |outcome, level, n, max| ("attempt failed".to_owned(), level, Some(outcome), n, max);
    let retrying = |n, max| ("retrying".to_owned(), Level::DEBUG, None, n, max);
    assert_eq!(
        summary,
        [
            failed("Transient", Level::DEBUG, 1.0, 3.0),
            retrying(2.0, 3.0),
            failed("Transient", Level::DEBUG, 2.0, 3.0),
            retrying(3.0, 3.0),
            failed("Transient", Level::DEBUG, 3.0, 3.0),
            failed("Uncertain", Level::WARN, 1.0, 2.0),
            retrying(2.0, 2.0),
            failed("Uncertain", Level::WARN, 2.0, 2.0),
        ]
    );
    in_span(&events[0], "flaky");
    in_span(&events[7], "unsure");
}

#[test]
fn timeouts_warn_with_their_outcome() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let err = SlowRender::bind(&rt).unwrap().call().await.unwrap_err();
        assert_eq!(err.outcome(), herta::Outcome::Transient);
        let err = SlowCharge::bind(&rt).unwrap().call().await.unwrap_err();
        assert_eq!(err.outcome(), herta::Outcome::Uncertain);
    });
    assert_eq!(capture.messages(), ["timed out", "timed out"]);
    let events = capture.events();
    for (event, operation, outcome) in [
        (&events[0], "slow_render", "Transient"),
        (&events[1], "slow_charge", "Uncertain"),
    ] {
        assert_eq!(event.level, Level::WARN);
        assert_eq!(event.fields.get("operation"), Some(operation));
        assert_eq!(event.fields.get("outcome"), Some(outcome));
        assert_eq!(event.fields.num("timeout_ms"), 50.0);
        assert_eq!(event.fields.num("attempt"), 1.0);
        assert_eq!(event.fields.num("max_attempts"), 1.0);
        in_span(event, operation);
    }
}

#[test]
fn cancellation_and_panics_are_reported() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let gate = gate();
        let op = Hold::bind(&rt).unwrap();
        let holder = tokio::spawn({
            let (op, gate) = (op.clone(), gate.clone());
            async move { op.call(1, gate).await }
        });
        until(|| rt.stats().started == 1).await;
        let waiter = tokio::spawn({
            let (op, gate) = (op.clone(), gate.clone());
            async move { op.call(2, gate).await }
        });
        until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        gate.add_permits(1);
        holder.await.unwrap().unwrap();

        let exploded = tokio::spawn({
            let op = Explode::bind(&rt).unwrap();
            async move { op.call().await }
        });
        assert!(exploded.await.unwrap_err().is_panic());
        assert_eq!(rt.stats().cancelled, 1);
        assert_eq!(rt.stats().panicked, 1);
    });
    assert_eq!(capture.messages(), ["cancelled", "panicked"]);
    let cancelled = capture.event("cancelled");
    assert_eq!(cancelled.level, Level::DEBUG);
    assert_eq!(in_span(&cancelled, "hold").get("key"), Some("2"));
    let panicked = capture.event("panicked");
    assert_eq!(panicked.level, Level::WARN);
    assert_eq!(panicked.fields.get("operation"), Some("explode"));
    assert_eq!(panicked.fields.num("attempt"), 1.0);
    in_span(&panicked, "explode");
}

#[test]
fn stopping_says_where_the_call_was_refused_or_withdrawn() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let gate = gate();
        let op = Hold::bind(&rt).unwrap();
        let call = |key| {
            let (op, gate) = (op.clone(), gate.clone());
            tokio::spawn(async move { op.call(key, gate).await })
        };
        let holder = call(1);
        until(|| rt.stats().started == 1).await;
        let key_waiter = call(1);
        let budget_waiter = call(2);
        until(|| rt.stats().resource("slots").unwrap().waiting == 1 && rt.stats().in_flight == 3)
            .await;
        rt.close();
        for waiter in [key_waiter, budget_waiter] {
            let err = waiter.await.unwrap().unwrap_err();
            assert!(matches!(err, herta::Error::Stopping { .. }));
        }
        let err = op.call(3, gate.clone()).await.unwrap_err();
        assert!(matches!(err, herta::Error::Stopping { .. }));
        gate.add_permits(1);
        holder.await.unwrap().unwrap();
    });
    let events = capture.events();
    assert_eq!(capture.messages(), ["stopping", "stopping", "stopping"]);
    assert!(events.iter().all(|e| e.level == Level::DEBUG));
    let mut stages: Vec<(Option<&str>, Option<&str>)> = events
        .iter()
        .map(|e| (e.fields.get("stage"), in_span(e, "hold").get("key")))
        .collect();
    stages.sort();
    assert_eq!(
        stages,
        [
            (Some("admission"), Some("3")),
            (Some("budgets"), Some("2")),
            (Some("key"), Some("1")),
        ]
    );
}

#[test]
fn a_disabled_span_never_formats_the_key_and_warnings_still_name_the_operation() {
    FORMATTED.with(|n| n.set(0));
    // No subscriber at all.
    {
        let _serial = crate::serial();
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                let rt = runtime();
                Counted::bind(&rt)
                    .unwrap()
                    .call(CountedKey(1))
                    .await
                    .unwrap();
            });
    }
    assert_eq!(
        FORMATTED.with(Cell::get),
        0,
        "no subscriber: key not formatted"
    );

    // A subscriber that keeps INFO and above: the DEBUG span is disabled.
    let capture = captured(LevelFilter::INFO, |_| async {
        let rt = runtime();
        Counted::bind(&rt)
            .unwrap()
            .call(CountedKey(2))
            .await
            .unwrap();
        SlowCharge::bind(&rt).unwrap().call().await.unwrap_err();
        Flaky::bind(&rt).unwrap().call().await.unwrap_err();
    });
    assert_eq!(
        FORMATTED.with(Cell::get),
        0,
        "disabled span: key not formatted"
    );
    assert!(capture.spans().is_empty());
    let events = capture.events();
    assert_eq!(
        capture.messages(),
        ["timed out"],
        "DEBUG events filtered out"
    );
    assert_eq!(events[0].fields.get("operation"), Some("slow_charge"));
    assert!(events[0].span.is_none());

    // Enabled: formatted once, for the span.
    captured(LevelFilter::DEBUG, |_| async {
        let rt = runtime();
        Counted::bind(&rt)
            .unwrap()
            .call(CountedKey(3))
            .await
            .unwrap();
    });
    assert_eq!(FORMATTED.with(Cell::get), 1);
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1s", jitter = None)))]
async fn backing_off() -> Result<(), Failure<String>> {
    Err(Failure::transient("try again later".to_owned()))
}

#[test]
fn a_backoff_and_a_denied_retry_are_events() {
    let capture = captured(LevelFilter::DEBUG, |_| async {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 1))
            .retry_budget(
                herta::RetryBudget::new()
                    .ratio(0.0)
                    .min_per_second(1)
                    .window(Duration::from_secs(1)),
            )
            .build()
            .unwrap();
        let err = BackingOff::bind(&rt).unwrap().call().await.unwrap_err();
        assert_eq!(err.attempts(), 2);
        assert_eq!(rt.stats().retries_denied, 1);
    });
    let backing = capture.event("backing off");
    assert_eq!(backing.fields.num("delay_ms"), 10.0);
    assert_eq!(backing.fields.num("attempt"), 1.0);
    in_span(&backing, "backing_off");
    let denied = capture.event("retry denied");
    assert_eq!(denied.level, Level::WARN);
    assert_eq!(denied.fields.get("operation"), Some("backing_off"));
    assert_eq!(denied.fields.num("attempt"), 2.0);
}

/// `Runtime::set_capacity` and `set_queue_limit` are `INFO` events naming
/// the resource, the value before and after (and the units in use); a
/// refused change emits nothing.
#[test]
fn a_capacity_or_queue_limit_change_is_an_info_event() {
    let capture = captured(LevelFilter::INFO, |_| async {
        let rt = Runtime::builder()
            .resource(Resource::new("slots", 2))
            .build()
            .unwrap();
        rt.set_capacity("slots", 5).unwrap();
        rt.set_capacity("slots", 0).unwrap_err();
        rt.set_queue_limit("slots", Some(8)).unwrap();
        rt.set_queue_limit("slots", None).unwrap();
    });
    assert_eq!(
        capture.messages(),
        [
            "capacity changed",
            "queue limit changed",
            "queue limit changed"
        ]
    );
    let resized = capture.event("capacity changed");
    assert_eq!(resized.level, Level::INFO);
    assert_eq!(resized.fields.get("resource"), Some("slots"));
    assert_eq!(
        (
            resized.fields.num("previous"),
            resized.fields.num("capacity"),
            resized.fields.num("in_use")
        ),
        (2.0, 5.0, 0.0)
    );
    let limits: Vec<_> = capture
        .events()
        .into_iter()
        .filter(|e| e.message == "queue limit changed")
        .map(|e| {
            let f = |name| e.fields.get(name).unwrap().to_owned();
            (f("previous"), f("queue_limit"))
        })
        .collect();
    assert_eq!(
        limits,
        [
            ("none".to_owned(), "8".to_owned()),
            ("8".to_owned(), "none".to_owned())
        ]
    );
}

/// Keyed in the shared space "nest".
#[herta::operation(effect = Idempotent, resources("other" = 1),
                   serialize_by(key, scope = "nest", show_key = true))]
async fn nest_inner(key: u32) -> Result<(), Failure<String>> {
    let _ = key;
    Ok(())
}

/// Holds `key` in "nest", then calls `nest_inner` for it: a nested call its
/// own chain blocks.
#[herta::operation(effect = Idempotent, resources("other" = 1),
                   serialize_by(key, scope = "nest", show_key = true))]
async fn nest_outer(inner: NestInner, key: u32) -> Result<bool, Failure<String>> {
    Ok(matches!(
        inner.call(key).await,
        Err(herta::Error::WouldDeadlock { .. })
    ))
}

#[test]
fn a_nested_call_its_chain_blocks_is_a_warn_event_and_its_span_says_would_deadlock() {
    let capture = captured(LevelFilter::TRACE, |_| async {
        let rt = runtime();
        let inner = NestInner::bind(&rt).unwrap();
        let refused = NestOuter::bind(&rt).unwrap().call(inner, 42).await;
        assert!(refused.unwrap());
    });
    let event = capture.event("would deadlock");
    assert_eq!(event.level, Level::WARN);
    assert_eq!(event.fields.get("operation"), Some("nest_inner"));
    assert_eq!(event.fields.get("key"), Some("key"));
    assert_eq!(event.fields.get("value"), Some("42"));
    let outcomes: Vec<_> = capture
        .spans()
        .into_iter()
        .map(|s| {
            (
                s.fields.get("operation").unwrap().to_owned(),
                s.fields.get("outcome").unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("nest_inner".to_owned(), "would_deadlock".to_owned()),
            ("nest_outer".to_owned(), "success".to_owned())
        ]
    );
}
