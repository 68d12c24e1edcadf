//! The `service` example under real HTTP load: the router of
//! `herta_examples::service`, served by `service::serve` on 127.0.0.1 with an
//! ephemeral port, driven by a real HTTP client (reqwest) with a bounded
//! number of requests and a bounded time.
//!
//! The backend is gated: every handler waits at its operation's gate until
//! the test releases it, and counts itself in and out, so the load is exact
//! and what the handlers saw is measured where the work happens. The test
//! waits on conditions (the gauges, `Runtime::stats`), never on a sleep.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use herta::Runtime;
use herta_examples::service::{self, Backend};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Each test finishes within this, or fails.
const BOUND: Duration = Duration::from_secs(60);

struct Server {
    addr: SocketAddr,
    rt: Runtime,
    backend: Arc<Backend>,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

/// What came back: status, headers, body.
type Reply = (StatusCode, HeaderMap, String);

impl Server {
    async fn start() -> Server {
        Server::start_with(Backend::gated()).await
    }

    /// A server whose handlers work against `backend`.
    async fn start_with(backend: Arc<Backend>) -> Server {
        let (rt, app) = service::observed(Arc::clone(&backend)).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(service::serve(
            listener,
            app,
            rt.clone(),
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(30),
        ));
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Server {
            addr,
            rt,
            backend,
            client,
            stop: Some(stop),
            task,
        }
    }

    /// Sends a request on its own task; `body` makes it a PUT.
    fn send(&self, path: &str, body: Option<String>) -> JoinHandle<Reply> {
        send(&self.client, self.addr, path, body)
    }

    fn post(&self, path: &str) -> JoinHandle<Reply> {
        self.send(path, None)
    }

    /// Signals shutdown (as Ctrl-C does in the example binary).
    fn shutdown(&mut self) {
        self.stop.take().unwrap().send(()).unwrap();
    }
}

fn send(
    client: &reqwest::Client,
    addr: SocketAddr,
    path: &str,
    body: Option<String>,
) -> JoinHandle<Reply> {
    let url = format!("http://{addr}{path}");
    let request = match body {
        None => client.post(url),
        Some(body) => client.put(url).body(body),
    };
    tokio::spawn(async move {
        let response = request.send().await.expect("the server answers");
        let status = response.status();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    })
}

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(BOUND, test)
        .await
        .expect("the test finished within its bound")
}

/// Checks `cond` every 2 ms until it holds (at most 20 s).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never reached: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn reply(call: JoinHandle<Reply>) -> Reply {
    call.await.expect("the request task did not panic")
}

fn catalogue_body(brand: &str, version: u64) -> String {
    (1..=3)
        .map(|i| format!("{brand}-{i},{}\n", 100 * version + i))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_never_exceed_the_budgets() {
    bounded(async {
        let mut server = Server::start().await;
        let brands = ["acme", "borealis", "cobalt"];

        // 20 renders on 4 render slots; 12 replacements (3 brands × 4) on a
        // db-write budget of 4 at 2 units each.
        let renders: Vec<_> = (0..20)
            .map(|i| server.post(&format!("/render/job-{i}")))
            .collect();
        let mut replacements = Vec::new();
        for version in 0..4 {
            for brand in brands {
                let body = catalogue_body(brand, version);
                replacements.push((
                    brand,
                    server.send(&format!("/catalogue/{brand}"), Some(body)),
                ));
            }
        }

        // Every request has reached herta: 4 renders inside and 16 queued;
        // 2 replacements inside (two brands), the third brand's first one
        // queued for the budget, the other 9 queued for their brand's key.
        let rt = server.rt.clone();
        until("all 32 calls admitted and queued", || {
            let stats = rt.stats();
            stats.in_flight == 32
                && stats.resource("render").unwrap().waiting == 16
                && stats.resource("db-write").unwrap().waiting == 1
        })
        .await;
        let render = server.backend.render.until(|l| l.inside == 4).await;
        let catalogue = server.backend.catalogue.until(|l| l.inside == 2).await;
        assert_eq!((render.inside, render.peak), (4, 4), "renders inside");
        assert_eq!(
            (catalogue.inside, catalogue.peak),
            (2, 2),
            "replacements inside"
        );
        assert_eq!(server.backend.brand_overlap(), 1);

        // Let everything through; the queued calls run as room frees up.
        server.backend.render.release(20);
        server.backend.catalogue.release(12);
        for (i, call) in renders.into_iter().enumerate() {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body, format!("<h1>job-{i}</h1> (attempt 1 of 3)\n"));
        }
        for (brand, call) in replacements {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body, format!("replaced {brand}: 3 rows\n"));
        }

        // What the handlers saw, and what the runtime saw.
        assert_eq!(
            server.backend.render.load().peak,
            4,
            "never more than 4 renders"
        );
        assert_eq!(
            server.backend.catalogue.load().peak,
            2,
            "never more than 2 replacements"
        );
        assert_eq!(
            server.backend.brand_overlap(),
            1,
            "never two replacements of a brand"
        );
        let stats = server.rt.stats();
        assert_eq!(stats.resource("render").unwrap().peak_in_use, 4);
        assert_eq!(stats.resource("db-write").unwrap().peak_in_use, 4);
        assert_eq!(
            (stats.admitted, stats.finished, stats.throttled),
            (32, 32, 0)
        );
        for brand in brands {
            let rows = server.backend.catalogue(brand).unwrap();
            assert_eq!(rows.len(), 3, "{brand}: one replacement's rows, whole");
        }

        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reject_requests_get_429_under_load_and_outcomes_map_to_statuses() {
    bounded(async {
        let mut server = Server::start().await;

        // Both payment connections busy.
        let held: Vec<_> = ["ada", "bob"]
            .iter()
            .map(|c| server.post(&format!("/charge/{c}")))
            .collect();
        server.backend.charge.until(|l| l.inside == 2).await;

        // 10 more charges at once: each is refused at once, nothing queues.
        let shed: Vec<_> = (0..10)
            .map(|i| server.post(&format!("/charge/c{i}")))
            .collect();
        for call in shed {
            let (status, headers, body) = reply(call).await;
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
            assert_eq!(headers.get(RETRY_AFTER).unwrap(), "1");
            // The service's own short body: no operation, budget or key names.
            assert_eq!(body, "busy; retry after 1 s\n");
        }
        assert!(
            held.iter().all(|h| !h.is_finished()),
            "answered while the two still run"
        );
        let load = server.backend.charge.load();
        assert_eq!((load.inside, load.peak, load.entered), (2, 2, 2));
        assert_eq!(server.rt.stats().resource("payments").unwrap().waiting, 0);

        server.backend.charge.release(2);
        for call in held {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert!(body.starts_with("charged "), "{body}");
        }

        // A lost reply: the charge may have happened, so 502 "outcome unknown".
        server.backend.lose_next_replies(1);
        server.backend.charge.release(1);
        let (status, _, body) = reply(server.post("/charge/carol")).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        assert!(body.starts_with("outcome unknown"), "{body}");
        assert!(body.contains("may or may not have taken effect"), "{body}");
        assert_eq!(
            server.backend.receipts(),
            3,
            "the lost-reply charge did happen"
        );

        // A Transient failure of an Idempotent render is retried.
        server.backend.render.release(2);
        let (status, _, body) = reply(server.post("/render/flaky-1")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "<h1>flaky-1</h1> (attempt 2 of 3)\n");

        // The renderer's 429 is retried after its 50 ms `Retry-After`.
        server.backend.render.release(2);
        let (status, _, body) = reply(server.post("/render/limited-1")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "<h1>limited-1</h1> (attempt 2 of 3)\n");

        // A malformed catalogue never reaches herta.
        let (status, _, body) =
            reply(server.send("/catalogue/acme", Some("acme-1,12.50\n".to_owned()))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body.starts_with("line 1:"), "{body}");

        let stats = server.rt.stats();
        assert_eq!((stats.throttled, stats.retried), (10, 2));
        assert_eq!(stats.admitted, stats.finished);
        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_under_load_drains_running_requests_and_answers_new_ones_with_503() {
    bounded(async {
        let mut server = Server::start().await;

        // 4 renders and a charge running, 4 renders queued for a slot.
        let running: Vec<_> = (0..4)
            .map(|i| server.post(&format!("/render/run-{i}")))
            .collect();
        let charging = server.post("/charge/dora");
        server.backend.render.until(|l| l.inside == 4).await;
        server.backend.charge.until(|l| l.inside == 1).await;
        let queued: Vec<_> = (0..4)
            .map(|i| server.post(&format!("/render/queued-{i}")))
            .collect();
        let rt = server.rt.clone();
        until("4 renders queued", || {
            rt.stats().resource("render").unwrap().waiting == 4
        })
        .await;

        // Ctrl-C.
        server.shutdown();
        until("the runtime closed", || rt.is_closed()).await;

        // Queued requests are withdrawn: 503.
        for call in queued {
            let (status, headers, body) = reply(call).await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
            assert_eq!(headers.get("connection").unwrap(), "close");
            assert!(body.starts_with("shutting down"), "{body}");
        }
        // New requests, on new connections, are answered 503 too.
        let fresh = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let new = [
            send(&fresh, server.addr, "/render/late", None),
            send(&fresh, server.addr, "/charge/late", None),
            send(
                &fresh,
                server.addr,
                "/catalogue/acme",
                Some("acme-1,100\n".to_owned()),
            ),
        ];
        for call in new {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        }

        // The running requests were never cancelled: they finish, with 200.
        assert!(running.iter().all(|r| !r.is_finished()) && !charging.is_finished());
        assert!(
            !server.task.is_finished(),
            "the server drains before it exits"
        );
        assert_eq!(server.backend.render.load().inside, 4);
        server.backend.render.release(4);
        server.backend.charge.release(1);
        for (i, call) in running.into_iter().enumerate() {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body, format!("<h1>run-{i}</h1> (attempt 1 of 3)\n"));
        }
        let (status, _, body) = reply(charging).await;
        assert_eq!(status, StatusCode::OK, "{body}");

        // Drained: the server exits and stops listening.
        server.task.await.unwrap().unwrap();
        assert!(
            TcpStream::connect(server.addr).await.is_err(),
            "no longer listening"
        );
        let stats = server.rt.stats();
        assert_eq!(
            (stats.started, stats.stopped_waiting, stats.refused_stopping),
            (5, 4, 3),
            "5 ran; 4 queued were withdrawn; 3 new were refused"
        );
        assert_eq!(stats.admitted, stats.finished);
        assert_eq!(stats.in_flight, 0);
    })
    .await;
}

/// POSTs `path` with the request-deadline header set to `ms` (as text).
fn post_with_deadline(server: &Server, path: &str, ms: &str) -> JoinHandle<Reply> {
    let request = server
        .client
        .post(format!("http://{}{path}", server.addr))
        .header(service::REQUEST_TIMEOUT_HEADER, ms);
    tokio::spawn(async move {
        let response = request.send().await.expect("the server answers");
        let status = response.status();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overload_is_shed_with_429_and_successful_renders_stay_within_max_wait() {
    bounded(async {
        // Renders take 100 ms of real time; 4 slots serve 40 a second. 100
        // clients at once: 4 run, 64 queue (the rest get 429 at once), and
        // a queued render that would wait past `max_wait` (1 s) gets 429.
        const MAX_WAIT: Duration = Duration::from_secs(1);
        const RENDER: Duration = Duration::from_millis(100);
        // Scheduling slack on a loaded machine (debug build, shared cores).
        const SLACK: Duration = Duration::from_millis(700);
        let mut server = Server::start_with(Backend::new(RENDER)).await;
        let calls: Vec<_> = (0..100)
            .map(|i| {
                let call = server.post(&format!("/render/load-{i}"));
                tokio::spawn(async move {
                    let sent = tokio::time::Instant::now();
                    let reply = reply(call).await;
                    (reply, sent.elapsed())
                })
            })
            .collect();
        let (mut ok, mut shed) = (0u64, 0u64);
        let mut slowest_ok = Duration::ZERO;
        for call in calls {
            let ((status, headers, body), took) = call.await.unwrap();
            match status {
                StatusCode::OK => {
                    ok += 1;
                    slowest_ok = slowest_ok.max(took);
                }
                StatusCode::TOO_MANY_REQUESTS => {
                    shed += 1;
                    // At least 1 s; 2 s when the render-rate units of the
                    // queued renders ahead take longer than a second.
                    let after = headers.get(RETRY_AFTER).unwrap().to_str().unwrap();
                    assert!(after == "1" || after == "2", "Retry-After: {after}");
                    assert_eq!(body, format!("busy; retry after {after} s\n"));
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
        assert!(shed > 0, "overload is shed with 429");
        assert!(ok >= 4, "renders still succeed: {ok}");
        assert!(
            slowest_ok <= MAX_WAIT + RENDER + SLACK,
            "a successful render took {slowest_ok:?}, more than max_wait + render time"
        );
        let load = server.backend.render.load();
        assert!(load.peak <= 4, "never more than 4 renders: {load:?}");
        let stats = server.rt.stats();
        assert_eq!(stats.throttled, shed);
        assert_eq!(stats.succeeded, ok);
        assert_eq!(stats.admitted, stats.finished);
        assert!(stats.resource("render").unwrap().peak_in_use <= 4);
        assert_eq!(stats.resource("render").unwrap().queue_limit, Some(64));
        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_deadline_from_the_header_answers_504() {
    bounded(async {
        let mut server = Server::start().await;
        // Every render slot busy.
        let held: Vec<_> = (0..4)
            .map(|i| server.post(&format!("/render/held-{i}")))
            .collect();
        server.backend.render.until(|l| l.inside == 4).await;

        // The client will wait 50 ms: herta stops waiting for a slot then.
        let (status, _, body) = reply(post_with_deadline(&server, "/render/hurried", "50")).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
        assert_eq!(body, "request deadline exceeded\n");
        assert_eq!(server.rt.stats().deadline_exceeded, 1);
        assert_eq!(server.rt.stats().resource("render").unwrap().waiting, 0);

        // Not a number: 400, and herta never sees it.
        let (status, _, body) = reply(post_with_deadline(&server, "/render/odd", "soon")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

        // A generous deadline changes nothing.
        server.backend.render.release(5);
        let (status, _, body) =
            reply(post_with_deadline(&server, "/render/patient", "30000")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for call in held {
            assert_eq!(reply(call).await.0, StatusCode::OK);
        }
        let stats = server.rt.stats();
        assert_eq!((stats.admitted, stats.deadline_exceeded), (6, 1));
        assert_eq!(stats.admitted, stats.finished);
        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}

/// `PUT /admin/capacity/{resource}` under load: growing the render budget
/// lets queued renders in at once; shrinking it revokes none and lets no
/// render in until the running ones are below the new capacity; an unknown
/// resource is 404 (with a did-you-mean), a capacity below a bound
/// operation's need 409, a body that is not a capacity 400; nothing changes
/// on an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_admin_route_resizes_a_budget_under_load() {
    bounded(async {
        let mut server = Server::start().await;
        let renders: Vec<_> = (0..20)
            .map(|i| server.post(&format!("/render/job-{i}")))
            .collect();
        let rt = server.rt.clone();
        let render = |rt: &Runtime| {
            let stats = rt.stats();
            let r = stats.resource("render").unwrap();
            (r.capacity, r.in_use, r.waiting)
        };
        until("4 renders inside, 16 queued", || render(&rt) == (4, 4, 16)).await;
        let put = |path: &str, body: &str| server.send(path, Some(body.to_owned()));

        let (status, _, body) = reply(put("/admin/capacity/render", "8")).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "capacity of render: 8\n")
        );
        assert_eq!(render(&rt), (8, 8, 12), "4 queued renders granted at once");
        server.backend.render.until(|l| l.inside == 8).await;

        let (status, _, _) = reply(put("/admin/capacity/render", "2")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(render(&rt), (2, 8, 12), "nothing revoked");
        // 6 renders end: 2 left inside, still no room for a third.
        server.backend.render.release(6);
        until("6 renders ended", || render(&rt) == (2, 2, 12)).await;
        assert_eq!(server.backend.render.load().inside, 2);
        // One more ends: exactly one queued render takes its place.
        server.backend.render.release(1);
        until("one queued render granted", || render(&rt) == (2, 2, 11)).await;

        for (path, body, status, says) in [
            (
                "/admin/capacity/rendr",
                "8",
                StatusCode::NOT_FOUND,
                "did you mean `render`?",
            ),
            (
                "/admin/capacity/db-write",
                "1",
                StatusCode::CONFLICT,
                "needs 2 units",
            ),
            (
                "/admin/capacity/render",
                "many",
                StatusCode::BAD_REQUEST,
                "whole number",
            ),
            (
                "/admin/capacity/render",
                "0",
                StatusCode::BAD_REQUEST,
                "at least 1 unit",
            ),
        ] {
            let (got, _, text) = reply(put(path, body)).await;
            assert_eq!(got, status, "{path} {body}: {text}");
            assert!(text.contains(says), "{path} {body}: {text}");
        }
        assert_eq!(
            render(&rt),
            (2, 2, 11),
            "the refused changes changed nothing"
        );
        assert_eq!(rt.stats().resource("db-write").unwrap().capacity, 4);

        server.backend.render.release(20);
        for call in renders {
            let (status, _, body) = reply(call).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        assert_eq!(render(&rt), (2, 0, 0));
        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}

/// The admin route answers loopback clients only: a peer elsewhere gets
/// 403 and changes nothing (the router driven in-process, with the peer
/// address `serve` would give it).
#[tokio::test]
async fn the_admin_route_refuses_a_peer_that_is_not_loopback() {
    use axum::extract::ConnectInfo;
    use tower_service::Service as _;

    let (rt, mut app) = service::observed(Backend::gated()).unwrap();
    for (peer, status, capacity) in [
        (
            SocketAddr::from(([10, 0, 0, 7], 40_000)),
            StatusCode::FORBIDDEN,
            4,
        ),
        (
            SocketAddr::from(([127, 0, 0, 1], 40_000)),
            StatusCode::OK,
            6,
        ),
    ] {
        let mut request = axum::http::Request::put("/admin/capacity/render")
            .body(axum::body::Body::from("6"))
            .unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
        let response = app.call(request).await.unwrap();
        assert_eq!(response.status().as_u16(), status.as_u16(), "{peer}");
        assert_eq!(rt.stats().resource("render").unwrap().capacity, capacity);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renders_never_start_faster_than_the_declared_rate() {
    bounded(async {
        // Renders take 1 ms: the 4 slots alone would allow thousands a
        // second; the rate budget allows 10 at once, then 50 a second.
        let mut server = Server::start_with(Backend::new(Duration::from_millis(1))).await;
        let started = tokio::time::Instant::now();
        let calls: Vec<_> = (0..150)
            .map(|i| server.post(&format!("/render/rate-{i}")))
            .collect();
        let mut ok = 0u64;
        for call in calls {
            let (status, headers, body) = reply(call).await;
            match status {
                StatusCode::OK => ok += 1,
                StatusCode::TOO_MANY_REQUESTS => {
                    assert!(
                        headers.get(RETRY_AFTER).is_some(),
                        "429 without Retry-After"
                    );
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
        let elapsed = started.elapsed();
        let granted = server
            .rt
            .stats()
            .resource("render-rate")
            .unwrap()
            .rate
            .unwrap()
            .granted;
        // Every attempt takes a unit, so the renders are at most the units.
        assert!(ok <= granted, "{ok} renders, {granted} units");
        let bound = 10.0 + 50.0 * elapsed.as_secs_f64();
        assert!(
            (granted as f64) <= bound + 1.0,
            "{granted} units in {elapsed:?}, more than burst + rate × time ({bound:.1})"
        );
        assert!(ok >= 10, "the burst is served: {ok}");
        server.shutdown();
        server.task.await.unwrap().unwrap();
    })
    .await;
}
