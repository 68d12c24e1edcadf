//! The dashboard's admin routes: a budget's capacity and rate, set live,
//! each behind a bearer token compared in constant time.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;

use crate::{ResizeError, Runtime};

/// The admin token (never shown, compared in constant time).
#[derive(Clone)]
pub(super) struct Token(Arc<[u8]>);

impl Token {
    /// The token `token`.
    ///
    /// # Panics
    ///
    /// If `token` is empty.
    pub(super) fn new(token: String) -> Self {
        assert!(!token.is_empty(), "the dashboard's admin token is empty");
        Token(token.into_bytes().into())
    }

    /// Whether `headers` carry `Authorization: Bearer <this token>`. The
    /// bytes are compared without an early exit, so the time taken says
    /// nothing about how much of a wrong token was right (only its length).
    fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        else {
            return false;
        };
        let want = &*self.0;
        let differ = given
            .iter()
            .zip(want)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(differ) == 0 && given.len() == want.len()
    }
}

/// What the admin handlers read.
#[derive(Clone)]
struct Admin {
    rt: Runtime,
    token: Token,
}

/// An admin route's answer: a status and a short text (names and figures
/// only).
type Answer = (StatusCode, String);

/// The admin routes over `rt`, behind `token`.
pub(super) fn routes(rt: Runtime, token: Token) -> Router {
    Router::new()
        .route("/admin/resources/{name}/capacity", post(capacity))
        .route("/admin/resources/{name}/rate", post(rate))
        .with_state(Admin { rt, token })
}

/// The body as a positive count, or why not.
fn number(body: &str) -> Result<u32, Answer> {
    body.trim().parse().map_err(|_| {
        let text = "the body must be a whole number of units, e.g. 8".to_owned();
        (StatusCode::BAD_REQUEST, text)
    })
}

/// 401 unless `headers` carry the token.
fn authorized(admin: &Admin, headers: &HeaderMap) -> Result<(), Answer> {
    if admin.token.admits(headers) {
        Ok(())
    } else {
        let text = "a bearer token is required".to_owned();
        Err((StatusCode::UNAUTHORIZED, text))
    }
}

/// A refused change's status: unknown budget 404, any other 409.
fn refused(error: ResizeError) -> Answer {
    let status = match error {
        ResizeError::UnknownResource { .. } => StatusCode::NOT_FOUND,
        _ => StatusCode::CONFLICT,
    };
    (status, error.to_string())
}

/// `POST /admin/resources/{name}/capacity`: `Runtime::set_capacity`.
async fn capacity(
    State(admin): State<Admin>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Answer {
    let change = || {
        authorized(&admin, &headers)?;
        let units = number(&body)?;
        admin.rt.set_capacity(&name, units).map_err(refused)?;
        Ok(format!("{name}: capacity {units}"))
    };
    change().map_or_else(|e| e, |text| (StatusCode::OK, text))
}

/// `POST /admin/resources/{name}/rate`: `Runtime::set_rate` with the
/// number as the units per period, the period and burst kept.
async fn rate(
    State(admin): State<Admin>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Answer {
    let change = || {
        authorized(&admin, &headers)?;
        let count = number(&body)?;
        let stats = admin.rt.stats();
        let now = stats.resource(&name);
        let (period, burst) = match now.and_then(|r| r.rate.map(|rate| (rate, r.capacity))) {
            Some((rate, burst)) => (rate.period, burst),
            // Unknown, or not a rate budget: `set_rate` says which.
            None => (std::time::Duration::from_secs(1), 1),
        };
        admin
            .rt
            .set_rate(&name, count, period, burst)
            .map_err(refused)?;
        Ok(format!("{name}: rate {count} per {period:?}"))
    };
    change().map_or_else(|e| e, |text| (StatusCode::OK, text))
}
