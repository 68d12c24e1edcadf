//! The live view in a real browser: the `service` example serves
//! `/herta` on 127.0.0.1, the test sends it known traffic, and headless
//! Chromium renders the page (its script run, `stats.json` fetched) and
//! dumps the DOM, which must show the runtime's numbers.
//!
//! Needs `chromium` (Debian's; `.ci/run` installs it). Skipped, saying
//! so, only when `HERTA_SKIP_BROWSER=1`; without it a missing browser
//! fails the test.

use std::sync::Arc;
use std::time::Duration;

use herta_examples::service::{self, Backend};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The browser's command line: headless, nothing fetched but the page.
fn chromium(url: &str, profile: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(
        std::env::var("HERTA_CHROMIUM").unwrap_or_else(|_| "chromium".to_owned()),
    );
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-proxy-server",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(["--dump-dom", url]);
    cmd
}

/// The text of the `<td class="{class}">` in the row whose `data-{kind}`
/// is `name`, in the dumped DOM.
fn cell(dom: &str, kind: &str, name: &str, class: &str) -> String {
    let row = dom
        .split("<tr ")
        .find(|r| r.starts_with(&format!("data-{kind}=\"{name}\"")))
        .unwrap_or_else(|| panic!("no row for {kind} {name} in:\n{dom}"));
    let row = &row[..row.find("</tr>").unwrap_or(row.len())];
    let open = format!("<td class=\"{class}\">");
    let at = row
        .find(&open)
        .unwrap_or_else(|| panic!("no {class} in {row}"))
        + open.len();
    row[at..at + row[at..].find("</td>").unwrap()].to_owned()
}

/// The page's form of a latency in milliseconds, as a number.
fn ms(text: &str) -> f64 {
    text.trim_end_matches(" ms")
        .parse()
        .unwrap_or_else(|_| panic!("not a latency: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_runtime_s_numbers_in_a_browser() {
    if std::env::var("HERTA_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("HERTA_SKIP_BROWSER=1: the browser test is skipped");
        return;
    }
    let backend = Backend::new(Duration::from_millis(20));
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
        Duration::from_secs(5),
    ));

    // Known traffic: six renders, one of which fails its first attempt
    // and is retried.
    let client = reqwest::Client::new();
    for job in ["a", "b", "c", "d", "e", "flaky-f"] {
        let reply = client
            .post(format!("http://{addr}/render/{job}"))
            .send()
            .await
            .unwrap();
        assert!(reply.status().is_success(), "{job}: {}", reply.status());
    }
    let stats = rt.stats();
    let render = stats.operation("render").unwrap().clone();
    assert_eq!(
        (render.admitted, render.succeeded, render.retried),
        (6, 6, 1)
    );

    let profile = std::env::temp_dir().join(format!("herta-chromium-{}", std::process::id()));
    let url = format!("http://{addr}/herta");
    let dumped = tokio::task::spawn_blocking(move || chromium(&url, &profile).output())
        .await
        .unwrap()
        .expect("chromium runs (set HERTA_SKIP_BROWSER=1 to skip this test)");
    let dom = String::from_utf8_lossy(&dumped.stdout).into_owned();
    assert!(
        dumped.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dumped.stderr)
    );

    assert!(dom.contains("calls admitted 6,"), "{dom}");
    assert_eq!(cell(&dom, "operation", "render", "failed"), "0");
    assert_eq!(cell(&dom, "operation", "render", "throttled"), "0");
    assert_eq!(cell(&dom, "operation", "render", "deadline_exceeded"), "0");
    assert_eq!(cell(&dom, "operation", "render", "success_pct"), "100.0");
    // The browser's p50 is the runtime's (no call ran since).
    let p50 = stats
        .operation("render")
        .unwrap()
        .p50
        .unwrap()
        .as_secs_f64()
        * 1e3;
    let shown = ms(&cell(&dom, "operation", "render", "p50"));
    assert!(
        (shown - p50).abs() < 0.1,
        "page {shown} ms, runtime {p50} ms"
    );
    assert!(shown >= 20.0, "{shown}");
    for r in &stats.resources {
        let capacity = cell(&dom, "resource", r.name, "capacity");
        assert!(
            capacity.starts_with(&r.capacity.to_string()),
            "{}: {capacity}",
            r.name
        );
        assert_eq!(
            cell(&dom, "resource", r.name, "peak_in_use"),
            r.peak_in_use.to_string()
        );
    }

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
