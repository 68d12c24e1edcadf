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
//!
//! The client ([`client`]) runs every request under [`CallUpstream`]: at most
//! [`UPSTREAM`]'s 2 requests at the upstream at once (the others wait
//! holding nothing), `503` retried as `Transient`, `429` classified
//! `Throttled` with its `Retry-After` as the retry hint (120 s is above the
//! backoff's cap, so the call ends at once and the caller can forward the
//! hint), and connection errors `Transient`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use herta::tower::{ContractLayer, ServiceError};
use herta::{BindError, Outcome, Runtime};
use tokio::sync::{watch, Semaphore};
use tower_layer::Layer;
use tower_service::Service;

herta::resources! {
    /// Requests at the upstream at once.
    pub UPSTREAM: "upstream" = 2;
}

/// A call to the upstream: idempotent (a GET), retried on `Transient`
/// (503, connection errors) and `Throttled` (429) with backoff, 5 s per
/// attempt.
#[herta::contract(effect = Idempotent, resources(UPSTREAM = 1),
                  retry(on = [Transient, Throttled], max = 3, backoff(base = "1ms", cap = "10s")),
                  timeout = "5s")]
pub struct CallUpstream;

/// The request: a path on the upstream (`Clone`, so each attempt sends
/// its own; the HTTP request is built in the attempt).
#[derive(Debug, Clone)]
pub struct Fetch(pub String);

/// The upstream's answer, body read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// `Retry-After`, in seconds, if sent.
    pub retry_after: Option<Duration>,
    /// The body.
    pub body: String,
}

/// The inner service: one GET with reqwest.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    base: String,
}

impl Service<Fetch> for HttpClient {
    type Response = Reply;
    type Error = reqwest::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Reply, reqwest::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), reqwest::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, Fetch(path): Fetch) -> Self::Future {
        let request = self.client.get(format!("{}{path}", self.base));
        Box::pin(async move {
            let response = request.send().await?;
            let retry_after = response
                .headers()
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .map(Duration::from_secs);
            let status = response.status().as_u16();
            let body = response.text().await?;
            Ok(Reply {
                status,
                retry_after,
                body,
            })
        })
    }
}

/// The error of a [`client`] call.
pub type ClientError = herta::Error<ServiceError<reqwest::Error, Reply>>;

/// reqwest to `base` (`http://127.0.0.1:port`) under [`CallUpstream`],
/// bound to `runtime` (which declares [`UPSTREAM`]).
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
            Response = Reply,
            Error = ClientError,
            Future = impl Future<Output = Result<Reply, ClientError>> + Send,
        > + Clone,
    BindError,
> {
    let layer = ContractLayer::<CallUpstream>::bind(runtime)?
        .classify_error(|e: &reqwest::Error| {
            if e.is_connect() || e.is_timeout() {
                Outcome::Transient
            } else {
                Outcome::Permanent
            }
        })
        .classify_response(|reply: &Reply| match reply.status {
            429 => Some(Outcome::Throttled),
            502..=504 => Some(Outcome::Transient),
            _ => None,
        })
        .response_retry_after(|reply: &Reply| reply.retry_after);
    let http = HttpClient {
        client: reqwest::Client::new(),
        base,
    };
    Ok(layer.layer(http))
}

/// What the upstream saw.
#[derive(Debug)]
pub struct Upstream {
    /// Requests per path.
    hits: Mutex<HashMap<String, u32>>,
    /// `/gated` requests inside the handler now (a watch, to wait on).
    in_flight: watch::Sender<u32>,
    /// The most `/gated` requests inside at once.
    peak: Mutex<u32>,
    gate: Semaphore,
}

impl Upstream {
    /// An upstream with the gate closed.
    pub fn new() -> Arc<Upstream> {
        Arc::new(Upstream {
            hits: Mutex::default(),
            in_flight: watch::channel(0).0,
            peak: Mutex::new(0),
            gate: Semaphore::new(0),
        })
    }

    /// Lets every `/gated` request through, now and later.
    pub fn open(&self) {
        self.gate.add_permits(Semaphore::MAX_PERMITS / 2);
    }

    /// How many requests `path` received.
    pub fn hits(&self, path: &str) -> u32 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// `/gated` requests inside the handler now, to wait on.
    pub fn in_flight(&self) -> watch::Receiver<u32> {
        self.in_flight.subscribe()
    }

    /// The most `/gated` requests that were inside at once.
    pub fn peak(&self) -> u32 {
        *self.peak.lock().unwrap()
    }

    fn hit(&self, path: String) -> u32 {
        let mut hits = self.hits.lock().unwrap();
        let n = hits.entry(path).or_default();
        *n += 1;
        *n
    }
}

/// The upstream's router.
pub fn upstream_app(upstream: Arc<Upstream>) -> Router {
    Router::new()
        .route("/flaky/{id}", get(flaky))
        .route("/throttled/{id}", get(throttled))
        .route("/gated/{id}", get(gated))
        .with_state(upstream)
}

async fn flaky(State(up): State<Arc<Upstream>>, Path(id): Path<String>) -> impl IntoResponse {
    match up.hit(format!("/flaky/{id}")) {
        1 => (StatusCode::SERVICE_UNAVAILABLE, "busy".to_owned()),
        _ => (StatusCode::OK, format!("price:{id}")),
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
