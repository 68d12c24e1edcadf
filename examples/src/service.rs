//! The `service` example as a library: an axum HTTP service whose handlers
//! call herta operations sharing one [`Runtime`], so that the example binary
//! (`examples/service/main.rs`) and its integration test
//! (`examples/tests/service.rs`) run the very same router.
//!
//! | route | operation | contract |
//! |---|---|---|
//! | `POST /render/{job}` | [`render`] | `Idempotent`, `Wait` for one of 4 [`RENDER`] slots (at most 64 queued) and a unit of [`RENDER_RATE`] (50 per second), in one grant, at most `max_wait = "1s"`, `retry(on = [Transient, Throttled], max = 3, backoff(base = "10ms", cap = "1s"))` (a renderer 429 after its `Retry-After`), `timeout = "10s"`; the header `x-request-timeout-ms` sets the request's deadline |
//! | `POST /charge/{customer}` | [`charge`] | `NonIdempotent`, `Reject` when both [`PAYMENTS`] connections are busy, never retried, `timeout = "10s"` |
//! | `PUT /catalogue/{brand}` | [`replace_catalogue`] | `Idempotent`, 2 of 4 [`DB_WRITE`] units, `serialize_by = brand`, `retry(on = Transient, max = 3)` |
//! | `GET /stats` | — | [`herta::Stats`] as text |
//! | `PUT /admin/capacity/{resource}` | — | [`Runtime::set_capacity`]: the body is the budget's new capacity (a whole number of units), applied at once while calls run; loopback clients only (403 otherwise); 404 for an unknown resource (with a did-you-mean), 409 below what a bound operation needs per call, 400 for a body that is not a capacity of at least 1 |
//! | `GET /metrics` | — | herta's metrics (`herta::metrics`) in Prometheus text format, through `metrics-exporter-prometheus` (only in the router of [`observed`]) |
//!
//! A route returns `Result<_, herta::Error<E>>` and uses `?` on its call:
//! herta's `axum` feature makes the error a response (`IntoResponse for
//! herta::Error`, whose table is in herta's docs): `Throttled` 429 with
//! `Retry-After` (the refusal's own time when herta knows it, else 1 s), `Stopping` 503 with `Connection: close`,
//! `TimedOut`/`DeadlineExceeded` 504, and a failed call by its outcome —
//! 502 for `Uncertain` (a lost charge reply: the body says the outcome is
//! **unknown**, check before retrying), 503 `Transient` or `Throttled`, 500
//! `Permanent`. Bodies are short texts that name no key, operation or
//! handler error; the route logs the whole error chain first ([`log`]).
//!
//! **Overload.** A render waits at most `max_wait` (1 s) for a slot, and at
//! most 64 renders queue ([`RENDER`]'s `queue = 64`): past either, the
//! client gets 429 with `Retry-After` at once instead of a response that
//! comes later and later, so the latency of a successful render stays under
//! `max_wait` + the render's own time however many clients push. A client
//! that will give up after some time says so with `x-request-timeout-ms`;
//! the route runs the call inside [`herta::deadline`], so herta stops
//! waiting (or drops the attempt) when the client would have stopped
//! listening, and answers 504.
//!
//! Shutdown ([`serve`]) has two phases, so that running requests finish and
//! new ones get an answer rather than a refused connection: on the signal,
//! [`Runtime::close`] makes new and queued calls fail with `Stopping` (503)
//! while the listener still accepts; once [`Runtime::shutdown`] has drained
//! every running call, axum's graceful shutdown stops accepting, lets the
//! last responses go out and returns.
//!
//! The handlers do their "work" through a [`Backend`] that also *measures*
//! it: how many handlers of each operation are inside at once (and the
//! most ever), and how many replacements of one brand overlap. The example
//! binary's backend sleeps for a fixed latency; the test's backend holds
//! each handler at a gate until the test releases it, so load is exact.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use herta::{BindError, Context, Error, ResizeError, Runtime};
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

herta::resources! {
    /// Render slots: at most 4 renders at once, at most 64 waiting.
    pub RENDER: "render" = 4, queue = 64;
    /// The renderer's rate: at most 50 renders started per second (10 at
    /// once after an idle spell), taken in the same grant as the slot.
    pub RENDER_RATE: "render-rate" = 50 per "1s", burst = 10;
    /// Connections to the payment gateway: at most 2 charges at once.
    pub PAYMENTS: "payments" = 2;
    /// Write load on the catalogue database; a replacement holds 2 units.
    pub DB_WRITE: "db-write" = 4;
}

/// The runtime the service's operations share: [`RENDER`], [`RENDER_RATE`], [`PAYMENTS`] and
/// [`DB_WRITE`].
pub fn runtime() -> Runtime {
    Runtime::builder()
        .resource(RENDER)
        .resource(RENDER_RATE)
        .resource(PAYMENTS)
        .resource(DB_WRITE)
        .build()
        .expect("three distinct, non-empty resources with room")
}

// ------------------------------------------------------------------ backend

/// How many handlers are inside now, the most ever, and how many ever
/// entered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Handlers inside now.
    pub inside: u32,
    /// The most handlers ever inside at once.
    pub peak: u32,
    /// Handlers that ever entered (attempts, not calls).
    pub entered: u64,
}

/// Measures one operation's handlers, and holds them at a gate in tests.
#[derive(Debug)]
pub struct Gauge {
    load: watch::Sender<Load>,
    /// `Some` for a gated backend: each handler waits for one permit.
    gate: Option<Semaphore>,
}

impl Gauge {
    fn new(gated: bool) -> Self {
        Gauge {
            load: watch::Sender::new(Load::default()),
            gate: gated.then(|| Semaphore::new(0)),
        }
    }

    /// The figures now.
    pub fn load(&self) -> Load {
        *self.load.borrow()
    }

    /// Waits until `cond` holds for the figures (it is checked on every
    /// change, so no update is missed).
    pub async fn until(&self, cond: impl FnMut(&Load) -> bool) -> Load {
        *self
            .load
            .subscribe()
            .wait_for(cond)
            .await
            .expect("the gauge lives as long as the receiver")
    }

    /// Lets `n` handlers held at the gate through (gated backends only;
    /// permits not yet needed are kept for later handlers).
    pub fn release(&self, n: usize) {
        if let Some(gate) = &self.gate {
            gate.add_permits(n);
        }
    }

    /// Counts one handler in until the guard drops.
    fn enter(&self) -> Inside<'_> {
        self.load.send_modify(|l| {
            l.inside += 1;
            l.peak = l.peak.max(l.inside);
            l.entered += 1;
        });
        Inside(self)
    }

    /// The work itself: wait at the gate, or sleep for `latency`.
    async fn work(&self, latency: Duration) {
        match &self.gate {
            Some(gate) => gate
                .acquire()
                .await
                .expect("the gate is never closed")
                .forget(),
            None => tokio::time::sleep(latency).await,
        }
    }
}

/// One handler inside a [`Gauge`].
struct Inside<'a>(&'a Gauge);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.load.send_modify(|l| l.inside -= 1);
    }
}

/// One catalogue row: a SKU and its price in cents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The product's stock-keeping unit, e.g. `ACM-00001`.
    pub sku: String,
    /// Price in cents.
    pub price_cents: u64,
}

/// What the handlers work against: a simulated render farm, payment gateway
/// and catalogue database, measuring the load they see.
#[derive(Debug)]
pub struct Backend {
    latency: Duration,
    /// `render` handlers.
    pub render: Gauge,
    /// `charge` handlers.
    pub charge: Gauge,
    /// `replace_catalogue` handlers.
    pub catalogue: Gauge,
    /// Replacements in progress per brand, and the most of one brand at once.
    brands: Mutex<(HashMap<String, u32>, u32)>,
    catalogue_rows: Mutex<HashMap<String, Vec<Row>>>,
    lost_replies: AtomicU32,
    receipts: AtomicU64,
}

impl Backend {
    /// A backend whose every handler takes `latency` (the example binary's).
    pub fn new(latency: Duration) -> Arc<Self> {
        Arc::new(Backend::build(latency, false))
    }

    /// A backend whose handlers wait at their operation's gate until
    /// [`Gauge::release`] lets them through (the test's).
    pub fn gated() -> Arc<Self> {
        Arc::new(Backend::build(Duration::ZERO, true))
    }

    fn build(latency: Duration, gated: bool) -> Self {
        Backend {
            latency,
            render: Gauge::new(gated),
            charge: Gauge::new(gated),
            catalogue: Gauge::new(gated),
            brands: Mutex::new((HashMap::new(), 0)),
            catalogue_rows: Mutex::new(HashMap::new()),
            lost_replies: AtomicU32::new(0),
            receipts: AtomicU64::new(0),
        }
    }

    /// The next `n` charges take effect but lose the gateway's reply: their
    /// outcome is `Uncertain` (failure injection).
    pub fn lose_next_replies(&self, n: u32) {
        self.lost_replies.fetch_add(n, Ordering::SeqCst);
    }

    /// Receipts issued so far (charges that took effect, replies lost or not).
    pub fn receipts(&self) -> u64 {
        self.receipts.load(Ordering::SeqCst)
    }

    /// The most replacements of a single brand ever in progress at once
    /// (`serialize_by = brand` keeps it at 1).
    pub fn brand_overlap(&self) -> u32 {
        self.brands.lock().unwrap_or_else(PoisonError::into_inner).1
    }

    /// The rows stored for `brand`, if it was ever replaced.
    pub fn catalogue(&self, brand: &str) -> Option<Vec<Row>> {
        self.catalogue_rows
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(brand)
            .cloned()
    }

    /// Counts one replacement of `brand` in until the guard drops.
    fn enter_brand(&self, brand: &str) -> BrandInside<'_> {
        let mut brands = self.brands.lock().unwrap_or_else(PoisonError::into_inner);
        let now = brands.0.entry(brand.to_owned()).or_insert(0);
        *now += 1;
        let now = *now;
        brands.1 = brands.1.max(now);
        BrandInside {
            backend: self,
            brand: brand.to_owned(),
        }
    }
}

struct BrandInside<'a> {
    backend: &'a Backend,
    brand: String,
}

impl Drop for BrandInside<'_> {
    fn drop(&mut self) {
        let mut brands = self
            .backend
            .brands
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(now) = brands.0.get_mut(&self.brand) {
            *now -= 1;
            if *now == 0 {
                brands.0.remove(&self.brand);
            }
        }
    }
}

// ------------------------------------------------------------------ operations

/// Why a render attempt failed.
#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum RenderError {
    /// The renderer dropped the job; another attempt may succeed.
    #[outcome(Transient)]
    #[error("the renderer dropped job `{0}`")]
    Dropped(String),
    /// The renderer answered 429 Too Many Requests with a `Retry-After`:
    /// retried after that long (the backoff's delay if longer). A call that
    /// ends with it answers 503 (herta's axum response does not forward a
    /// dependency's hint).
    #[outcome(Throttled)]
    #[error("the renderer is rate limited (job `{job}`)")]
    RateLimited {
        /// The job.
        job: String,
        /// The renderer's `Retry-After`.
        #[retry_after]
        retry_after: Duration,
    },
}

/// Renders `job`. Rendering twice gives the same page, so it is `Idempotent`
/// and a `Transient` failure is retried (3 attempts in all), after a
/// jittered backoff; so is the renderer's 429 (`Throttled`), after at least
/// its `Retry-After`. A job whose name starts with `flaky` fails its first
/// attempt, to show the retry; one starting with `limited` is rate limited
/// on its first attempt with a 50 ms hint. Under overload a render waits at
/// most 1 s for a slot, then answers 429.
#[herta::operation(effect = Idempotent, resources(RENDER = 1, RENDER_RATE = 1), admission = Wait, max_wait = "1s",
                   retry(on = [Transient, Throttled], max = 3, backoff(base = "10ms", cap = "1s")),
                   timeout = "10s")]
pub async fn render(
    ctx: Context,
    job: String,
    backend: Arc<Backend>,
) -> Result<String, RenderError> {
    let _inside = backend.render.enter();
    backend.render.work(backend.latency).await;
    if job.starts_with("flaky") && ctx.attempt() == 1 {
        return Err(RenderError::Dropped(job));
    }
    if job.starts_with("limited") && ctx.attempt() == 1 {
        return Err(RenderError::RateLimited {
            job,
            retry_after: Duration::from_millis(50),
        });
    }
    Ok(format!(
        "<h1>{job}</h1> (attempt {} of {})\n",
        ctx.attempt(),
        ctx.max_attempts()
    ))
}

/// Why a charge failed.
#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum ChargeError {
    /// The gateway took the charge but its reply was lost: charged or not,
    /// nobody knows.
    #[outcome(Uncertain)]
    #[error("the payment gateway's reply for `{0}` was lost")]
    LostReply(String),
}

/// Charges `customer`. Charging twice charges twice, so it is
/// `NonIdempotent`: never retried, and it fails fast (`Throttled`, 429)
/// rather than queue when both gateway connections are busy.
#[herta::operation(effect = NonIdempotent, resources(PAYMENTS = 1), admission = Reject,
                   timeout = "10s")]
pub async fn charge(customer: String, backend: Arc<Backend>) -> Result<String, ChargeError> {
    let _inside = backend.charge.enter();
    backend.charge.work(backend.latency).await;
    let receipt = backend.receipts.fetch_add(1, Ordering::SeqCst) + 1;
    let lost = backend
        .lost_replies
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if lost {
        return Err(ChargeError::LostReply(customer));
    }
    Ok(format!("charged {customer}: receipt #{receipt}\n"))
}

/// Why a catalogue replacement failed.
#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum CatalogueError {
    /// The database was busy; another attempt may succeed.
    #[outcome(Transient)]
    #[error("the catalogue database is busy")]
    Busy,
}

/// Replaces all rows of `brand`. The same rows give the same catalogue, so
/// it is `Idempotent`; replacements of one brand run one at a time
/// (`serialize_by = brand`), two brands at once (2 of 4 `db-write` units).
#[herta::operation(effect = Idempotent, resources(DB_WRITE = 2), serialize_by = brand,
                   retry(on = Transient, max = 3), timeout = "10s")]
pub async fn replace_catalogue(
    brand: String,
    rows: Vec<Row>,
    backend: Arc<Backend>,
) -> Result<usize, CatalogueError> {
    let _inside = backend.catalogue.enter();
    let _brand = backend.enter_brand(&brand);
    backend.catalogue.work(backend.latency).await;
    let count = rows.len();
    backend
        .catalogue_rows
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(brand, rows);
    Ok(count)
}

// ------------------------------------------------------------------ HTTP

/// What every route handler shares: the bound operations and the backend.
#[derive(Clone)]
struct AppState {
    runtime: Runtime,
    render: Render,
    charge: Charge,
    catalogue: ReplaceCatalogue,
    backend: Arc<Backend>,
}

/// The service's router, with every operation bound to `runtime` and
/// herta's live view of it under `/herta` (`herta::dashboard`). The runtime
/// must declare [`RENDER`], [`RENDER_RATE`], [`PAYMENTS`] and [`DB_WRITE`], as [`runtime()`]
/// does.
///
/// # Errors
///
/// The [`BindError`] of an operation whose contract `runtime` cannot serve.
pub fn app(runtime: &Runtime, backend: Arc<Backend>) -> Result<Router, BindError> {
    let state = AppState {
        runtime: runtime.clone(),
        render: Render::bind(runtime)?,
        charge: Charge::bind(runtime)?,
        catalogue: ReplaceCatalogue::bind(runtime)?,
        backend,
    };
    Ok(Router::new()
        .route("/render/{job}", post(render_route))
        .route("/charge/{customer}", post(charge_route))
        .route("/catalogue/{brand}", put(catalogue_route))
        .route("/stats", get(stats_route))
        .route("/admin/capacity/{resource}", put(capacity_route))
        .with_state(state)
        // The live view: a page and `stats.json` (read-only).
        .nest("/herta", herta::dashboard::router(runtime)))
}

/// The service with `GET /metrics`: its runtime ([`runtime()`]) and router
/// ([`app`]), built and bound with a Prometheus recorder current, so that
/// herta's metric handles record into it, and the route that renders it
/// (text format 0.0.4). The recorder is this service's own, not the
/// process-wide one: two services in one process (tests) never mix figures.
///
/// # Errors
///
/// The [`BindError`] of an operation whose contract the runtime cannot serve.
pub fn observed(backend: Arc<Backend>) -> Result<(Runtime, Router), BindError> {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let runtime = runtime();
        let router = app(&runtime, backend)?.route(
            "/metrics",
            get(move || {
                let handle = handle.clone();
                async move {
                    handle.run_upkeep();
                    (
                        [(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("text/plain; version=0.0.4"),
                        )],
                        handle.render(),
                    )
                }
            }),
        );
        Ok((runtime, router))
    })
}

/// The request header that sets a request's deadline, in milliseconds from
/// its arrival.
pub const REQUEST_TIMEOUT_HEADER: &str = "x-request-timeout-ms";

/// Runs the render under the request's deadline, if the client sent one.
async fn render_route(
    State(app): State<AppState>,
    Path(job): Path<String>,
    headers: HeaderMap,
) -> Response {
    let timeout = match request_timeout(&headers) {
        Ok(timeout) => timeout,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let call = app.render.call(job, app.backend);
    let page = match timeout {
        None => call.await,
        Some(timeout) => herta::deadline(tokio::time::Instant::now() + timeout, call).await,
    };
    page.inspect_err(log).into_response()
}

/// The `x-request-timeout-ms` header, if sent.
///
/// # Errors
///
/// A message for the client when the header is not a whole number of
/// milliseconds.
fn request_timeout(headers: &HeaderMap) -> Result<Option<Duration>, String> {
    let Some(value) = headers.get(REQUEST_TIMEOUT_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|ms| Some(Duration::from_millis(ms)))
        .ok_or_else(|| {
            format!("{REQUEST_TIMEOUT_HEADER}: expected a whole number of milliseconds\n")
        })
}

async fn charge_route(
    State(app): State<AppState>,
    Path(customer): Path<String>,
) -> Result<String, Error<ChargeError>> {
    // `?` turns a herta error into its HTTP response.
    let receipt = app
        .charge
        .call(customer, app.backend)
        .await
        .inspect_err(log)?;
    Ok(receipt)
}

/// The body is one row per line: `sku,price_cents`.
async fn catalogue_route(
    State(app): State<AppState>,
    Path(brand): Path<String>,
    body: String,
) -> Response {
    let rows = match parse_rows(&body) {
        Ok(rows) => rows,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    app.catalogue
        .call(brand.clone(), rows, app.backend)
        .await
        .inspect_err(log)
        .map(|n| format!("replaced {brand}: {n} rows\n"))
        .into_response()
}

async fn stats_route(State(app): State<AppState>) -> String {
    format!("{}\n", app.runtime.stats())
}

/// Sets a budget's capacity to the body's number, for an operator turning
/// the knob during an incident: synchronous, it never waits for the calls
/// holding units (see [`Runtime::set_capacity`]). Loopback clients only: it
/// needs the peer address, which [`serve`] provides
/// (`into_make_service_with_connect_info`).
async fn capacity_route(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(resource): Path<String>,
    body: String,
) -> Response {
    if !peer.ip().is_loopback() {
        return (
            StatusCode::FORBIDDEN,
            "admin routes answer loopback clients only\n",
        )
            .into_response();
    }
    let Ok(capacity) = body.trim().parse::<u32>() else {
        let expected = "the body is the new capacity: a whole number of units, at least 1\n";
        return (StatusCode::BAD_REQUEST, expected).into_response();
    };
    match app.runtime.set_capacity(&resource, capacity) {
        Ok(()) => format!("capacity of {resource}: {capacity}\n").into_response(),
        Err(err) => {
            let status = match err {
                ResizeError::UnknownResource { .. } => StatusCode::NOT_FOUND,
                ResizeError::BelowNeed { .. } => StatusCode::CONFLICT,
                _ => StatusCode::BAD_REQUEST,
            };
            (status, format!("{err}\n")).into_response()
        }
    }
}

/// Parses `sku,price_cents` lines (blank lines skipped).
///
/// # Errors
///
/// The first malformed line, with its 1-based number.
pub fn parse_rows(body: &str) -> Result<Vec<Row>, String> {
    body.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let bad = || format!("line {}: expected `sku,price_cents`, got `{line}`\n", i + 1);
            let (sku, price) = line.split_once(',').ok_or_else(bad)?;
            let price_cents = price.trim().parse().map_err(|_| bad())?;
            let sku = sku.trim();
            if sku.is_empty() {
                return Err(bad());
            }
            Ok(Row {
                sku: sku.to_owned(),
                price_cents,
            })
        })
        .collect()
}

/// Logs a failed call with its whole chain (`herta::Error`'s own line,
/// then each `source()`: the handler's error and what it wraps), for the
/// server's log only: clients get herta's short bodies.
pub fn log<E: std::error::Error + 'static>(err: &Error<E>) {
    let mut line = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::info!(target: "service", error = %line, "request failed");
}

// ------------------------------------------------------------------ serving

/// Serves `app` on `listener` until `signal` completes, then shuts down in
/// two phases:
///
/// 1. [`Runtime::close`]: calls waiting for a key or a budget, and every new
///    call, fail with `Stopping` (503) — the listener still accepts, so new
///    requests get that answer instead of a refused connection;
/// 2. once [`Runtime::shutdown`] has drained the running calls (at most
///    `drain`; running handlers are never cancelled), axum's graceful
///    shutdown stops accepting, lets in-flight responses go out, and this
///    function returns.
///
/// # Errors
///
/// The listener's I/O error, if serving fails.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    runtime: Runtime,
    signal: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> io::Result<()> {
    let shutdown = async move {
        signal.await;
        tracing::info!("shutting down: new and queued calls get 503, running calls finish");
        runtime.close();
        if tokio::time::timeout(drain, runtime.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                in_flight = runtime.stats().in_flight,
                "drain took longer than {drain:?}; closing anyway"
            );
        } else {
            tracing::info!("every call drained; closing connections");
        }
    };
    // The peer address: the admin routes answer loopback clients only.
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
