//! A soak: the `service` example under sustained overload for a bounded
//! time, from an in-process HTTP load generator over loopback, checking at
//! every sample that nothing accumulates.
//!
//! ```text
//! cargo run --release -p herta-examples --example soak -- --secs 600          # the 10-minute run
//! cargo run -q -p herta-examples --example soak -- --secs 60 --plain          # CI
//! ```
//!
//! The generator is open-loop: `--rate` requests per second (default 400)
//! whatever the answers, so the service is overloaded the whole time (its 4
//! render slots of `--latency-ms` (default 20) serve 200 renders per
//! second). The mix, by request number: 1 in 20 a charge (`Reject`), 1 in
//! 20 a catalogue replacement of one of 8 brands (`serialize_by`), 1 in 20
//! a `flaky…` render (retried), 1 in 20 a `limited…` render (a 429 from the
//! renderer, retried after its hint), the rest plain renders.
//!
//! Every second it samples resident memory (`/proc/self/statm`), the live
//! heap (a counting allocator), the runtime's stats and the latency of the
//! plain renders answered in that second, and checks: the stats balance
//! (calls in flight at most the requests outstanding; no budget above its
//! capacity or queue limit), and the p99 of plain renders within
//! `max_wait` + the render time + [`SLACK`]. At the end, once every request
//! is answered: resident memory and heap grew less than 5 % from the end of
//! the warm-up (the first third of the run, at most 60 s: allocator arenas
//! and connection pools settle in it); no call in
//! flight, no key entry, no budget in use or waited for; every request got
//! an HTTP answer; each route's `200`s equal its operation's successes;
//! the service then shuts down. Exit status 0 when everything held, 1 when
//! anything was violated (each violation printed), 2 for bad arguments.
//!
//! `--plain` prints one line per sample (for logs); without it one status
//! line is rewritten in place.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use herta::{Runtime, Stats};
use herta_examples::service::{self, Backend, RENDER};
use reqwest::StatusCode;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior};

/// The system allocator, counting the bytes live.
struct Counting;

static HEAP: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are this allocator's; the count is a
// side effect that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract, passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            HEAP.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        HEAP.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            HEAP.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            HEAP.fetch_sub(layout.size(), Ordering::Relaxed);
            HEAP.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What the p99 of plain renders may exceed `max_wait` + the render time
/// by: the loopback round trip, axum and the scheduler of a shared machine.
const SLACK: Duration = Duration::from_millis(250);
/// The render contract's `max_wait` (`herta_examples::service::render`).
const MAX_WAIT: Duration = Duration::from_secs(1);
/// How long a request may take before the generator counts it unanswered.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

struct Args {
    secs: u64,
    rate: u32,
    latency: Duration,
    plain: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        secs: 60,
        rate: 400,
        latency: Duration::from_millis(20),
        plain: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut number = || -> Result<u64, String> {
            let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            v.parse()
                .map_err(|_| format!("{flag} {v}: not a whole number"))
        };
        match flag.as_str() {
            "--secs" => args.secs = number()?.max(1),
            "--rate" => args.rate = u32::try_from(number()?.max(1)).map_err(|e| e.to_string())?,
            "--latency-ms" => args.latency = Duration::from_millis(number()?),
            "--plain" => args.plain = true,
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: soak [--secs N] [--rate PER_S] [--latency-ms N] [--plain]"
                ))
            }
        }
    }
    Ok(args)
}

/// The routes of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Render,
    Charge,
    Catalogue,
}

/// What the generator saw, shared by its request tasks.
#[derive(Debug, Default)]
struct Seen {
    /// Requests sent, and answered (with any status, or not at all).
    sent: AtomicU64,
    done: AtomicU64,
    /// Requests that got no HTTP answer (connection error, client timeout).
    unanswered: AtomicU64,
    /// Per route: `200`, `429`, other statuses.
    statuses: Mutex<[[u64; 3]; 3]>,
    /// Latencies of plain renders answered since the last sample, in µs.
    plain_latencies: Mutex<Vec<u32>>,
}

impl Seen {
    fn answered(&self, route: Route, status: StatusCode) {
        let column = match status {
            StatusCode::OK => 0,
            StatusCode::TOO_MANY_REQUESTS => 1,
            _ => 2,
        };
        self.statuses.lock().unwrap_or_else(PoisonError::into_inner)[route as usize][column] += 1;
    }

    fn statuses(&self, route: Route) -> [u64; 3] {
        self.statuses.lock().unwrap_or_else(PoisonError::into_inner)[route as usize]
    }
}

/// One request of the mix, by its number.
fn request(
    client: &reqwest::Client,
    addr: SocketAddr,
    n: u64,
) -> (Route, bool, reqwest::RequestBuilder) {
    let url = |path: String| format!("http://{addr}{path}");
    match n % 20 {
        0 => (
            Route::Charge,
            false,
            client.post(url(format!("/charge/c{}", n % 5))),
        ),
        1 => (
            Route::Catalogue,
            false,
            client
                .put(url(format!("/catalogue/brand{}", n % 8)))
                .body(format!("SKU-{n},1999\nSKU-{},2499\n", n + 1)),
        ),
        2 => (
            Route::Render,
            false,
            client.post(url(format!("/render/flaky-{n}"))),
        ),
        3 => (
            Route::Render,
            false,
            client.post(url(format!("/render/limited-{n}"))),
        ),
        _ => (
            Route::Render,
            true,
            client.post(url(format!("/render/job-{n}"))),
        ),
    }
}

/// Resident memory in KiB.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// The p99 of `latencies` (µs) in milliseconds; 0 for none.
fn p99_ms(mut latencies: Vec<u32>) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    latencies.sort_unstable();
    let index = (latencies.len() * 99).div_ceil(100) - 1;
    f64::from(latencies[index]) / 1000.0
}

/// One sample.
#[derive(Debug, Clone, Copy)]
struct Sample {
    secs: u64,
    rss_kib: u64,
    heap_kib: u64,
    p99_ms: f64,
}

/// The budget checks of a stats snapshot, and calls in flight against the
/// requests outstanding around it (`sent_after - done_before`).
fn stats_violations(stats: &Stats, outstanding: u64) -> Vec<String> {
    let mut out = Vec::new();
    if stats.admitted < stats.finished {
        out.push(format!(
            "admitted {} < finished {}",
            stats.admitted, stats.finished
        ));
    }
    if stats.in_flight > outstanding {
        out.push(format!(
            "{} calls in flight, {outstanding} requests outstanding",
            stats.in_flight
        ));
    }
    for r in &stats.resources {
        if r.in_use > r.capacity {
            out.push(format!("{}: {} of {} in use", r.name, r.in_use, r.capacity));
        }
        if r.queue_limit.is_some_and(|limit| r.waiting > limit) {
            out.push(format!(
                "{}: {} waiting, above its queue limit",
                r.name, r.waiting
            ));
        }
    }
    out
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match soak(&args).await {
        Ok(problems) if problems.is_empty() => {
            println!("soak: every invariant held");
            ExitCode::SUCCESS
        }
        Ok(problems) => {
            for p in &problems {
                println!("VIOLATED: {p}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn soak(args: &Args) -> Result<Vec<String>, String> {
    let backend = Backend::new(args.latency);
    let rt = service::runtime();
    let app = service::app(&rt, Arc::clone(&backend)).map_err(|e| e.to_string())?;
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
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
    let client = reqwest::Client::builder()
        .timeout(CLIENT_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let seen = Arc::new(Seen::default());

    let (samples, mut problems) = load(args, &rt, &client, addr, &seen).await;
    problems.extend(drain(&seen).await);
    let warm_up = (args.secs / 3).clamp(1, 60);
    problems.extend(end_violations(&rt.stats(), &seen, &samples, warm_up));

    let _ = stop.send(());
    match tokio::time::timeout(Duration::from_secs(60), server).await {
        Ok(Ok(Ok(()))) => {}
        other => problems.push(format!("the service did not shut down cleanly: {other:?}")),
    }
    println!("{}", rt.stats());
    Ok(problems)
}

/// Sends the mix at `args.rate` for `args.secs`, sampling every second;
/// returns the samples and what they violated.
async fn load(
    args: &Args,
    rt: &Runtime,
    client: &reqwest::Client,
    addr: SocketAddr,
    seen: &Arc<Seen>,
) -> (Vec<Sample>, Vec<String>) {
    let start = Instant::now();
    let end = start + Duration::from_secs(args.secs);
    let p99_bound = MAX_WAIT + args.latency + SLACK;
    let mut problems = Vec::new();
    let mut samples: Vec<Sample> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1) / args.rate);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut next_sample = start + Duration::from_secs(1);
    let mut n = 0_u64;
    while Instant::now() < end {
        let at = tick.tick().await;
        if at >= next_sample {
            let secs = (at - start).as_secs();
            let (sample, stats, found) = sample(rt, seen, secs, p99_bound);
            problems.extend(found.into_iter().map(|p| format!("at {secs} s: {p}")));
            report(args.plain, &sample, &stats, seen);
            samples.push(sample);
            next_sample += Duration::from_secs(1);
        }
        n += 1;
        send(request(client, addr, n), Arc::clone(seen));
    }
    if !args.plain {
        println!();
    }
    (samples, problems)
}

/// Sends one request in a task of its own and records its answer.
fn send((route, plain, builder): (Route, bool, reqwest::RequestBuilder), seen: Arc<Seen>) {
    seen.sent.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        let sent = Instant::now();
        match builder.send().await {
            Ok(response) => {
                let status = response.status();
                let _ = response.bytes().await;
                if plain {
                    let micros = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
                    seen.plain_latencies
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(micros);
                }
                seen.answered(route, status);
            }
            Err(_) => {
                seen.unanswered.fetch_add(1, Ordering::SeqCst);
            }
        }
        seen.done.fetch_add(1, Ordering::SeqCst);
    });
}

/// One sample at `secs`: the figures, the stats, and what they violate.
fn sample(
    rt: &Runtime,
    seen: &Seen,
    secs: u64,
    p99_bound: Duration,
) -> (Sample, Stats, Vec<String>) {
    // Requests answered before the snapshot, sent after it: every call in
    // flight in the snapshot belongs to a request sent and not answered.
    let done_before = seen.done.load(Ordering::SeqCst);
    let stats = rt.stats();
    let outstanding = seen.sent.load(Ordering::SeqCst) - done_before;
    let latencies = std::mem::take(
        &mut *seen
            .plain_latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    let sample = Sample {
        secs,
        rss_kib: rss_kib(),
        heap_kib: u64::try_from(HEAP.load(Ordering::Relaxed) / 1024).unwrap_or(u64::MAX),
        p99_ms: p99_ms(latencies),
    };
    let mut problems = stats_violations(&stats, outstanding);
    if sample.p99_ms > p99_bound.as_secs_f64() * 1000.0 {
        problems.push(format!(
            "p99 of plain renders {:.0} ms, above {} ms",
            sample.p99_ms,
            p99_bound.as_millis()
        ));
    }
    (sample, stats, problems)
}

/// Waits until every request is answered (or timed out by the client).
async fn drain(seen: &Seen) -> Option<String> {
    let deadline = Instant::now() + CLIENT_TIMEOUT + Duration::from_secs(5);
    while seen.done.load(Ordering::SeqCst) < seen.sent.load(Ordering::SeqCst) {
        if Instant::now() > deadline {
            return Some("requests still outstanding after the client timeout".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

fn report(plain: bool, sample: &Sample, stats: &Stats, seen: &Seen) {
    let render = stats.resource(RENDER.name()).map_or(0, |r| r.waiting);
    let [ok, throttled, other] = seen.statuses(Route::Render);
    let line = format!(
        "t={:>4}s rss={} KiB heap={} KiB in_flight={} keys={} render_waiting={} p99={:.0} ms renders 200={ok} 429={throttled} other={other}",
        sample.secs, sample.rss_kib, sample.heap_kib, stats.in_flight, stats.keys, render, sample.p99_ms
    );
    if plain {
        println!("{line}");
    } else {
        print!("\r{line}   ");
        let _ = std::io::stdout().flush();
    }
}

/// The checks once every request is answered.
fn end_violations(stats: &Stats, seen: &Seen, samples: &[Sample], warm_up: u64) -> Vec<String> {
    let mut out = Vec::new();
    if stats.in_flight != 0 || stats.keys != 0 {
        out.push(format!(
            "left after the run: {} calls in flight, {} key entries",
            stats.in_flight, stats.keys
        ));
    }
    for r in &stats.resources {
        if r.in_use != 0 || r.waiting != 0 {
            out.push(format!(
                "left after the run: {}: {} in use, {} waiting",
                r.name, r.in_use, r.waiting
            ));
        }
    }
    let unanswered = seen.unanswered.load(Ordering::SeqCst);
    if unanswered != 0 {
        out.push(format!("{unanswered} requests got no HTTP answer"));
    }
    for (route, operation) in [
        (Route::Render, "render"),
        (Route::Charge, "charge"),
        (Route::Catalogue, "replace_catalogue"),
    ] {
        let ok = seen.statuses(route)[0];
        let succeeded = stats.operation(operation).map_or(0, |o| o.succeeded);
        if ok != succeeded {
            out.push(format!(
                "{operation}: clients saw {ok} 200s, the runtime counted {succeeded} successes"
            ));
        }
    }
    let sent = seen.sent.load(Ordering::SeqCst);
    if stats.admitted + stats.refused_stopping != sent {
        out.push(format!(
            "{sent} requests, {} calls admitted or refused",
            stats.admitted + stats.refused_stopping
        ));
    }
    // Growth from the end of the warm-up to the last sample.
    let warm = samples.iter().find(|s| s.secs >= warm_up);
    if let (Some(warm), Some(last)) = (warm, samples.last()) {
        for (what, from, to) in [
            ("resident memory", warm.rss_kib, last.rss_kib),
            ("heap", warm.heap_kib, last.heap_kib),
        ] {
            let growth = (to as f64 - from as f64) / from.max(1) as f64;
            println!(
                "{what}: {from} KiB after the warm-up ({} s), {to} KiB at {} s: {:+.1} %",
                warm.secs,
                last.secs,
                growth * 100.0
            );
            if growth >= 0.05 {
                out.push(format!(
                    "{what} grew {:.1} % after the warm-up",
                    growth * 100.0
                ));
            }
        }
        let worst = samples.iter().map(|s| s.p99_ms).fold(0.0, f64::max);
        println!("p99 of plain renders per second: at most {worst:.0} ms");
    }
    out
}
