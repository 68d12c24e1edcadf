//! The `upstream` example over real HTTP on loopback: reqwest behind
//! `herta::tower::ContractLayer`, against the deterministic axum upstream
//! of `herta_examples::upstream` (503 once per id, 429 with `Retry-After`
//! on `/throttled` and, as an HTTP-date, on `/later`, a gate on `/gated`, a
//! body that breaks off on `/cut`). The classification is herta's own
//! (features `reqwest` and `tower`): the client passes no closures. The
//! tests wait on conditions (the upstream's in-flight watch,
//! `Runtime::stats`) or on a paused clock, never on a sleep.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use herta::tower::{ContractLayer, ServiceError};
use herta::{BreakerState, Busy, Error, Outcome, Runtime};
use herta_examples::upstream::{self, Fetch, HttpClient, Upstream, LATER, UPSTREAM, UPSTREAM_DOWN};
use tokio::net::TcpListener;
use tower_layer::Layer;
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
    let rt = Runtime::builder()
        .resource(UPSTREAM)
        .breaker(UPSTREAM_DOWN)
        .build()
        .unwrap();
    (up, rt, base)
}

async fn fetch<R, E>(
    client: &mut impl Service<Fetch, Response = R, Error = E>,
    path: &str,
) -> Result<R, E> {
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
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.text().await.unwrap(), "price:7");
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
    assert!(matches!(err, Error::Failed { .. }), "{err:?}");
    match err.into_handler_error() {
        Some(ServiceError::Response { response, .. }) => {
            assert_eq!(response.status(), 429);
            assert_eq!(response.text().await.unwrap(), "slow down");
        }
        other => panic!("expected the 429 response back, got {other:?}"),
    }
    assert_eq!(up.hits("/throttled/1"), 1);
    // The dependency's own 429 counts as throttled, as its metrics label does.
    assert_eq!((rt.stats().throttled, rt.stats().failed), (1, 0));
}

/// A connection refused is `Transient` (`reqwest::Error`'s `Classify`: the
/// request never left): retried up to `max`, then the reqwest error comes
/// back.
#[tokio::test]
async fn a_refused_connection_is_retried_then_returned() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener); // nothing listens there now
    let rt = Runtime::builder()
        .resource(UPSTREAM)
        .breaker(UPSTREAM_DOWN)
        .build()
        .unwrap();
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
        assert_eq!(reply.status(), 200);
    }
    assert_eq!(up.peak(), 2, "never more than the budget at the upstream");
    let stats = rt.stats();
    assert_eq!((stats.succeeded, stats.resources[0].peak_in_use), (6, 2));
}

/// A contract without a `timeout`, so that on a paused clock the only timer
/// is the backoff's sleep.
#[herta::contract(effect = Idempotent, resources(UPSTREAM = 1),
                  retry(on = Throttled, max = 2, backoff(base = "1ms", cap = "10s")))]
struct Patient;

/// A 429 whose `Retry-After` is an HTTP-date 8 s ahead: `Throttled`, its
/// hint the time to that date, within the backoff's cap (10 s); the retry
/// waits for it, and the second request gets 200. On a paused clock the
/// wait costs no time: tokio's clock jumps to the sleep's end, and the
/// upstream records when each request came by that clock.
#[tokio::test(start_paused = true)]
async fn a_429_with_an_http_date_is_waited_for() {
    let (up, rt, base) = start().await;
    // No idle connections kept: a pooled connection's idle timer would be
    // a second timer on the paused clock.
    let reqwest = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut client = ContractLayer::<Patient>::bind(&rt)
        .unwrap()
        .layer(HttpClient::with_client(reqwest, base));
    let reply = fetch(&mut client, "/later/1").await.unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.text().await.unwrap(), "later:1");
    let times = up.times("/later/1");
    assert_eq!(times.len(), 2, "the 429, then the 200");
    let waited = times[1] - times[0];
    // The date is in whole seconds, and the wall clock moved on between
    // writing it and reading it: the hint is a little under 8 s, never over.
    assert!(
        waited > LATER - Duration::from_secs(2) && waited <= LATER,
        "waited {waited:?} for a Retry-After {LATER:?} ahead"
    );
    let stats = rt.stats();
    assert_eq!((stats.retried, stats.succeeded), (1, 1));
}

/// One POST with reqwest, its body read inside the attempt: a body that
/// breaks off fails the attempt.
#[derive(Clone)]
struct Post {
    client: reqwest::Client,
    base: String,
}

impl Service<Fetch> for Post {
    type Response = String;
    type Error = reqwest::Error;
    type Future = Pin<Box<dyn Future<Output = Result<String, reqwest::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), reqwest::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, Fetch(path): Fetch) -> Self::Future {
        let request = self.client.post(format!("{}{path}", self.base));
        Box::pin(async move { request.send().await?.text().await })
    }
}

/// A charge: never repeated once it may have reached the upstream, but
/// retried when it surely did not (`Transient`).
#[herta::contract(effect = NonIdempotent, resources(UPSTREAM = 1), retry(on = Transient, max = 3))]
struct Charge;

/// A response that never finishes (its body breaks off) is `Uncertain`:
/// the upstream may have acted, so the `NonIdempotent` contract does not
/// send it again, though it retries `Transient` failures — as a refused
/// connection, against the same contract, shows.
#[tokio::test]
async fn a_response_that_never_finishes_is_uncertain_and_not_sent_again() {
    let (up, rt, base) = start().await;
    let post = Post {
        client: reqwest::Client::new(),
        base,
    };
    let mut client = ContractLayer::<Charge>::bind(&rt)
        .unwrap()
        .layer(post.clone());
    let err = tokio::time::timeout(BOUND, fetch(&mut client, "/cut/1"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Uncertain, 1));
    assert!(
        matches!(
            err.handler_error(),
            Some(ServiceError::Inner { error, .. }) if error.is_decode()
        ),
        "{err:?}"
    );
    assert_eq!(up.hits("/cut/1"), 1, "sent once");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let mut client = ContractLayer::<Charge>::bind(&rt).unwrap().layer(Post {
        base: refused,
        ..post
    });
    let err = tokio::time::timeout(BOUND, fetch(&mut client, "/cut/2"))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Transient, 3));
}

/// The breaker: the upstream fails (503), the breaker opens after 5
/// failed attempts (the retry about to start is refused), calls are then
/// refused at once without reaching the upstream, and after `open_for`
/// one probe finds it back and closes the breaker.
#[tokio::test(start_paused = true)]
async fn a_failing_upstream_opens_the_breaker_and_a_probe_closes_it() {
    let (up, rt, base) = start().await;
    let mut client = upstream::client(&rt, base).unwrap();
    up.down(true);
    let err = fetch(&mut client, "/down/1").await.unwrap_err();
    assert!(matches!(err, Error::Failed { attempts: 3, .. }), "{err:?}");
    assert_eq!(
        up.hits("/down/1"),
        3,
        "3 failures of 3: no verdict before 5"
    );
    let err = fetch(&mut client, "/down/2").await.unwrap_err();
    let opened = Busy::Breaker {
        breaker: "upstream",
    };
    assert!(
        matches!(&err, Error::Throttled { busy, .. } if *busy == opened),
        "{err:?}"
    );
    assert_eq!(up.hits("/down/2"), 2, "the third attempt was refused");
    let err = fetch(&mut client, "/down/3").await.unwrap_err();
    assert!(matches!(&err, Error::Throttled { busy, .. } if *busy == opened));
    let left = err.retry_after().expect("the time left open");
    assert!(
        left <= Duration::from_secs(30) && left > Duration::from_secs(29),
        "{left:?}"
    );
    assert_eq!(
        up.hits("/down/3"),
        0,
        "refused without reaching the upstream"
    );
    up.down(false);
    tokio::time::advance(left).await;
    let reply = fetch(&mut client, "/down/4").await.unwrap();
    assert_eq!(reply.status(), 200);
    assert_eq!(up.hits("/down/4"), 1, "one probe");
    let stats = rt.stats();
    let breaker = stats.breaker("upstream").unwrap();
    assert_eq!(
        (breaker.state, breaker.opened, breaker.refused),
        (BreakerState::Closed, 1, 2)
    );
}
