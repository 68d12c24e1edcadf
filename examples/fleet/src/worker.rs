//! One worker process: its own herta runtime, `users` tasks calling the
//! provider in a closed loop (each starts its next call when the last one
//! ended), until told to stop.
//!
//! The worker speaks to the coordinator over its stdin and stdout, one line
//! each way at a time: it prints `ready` once it can call, starts on `go`,
//! stops on `stop` (or when stdin closes), and prints one `result …` line
//! ([`Tally`]) before it exits.
//!
//! Two fleets, the same calls, different contracts:
//!
//! - **cooperative** ([`cooperative`]): retries a `429` with capped
//!   exponential backoff and full jitter, never sooner than the provider's
//!   `Retry-After` and spread above it ([`spread`]), and under the runtime's [`RetryBudget`] (retries at
//!   most [`RETRY_RATIO`] of first attempts, plus a reserve of one per
//!   second); when the budget is empty the call ends with the `429` at once,
//!   and the caller waits out its hint before its next call;
//! - **naive** ([`naive`]): retries a `429` at once, up to 100 attempts,
//!   ignoring `Retry-After`, with no retry budget — what a client does with
//!   a retry loop and no manners (it has to call the `429` a plain failure:
//!   herta does not retry `Throttled` without a delay).
//!
//! Both keep at most [`PROVIDER`]'s 4 requests of this process at the
//! provider at once (`Q / 4` of the starting quota: the worker's share);
//! a user waiting for a place holds nothing.

use std::time::{Duration, SystemTime};

use herta::{RetryBudget, Runtime};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::watch;
use tokio::task::JoinSet;

herta::resources! {
    /// This worker's requests at the provider at once.
    pub PROVIDER: "provider" = 4;
}

/// The cooperative fleet's retry budget ratio: retries per first attempt.
pub const RETRY_RATIO: f32 = 0.2;
/// The cooperative fleet's retries allowed per second whatever the traffic.
pub const RETRY_MIN_PER_SECOND: u32 = 1;
/// The cooperative fleet's retry budget window.
pub const RETRY_WINDOW: Duration = Duration::from_secs(10);

/// Why one request to the provider failed.
#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum CallError {
    /// `429 Too Many Requests`, with the provider's `Retry-After`.
    #[outcome(Throttled)]
    #[error("the provider answered 429")]
    Throttled {
        /// How long the provider asked to wait.
        #[retry_after]
        retry_after: Option<Duration>,
    },
    /// Another status, or no answer (a refused or broken connection).
    #[outcome(Transient)]
    #[error("the provider failed: {0}")]
    Failed(String),
}

/// One request: `GET {url}`; `200` is a success, `429` [`CallError::Throttled`]
/// (with its `Retry-After`, [`spread`], when `hint`), anything else
/// [`CallError::Failed`].
/// The body is read, so that the connection goes back to the pool.
async fn request(client: &reqwest::Client, url: &str, hint: bool) -> Result<(), CallError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| CallError::Failed(e.to_string()))?;
    let status = response.status();
    let retry_after = hint
        .then(|| herta::http::retry_after(response.headers(), SystemTime::now()))
        .flatten()
        .map(spread);
    // Read the body, so the connection goes back to the pool.
    let _ = response.bytes().await;
    match status.as_u16() {
        200 => Ok(()),
        429 => Err(CallError::Throttled { retry_after }),
        other => Err(CallError::Failed(format!("status {other}"))),
    }
}

/// The provider's `Retry-After` plus a uniform draw from `[0, hint / 2)`.
///
/// The provider gives every refused request the same hint (`1`: HTTP's
/// whole seconds), and herta sleeps `max(hint, backoff delay)`: callers
/// refused together would all come back together, one second later, and be
/// refused together again — a fleet in lockstep. Spreading each hint by up
/// to half of it breaks the lockstep while never retrying sooner than the
/// provider asked. The draws come from this thread's generator, seeded per
/// worker ([`run`]).
pub fn spread(hint: Duration) -> Duration {
    hint + hint.mul_f64(fastrand::f64() / 2.0)
}

/// A call of the cooperative fleet: backoff with full jitter from 50 ms up
/// to 2 s, at least the provider's `Retry-After`, 4 attempts at most, and
/// the runtime's retry budget.
#[herta::operation(effect = Idempotent, resources(PROVIDER = 1), admission = Wait,
                   retry(on = [Transient, Throttled], max = 4,
                         backoff(base = "50ms", cap = "2s", jitter = Full)),
                   timeout = "5s")]
pub async fn cooperative(client: reqwest::Client, url: String) -> Result<(), CallError> {
    request(&client, &url, true).await
}

/// A call of the naive fleet: up to 100 attempts, each at once after the
/// last failure. herta refuses to retry `Throttled` without a delay
/// (contract rule: it only adds load to what refused it), so the naive
/// client does what clients without manners do: it takes a `429` for any
/// failure (`Transient`, the `Retry-After` dropped) and retries it at once.
#[herta::operation(effect = Idempotent, resources(PROVIDER = 1), admission = Wait,
                   retry(on = Transient, max = 100),
                   timeout = "5s")]
pub async fn naive(client: reqwest::Client, url: String) -> Result<(), CallError> {
    match request(&client, &url, false).await {
        Err(CallError::Throttled { .. }) => Err(CallError::Failed("status 429".to_owned())),
        other => other,
    }
}

/// Which fleet a worker belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Backoff with jitter, `Retry-After`, a retry budget.
    Cooperative,
    /// Immediate retries, no budget.
    Naive,
}

impl Mode {
    /// The name on the command line: `cooperative` or `naive`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cooperative => "cooperative",
            Mode::Naive => "naive",
        }
    }

    /// The mode named `name`, if any.
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "cooperative" => Some(Mode::Cooperative),
            "naive" => Some(Mode::Naive),
            _ => None,
        }
    }
}

/// What one worker counted, as printed on its `result` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Calls started (first attempts).
    pub calls: u64,
    /// Calls that ended in a `200`.
    pub ok: u64,
    /// Calls that ended with a reported error (a `429` kept, a failure, a
    /// `Stopping` at the end of the run).
    pub errors: u64,
    /// Attempts made (requests sent), from the runtime's stats.
    pub attempts: u64,
    /// Retries made, from the runtime's stats.
    pub retries: u64,
    /// Retries the retry budget refused.
    pub retries_denied: u64,
    /// The runtime's `admitted - finished` after the run: calls unaccounted for.
    pub unfinished: u64,
}

impl Tally {
    /// The `result …` line.
    pub fn line(&self) -> String {
        format!(
            "result calls={} ok={} errors={} attempts={} retries={} denied={} unfinished={}",
            self.calls,
            self.ok,
            self.errors,
            self.attempts,
            self.retries,
            self.retries_denied,
            self.unfinished
        )
    }

    /// Parses a `result …` line.
    ///
    /// # Errors
    ///
    /// The line, when it is not one.
    pub fn parse(line: &str) -> Result<Tally, String> {
        let bad = || format!("not a result line: `{line}`");
        let rest = line.strip_prefix("result ").ok_or_else(bad)?;
        let mut tally = Tally::default();
        for field in rest.split_whitespace() {
            let (name, value) = field.split_once('=').ok_or_else(bad)?;
            let value: u64 = value.parse().map_err(|_| bad())?;
            let slot = match name {
                "calls" => &mut tally.calls,
                "ok" => &mut tally.ok,
                "errors" => &mut tally.errors,
                "attempts" => &mut tally.attempts,
                "retries" => &mut tally.retries,
                "denied" => &mut tally.retries_denied,
                "unfinished" => &mut tally.unfinished,
                _ => return Err(bad()),
            };
            *slot = value;
        }
        Ok(tally)
    }

    /// The sum of two tallies.
    pub fn add(&self, other: &Tally) -> Tally {
        Tally {
            calls: self.calls + other.calls,
            ok: self.ok + other.ok,
            errors: self.errors + other.errors,
            attempts: self.attempts + other.attempts,
            retries: self.retries + other.retries,
            retries_denied: self.retries_denied + other.retries_denied,
            unfinished: self.unfinished + other.unfinished,
        }
    }
}

/// The worker's runtime: [`PROVIDER`], and for the cooperative fleet the
/// retry budget.
fn runtime(mode: Mode, seed: u64) -> Runtime {
    let builder = Runtime::builder().resource(PROVIDER).jitter_seed(seed);
    let builder = match mode {
        Mode::Cooperative => builder.retry_budget(
            RetryBudget::new()
                .ratio(RETRY_RATIO)
                .min_per_second(RETRY_MIN_PER_SECOND)
                .window(RETRY_WINDOW),
        ),
        Mode::Naive => builder,
    };
    builder.build().expect("one resource, with room")
}

/// Runs a worker of `mode` against `base` (`http://127.0.0.1:port`) with
/// `users` callers, speaking the line protocol of the module doc on stdin
/// and stdout; `seed` seeds the backoff jitter (one per worker, so that
/// workers do not draw the same delays).
///
/// # Errors
///
/// A message when stdin or stdout fails.
pub async fn run(mode: Mode, base: &str, users: u32, seed: u64) -> Result<Tally, String> {
    let rt = runtime(mode, seed);
    fastrand::seed(seed);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::try_from(PROVIDER.capacity()).unwrap_or(4) * 2)
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!("{base}/work");
    let cooperative = Cooperative::bind(&rt).expect("the runtime declares `provider`");
    let naive = Naive::bind(&rt).expect("the runtime declares `provider`");

    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    println!("ready");
    match stdin.next_line().await.map_err(|e| e.to_string())? {
        Some(line) if line.trim() == "go" => {}
        other => return Err(format!("expected `go`, got {other:?}")),
    }

    let (stop_tx, stop) = watch::channel(false);
    let mut users_set = JoinSet::new();
    for _ in 0..users {
        let (client, url, mut stop) = (client.clone(), url.clone(), stop.clone());
        let (cooperative, naive) = (cooperative.clone(), naive.clone());
        users_set.spawn(async move {
            let mut tally = Tally::default();
            while !*stop.borrow_and_update() {
                tally.calls += 1;
                let result = match mode {
                    Mode::Cooperative => cooperative.call(client.clone(), url.clone()).await,
                    Mode::Naive => naive.call(client.clone(), url.clone()).await,
                };
                match result {
                    Ok(()) => tally.ok += 1,
                    Err(err) => {
                        tally.errors += 1;
                        // A cooperative caller whose call ended with the
                        // provider's hint (its retries spent, or refused by
                        // the retry budget) waits it out before its next
                        // call: a new call at once would be a retry by
                        // another name.
                        if let (Mode::Cooperative, Some(hint)) = (mode, err.retry_after()) {
                            tokio::select! {
                                () = tokio::time::sleep(hint) => {}
                                _ = stop.changed() => {}
                            }
                        }
                    }
                }
            }
            tally
        });
    }
    drop(stop);

    // `stop`, or stdin closed: stop starting calls, end backoff sleeps and
    // queued calls (they report their error), let running attempts finish.
    let _ = stdin.next_line().await;
    let _ = stop_tx.send(true);
    rt.close();
    let mut tally = Tally::default();
    while let Some(user) = users_set.join_next().await {
        tally = tally.add(&user.map_err(|e| e.to_string())?);
    }
    rt.shutdown().await;
    let stats = rt.stats();
    tally.attempts = stats.started + stats.retried;
    tally.retries = stats.retried;
    tally.retries_denied = stats.retries_denied;
    tally.unfinished = stats.admitted - stats.finished;
    Ok(tally)
}
