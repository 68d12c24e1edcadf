//! `herta::tower::ContractLayer` around an in-process `tower::Service`
//! (`service_fn`): requests keyed with `bind_keyed` run one at a time per
//! key and in parallel across keys; `Reject` refuses a busy key; a response
//! classified as a failure is retried, and the last one comes back inside
//! the error. (Over real HTTP: `examples/tests/upstream.rs`.)

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use herta::tower::{ContractLayer, ServiceError};
use herta::{Error, Failure, Outcome, Resource, Runtime};
use tower::{Layer, ServiceExt};

use crate::common::{settle, within, Probe};

/// A per-customer write: one at a time per customer.
#[herta::contract(effect = Idempotent, resources("slots" = 1), serialize_by = customer)]
struct Write;

/// A per-customer charge: never queues.
#[herta::contract(effect = NonIdempotent, resources("slots" = 1), admission = Reject,
                  serialize_by = customer)]
struct Charge;

/// A read retried on `Transient`.
#[herta::contract(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
struct Fetch;

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 8))
        .build()
        .unwrap()
}

type Request = (String, u32);

/// An inner service whose handlers stay inside `probe` until it opens.
fn held(
    probe: &Arc<Probe>,
) -> impl tower::Service<
    Request,
    Response = u32,
    Error = Failure<String>,
    Future = impl Send + 'static,
> + Clone {
    let probe = Arc::clone(probe);
    tower::service_fn(move |(_, n): Request| {
        let probe = Arc::clone(&probe);
        async move {
            probe.hold().await;
            Ok::<_, Failure<String>>(n)
        }
    })
}

#[tokio::test(start_paused = true)]
async fn keyed_requests_run_one_at_a_time_per_key_and_in_parallel_across_keys() {
    let rt = runtime();
    let probe = Probe::new();
    let layer = ContractLayer::<Write>::bind_keyed(&rt, |req: &Request| req.0.clone()).unwrap();
    let svc = layer.layer(held(&probe));
    let call = |customer: &str, n: u32| tokio::spawn(svc.clone().oneshot((customer.into(), n)));

    let ada_1 = call("ada", 1);
    probe.entered(1).await;
    let ada_2 = call("ada", 2);
    let bob = call("bob", 3);
    probe.entered(2).await;
    settle().await;
    // bob runs beside ada's first request; ada's second waits for its key.
    assert_eq!(probe.inside(), 2);
    assert_eq!(probe.attempts(), 2);

    probe.open(2);
    assert_eq!(within(ada_1).await.unwrap().unwrap(), 1);
    assert_eq!(within(bob).await.unwrap().unwrap(), 3);
    probe.entered(3).await;
    probe.open(1);
    assert_eq!(within(ada_2).await.unwrap().unwrap(), 2);
    assert_eq!(probe.peak(), 2);
    assert_eq!(rt.stats().finished, 3);
}

#[tokio::test(start_paused = true)]
async fn reject_refuses_a_request_whose_key_is_busy() {
    let rt = runtime();
    let probe = Probe::new();
    let layer = ContractLayer::<Charge>::bind_keyed(&rt, |req: &Request| req.0.clone()).unwrap();
    let svc = layer.layer(held(&probe));

    let first = tokio::spawn(svc.clone().oneshot(("ada".into(), 1)));
    probe.entered(1).await;
    let refused = svc.clone().oneshot(("ada".into(), 2)).await.unwrap_err();
    assert!(matches!(refused, Error::Throttled { .. }), "{refused:?}");
    // The key's value is not in the message (no `show_key`).
    assert!(!refused.to_string().contains("ada"), "{refused}");
    // Another key is not refused.
    let other = tokio::spawn(svc.clone().oneshot(("bob".into(), 3)));
    probe.entered(2).await;

    probe.open(2);
    assert_eq!(within(first).await.unwrap().unwrap(), 1);
    assert_eq!(within(other).await.unwrap().unwrap(), 3);
    assert_eq!(probe.attempts(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_response_classified_transient_is_retried_and_the_last_one_returned() {
    let rt = runtime();
    let sent = Arc::new(AtomicU32::new(0));
    let inner = {
        let sent = Arc::clone(&sent);
        // 503 twice, then 200; a request for `n` >= 10 always gets 503.
        tower::service_fn(move |(_, n): Request| {
            let attempt = sent.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                let status: u16 = if n >= 10 || attempt <= 2 { 503 } else { 200 };
                Ok::<_, Failure<String>>(status)
            }
        })
    };
    let layer = ContractLayer::<Fetch>::bind(&rt)
        .unwrap()
        .classify_response(|status: &u16| (*status == 503).then_some(Outcome::Transient));
    let svc = layer.layer(inner);

    assert_eq!(svc.clone().oneshot(("a".into(), 1)).await.unwrap(), 200);
    assert_eq!(sent.load(Ordering::SeqCst), 3);

    // Three 503s: `max = 3` attempts, then the last response comes back.
    let failed = svc.clone().oneshot(("b".into(), 10)).await.unwrap_err();
    assert_eq!(sent.load(Ordering::SeqCst), 6);
    assert_eq!(failed.outcome(), Outcome::Transient);
    match failed.handler_error() {
        Some(ServiceError::Response { response, .. }) => assert_eq!(*response, 503),
        other => panic!("expected the last response, got {other:?}"),
    }
    assert_eq!(rt.stats().retried, 4);
}
