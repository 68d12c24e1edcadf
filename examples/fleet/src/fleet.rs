//! The coordinator: starts the provider in this process and the workers as
//! real OS processes (this program's binary, re-run with the `worker`
//! role), drives the run's schedule, and computes what the provider saw.
//!
//! A run has four phases of equal length: warm-up, steady (`Q`), halved
//! (`Q / 2`, from the start of the phase) and restored (`Q` again). The
//! figures of a phase are taken over its second half, once the fleet has
//! had time to adapt; the settle times measure how long that took.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use crate::provider::{self, Bin, Provider, Quota, BIN};
use crate::worker::{Mode, Tally};

/// What a run is made of.
#[derive(Debug, Clone)]
pub struct Config {
    /// The binary to start the workers from (this program's: it takes the
    /// `worker` role as its first argument).
    pub exe: PathBuf,
    /// Worker processes.
    pub workers: u32,
    /// Callers in each worker.
    pub users: u32,
    /// The provider's quota at the start.
    pub quota: Quota,
    /// The length of each of the four phases.
    pub phase: Duration,
}

impl Config {
    /// The example's fleet: 4 workers of 16 callers against `Q = 16`,
    /// `R = 400/s` (a burst of 40), 25 ms per request, phases of `phase`.
    pub fn new(exe: PathBuf, phase: Duration) -> Config {
        Config {
            exe,
            workers: 4,
            users: 16,
            quota: Quota {
                q: 16,
                rate: 400,
                burst: 40,
                service: Duration::from_millis(25),
            },
            phase,
        }
    }

    /// The bin at which phase `k` (0 to 3) starts.
    fn phase_bin(&self, k: u32) -> usize {
        usize::try_from((self.phase * k).as_nanos() / BIN.as_nanos()).unwrap_or(usize::MAX)
    }
}

/// What one fleet's run showed, from the provider's bins and the workers'
/// tallies.
#[derive(Debug, Clone)]
pub struct Report {
    /// The fleet.
    pub mode: Mode,
    /// The provider's quota at the start.
    pub quota: Quota,
    /// The length of each phase.
    pub phase: Duration,
    /// The provider's bins over the four phases.
    pub bins: Vec<Bin>,
    /// The workers' tallies, summed.
    pub tally: Tally,
    /// `200`s the provider answered during the run, drain included (to
    /// balance against `tally.ok`).
    pub provider_ok: u64,
    /// Requests the provider received during the run, drain included (to
    /// balance against `tally.attempts`).
    pub provider_requests: u64,
    /// Goodput over the second half of the steady, halved and restored
    /// phases, as a fraction of the provider's capacity then
    /// ([`Quota::capacity`]).
    pub goodput: [f64; 3],
    /// `429`s per second over the same three half-phases.
    pub throttled_per_s: [f64; 3],
    /// The mean time an admitted request held its place, in milliseconds,
    /// over the same three half-phases: with `Q` binding, the capacity the
    /// provider really had is `Q` over it.
    pub held_ms: [f64; 3],
    /// How long after `Q` was halved the `429` rate settled (`None`: not
    /// within the phase).
    pub settle_down: Option<Duration>,
    /// How long after `Q` was restored the `429` rate settled.
    pub settle_up: Option<Duration>,
    /// The most requests in flight beyond the `Q` of the moment, over bins
    /// that start at least a service time after a change of `Q` (before
    /// that, requests admitted under the old `Q` are still running).
    pub over_q: u32,
}

impl Report {
    /// Retries per first attempt (the runtime's count).
    pub fn retries_per_call(&self) -> f64 {
        ratio(self.tally.retries, self.tally.calls)
    }

    /// Requests per call as the provider counted them.
    pub fn requests_per_call(&self) -> f64 {
        let requests: u64 = self.bins.iter().map(|b| u64::from(b.requests)).sum();
        ratio(requests, self.tally.calls)
    }

    /// Calls that ended in neither a success nor a reported error.
    pub fn lost(&self) -> u64 {
        let t = &self.tally;
        t.calls.abs_diff(t.ok + t.errors) + t.unfinished
    }

    /// A summary of the figures, one line each.
    pub fn summary(&self) -> String {
        let ms = |d: Option<Duration>| {
            d.map_or_else(
                || "not settled".to_owned(),
                |d| format!("{} ms", d.as_millis()),
            )
        };
        let t = &self.tally;
        format!(
            "{} fleet ({} s phases): goodput {:.1} % / {:.1} % / {:.1} % of capacity (steady / halved / restored), \
             429s {:.0} / {:.0} / {:.0} per s, a place held {:.1} / {:.1} / {:.1} ms\n  \
             settle after halving {}, after restoring {}; in flight above Q: {}\n  \
             calls {} ok {} errors {} lost {}; attempts {} (provider {}); retries per call {:.3}, denied {}; provider 200s {}",
            self.mode.name(),
            self.phase.as_secs_f64(),
            self.goodput[0] * 100.0,
            self.goodput[1] * 100.0,
            self.goodput[2] * 100.0,
            self.throttled_per_s[0],
            self.throttled_per_s[1],
            self.throttled_per_s[2],
            self.held_ms[0],
            self.held_ms[1],
            self.held_ms[2],
            ms(self.settle_down),
            ms(self.settle_up),
            self.over_q,
            t.calls,
            t.ok,
            t.errors,
            self.lost(),
            t.attempts,
            self.provider_requests,
            self.retries_per_call(),
            t.retries_denied,
            self.provider_ok,
        )
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// A worker process and its pipes.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    async fn start(config: &Config, mode: Mode, base: &str, seed: u64) -> Result<Worker, String> {
        let mut child = Command::new(&config.exe)
            .args(["worker", "--mode", mode.name(), "--base", base])
            .args(["--users", &config.users.to_string()])
            .args(["--seed", &seed.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", config.exe.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut worker = Worker {
            child,
            stdin,
            stdout,
        };
        let line = worker.line().await?;
        if line != "ready" {
            return Err(format!("worker {seed}: expected `ready`, got `{line}`"));
        }
        Ok(worker)
    }

    async fn line(&mut self) -> Result<String, String> {
        self.stdout
            .next_line()
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "a worker ended without a word".to_owned())
    }

    async fn send(&mut self, word: &str) -> Result<(), String> {
        self.stdin
            .write_all(format!("{word}\n").as_bytes())
            .await
            .map_err(|e| e.to_string())
    }

    async fn finish(mut self) -> Result<Tally, String> {
        self.send("stop").await?;
        let tally = Tally::parse(&self.line().await?)?;
        let status = self.child.wait().await.map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("a worker exited with {status}"));
        }
        Ok(tally)
    }
}

/// Runs one fleet of `mode` through the four phases against a fresh
/// provider.
///
/// # Errors
///
/// A message when the provider cannot listen or a worker cannot start, or
/// does not follow the protocol.
pub async fn run(config: &Config, mode: Mode) -> Result<Report, String> {
    let provider = Provider::new(config.quota);
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let server = tokio::spawn(std::future::IntoFuture::into_future(axum::serve(
        listener,
        provider::app(provider.clone()),
    )));

    let mut workers = Vec::new();
    for seed in 0..config.workers {
        workers.push(Worker::start(config, mode, &base, u64::from(seed) + 1).await?);
    }
    let start = Instant::now();
    provider.start();
    for w in &mut workers {
        w.send("go").await?;
    }
    schedule(&provider, config, start).await;
    let bins = provider.bins();
    let mut tally = Tally::default();
    for w in workers {
        tally = tally.add(&w.finish().await?);
    }
    let provider_ok = provider.answered_ok();
    let provider_requests = provider.requests();
    server.abort();
    let mut report = report(config, mode, bins, tally);
    report.provider_ok = provider_ok;
    report.provider_requests = provider_requests;
    Ok(report)
}

/// Halves `Q` at the start of phase 2, restores it at phase 3, and returns
/// at the end of phase 3.
async fn schedule(provider: &Arc<Provider>, config: &Config, start: Instant) {
    tokio::time::sleep_until(start + config.phase * 2).await;
    provider.set_q(config.quota.q / 2);
    tokio::time::sleep_until(start + config.phase * 3).await;
    provider.set_q(config.quota.q);
    tokio::time::sleep_until(start + config.phase * 4).await;
}

/// The figures of a run (the provider's totals left at 0).
fn report(config: &Config, mode: Mode, mut bins: Vec<Bin>, tally: Tally) -> Report {
    let end = config.phase_bin(4);
    bins.resize(end, Bin::default());
    let quota = config.quota;
    let mut goodput = [0.0; 3];
    let mut throttled_per_s = [0.0; 3];
    let mut held_ms = [0.0; 3];
    for (i, k) in (1..4).enumerate() {
        let (from, to) = (config.phase_bin(k), config.phase_bin(k + 1));
        let half = &bins[(from + to) / 2..to];
        let secs = half.len() as f64 * BIN.as_secs_f64();
        let q = if k == 2 { quota.q / 2 } else { quota.q };
        let ok: u32 = half.iter().map(|b| b.ok).sum();
        let throttled: u32 = half.iter().map(Bin::throttled).sum();
        goodput[i] = f64::from(ok) / secs / quota.capacity(q);
        throttled_per_s[i] = f64::from(throttled) / secs;
        let held_us: u64 = half.iter().map(|b| b.held_us).sum();
        held_ms[i] = held_us as f64 / 1000.0 / f64::from(ok.max(1));
    }
    let settle = |k: u32| {
        let q = if k == 2 { quota.q / 2 } else { quota.q };
        settle_time(
            &bins[config.phase_bin(k)..config.phase_bin(k + 1)],
            quota.capacity(q),
        )
    };
    let drain =
        usize::try_from(quota.service.as_nanos().div_ceil(BIN.as_nanos())).unwrap_or(usize::MAX);
    let over_q = bins
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            [config.phase_bin(2), config.phase_bin(3)]
                .iter()
                .all(|&change| !(change..=change + drain).contains(i))
        })
        .map(|(_, b)| b.peak_in_flight.saturating_sub(b.q))
        .max()
        .unwrap_or(0);
    let (settle_down, settle_up) = (settle(2), settle(3));
    Report {
        mode,
        quota,
        phase: config.phase,
        bins,
        tally,
        provider_ok: 0,
        provider_requests: 0,
        goodput,
        throttled_per_s,
        held_ms,
        settle_down,
        settle_up,
        over_q,
    }
}

/// Bins in the moving average that smooths the `429` rate: one second, the
/// provider's `Retry-After`, so that a fleet coming back in waves reads as
/// its average rate.
pub const SMOOTHING: usize = 10;

/// The `429` rate per second over the last [`SMOOTHING`] bins of `bins` up
/// to each bin (fewer at the start).
pub fn smoothed(bins: &[Bin], value: impl Fn(&Bin) -> u32) -> Vec<f64> {
    (0..bins.len())
        .map(|i| {
            let window = &bins[i.saturating_sub(SMOOTHING - 1)..=i];
            let sum: u32 = window.iter().map(&value).sum();
            f64::from(sum) / (window.len() as f64 * BIN.as_secs_f64())
        })
        .collect()
}

/// How long after the start of `phase` (its bins) the `429` rate settled:
/// the end of the first bin from which the smoothed rate stays within a
/// band around the rate of the phase's second half — ±10 % of the
/// provider's `capacity` or ±20 % of that rate, whichever is wider — to
/// the end of the phase. `None` when the last bin is outside the band.
pub fn settle_time(phase: &[Bin], capacity: f64) -> Option<Duration> {
    let rates = smoothed(phase, Bin::throttled);
    let half = &phase[phase.len() / 2..];
    let level = f64::from(half.iter().map(Bin::throttled).sum::<u32>())
        / (half.len() as f64 * BIN.as_secs_f64());
    let band = (0.1 * capacity).max(0.2 * level);
    let outside = rates.iter().rposition(|r| (r - level).abs() > band);
    match outside {
        None => Some(BIN),
        Some(i) if i + 1 == rates.len() => None,
        Some(i) => Some(BIN * u32::try_from(i + 2).unwrap_or(u32::MAX)),
    }
}
