//! An HTTP client behind a contract: reqwest, wrapped by
//! `herta::tower::ContractLayer`, calling a flaky axum upstream.
//!
//! The upstream ([`upstream_app`]) is deterministic, so that
//! `examples/tests/upstream.rs` can assert what happens over real HTTP:
//!
//! | route | answers |
//! |---|---|
//! | `GET /flaky/{id}` | `503` the first time per `id`, then `200 price:{id}` |
//! | `GET /throttled/{id}` | always `429` with `Retry-After: 120` |
//! | `GET /gated/{id}` | `200` once the test opens the gate ([`Upstream::open`]); counts requests in flight |
//! | `GET /later/{id}` | `429` with an HTTP-date `Retry-After` 8 s ahead the first time per `id`, then `200 later:{id}`; records when each request came ([`Upstream::times`]) |
//! | `POST /cut/{id}` | `200` and the first bytes of a body that then breaks off (the connection closes mid-body) |
//! | `GET /down/{id}` | `503` while the test holds the upstream down ([`Upstream::down`]), else `200 up:{id}` |
//!
//! The client ([`client`]) runs every request under [`CallUpstream`]: at most
//! [`UPSTREAM`]'s 2 requests at the upstream at once (the others wait
//! holding nothing). It says nothing about HTTP: herta's `reqwest` feature
//! does. The layer's default classifies each `reqwest::Response` by its
//! status (`herta::http::outcome_of`: `503` `Transient`, retried; `429`
//! `Throttled`) with its `Retry-After` as the retry hint
//! (`herta::http::retry_after`, either form: 120 s is above the backoff's
//! cap, so the call ends at once and the caller can forward the hint; a
//! date 8 s ahead is waited for, then retried), and `reqwest::Error`
//! classifies itself (a refused connection `Transient`).
//!
//! The contract names a circuit breaker, [`UPSTREAM_DOWN`]: when half of at
//! least 5 attempts in 10 s fail, every call is refused at once for 30 s
//! (`Error::Throttled` naming the breaker, `retry_after` the time left), a
//! retry about to start included, without reaching the upstream; then one
//! probe decides.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use herta::tower::{ContractLayer, ServiceError};
use herta::{BindError, Runtime};
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

herta::resources! {
    /// Requests at the upstream at once.
    pub UPSTREAM: "upstream" = 2;
}

herta::breakers! {
    /// The upstream's circuit breaker: half of at least 5 attempts failing
    /// in 10 s opens it for 30 s; then one probe.
    pub UPSTREAM_DOWN: "upstream" = breaker(failure_rate = 50, min_calls = 5, window = "10s",
                                            open_for = "30s", probes = 1);
}

/// A call to the upstream: idempotent (a GET), retried on `Transient`
/// (503, connection errors) and `Throttled` (429) with backoff, 5 s per
/// attempt.
#[herta::contract(effect = Idempotent, resources(UPSTREAM = 1),
                  retry(on = [Transient, Throttled], max = 3, backoff(base = "1ms", cap = "10s")),
                  timeout = "5s", breaker = UPSTREAM_DOWN)]
pub struct CallUpstream;

/// The request: a path on the upstream (`Clone`, so each attempt sends
/// its own; the HTTP request is built in the attempt).
#[derive(Debug, Clone)]
pub struct Fetch(pub String);

/// The inner service: one GET with reqwest. The response comes back when
/// its head has arrived; the caller reads the body.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    base: String,
}

impl HttpClient {
    /// A client of the upstream at `base` (`http://127.0.0.1:port`).
    pub fn new(base: String) -> HttpClient {
        HttpClient::with_client(reqwest::Client::new(), base)
    }

    /// The same, sending with `client`.
    pub fn with_client(client: reqwest::Client, base: String) -> HttpClient {
        HttpClient { client, base }
    }
}

impl Service<Fetch> for HttpClient {
    type Response = reqwest::Response;
    type Error = reqwest::Error;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, reqwest::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), reqwest::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, Fetch(path): Fetch) -> Self::Future {
        Box::pin(self.client.get(format!("{}{path}", self.base)).send())
    }
}

/// The error of a [`client`] call: a failed response comes back inside
/// it (`ServiceError::Response`).
pub type ClientError = herta::Error<ServiceError<reqwest::Error, reqwest::Response>>;

/// reqwest to `base` (`http://127.0.0.1:port`) under [`CallUpstream`],
/// bound to `runtime` (which declares [`UPSTREAM`] and [`UPSTREAM_DOWN`]).
///
/// # Errors
///
/// The [`BindError`] of `ContractLayer::bind`.
pub fn client(
    runtime: &Runtime,
    base: String,
) -> Result<
    impl Service<
            Fetch,
            Response = reqwest::Response,
            Error = ClientError,
            Future = impl Future<Output = Result<reqwest::Response, ClientError>> + Send,
        > + Clone,
    BindError,
> {
    Ok(ContractLayer::<CallUpstream>::bind(runtime)?.layer(HttpClient::new(base)))
}

/// What the upstream saw.
#[derive(Debug)]
pub struct Upstream {
    /// When each request came, per path (tokio's clock, so a test on a
    /// paused clock reads the time it set).
    hits: Mutex<HashMap<String, Vec<Instant>>>,
    /// `/gated` requests inside the handler now (a watch, to wait on).
    in_flight: watch::Sender<u32>,
    /// The most `/gated` requests inside at once.
    peak: Mutex<u32>,
    gate: Semaphore,
    /// Whether `/down` answers 503.
    down: AtomicBool,
}

impl Upstream {
    /// An upstream with the gate closed.
    pub fn new() -> Arc<Upstream> {
        Arc::new(Upstream {
            hits: Mutex::default(),
            in_flight: watch::channel(0).0,
            peak: Mutex::new(0),
            gate: Semaphore::new(0),
            down: AtomicBool::new(false),
        })
    }

    /// Makes `/down` answer 503 (`true`) or 200.
    pub fn down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Lets every `/gated` request through, now and later.
    pub fn open(&self) {
        self.gate.add_permits(Semaphore::MAX_PERMITS / 2);
    }

    /// How many requests `path` received.
    pub fn hits(&self, path: &str) -> u32 {
        self.times(path).len().try_into().unwrap()
    }

    /// When each request for `path` came, in order.
    pub fn times(&self, path: &str) -> Vec<Instant> {
        self.hits
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    /// `/gated` requests inside the handler now, to wait on.
    pub fn in_flight(&self) -> watch::Receiver<u32> {
        self.in_flight.subscribe()
    }

    /// The most `/gated` requests that were inside at once.
    pub fn peak(&self) -> u32 {
        *self.peak.lock().unwrap()
    }

    fn hit(&self, path: String) -> usize {
        let mut hits = self.hits.lock().unwrap();
        let times = hits.entry(path).or_default();
        times.push(Instant::now());
        times.len()
    }
}

/// The upstream's router.
pub fn upstream_app(upstream: Arc<Upstream>) -> Router {
    Router::new()
        .route("/flaky/{id}", get(flaky))
        .route("/throttled/{id}", get(throttled))
        .route("/gated/{id}", get(gated))
        .route("/later/{id}", get(later))
        .route("/cut/{id}", post(cut))
        .route("/down/{id}", get(down))
        .with_state(upstream)
}

async fn flaky(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    match up.hit(format!("/flaky/{id}")) {
        1 => (StatusCode::SERVICE_UNAVAILABLE, "busy".to_owned()),
        _ => (StatusCode::OK, format!("price:{id}")),
    }
}

async fn down(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    up.hit(format!("/down/{id}"));
    if up.down.load(Ordering::SeqCst) {
        (StatusCode::SERVICE_UNAVAILABLE, "down".to_owned())
    } else {
        (StatusCode::OK, format!("up:{id}"))
    }
}

async fn throttled(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    up.hit(format!("/throttled/{id}"));
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, "120")],
        "slow down",
    )
}

async fn gated(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    up.hit(format!("/gated/{id}"));
    up.in_flight.send_modify(|n| {
        *n += 1;
        let mut peak = up.peak.lock().unwrap();
        *peak = (*peak).max(*n);
    });
    let permit = up.gate.acquire().await.expect("the gate is never closed");
    permit.forget();
    up.in_flight.send_modify(|n| *n -= 1);
    (StatusCode::OK, format!("done:{id}"))
}

/// How far ahead `/later`'s `Retry-After` date is.
pub const LATER: Duration = Duration::from_secs(8);

async fn later(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    match up.hit(format!("/later/{id}")) {
        1 => {
            let date = httpdate::fmt_http_date(SystemTime::now() + LATER);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, HeaderValue::try_from(date).unwrap())],
                "later".to_owned(),
            )
                .into_response()
        }
        _ => (StatusCode::OK, format!("later:{id}")).into_response(),
    }
}

async fn cut(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    use futures_util::StreamExt as _;
    up.hit(format!("/cut/{id}"));
    // The head and the first bytes go out when the body is first pending
    // (hyper flushes then); the next poll breaks the body off.
    let first = futures_util::stream::iter([Ok("the first bytes")]);
    let broken = futures_util::stream::once(async {
        tokio::task::yield_now().await;
        Err(std::io::Error::other("the upstream broke off"))
    });
    (StatusCode::OK, Body::from_stream(first.chain(broken)))
}
