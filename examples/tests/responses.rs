//! `IntoResponse for herta::Error<E>` (herta's `axum` feature) over real
//! HTTP: axum handlers that return `Result<String, herta::Error<E>>` and
//! use `?` on a call answer each kind of error with the documented status,
//! headers and a short body that names no key, operation or handler error.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Router;
use herta::{Error, Failure, Resource, Runtime};
use reqwest::header::{CONNECTION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};

/// Each test finishes within this, or fails.
const BOUND: Duration = Duration::from_secs(60);

/// A handler error whose message must never reach a client.
#[derive(Debug, thiserror::Error)]
#[error("the ledger said no for {0}")]
struct LedgerError(String);

type Outcome = Result<String, Failure<LedgerError>>;

/// Where a `hold` call is held, and its signal that it is inside.
struct Holding {
    inside: Semaphore,
    release: Notify,
}

/// One call per customer at a time, refused when the customer is busy;
/// what the handler does is in `kind`. The key is shown in herta's own
/// errors (`show_key = true`), so that a body leaking it would show.
#[herta::operation(effect = NonIdempotent, resources("ledger" = 4), admission = Reject,
                   serialize_by(customer, show_key = true))]
async fn act(#[state] holding: &Holding, customer: String, kind: String) -> Outcome {
    match kind.as_str() {
        "ok" => Ok(format!("done for {customer}\n")),
        "hold" => {
            holding.inside.add_permits(1);
            holding.release.notified().await;
            Ok("held\n".to_owned())
        }
        "uncertain" => Err(Failure::uncertain(LedgerError(customer))),
        "transient" => Err(Failure::transient(LedgerError(customer))),
        "throttled" => {
            Err(Failure::throttled(LedgerError(customer)).with_retry_after(Duration::from_secs(30)))
        }
        _ => Err(Failure::permanent(LedgerError(customer))),
    }
}

/// An attempt that never finishes, dropped by its `timeout`.
#[herta::operation(effect = NonIdempotent, resources("ledger" = 1), timeout = "1ms")]
async fn hang() -> Outcome {
    std::future::pending().await
}

#[derive(Clone)]
struct App {
    act: Act,
    hang: Hang,
    closed: Act,
}

async fn act_route(
    State(app): State<App>,
    Path((customer, kind)): Path<(String, String)>,
) -> Result<String, Error<Failure<LedgerError>>> {
    let done = app.act.call(customer, kind).await?;
    Ok(done)
}

async fn hang_route(State(app): State<App>) -> Result<String, Error<Failure<LedgerError>>> {
    let done = app.hang.call().await?;
    Ok(done)
}

/// A deadline already past: the call is refused before it waits.
async fn late_route(State(app): State<App>) -> Result<String, Error<Failure<LedgerError>>> {
    let past = tokio::time::Instant::now() - Duration::from_secs(1);
    let done = herta::deadline(past, app.hang.call()).await?;
    Ok(done)
}

async fn closed_route(State(app): State<App>) -> Result<String, Error<Failure<LedgerError>>> {
    let done = app.closed.call("grace".to_owned(), "ok".to_owned()).await?;
    Ok(done)
}

fn ledger() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("ledger", 4))
        .build()
        .unwrap()
}

struct Server {
    addr: SocketAddr,
    client: reqwest::Client,
    act: Act,
    holding: Arc<Holding>,
}

impl Server {
    async fn start() -> Server {
        let holding = Arc::new(Holding {
            inside: Semaphore::new(0),
            release: Notify::new(),
        });
        let rt = ledger();
        let stopped = ledger();
        let app = App {
            act: Act::bind_with(&rt, Arc::clone(&holding)).unwrap(),
            hang: Hang::bind(&rt).unwrap(),
            closed: Act::bind_with(&stopped, Arc::clone(&holding)).unwrap(),
        };
        stopped.close();
        let act = app.act.clone();
        let router = Router::new()
            .route("/act/{customer}/{kind}", get(act_route))
            .route("/hang", get(hang_route))
            .route("/late", get(late_route))
            .route("/closed", get(closed_route))
            .with_state(app);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        Server {
            addr,
            client: reqwest::Client::new(),
            act,
            holding,
        }
    }

    /// GET `path`: status, the headers asked for, body.
    async fn get(&self, path: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let response = self
            .client
            .get(format!("http://{}{path}", self.addr))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }
}

const UNKNOWN: &str =
    "outcome unknown: the request may or may not have taken effect; check before retrying\n";

/// Every row of the table, one request each.
#[tokio::test]
async fn each_error_answers_with_its_status_and_a_short_body() {
    tokio::time::timeout(BOUND, async {
        let server = Server::start().await;

        let (status, headers, body) = server.get("/act/ada/ok").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "done for ada\n"));
        assert!(headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));

        // `Failed`, by outcome. The handler's error (which names the
        // customer) is never in the body, nor is the operation's name.
        let cases = [
            ("uncertain", StatusCode::BAD_GATEWAY, UNKNOWN),
            (
                "transient",
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily unavailable\n",
            ),
            (
                "throttled",
                StatusCode::SERVICE_UNAVAILABLE,
                "busy downstream\n",
            ),
            ("permanent", StatusCode::INTERNAL_SERVER_ERROR, "failed\n"),
        ];
        for (kind, expected_status, expected_body) in cases {
            let (status, headers, body) = server.get(&format!("/act/bob-secret/{kind}")).await;
            assert_eq!(
                (status, body.as_str()),
                (expected_status, expected_body),
                "{kind}"
            );
            assert!(headers[CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/plain"));
            assert!(headers.get(RETRY_AFTER).is_none(), "{kind}");
        }

        // `Throttled`: the key is busy (a call for `ada-secret` is held).
        let held = tokio::spawn({
            let act = server.act.clone();
            async move { act.call("ada-secret".to_owned(), "hold".to_owned()).await }
        });
        server.holding.inside.acquire().await.unwrap().forget();
        let (status, headers, body) = server.get("/act/ada-secret/ok").await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(headers[RETRY_AFTER], "1");
        assert_eq!(body, "busy; retry after 1 s\n");
        server.holding.release.notify_one();
        assert_eq!(held.await.unwrap().unwrap(), "held\n");

        // `TimedOut` of a NonIdempotent attempt: its outcome is unknown.
        let (status, _, body) = server.get("/hang").await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(body, format!("timed out; {UNKNOWN}"));

        // `DeadlineExceeded` before anything ran.
        let (status, _, body) = server.get("/late").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::GATEWAY_TIMEOUT, "request deadline exceeded\n")
        );

        // `Stopping`: the runtime is closed.
        let (status, headers, body) = server.get("/closed").await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
        );
        assert_eq!(headers[CONNECTION], "close");
    })
    .await
    .expect("the test finished within its bound");
}

/// The bodies come from herta, not from the error's `Display`: whatever a
/// handler error or a key says, no response carries it.
#[tokio::test]
async fn no_body_names_a_key_an_operation_or_a_handler_error() {
    tokio::time::timeout(BOUND, async {
        let server = Server::start().await;
        let held = tokio::spawn({
            let act = server.act.clone();
            async move { act.call("carol-secret".to_owned(), "hold".to_owned()).await }
        });
        server.holding.inside.acquire().await.unwrap().forget();
        let mut bodies = Vec::new();
        for kind in ["uncertain", "transient", "throttled", "permanent", "ok"] {
            bodies.push(server.get(&format!("/act/carol-secret/{kind}")).await);
        }
        server.holding.release.notify_one();
        held.await.unwrap().unwrap();
        bodies.push(server.get("/hang").await);
        bodies.push(server.get("/late").await);
        bodies.push(server.get("/closed").await);
        for (status, _, body) in bodies {
            assert!(!status.is_success());
            for word in ["secret", "ledger", "act", "hang", "grace", "customer"] {
                assert!(!body.contains(word), "{status}: {body:?} names {word:?}");
            }
            assert!(body.len() < 100 && body.ends_with('\n'), "{body:?}");
        }
    })
    .await
    .expect("the test finished within its bound");
}
