//! An axum HTTP service whose handlers call herta operations sharing one
//! runtime; the router lives in `herta_examples::service`, where the routes,
//! the contracts and the error → status mapping are documented.
//!
//! ```text
//! cargo run -p herta-examples --example service                       # http://127.0.0.1:3000
//! cargo run -p herta-examples --example service -- --addr 127.0.0.1:8080 --latency-ms 500
//!
//! curl -i -X POST localhost:3000/render/job-42         # 200, Idempotent, waits for a slot
//! curl -i -X POST localhost:3000/render/flaky-1        # 200 on attempt 2 of 3 (Transient, retried)
//! curl -i -X POST localhost:3000/charge/ada            # 200, or 429 + Retry-After when both connections are busy
//! curl -i -X PUT  localhost:3000/catalogue/acme --data-binary $'ACM-1,1999\nACM-2,2499'
//! curl -s localhost:3000/stats
//! curl -i -X PUT  localhost:3000/admin/capacity/render --data 8   # 200: 8 render slots, now (loopback only)
//! curl -s localhost:3000/metrics                       # Prometheus text: herta_calls_total{operation,outcome}, ...
//! ```
//!
//! Logs go to stderr; `RUST_LOG` takes `tracing_subscriber::filter::Targets`
//! syntax (default `info,herta=debug`, which shows herta's call spans and
//! events). Ctrl-C (or SIGTERM) shuts down: new and queued calls get 503,
//! running ones finish, then the server exits and prints the runtime's stats.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use herta_examples::service::{self, Backend};
use tokio::net::TcpListener;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

struct Args {
    addr: SocketAddr,
    latency: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
        latency: Duration::from_millis(200),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => {
                let v = value()?;
                args.addr = v.parse().map_err(|e| format!("--addr {v}: {e}"))?;
            }
            "--latency-ms" => {
                let v = value()?;
                let ms = v.parse().map_err(|e| format!("--latency-ms {v}: {e}"))?;
                args.latency = Duration::from_millis(ms);
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: service [--addr HOST:PORT] [--latency-ms N]"
                ))
            }
        }
    }
    Ok(args)
}

/// Ctrl-C, or SIGTERM where there is one.
async fn stop_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let filter: Targets = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| "info,herta=debug".parse().expect("a valid filter"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal()),
        )
        .with(filter)
        .init();

    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // `GET /metrics` serves herta's metrics in Prometheus text format.
    let (rt, app) =
        service::observed(Backend::new(args.latency)).expect("the runtime declares every resource");
    let listener = match TcpListener::bind(args.addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("cannot listen on {}: {e}", args.addr);
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(addr) => tracing::info!("listening on http://{addr} (Ctrl-C to stop)"),
        Err(_) => tracing::info!("listening on http://{} (Ctrl-C to stop)", args.addr),
    }
    let served = service::serve(
        listener,
        app,
        rt.clone(),
        stop_signal(),
        Duration::from_secs(30),
    )
    .await;
    println!("{}", rt.stats());
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("server error: {e}");
            ExitCode::FAILURE
        }
    }
}
