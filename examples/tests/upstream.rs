//! The `upstream` example over real HTTP on loopback: reqwest behind
//! `herta::tower::ContractLayer`, against the deterministic axum upstream
//! of `herta_examples::upstream` (503 once per id, 429 with `Retry-After`
//! on `/throttled`, a gate on `/gated`). The tests wait on conditions (the
//! upstream's in-flight watch, `Runtime::stats`), never on a sleep.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use herta::tower::ServiceError;
use herta::{Error, Outcome, Runtime};
use herta_examples::upstream::{self, Fetch, Upstream, UPSTREAM};
use tokio::net::TcpListener;
use tower_service::Service;

/// Each test finishes within this, or fails.
const BOUND: Duration = Duration::from_secs(60);

/// A running upstream and a runtime; the client is `upstream::client`.
async fn start() -> (Arc<Upstream>, Runtime, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let up = Upstream::new();
    let app = upstream::upstream_app(Arc::clone(&up));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let rt = Runtime::builder().resource(UPSTREAM).build().unwrap();
    (up, rt, base)
}

async fn fetch(
    client: &mut impl Service<Fetch, Response = upstream::Reply, Error = upstream::ClientError>,
    path: &str,
) -> Result<upstream::Reply, upstream::ClientError> {
    poll_fn(|cx| client.poll_ready(cx)).await?;
    client.call(Fetch(path.to_owned())).await
}

/// A 503 is `Transient`: the layer retries it, and the second request gets 200.
#[tokio::test]
async fn a_503_is_retried_until_the_upstream_answers() {
    let (up, rt, base) = start().await;
    let mut client = upstream::client(&rt, base).unwrap();
    let reply = tokio::time::timeout(BOUND, fetch(&mut client, "/flaky/7"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((reply.status, reply.body.as_str()), (200, "price:7"));
    assert_eq!(up.hits("/flaky/7"), 2, "one 503, then the 200");
    let stats = rt.stats();
    assert_eq!((stats.started, stats.retried, stats.succeeded), (1, 1, 1));
}

/// A 429 is `Throttled`, its `Retry-After` the retry hint: 120 s is above
/// the backoff's cap, so the call ends at once with the response, and the
/// caller can forward the hint.
#[tokio::test]
async fn a_429_is_throttled_with_its_retry_after() {
    let (up, rt, base) = start().await;
    let mut client = upstream::client(&rt, base).unwrap();
    let err = tokio::time::timeout(BOUND, fetch(&mut client, "/throttled/1"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Throttled);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(err.attempts(), 1);
    match &err {
        Error::Failed {
            source: ServiceError::Response { response, .. },
            ..
        } => assert_eq!(
            (response.status, response.body.as_str()),
            (429, "slow down")
        ),
        other => panic!("expected the 429 response back, got {other:?}"),
    }
    assert_eq!(up.hits("/throttled/1"), 1);
    assert_eq!(rt.stats().failed, 1);
}

/// A connection refused is `Transient` (by `classify_error`): retried up to
/// `max`, then the reqwest error comes back.
#[tokio::test]
async fn a_refused_connection_is_retried_then_returned() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener); // nothing listens there now
    let rt = Runtime::builder().resource(UPSTREAM).build().unwrap();
    let mut client = upstream::client(&rt, base).unwrap();
    let err = tokio::time::timeout(BOUND, fetch(&mut client, "/flaky/1"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Transient, 3));
    assert!(matches!(
        err.handler_error(),
        Some(ServiceError::Inner { error, .. }) if error.is_connect()
    ));
}

/// The budget bounds concurrency at the upstream: 6 concurrent requests
/// through a budget of 2 put exactly 2 inside the upstream; the other 4
/// wait in herta, not at the upstream, until those finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_bounds_requests_at_the_upstream() {
    let (up, rt, base) = start().await;
    let client = upstream::client(&rt, base).unwrap();
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let mut client = client.clone();
            tokio::spawn(async move { fetch(&mut client, &format!("/gated/{i}")).await })
        })
        .collect();
    let mut in_flight = up.in_flight();
    tokio::time::timeout(BOUND, in_flight.wait_for(|n| *n == 2))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(BOUND, async {
        while rt.stats().resources[0].waiting < 4 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let reached: u32 = (0..6).map(|i| up.hits(&format!("/gated/{i}"))).sum();
    assert_eq!(
        reached, 2,
        "only the budget's 2 requests reached the upstream"
    );
    up.open();
    for call in calls {
        let reply = tokio::time::timeout(BOUND, call)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(reply.status, 200);
    }
    assert_eq!(up.peak(), 2, "never more than the budget at the upstream");
    let stats = rt.stats();
    assert_eq!((stats.succeeded, stats.resources[0].peak_in_use), (6, 2));
}
