//! The shared provider: an axum server on loopback that enforces a *global*
//! quota on everyone who calls it, as a paid API does.
//!
//! `GET /work` is admitted when fewer than `Q` requests are in flight and the
//! rate limit (`R` per second, a burst of [`Quota::burst`]) has a token; an
//! admitted request holds its place for [`Quota::service`] and answers `200`.
//! Above either limit it answers `429 Too Many Requests` with
//! `Retry-After: 1` at once (whole seconds: HTTP's unit; the quota frees
//! within a second). `Q` can change while requests run ([`Provider::set_q`]):
//! a lower `Q` admits nothing new until the requests in flight drain below it,
//! and no running request is cut.
//!
//! Everything the provider sees is counted in time bins of [`BIN`] from
//! [`Provider::start`]: requests, `200`s, `429`s by cause, the most requests
//! in flight, and `Q` — the figures of the fleet's run come from here, not
//! from the workers.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::time::Instant;

/// The width of one time bin of the provider's counts.
pub const BIN: Duration = Duration::from_millis(100);

/// The provider's global quota.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quota {
    /// Requests in flight at most (`Q`), at the start.
    pub q: u32,
    /// Requests admitted per second at most (`R`).
    pub rate: u32,
    /// Requests the rate limit admits at once after a quiet spell.
    pub burst: u32,
    /// How long an admitted request holds its place.
    pub service: Duration,
}

impl Quota {
    /// The requests per second the provider can serve with `q` in flight:
    /// `min(R, q / service)`.
    pub fn capacity(&self, q: u32) -> f64 {
        f64::from(self.rate).min(f64::from(q) / self.service.as_secs_f64())
    }
}

/// What the provider counted in one [`BIN`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bin {
    /// Requests that arrived.
    pub requests: u32,
    /// Requests answered `200` (counted when they were admitted).
    pub ok: u32,
    /// `429`s because `Q` requests were in flight.
    pub over_q: u32,
    /// `429`s because the rate limit had no token.
    pub over_rate: u32,
    /// The most requests in flight at once.
    pub peak_in_flight: u32,
    /// `Q` at the end of the bin.
    pub q: u32,
    /// How long the requests that left their place in this bin held it,
    /// summed, in microseconds (the service time plus the timer's and the
    /// scheduler's lag).
    pub held_us: u64,
}

impl Bin {
    /// All `429`s.
    pub fn throttled(&self) -> u32 {
        self.over_q + self.over_rate
    }
}

/// The provider's state, shared by its handlers and the coordinator.
#[derive(Debug)]
pub struct Provider {
    quota: Quota,
    q: AtomicU32,
    in_flight: AtomicU32,
    /// GCRA's theoretical arrival time, in nanoseconds after `epoch`.
    tat: Mutex<u64>,
    epoch: Instant,
    /// `None` before [`Provider::start`].
    start: Mutex<Option<Instant>>,
    bins: Mutex<Vec<Bin>>,
    /// `200`s whose response was built, for the end-of-run balance.
    answered_ok: AtomicU64,
    /// Requests that reached the handler, ever.
    requests: AtomicU64,
}

impl Provider {
    /// A provider enforcing `quota`; it counts nothing until [`start`](Self::start).
    pub fn new(quota: Quota) -> Arc<Provider> {
        Arc::new(Provider {
            quota,
            q: AtomicU32::new(quota.q),
            in_flight: AtomicU32::new(0),
            tat: Mutex::new(0),
            epoch: Instant::now(),
            start: Mutex::new(None),
            bins: Mutex::new(Vec::new()),
            answered_ok: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        })
    }

    /// The quota it was built with.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// Starts the bins afresh: bin 0 begins now.
    pub fn start(&self) {
        *lock(&self.start) = Some(Instant::now());
        lock(&self.bins).clear();
    }

    /// Sets `Q`, the requests in flight at most, from now on.
    pub fn set_q(&self, q: u32) {
        self.q.store(q, Ordering::SeqCst);
    }

    /// The bins counted since [`start`](Self::start), up to now.
    pub fn bins(&self) -> Vec<Bin> {
        lock(&self.bins).clone()
    }

    /// `200`s answered since the provider was built.
    pub fn answered_ok(&self) -> u64 {
        self.answered_ok.load(Ordering::SeqCst)
    }

    /// Requests received since the provider was built, whatever the answer.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Takes a place in flight if fewer than `Q` are taken (one atomic
    /// step, so the count never passes the `Q` of the moment).
    fn enter(&self) -> Option<u32> {
        let q = self.q.load(Ordering::SeqCst);
        self.in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < q).then_some(n + 1)
            })
            .ok()
            .map(|before| before + 1)
    }

    /// Takes a token of the rate limit (GCRA: one token per `1/R`, at most
    /// `burst` stored).
    fn take_token(&self) -> bool {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let interval = 1_000_000_000 / u64::from(self.quota.rate.max(1));
        let tolerance = interval * u64::from(self.quota.burst.max(1));
        let mut tat = lock(&self.tat);
        let next = (*tat).max(now) + interval;
        if next - now > tolerance {
            return false;
        }
        *tat = next;
        true
    }

    /// Counts into the bin of now, if the bins have started.
    fn count(&self, f: impl FnOnce(&mut Bin)) {
        let Some(start) = *lock(&self.start) else {
            return;
        };
        let index = usize::try_from(start.elapsed().as_nanos() / BIN.as_nanos()).unwrap_or(0);
        let q = self.q.load(Ordering::SeqCst);
        let mut bins = lock(&self.bins);
        while bins.len() <= index {
            bins.push(Bin {
                q,
                ..Bin::default()
            });
        }
        let bin = &mut bins[index];
        bin.q = q;
        f(bin);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The provider's router: `GET /work`.
pub fn app(provider: Arc<Provider>) -> Router {
    Router::new().route("/work", get(work)).with_state(provider)
}

/// Leaves its place in flight when dropped (also if the client goes away
/// mid-request and axum drops the handler).
struct InFlight<'a>(&'a Provider);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn work(State(provider): State<Arc<Provider>>) -> Response {
    provider.requests.fetch_add(1, Ordering::SeqCst);
    let Some(now_in_flight) = provider.enter() else {
        provider.count(|b| {
            b.requests += 1;
            b.over_q += 1;
        });
        return too_many();
    };
    let place = InFlight(&provider);
    if !provider.take_token() {
        drop(place);
        provider.count(|b| {
            b.requests += 1;
            b.over_rate += 1;
        });
        return too_many();
    }
    provider.count(|b| {
        b.requests += 1;
        b.ok += 1;
        b.peak_in_flight = b.peak_in_flight.max(now_in_flight);
    });
    let admitted = Instant::now();
    tokio::time::sleep(provider.quota.service).await;
    drop(place);
    let held = u64::try_from(admitted.elapsed().as_micros()).unwrap_or(u64::MAX);
    provider.count(|b| b.held_us += held);
    provider.answered_ok.fetch_add(1, Ordering::SeqCst);
    (StatusCode::OK, "done").into_response()
}

fn too_many() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, "1")],
        "over quota",
    )
        .into_response()
}
