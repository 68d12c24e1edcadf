//! The `service` example's `GET /metrics`, scraped over real HTTP while
//! requests are in flight and after: herta's metric names and labels in
//! Prometheus text format, and counters that match the responses the client
//! saw. The backend is gated, so the load is exact; the test waits on
//! conditions, never on a sleep.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use herta_examples::service::{self, Backend};
use reqwest::StatusCode;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The value of the sample `name{labels...}` (every label given must be on
/// the line, in any order), if there is one.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            let (series, _) = l.rsplit_once(' ').unwrap_or((l, ""));
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name
                && labels.iter().all(|want| {
                    rest.trim_end_matches('}')
                        .split(',')
                        .any(|have| have == *want)
                })
        })
        .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
}

fn post(client: &reqwest::Client, addr: SocketAddr, path: &str) -> JoinHandle<StatusCode> {
    let request = client.post(format!("http://{addr}{path}"));
    tokio::spawn(async move { request.send().await.expect("answered").status() })
}

async fn scrape(client: &reqwest::Client, addr: SocketAddr) -> String {
    let response = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_are_scraped_under_load_and_match_the_responses() {
    let test = async {
        let backend = Backend::gated();
        let (rt, app) = service::observed(Arc::clone(&backend)).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(service::serve(
            listener,
            app,
            rt.clone(),
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(30),
        ));
        let client = reqwest::Client::new();

        // Both payment connections busy, then 6 charges more: each one 429.
        let held: Vec<_> = ["ada", "bob"]
            .iter()
            .map(|c| post(&client, addr, &format!("/charge/{c}")))
            .collect();
        backend.charge.until(|l| l.inside == 2).await;
        let mut statuses = Vec::new();
        for i in 0..6 {
            statuses.push(
                post(&client, addr, &format!("/charge/secret-{i}"))
                    .await
                    .unwrap(),
            );
        }
        // Under load: two units of `payments` in use, nothing queued.
        let text = scrape(&client, addr).await;
        let payments = ["resource=\"payments\""];
        assert_eq!(sample(&text, "herta_budget_in_use", &payments), Some(2.0));
        assert_eq!(sample(&text, "herta_budget_waiting", &payments), Some(0.0));
        assert_eq!(sample(&text, "herta_budget_capacity", &payments), Some(2.0));
        backend.charge.release(2);
        for call in held {
            statuses.push(call.await.unwrap());
        }
        // A render and a catalogue replacement (keyed by brand).
        backend.render.release(1);
        statuses.push(post(&client, addr, "/render/job-1").await.unwrap());
        backend.catalogue.release(1);
        let put = client
            .put(format!("http://{addr}/catalogue/secret-brand"))
            .body("SB-1,100\n")
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), StatusCode::OK);

        let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
        let shed = statuses
            .iter()
            .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
            .count();
        assert_eq!((ok, shed), (3, 6), "{statuses:?}");

        let text = scrape(&client, addr).await;
        let calls = |op: &str, outcome: &str| {
            let (op, outcome) = (
                format!("operation=\"{op}\""),
                format!("outcome=\"{outcome}\""),
            );
            sample(&text, "herta_calls_total", &[&op, &outcome])
        };
        assert_eq!(calls("charge", "success"), Some(2.0));
        // `charge` is `Reject`: its shed calls found no room, and are counted
        // under that reason.
        let no_room = sample(
            &text,
            "herta_calls_total",
            &[
                "operation=\"charge\"",
                "outcome=\"throttled\"",
                "throttle=\"no_room\"",
            ],
        );
        assert_eq!(no_room, Some(shed as f64));
        assert_eq!(calls("render", "success"), Some(1.0));
        assert_eq!(calls("replace_catalogue", "success"), Some(1.0));
        let op = |name: &str| format!("operation=\"{name}\"");
        assert_eq!(
            sample(&text, "herta_attempts_total", &[&op("charge")]),
            Some(2.0)
        );
        // Histograms (summaries by default) in seconds, per operation.
        assert_eq!(
            sample(&text, "herta_attempt_seconds_count", &[&op("charge")]),
            Some(2.0)
        );
        assert_eq!(sample(&text, "herta_budget_in_use", &payments), Some(0.0));
        // Labels are operations, outcomes, stages and resources: no key, no
        // customer ever appears.
        assert!(!text.contains("secret"), "{text}");
        let stats = rt.stats();
        assert_eq!(stats.operation("charge").unwrap().throttled, shed as u64);

        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
    };
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the test finished within its bound");
}
