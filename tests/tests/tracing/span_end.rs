//! The `herta.operation` span records how the call ended (`attempts`,
//! `outcome`, `duration_ms`), so that `tracing_subscriber::fmt` logging span
//! closes writes one line per call, successful or not (see `herta::trace`).

use crate::common;

use std::future::Future;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{quiet_deliberate_panics, DELIBERATE};
use herta::{Context, Failure, Resource, Runtime};
use tokio::sync::Semaphore;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::MakeWriter;

/// What the fmt subscriber wrote.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// Runs `test` on a current-thread runtime with a paused clock under a fmt
/// subscriber that logs span closes; returns the `close` lines.
fn close_lines<F: Future>(test: impl FnOnce() -> F) -> Vec<String> {
    let _serial = crate::serial();
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buffer.clone())
        .with_span_events(FmtSpan::CLOSE)
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .finish();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || rt.block_on(test()));
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    text.lines()
        .filter(|l| l.contains("herta.operation") && l.contains("close"))
        .map(str::to_owned)
        .collect()
}

/// Fails its first attempt, then takes 250 ms.
#[herta::operation(effect = Idempotent, resources("slots" = 1), retry(on = Transient, max = 3))]
async fn flaky(ctx: Context) -> Result<(), Failure<String>> {
    if ctx.attempt() == 1 {
        return Err(Failure::transient("dropped".to_owned()));
    }
    tokio::time::sleep(Duration::from_millis(250)).await;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), admission = Reject)]
async fn charge(gate: Arc<Semaphore>) -> Result<(), Failure<String>> {
    let _ = gate.acquire().await;
    Ok(())
}

#[herta::operation(effect = Pure, resources("slots" = 1))]
async fn explode() -> Result<(), Failure<String>> {
    panic!("{DELIBERATE}: explode")
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap()
}

#[test]
fn a_successful_call_leaves_one_line_with_attempts_outcome_and_duration() {
    let lines = close_lines(|| async {
        let rt = runtime();
        Flaky::bind(&rt).unwrap().call().await.unwrap();
    });
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    for part in [
        "herta.operation{operation=\"flaky\" effect=\"Idempotent\"",
        "attempts=2",
        "outcome=\"success\"",
        "duration_ms=250.0",
    ] {
        assert!(line.contains(part), "`{part}` not in {line}");
    }
}

#[test]
fn throttled_cancelled_and_panicked_calls_say_so() {
    quiet_deliberate_panics();
    let lines = close_lines(|| async {
        let rt = runtime();
        let charge = Charge::bind(&rt).unwrap();
        let gate = Arc::new(Semaphore::new(0));
        // Held inside its attempt: then a second charge is throttled.
        let holder = tokio::spawn({
            let (charge, gate) = (charge.clone(), gate.clone());
            async move { charge.call(gate).await }
        });
        // Yields, not `common::until`: its 1 ms sleeps would move the
        // paused clock and the durations checked below.
        while rt.stats().started == 0 {
            tokio::task::yield_now().await;
        }
        charge.call(gate.clone()).await.unwrap_err();
        // The holder is cancelled after 10 ms.
        tokio::time::sleep(Duration::from_millis(10)).await;
        holder.abort();
        assert!(holder.await.unwrap_err().is_cancelled());
        let explode = Explode::bind(&rt).unwrap();
        let exploded = tokio::spawn(async move { explode.call().await }).await;
        assert!(exploded.unwrap_err().is_panic());
    });
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let with = |outcome: &str| {
        lines
            .iter()
            .find(|l| l.contains(&format!("outcome=\"{outcome}\"")))
            .unwrap_or_else(|| panic!("no `{outcome}` line in {lines:#?}"))
    };
    assert!(with("throttled").contains("attempts=0 "));
    let cancelled = with("cancelled");
    assert!(cancelled.contains("attempts=1 "), "{cancelled}");
    assert!(cancelled.contains("duration_ms=10.0"), "{cancelled}");
    assert!(with("panicked").contains("operation=\"explode\""));
}
