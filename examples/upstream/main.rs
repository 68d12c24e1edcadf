//! reqwest behind `herta::tower::ContractLayer`, against a local axum
//! upstream on loopback that answers 503 once per id and 429 on
//! `/throttled`: `cargo run -p herta-examples --example upstream`.

use std::future::poll_fn;

use herta::Runtime;
use herta_examples::upstream::{self, Fetch, UPSTREAM};
use tokio::net::TcpListener;
use tower_service::Service;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let up = upstream::Upstream::new();
    up.open();
    let app = upstream::upstream_app(up.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let rt = Runtime::builder()
        .resource(UPSTREAM)
        .breaker(upstream::UPSTREAM_DOWN)
        .build()?;
    let mut client = upstream::client(&rt, base)?;
    for path in ["/flaky/a", "/flaky/b", "/gated/c", "/throttled/d"] {
        poll_fn(|cx| client.poll_ready(cx)).await?;
        match client.call(Fetch(path.to_owned())).await {
            Ok(reply) => println!(
                "{path}: {} {:?} ({} request(s) upstream)",
                reply.status(),
                reply.text().await?,
                up.hits(path)
            ),
            Err(err) => println!(
                "{path}: {err} — outcome {}, retry after {:?} ({} request(s) upstream)",
                err.outcome(),
                err.retry_after(),
                up.hits(path)
            ),
        }
    }
    println!("{}", rt.stats());
    rt.shutdown().await;
    Ok(())
}
