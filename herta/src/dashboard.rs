//! The live view of a runtime (cargo feature `dashboard`): an axum
//! [`Router`] to nest wherever a service likes, serving
//!
//! - `GET /`: one self-contained page (HTML, CSS, JavaScript and SVG
//!   inline; it loads nothing from anywhere, so it works on a host with no
//!   way out) that reads `stats.json` beside it once a second and shows,
//!   per operation, calls per second, success percentage, throttled,
//!   failed and deadline counts, p50 and p99 latency and a two-minute
//!   sparkline of calls per second (kept by the page since it was opened);
//!   per budget its capacity, in use, waiting and peak; per breaker its
//!   state in colour, failure rate and time left open; the retry budget;
//! - `GET /stats.json`: the same snapshot as JSON, field names stable and
//!   documented in `herta/docs/dashboard.md`;
//! - with [`Dashboard::with_admin`] only: `POST
//!   /admin/resources/{name}/capacity` and `POST /admin/resources/{name}/rate`
//!   (the body: the number), each behind `Authorization: Bearer <token>`.
//!
//! No route fetches a URL, and neither the page nor the JSON carries a
//! key's value or a handler's error text: names and figures only.
//!
//! ```no_run
//! # async fn serve(rt: herta::Runtime) -> std::io::Result<()> {
//! let app = axum::Router::new().nest("/herta", herta::dashboard::router(&rt));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! # let _ = (app, listener);
//! # Ok(())
//! # }
//! ```

mod admin;
mod snapshot;
#[cfg(test)]
mod tests;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::Runtime;
use snapshot::Snapshot;

/// The page, one self-contained file.
const PAGE: &str = include_str!("dashboard/page.html");

/// What the page may load: nothing but its own inline code and styles,
/// and `stats.json` from its own origin.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'self'";

/// The read-only live view of `rt`: `GET /` and `GET /stats.json`.
/// [`Dashboard`] adds the admin routes.
pub fn router(rt: &Runtime) -> Router {
    Dashboard::new(rt).router()
}

/// The live view of a runtime, with or without its admin routes.
#[derive(Clone)]
pub struct Dashboard {
    rt: Runtime,
    admin: Option<admin::Token>,
}

impl std::fmt::Debug for Dashboard {
    /// Never shows the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard")
            .field("admin", &self.admin.is_some())
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// The read-only live view of `rt` (a clone of the handle).
    pub fn new(rt: &Runtime) -> Self {
        Dashboard {
            rt: rt.clone(),
            admin: None,
        }
    }

    /// Adds the admin routes, each requiring `Authorization: Bearer
    /// <token>` (compared in constant time): a request with a missing or
    /// wrong token is answered 401 and changes nothing.
    ///
    /// # Panics
    ///
    /// If `token` is empty.
    pub fn with_admin(mut self, token: impl Into<String>) -> Self {
        self.admin = Some(admin::Token::new(token.into()));
        self
    }

    /// The router: `GET /`, `GET /stats.json`, and the admin routes if
    /// [`with_admin`](Self::with_admin) gave a token.
    pub fn router(self) -> Router {
        let view = Router::new()
            .route("/", get(page))
            .route("/stats.json", get(stats))
            .with_state(self.rt.clone());
        match self.admin {
            Some(token) => view.merge(admin::routes(self.rt, token)),
            None => view,
        }
    }
}

/// `GET /`: the page.
async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
        ],
        PAGE,
    )
        .into_response()
}

/// `GET /stats.json`: the snapshot.
async fn stats(State(rt): State<Runtime>) -> Response {
    let snapshot = Snapshot::of(&rt.stats(), rt.inner.retry_budget.is_some());
    let body = serde_json::to_string(&snapshot).expect("a snapshot of figures serializes");
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}
