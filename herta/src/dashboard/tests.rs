//! The dashboard's routes, driven with `tower::ServiceExt::oneshot`.

use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::http::{header, Request, StatusCode};
use axum::Router;
use tower::ServiceExt;

use super::{router, Dashboard, PAGE};
use crate::{Resource, Runtime};

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("db", 4))
        .resource(Resource::rate("api", 10, Duration::from_secs(1)).unwrap())
        .build()
        .unwrap()
}

/// The status and body of `request` sent to `app`.
async fn send(app: &Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn post(path: &str, token: Option<&str>, body: &str) -> Request<Body> {
    let mut request = Request::post(path);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request.body(Body::from(body.to_owned())).unwrap()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn stats_json_is_the_runtime_s_snapshot() {
    let rt = runtime();
    let (status, body) = send(&router(&rt), get("/stats.json")).await;
    assert_eq!(status, StatusCode::OK);
    let s = json(&body);
    assert_eq!(s["version"], 1);
    assert_eq!(s["calls"]["admitted"], 0);
    let db = &s["resources"][0];
    assert_eq!(
        (&db["name"], &db["kind"], &db["capacity"]),
        (&"db".into(), &"concurrency".into(), &4.into())
    );
    assert_eq!(db["adaptive"], serde_json::Value::Null);
    let api = &s["resources"][1];
    assert_eq!(
        (&api["kind"], &api["rate"]["count"]),
        (&"rate".into(), &10.into())
    );
    assert_eq!(api["rate"]["period_ms"], 1000.0);
    assert_eq!(s["retry_budget"]["configured"], false);
}

#[tokio::test]
async fn the_page_is_self_contained() {
    let rt = runtime();
    let response = router(&rt).oneshot(get("/")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let policy = response.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(policy.starts_with("default-src 'none'"), "{policy}");
    let lower = PAGE.to_ascii_lowercase();
    for external in [
        "http://", "https://", "//", " src=", " href=", "@import", "url(",
    ] {
        let found = match external {
            // `//` begins JavaScript comments: only a protocol-relative
            // URL in an attribute or string counts.
            "//" => lower.contains("\"//") || lower.contains("'//"),
            _ => lower.contains(external),
        };
        assert!(
            !found,
            "the page loads something from elsewhere: {external}"
        );
    }
}

#[tokio::test]
async fn without_admin_there_are_no_admin_routes() {
    let rt = runtime();
    let app = router(&rt);
    let (status, _) = send(&app, post("/admin/resources/db/capacity", Some("t"), "8")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(rt.stats().resource("db").unwrap().capacity, 4);
}

#[tokio::test]
async fn a_missing_or_wrong_token_is_401_and_changes_nothing() {
    let rt = runtime();
    let app = Dashboard::new(&rt).with_admin("s3cret").router();
    for token in [
        None,
        Some("wrong"),
        Some("s3cre"),
        Some("s3cret!"),
        Some(""),
    ] {
        for (path, body) in [
            ("/admin/resources/db/capacity", "8"),
            ("/admin/resources/api/rate", "20"),
        ] {
            let (status, text) = send(&app, post(path, token, body)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?} {path}");
            assert!(!text.contains("s3cret"));
        }
    }
    let s = rt.stats();
    assert_eq!(s.resource("db").unwrap().capacity, 4);
    assert_eq!(s.resource("api").unwrap().rate.unwrap().count, 10);
}

#[tokio::test]
async fn the_token_sets_capacity_and_rate() {
    let rt = runtime();
    let app = Dashboard::new(&rt).with_admin("s3cret").router();
    let ok = |path, body| post(path, Some("s3cret"), body);
    let (status, _) = send(&app, ok("/admin/resources/db/capacity", "8\n")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(&app, ok("/admin/resources/api/rate", "20")).await;
    assert_eq!(status, StatusCode::OK);
    let s = rt.stats();
    assert_eq!(s.resource("db").unwrap().capacity, 8);
    let api = s.resource("api").unwrap();
    assert_eq!(
        (api.rate.unwrap().count, api.rate.unwrap().period),
        (20, Duration::from_secs(1))
    );

    // Refusals say why, and change nothing.
    let (status, _) = send(&app, ok("/admin/resources/dbb/capacity", "8")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(&app, ok("/admin/resources/db/capacity", "many")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = send(&app, ok("/admin/resources/db/rate", "3")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = send(&app, ok("/admin/resources/db/capacity", "0")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(rt.stats().resource("db").unwrap().capacity, 8);
}

#[test]
fn debug_never_shows_the_token() {
    let rt = runtime();
    let shown = format!("{:?}", Dashboard::new(&rt).with_admin("s3cret"));
    assert!(!shown.contains("s3cret"), "{shown}");
}
