//! Random schedules (RELIABILITY.md §3): proptest generates programs — calls
//! over eight operations that cover the contract combinations, each with a
//! key, a start time, a handler script per attempt (succeed, fail
//! Transient / Uncertain / Permanent / Throttled / "Success", take a while,
//! outlive the timeout, panic), maybe a cancellation time — and maybe a
//! shutdown time. Each program runs on a current-thread tokio runtime with
//! a paused clock (deterministic, no real sleeps), and after it:
//!
//! * capacity was never exceeded, measured inside the handlers;
//! * no key ran twice at once (per key space: own or shared scope),
//!   measured inside the handlers;
//! * no retry the effect × outcome table forbids (an oracle written here,
//!   independently of `herta_contract`), none after a panic, attempt numbers
//!   consecutive and within `max`, and no call stopped retrying early;
//! * every call resolved (a hang fails with the program and the stats), and
//!   its result agrees with what its attempts did (value, outcome, attempt
//!   count, error payload, panic payload; `Throttled` only for `Reject`,
//!   `Stopping` only after shutdown began);
//! * the stats agree with the calls: `admitted == finished`,
//!   `started <= admitted`, and started, retried, timed out, cancelled,
//!   panicked, throttled and rejected each equal what the program observed;
//! * shutdown returned only once nothing was in flight; every budget free,
//!   no key left, nothing in flight at the end.
//!
//! `PROPTEST_CASES` sets the number of programs (default 1000; CI uses the
//! default). Seeds that fail are shrunk by proptest, persisted under
//! `tests/proptest-regressions/`, and turned into the `regression_*` tests
//! at the end of this file.

use crate::common;

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{panic_message, quiet_deliberate_panics, DELIBERATE};
use futures_util::FutureExt;
use herta::{
    Admission, Busy, Context, Contract, Effect, Error, Failure, Outcome, Resource, Runtime,
};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// The operations: eight contracts over three budgets.

const RESOURCES: [Resource; 3] = [
    Resource::new("r1", 3),
    Resource::new("r2", 2),
    Resource::new("r3", 4),
];

/// What a handler returns on failure: which call and attempt it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tag {
    call: usize,
    attempt: u32,
}

type Reply = Result<u32, Failure<Tag>>;
type CallResult = Result<u32, Error<Failure<Tag>>>;

#[herta::operation(effect = Pure, resources("r1" = 1),
                   retry(on = [Transient, Uncertain], max = 3), timeout = "50ms")]
async fn pure_retry(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(PureRetry::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = Idempotent, resources("r1" = 2, "r2" = 1), serialize_by = key,
                   retry(on = Transient, max = 4), timeout = "30ms")]
async fn idem_keyed(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(IdemKeyed::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = NonIdempotent, resources("r2" = 1), admission = Reject,
                   retry(on = Transient, max = 3), timeout = "40ms")]
async fn nonidem_reject(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(NonidemReject::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = NonIdempotent, resources("r3" = 3, "r1" = 1), serialize_by = key)]
async fn nonidem_keyed(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(NonidemKeyed::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = Idempotent, resources("r3" = 1), admission = Reject,
                   serialize_by = key, retry(on = [Transient, Uncertain], max = 2),
                   timeout = "20ms")]
async fn idem_reject_keyed(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(IdemRejectKeyed::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = Pure, resources("r1" = 3, "r2" = 2, "r3" = 4),
                   retry(on = Uncertain, max = 2), timeout = "60ms")]
async fn pure_all(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(PureAll::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = Idempotent, resources("r2" = 1),
                   serialize_by(key, scope = "shared"), retry(on = Uncertain, max = 3),
                   timeout = "25ms")]
async fn scoped_wait(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(ScopedWait::CONTRACT, ctx, key, call).await
}

#[herta::operation(effect = NonIdempotent, resources("r3" = 2), admission = Reject,
                   serialize_by(key, scope = "shared"), timeout = "35ms")]
async fn scoped_reject(ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    act(ScopedReject::CONTRACT, ctx, key, call).await
}

const CONTRACTS: [Contract; 8] = [
    PureRetry::CONTRACT,
    IdemKeyed::CONTRACT,
    NonidemReject::CONTRACT,
    NonidemKeyed::CONTRACT,
    IdemRejectKeyed::CONTRACT,
    PureAll::CONTRACT,
    ScopedWait::CONTRACT,
    ScopedReject::CONTRACT,
];

#[derive(Clone)]
struct Ops {
    pure_retry: PureRetry,
    idem_keyed: IdemKeyed,
    nonidem_reject: NonidemReject,
    nonidem_keyed: NonidemKeyed,
    idem_reject_keyed: IdemRejectKeyed,
    pure_all: PureAll,
    scoped_wait: ScopedWait,
    scoped_reject: ScopedReject,
}

type CallFuture<'a> = Pin<Box<dyn Future<Output = CallResult> + Send + 'a>>;

impl Ops {
    fn bind(rt: &Runtime) -> Ops {
        Ops {
            pure_retry: PureRetry::bind(rt).unwrap(),
            idem_keyed: IdemKeyed::bind(rt).unwrap(),
            nonidem_reject: NonidemReject::bind(rt).unwrap(),
            nonidem_keyed: NonidemKeyed::bind(rt).unwrap(),
            idem_reject_keyed: IdemRejectKeyed::bind(rt).unwrap(),
            pure_all: PureAll::bind(rt).unwrap(),
            scoped_wait: ScopedWait::bind(rt).unwrap(),
            scoped_reject: ScopedReject::bind(rt).unwrap(),
        }
    }

    fn call(&self, op: usize, key: u8, call: Arc<CallCtx>) -> CallFuture<'_> {
        match op {
            0 => Box::pin(self.pure_retry.call(key, call)),
            1 => Box::pin(self.idem_keyed.call(key, call)),
            2 => Box::pin(self.nonidem_reject.call(key, call)),
            3 => Box::pin(self.nonidem_keyed.call(key, call)),
            4 => Box::pin(self.idem_reject_keyed.call(key, call)),
            5 => Box::pin(self.pure_all.call(key, call)),
            6 => Box::pin(self.scoped_wait.call(key, call)),
            7 => Box::pin(self.scoped_reject.call(key, call)),
            _ => unreachable!("eight operations"),
        }
    }
}

// ---------------------------------------------------------------------------
// Programs.

/// What one attempt's handler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Succeed after this many milliseconds.
    Ok(u16),
    /// Fail with this outcome after this many milliseconds.
    Fail(Outcome, u16),
    /// Sleep 10 s: outlives every timeout (and ends `Ok` where there is none).
    Outlive,
    /// Panic at once.
    Panic,
}

#[derive(Debug, Clone)]
struct CallSpec {
    op: usize,
    key: u8,
    /// Milliseconds after the program starts.
    start: u16,
    /// Drop the call this many milliseconds after it started.
    cancel_after: Option<u16>,
    /// Attempt `n` runs `steps[n - 1]` (`Ok(0)` past the end).
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Program {
    calls: Vec<CallSpec>,
    /// Milliseconds after the start; `None`: shut down after every call.
    shutdown_at: Option<u16>,
}

fn step() -> impl Strategy<Value = Step> {
    let outcome = prop_oneof![
        4 => Just(Outcome::Transient),
        3 => Just(Outcome::Uncertain),
        2 => Just(Outcome::Permanent),
        1 => Just(Outcome::Throttled),
        1 => Just(Outcome::Success),
    ];
    let ms = prop_oneof![2 => Just(0u16), 5 => (0u16..14).prop_map(|t| t * 5)];
    prop_oneof![
        6 => ms.clone().prop_map(Step::Ok),
        6 => (outcome, ms).prop_map(|(o, t)| Step::Fail(o, t)),
        2 => Just(Step::Outlive),
        1 => Just(Step::Panic),
    ]
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        0..CONTRACTS.len(),
        0u8..4,
        (0u16..20).prop_map(|t| t * 5),
        prop::option::weighted(0.2, (0u16..30).prop_map(|t| t * 5)),
        prop::collection::vec(step(), 1..=4),
    )
        .prop_map(|(op, key, start, cancel_after, steps)| CallSpec {
            op,
            key,
            start,
            cancel_after,
            steps,
        })
}

fn program() -> impl Strategy<Value = Program> {
    (
        prop::collection::vec(call_spec(), 1..24),
        prop::option::weighted(0.4, (0u16..40).prop_map(|t| t * 5)),
    )
        .prop_map(|(calls, shutdown_at)| Program { calls, shutdown_at })
}

// ---------------------------------------------------------------------------
// The monitor: handlers report into it; it checks as they go.

/// How an attempt ended, as its handler saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Running,
    Ok,
    Failed(Outcome),
    Panicked,
    /// Dropped before it ended: a timeout, or the caller's cancellation.
    Dropped,
}

struct CallCtx {
    id: usize,
    steps: Vec<Step>,
    monitor: Arc<Monitor>,
}

#[derive(Default)]
struct Monitor {
    state: Mutex<MonitorState>,
}

#[derive(Default)]
struct MonitorState {
    capacity: HashMap<&'static str, u32>,
    in_use: HashMap<&'static str, u32>,
    peak: HashMap<&'static str, u32>,
    /// (key space, key) → the call running it.
    keys: HashMap<(String, u8), usize>,
    /// Per call, every attempt's end, in order.
    attempts: Vec<Vec<End>>,
    /// Calls the test has dropped.
    cancelled: Vec<bool>,
    violations: Vec<String>,
}

/// The independent oracle: may an attempt of `effect` that ended with
/// `outcome` be retried, given the outcomes the contract lists?
fn may_retry(contract: &Contract, outcome: Outcome) -> bool {
    let safe = match outcome {
        Outcome::Transient => true,
        Outcome::Uncertain => contract.effect() != Effect::NonIdempotent,
        _ => false,
    };
    safe && contract.retry_on().contains(&outcome)
}

/// What a timeout means for `effect` (DESIGN §3 Timeout).
fn timeout_outcome(effect: Effect) -> Outcome {
    match effect {
        Effect::NonIdempotent => Outcome::Uncertain,
        _ => Outcome::Transient,
    }
}

/// The outcome an attempt's end counts as, for the retry decision.
fn end_outcome(contract: &Contract, end: End) -> Option<Outcome> {
    match end {
        End::Failed(o) => Some(o),
        End::Dropped => Some(timeout_outcome(contract.effect())),
        End::Running | End::Ok | End::Panicked => None,
    }
}

fn key_space(contract: &Contract) -> Option<String> {
    let spec = contract.serialize_by()?;
    Some(match spec.scope() {
        Some(scope) => format!("scope:{scope}"),
        None => format!("op:{}", contract.operation()),
    })
}

impl Monitor {
    fn new(calls: usize) -> Arc<Monitor> {
        let mut state = MonitorState {
            attempts: vec![Vec::new(); calls],
            cancelled: vec![false; calls],
            ..MonitorState::default()
        };
        for r in RESOURCES {
            state.capacity.insert(r.name(), r.capacity());
            state.in_use.insert(r.name(), 0);
            state.peak.insert(r.name(), 0);
        }
        Arc::new(Monitor {
            state: Mutex::new(state),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MonitorState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An attempt begins: checks capacity, key exclusivity and the retry rules.
    fn enter(self: &Arc<Self>, contract: Contract, ctx: &Context, key: u8, id: usize) -> Attempt {
        let mut s = self.lock();
        let op = contract.operation();
        let attempt = ctx.attempt();
        let mut violations = Vec::new();
        for used in contract.resources() {
            let name = used.resource();
            let now = s.in_use[name] + used.units();
            s.in_use.insert(name, now);
            let peak = s.peak[name].max(now);
            s.peak.insert(name, peak);
            if now > s.capacity[name] {
                violations.push(format!(
                    "capacity: {now} units of `{name}` in handlers (capacity {}), call {id} ({op}) entering",
                    s.capacity[name]
                ));
            }
        }
        let space = key_space(&contract);
        if let Some(space) = &space {
            if let Some(other) = s.keys.insert((space.clone(), key), id) {
                violations.push(format!(
                    "key {key} in {space} run by calls {other} and {id} ({op}) at once"
                ));
            }
        }
        if s.cancelled[id] {
            violations.push(format!(
                "call {id} ({op}) started attempt {attempt} after it was dropped"
            ));
        }
        let previous = s.attempts[id].clone();
        if attempt as usize != previous.len() + 1 {
            violations.push(format!(
                "call {id} ({op}): attempt number {attempt} after {} attempts",
                previous.len()
            ));
        }
        if ctx.max_attempts() != contract.max_attempts() || attempt > contract.max_attempts() {
            violations.push(format!(
                "call {id} ({op}): attempt {attempt} of {} (contract max {})",
                ctx.max_attempts(),
                contract.max_attempts()
            ));
        }
        if let Some(&last) = previous.last() {
            let allowed = match end_outcome(&contract, last) {
                Some(o) => {
                    may_retry(&contract, o)
                        && (last != End::Dropped || contract.timeout().is_some())
                }
                None => false,
            };
            if !allowed {
                violations.push(format!(
                    "call {id} ({op}, {:?}, retry on {:?}): attempt {attempt} after attempt {} ended {last:?}",
                    contract.effect(),
                    contract.retry_on(),
                    previous.len()
                ));
            }
        }
        if ctx.operation() != op {
            violations.push(format!(
                "call {id}: context names `{}`, not `{op}`",
                ctx.operation()
            ));
        }
        s.attempts[id].push(End::Running);
        s.violations.extend(violations);
        Attempt {
            monitor: Arc::clone(self),
            contract,
            key: space.map(|space| (space, key)),
            id,
        }
    }
}

/// One attempt inside its handler; dropping it leaves the handler.
struct Attempt {
    monitor: Arc<Monitor>,
    contract: Contract,
    key: Option<(String, u8)>,
    id: usize,
}

impl Attempt {
    fn end(&self, end: End) {
        let mut s = self.monitor.lock();
        *s.attempts[self.id].last_mut().expect("entered") = end;
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        let mut s = self.monitor.lock();
        for used in self.contract.resources() {
            let now = s.in_use[used.resource()] - used.units();
            s.in_use.insert(used.resource(), now);
        }
        if let Some(key) = self.key.take() {
            if s.keys.remove(&key) != Some(self.id) {
                s.violations
                    .push(format!("call {}: key {key:?} was not its own", self.id));
            }
        }
        let last = s.attempts[self.id].last_mut().expect("entered");
        if *last == End::Running {
            *last = End::Dropped;
        }
    }
}

async fn act(contract: Contract, ctx: Context, key: u8, call: Arc<CallCtx>) -> Reply {
    let attempt = ctx.attempt();
    let guard = call.monitor.enter(contract, &ctx, key, call.id);
    let step = call
        .steps
        .get(attempt as usize - 1)
        .copied()
        .unwrap_or(Step::Ok(0));
    let nap = |ms: u16| async move {
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms.into())).await;
        }
    };
    match step {
        Step::Ok(ms) => {
            nap(ms).await;
            guard.end(End::Ok);
            Ok(call.id as u32)
        }
        Step::Fail(outcome, ms) => {
            nap(ms).await;
            let outcome_seen = match outcome {
                Outcome::Success => Outcome::Permanent, // normalized (DESIGN §2)
                other => other,
            };
            guard.end(End::Failed(outcome_seen));
            Err(Failure::new(
                outcome,
                Tag {
                    call: call.id,
                    attempt,
                },
            ))
        }
        Step::Outlive => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            guard.end(End::Ok);
            Ok(call.id as u32)
        }
        Step::Panic => {
            guard.end(End::Panicked);
            panic!("{DELIBERATE}: call {} attempt {attempt}", call.id);
        }
    }
}

// ---------------------------------------------------------------------------
// Running a program and checking it.

/// How a call ended, as its caller saw it.
#[derive(Debug)]
enum Seen {
    Returned(CallResult),
    Panicked(String),
    Cancelled,
}

/// Runs `program` on a fresh paused-clock runtime; `Err` lists what broke.
fn run_program(program: &Program) -> Result<(), String> {
    quiet_deliberate_panics();
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime");
    tokio_rt.block_on(run(program))
}

async fn run(program: &Program) -> Result<(), String> {
    let rt = RESOURCES
        .iter()
        .fold(Runtime::builder(), |b, r| b.resource(*r))
        .build()
        .unwrap();
    let ops = Arc::new(Ops::bind(&rt));
    let monitor = Monitor::new(program.calls.len());
    let stopping = Arc::new(AtomicBool::new(false));

    let tasks: Vec<_> = program
        .calls
        .iter()
        .enumerate()
        .map(|(id, spec)| {
            let (ops, monitor, stopping) = (ops.clone(), monitor.clone(), stopping.clone());
            let spec = spec.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(spec.start.into())).await;
                let call = Arc::new(CallCtx {
                    id,
                    steps: spec.steps.clone(),
                    monitor: monitor.clone(),
                });
                let fut = AssertUnwindSafe(ops.call(spec.op, spec.key, call)).catch_unwind();
                let outcome = match spec.cancel_after {
                    None => Some(fut.await),
                    Some(ms) => {
                        let limit = Duration::from_millis(ms.into());
                        let r = tokio::time::timeout(limit, fut).await.ok();
                        if r.is_none() {
                            monitor.lock().cancelled[id] = true;
                        }
                        r
                    }
                };
                let seen = match outcome {
                    None => Seen::Cancelled,
                    Some(Ok(result)) => Seen::Returned(result),
                    Some(Err(payload)) => Seen::Panicked(panic_message(&*payload)),
                };
                // Whether shutdown had begun when the call resolved.
                (seen, stopping.load(Ordering::SeqCst))
            })
        })
        .collect();

    let shutdown = program.shutdown_at.map(|ms| {
        let (rt, stopping) = (rt.clone(), stopping.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms.into())).await;
            stopping.store(true, Ordering::SeqCst);
            rt.shutdown().await;
            // Shutdown returns only once every admitted call has finished.
            // (Not `in_flight`: a call being refused at the closed gate is
            // counted in it for an instant.)
            let s = rt.stats();
            s.admitted - s.finished
        })
    });

    // Generous: the longest program needs well under an hour of (paused,
    // instantly advancing) tokio time; a hang idles the runtime, the clock
    // jumps, and this fires at once.
    let bound = Duration::from_secs(24 * 3600);
    let joined = tokio::time::timeout(bound, async {
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(task.await.expect("call tasks catch panics"));
        }
        let left = match shutdown {
            Some(shutdown) => shutdown.await.expect("shutdown task"),
            None => 0,
        };
        (seen, left)
    })
    .await;
    let (seen, left_at_shutdown) = match joined {
        Ok(joined) => joined,
        Err(_) => {
            return Err(format!(
                "hang: calls or shutdown unresolved after {bound:?} of tokio time\nstats: {}",
                rt.stats()
            ))
        }
    };
    stopping.store(true, Ordering::SeqCst);
    if tokio::time::timeout(bound, rt.shutdown()).await.is_err() {
        return Err(format!(
            "hang: final shutdown never drained\nstats: {}",
            rt.stats()
        ));
    }

    let m = monitor.lock();
    tally(program, &seen, &m);
    let mut problems = m.violations.clone();
    if left_at_shutdown != 0 {
        problems.push(format!(
            "shutdown returned with {left_at_shutdown} admitted calls unfinished"
        ));
    }
    check_calls(program, &seen, &m, &mut problems);
    check_stats(program, &rt, &seen, &m, &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} problem(s):\n  {}\nstats: {}\ncalls: {seen:#?}\nattempts: {:?}",
            problems.len(),
            problems.join("\n  "),
            rt.stats(),
            m.attempts
        ))
    }
}

fn check_calls(
    program: &Program,
    seen: &[(Seen, bool)],
    m: &MonitorState,
    problems: &mut Vec<String>,
) {
    for (id, ((seen, stopping), spec)) in seen.iter().zip(&program.calls).enumerate() {
        let contract = CONTRACTS[spec.op];
        let op = contract.operation();
        let attempts = &m.attempts[id];
        let n = attempts.len() as u32;
        let last = attempts.last().copied();
        let mut bad = |what: String| problems.push(format!("call {id} ({op}): {what}; {seen:?}"));
        if n > contract.max_attempts() {
            bad(format!("{n} attempts, max {}", contract.max_attempts()));
        }
        // A call that ended with a retryable outcome and attempts to spare
        // must have been retried — unless shutdown had begun: no new attempt
        // starts once the runtime is closed.
        let stopped_early =
            |o: Outcome| n < contract.max_attempts() && may_retry(&contract, o) && !*stopping;
        match seen {
            Seen::Cancelled => {
                if spec.cancel_after.is_none() {
                    bad("cancelled but never dropped".into());
                }
                if attempts.contains(&End::Running) {
                    bad("an attempt still running after the call was dropped".into());
                }
            }
            Seen::Panicked(message) => {
                let expected = format!("{DELIBERATE}: call {id} attempt {n}");
                if last != Some(End::Panicked) || *message != expected {
                    bad(format!(
                        "panic {message:?}, expected {expected:?} from the last attempt"
                    ));
                }
            }
            Seen::Returned(Ok(value)) => {
                if last != Some(End::Ok) || *value != id as u32 {
                    bad(format!("Ok({value}) but the last attempt ended {last:?}"));
                }
            }
            Seen::Returned(Err(err)) => match err {
                Error::Failed {
                    outcome,
                    attempts: reported,
                    source,
                    ..
                } => {
                    if *reported != n || last != Some(End::Failed(*outcome)) {
                        bad(format!(
                            "Failed after {reported}, the handler saw {attempts:?}"
                        ));
                    }
                    if source.error()
                        != &(Tag {
                            call: id,
                            attempt: n,
                        })
                    {
                        bad(format!(
                            "Failed carries {:?}, not its last attempt's error",
                            source.error()
                        ));
                    }
                    if stopped_early(*outcome) {
                        bad(format!(
                            "gave up on a retryable {outcome} after {n} attempts"
                        ));
                    }
                }
                Error::TimedOut {
                    outcome,
                    attempts: reported,
                    timeout,
                    ..
                } => {
                    let expected = timeout_outcome(contract.effect());
                    if *reported != n || last != Some(End::Dropped) || *outcome != expected {
                        bad(format!("TimedOut {outcome} after {reported}, expected {expected}; attempts {attempts:?}"));
                    }
                    if Some(*timeout) != contract.timeout() {
                        bad(format!("TimedOut reports {timeout:?}"));
                    }
                    if stopped_early(*outcome) {
                        bad(format!("gave up on a retryable timeout after {n} attempts"));
                    }
                }
                Error::Throttled { busy, .. } => {
                    if contract.admission() != Admission::Reject || n != 0 {
                        bad("Throttled: only a Reject call that ran nothing may be".into());
                    }
                    let named = match busy {
                        Busy::Resource { resource } => contract
                            .resources()
                            .iter()
                            .any(|r| r.resource() == *resource),
                        Busy::Key { parameter, value } => {
                            contract
                                .serialize_by()
                                .is_some_and(|k| k.parameter() == *parameter)
                                && value.is_none()
                        }
                        _ => false,
                    };
                    if !named {
                        bad(format!("Throttled names {busy:?}"));
                    }
                }
                Error::Stopping { .. } => {
                    if !stopping || n != 0 {
                        bad("Stopping before shutdown began, or after an attempt ran".into());
                    }
                }
                other => bad(format!("unexpected error {other:?}")),
            },
        }
        if !matches!(seen, Seen::Cancelled) && attempts.contains(&End::Running) {
            bad(format!("an attempt never ended: {attempts:?}"));
        }
    }
}

fn check_stats(
    program: &Program,
    rt: &Runtime,
    seen: &[(Seen, bool)],
    m: &MonitorState,
    problems: &mut Vec<String>,
) {
    let s = rt.stats();
    let count = |f: &dyn Fn(&Seen) -> bool| seen.iter().filter(|(x, _)| f(x)).count() as u64;
    let cancelled = count(&|x| matches!(x, Seen::Cancelled));
    let panicked = count(&|x| matches!(x, Seen::Panicked(_)));
    // A handler's own `Throttled` on the last attempt counts as throttled too.
    let throttled = count(&|x| {
        matches!(
            x,
            Seen::Returned(Err(Error::Throttled { .. }
                | Error::Failed {
                    outcome: Outcome::Throttled,
                    ..
                }))
        )
    });
    let stopping = count(&|x| matches!(x, Seen::Returned(Err(Error::Stopping { .. }))));
    let started = m.attempts.iter().filter(|a| !a.is_empty()).count() as u64;
    let retried: u64 = m
        .attempts
        .iter()
        .map(|a| a.len().saturating_sub(1) as u64)
        .sum();
    // Every dropped attempt is a timeout, except the last attempt of a call
    // the test dropped.
    let dropped: u64 = m
        .attempts
        .iter()
        .map(|a| a.iter().filter(|&&e| e == End::Dropped).count() as u64)
        .sum();
    let dropped_by_cancel = seen
        .iter()
        .zip(&m.attempts)
        .filter(|((x, _), a)| matches!(x, Seen::Cancelled) && a.last() == Some(&End::Dropped))
        .count() as u64;
    let timed_out = dropped - dropped_by_cancel;
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            problems.push(format!("stats.{what} = {got}, the program saw {want}"));
        }
    };
    expect("finished", s.finished, s.admitted);
    expect("in_flight", s.in_flight, 0);
    expect("started", s.started, started);
    expect("retried", s.retried, retried);
    // The last dropped attempt of a cancelled call may also have timed out
    // just before the drop: a retry passes through the scheduler before its
    // attempt, and the caller may drop the call there.
    if s.timed_out < timed_out || s.timed_out > timed_out + dropped_by_cancel {
        expect("timed_out", s.timed_out, timed_out);
    }
    expect("cancelled", s.cancelled, cancelled);
    expect("panicked", s.panicked, panicked);
    expect("throttled", s.throttled, throttled);
    expect(
        "refused_stopping + stopped_waiting",
        s.refused_stopping + s.stopped_waiting,
        stopping,
    );
    // Every call was admitted or refused at the gate; a refused call ends
    // `Stopping` (as does a waiter withdrawn by shutdown, which was admitted).
    let calls = program.calls.len() as u64;
    if s.admitted > calls || s.admitted + stopping < calls {
        problems.push(format!(
            "admitted {} of {calls} calls, {stopping} of them ended Stopping",
            s.admitted
        ));
    }
    if s.started > s.admitted {
        problems.push(format!("started {} > admitted {}", s.started, s.admitted));
    }
    if s.keys != 0 {
        problems.push(format!("{} keys left in the key tables", s.keys));
    }
    for r in &s.resources {
        if r.in_use != 0 || r.waiting != 0 || r.peak_in_use > r.capacity {
            problems.push(format!("budget not free or overrun: {r:?}"));
        }
        if m.in_use[r.name] != 0 || m.peak[r.name] > r.capacity {
            problems.push(format!(
                "handlers measured {} of `{}` at peak, {} left (capacity {})",
                m.peak[r.name], r.name, m.in_use[r.name], r.capacity
            ));
        }
    }
    if !m.keys.is_empty() {
        problems.push(format!("handlers still hold keys {:?}", m.keys));
    }
}

// ---------------------------------------------------------------------------
// The property, and the regressions it found.

fn cases() -> u32 {
    common::env_count("PROPTEST_CASES", 1000) as u32
}

/// What the programs exercised, summed over all of them.
#[derive(Debug, Default)]
struct Tally {
    programs: u64,
    with_shutdown: u64,
    calls: u64,
    attempts: u64,
    ok: u64,
    failed: u64,
    timed_out: u64,
    throttled: u64,
    stopping: u64,
    panicked: u64,
    cancelled: u64,
    /// Programs in which some budget was used to its full capacity.
    full_budget: u64,
}

static TALLY: Mutex<Tally> = Mutex::new(Tally {
    programs: 0,
    with_shutdown: 0,
    calls: 0,
    attempts: 0,
    ok: 0,
    failed: 0,
    timed_out: 0,
    throttled: 0,
    stopping: 0,
    panicked: 0,
    cancelled: 0,
    full_budget: 0,
});

thread_local! {
    /// Set on the thread that runs the property, so that the regression
    /// tests running alongside it do not add to its tally.
    static TALLYING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn tally(program: &Program, seen: &[(Seen, bool)], m: &MonitorState) {
    if !TALLYING.with(|t| t.get()) {
        return;
    }
    let mut t = TALLY.lock().unwrap_or_else(|e| e.into_inner());
    t.programs += 1;
    t.with_shutdown += u64::from(program.shutdown_at.is_some());
    t.calls += seen.len() as u64;
    t.attempts += m.attempts.iter().map(|a| a.len() as u64).sum::<u64>();
    for (x, _) in seen {
        match x {
            Seen::Returned(Ok(_)) => t.ok += 1,
            Seen::Returned(Err(Error::Failed { .. })) => t.failed += 1,
            Seen::Returned(Err(Error::TimedOut { .. })) => t.timed_out += 1,
            Seen::Returned(Err(Error::Throttled { .. })) => t.throttled += 1,
            Seen::Returned(Err(_)) => t.stopping += 1,
            Seen::Panicked(_) => t.panicked += 1,
            Seen::Cancelled => t.cancelled += 1,
        }
    }
    t.full_budget += u64::from(RESOURCES.iter().any(|r| m.peak[r.name()] == r.capacity()));
}

#[test]
fn random_schedules_keep_every_invariant() {
    let config = ProptestConfig {
        cases: cases(),
        max_shrink_iters: 4096,
        // A failing seed is written to `schedules.proptest-regressions`
        // beside this file and replayed first on every later run.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &seed(),
        ),
    );
    TALLYING.with(|t| t.set(true));
    let started = std::time::Instant::now();
    let result = runner.run(&program(), |program| {
        run_program(&program).map_err(TestCaseError::fail)
    });
    let t = TALLY.lock().unwrap_or_else(|e| e.into_inner());
    println!(
        "random schedules: {} programs ({} with a shutdown), {} calls, {} attempts in {:.2?}\n\
         results: {} ok, {} failed, {} timed out, {} throttled, {} stopping, {} panicked, {} cancelled; \
         {} programs filled a budget",
        t.programs, t.with_shutdown, t.calls, t.attempts, started.elapsed(),
        t.ok, t.failed, t.timed_out, t.throttled, t.stopping, t.panicked, t.cancelled,
        t.full_budget
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator reaches every way a call can end.
    if t.programs >= 100 {
        for (what, n) in [
            ("ok", t.ok),
            ("failed", t.failed),
            ("timed out", t.timed_out),
            ("throttled", t.throttled),
            ("stopping", t.stopping),
            ("panicked", t.panicked),
            ("cancelled", t.cancelled),
            ("full budget", t.full_budget),
        ] {
            assert!(
                n > 0,
                "no program ended a call {what}: the generator lost coverage"
            );
        }
    }
}

/// The runner's seed: `HERTA_SCHEDULE_SEED` (a number) or a fixed one, so CI
/// runs the same programs every time and a failure replays exactly.
fn seed() -> [u8; 32] {
    let n = common::env_count("HERTA_SCHEDULE_SEED", 0x48_4552_5441);
    let mut seed = [0u8; 32];
    for (i, chunk) in seed.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(n.wrapping_add(i as u64)).to_le_bytes());
    }
    seed
}

// ---------------------------------------------------------------------------
// Regressions: shrunk programs, each the minimal program proptest found for
// one bug. No seed has failed against the runtime itself so far; these are
// the programs that caught bugs seeded into a scratch copy of it (the
// mutation check described in RELIABILITY.md), kept so that each class of
// bug stays caught by a fixed, instant test.

fn c(op: usize, key: u8, start: u16, cancel_after: Option<u16>, steps: &[Step]) -> CallSpec {
    CallSpec {
        op,
        key,
        start,
        cancel_after,
        steps: steps.to_vec(),
    }
}

fn check(calls: Vec<CallSpec>, shutdown_at: Option<u16>) {
    let program = Program { calls, shutdown_at };
    if let Err(problems) = run_program(&program) {
        panic!("{problems}\nprogram: {program:?}");
    }
}

/// Seeded bug: retry whatever the outcome.
#[test]
fn regression_a_permanent_failure_is_not_retried() {
    check(
        vec![c(0, 0, 0, None, &[Step::Fail(Outcome::Permanent, 0)])],
        None,
    );
}

/// Seeded bug: the key is not held (shared scope).
#[test]
fn regression_one_key_of_a_shared_scope_runs_once_at_a_time() {
    check(
        vec![
            c(6, 1, 75, None, &[Step::Ok(15)]),
            c(6, 1, 60, None, &[Step::Ok(15)]),
        ],
        None,
    );
}

/// Seeded bug: the budgets are released before the attempts run.
#[test]
fn regression_budgets_are_held_across_attempts() {
    check(
        vec![
            c(5, 0, 25, None, &[Step::Fail(Outcome::Transient, 40)]),
            c(0, 0, 25, None, &[Step::Ok(0)]),
        ],
        None,
    );
}

/// Seeded bug: a timeout is Transient whatever the effect.
#[test]
fn regression_a_non_idempotent_timeout_is_uncertain_and_not_retried() {
    check(vec![c(2, 0, 0, None, &[Step::Ok(45)])], None);
}

/// Seeded bug: one attempt fewer than `max`.
#[test]
fn regression_a_retryable_timeout_is_retried_up_to_max() {
    check(vec![c(4, 0, 0, None, &[Step::Ok(25)])], None);
}

/// Seeded bug: a dropped call is not counted as cancelled.
#[test]
fn regression_a_dropped_call_counts_as_cancelled() {
    check(vec![c(0, 0, 0, Some(0), &[Step::Ok(5)])], None);
}

/// Seeded bug: shutdown does not wake budget waiters.
#[test]
fn regression_shutdown_withdraws_budget_waiters() {
    check(
        vec![
            c(0, 0, 80, None, &[Step::Outlive, Step::Ok(15)]),
            c(5, 0, 80, None, &[Step::Ok(0)]),
        ],
        Some(80),
    );
}

/// Seeded bug: shutdown does not wake key waiters.
#[test]
fn regression_shutdown_withdraws_key_waiters() {
    check(
        vec![
            c(1, 2, 25, None, &[Step::Ok(15)]),
            c(1, 2, 25, None, &[Step::Ok(0)]),
            c(2, 0, 10, None, &[Step::Ok(35)]),
            c(5, 0, 10, None, &[Step::Outlive]),
        ],
        Some(25),
    );
}

/// Seeded bug: shutdown returns before running calls finish.
#[test]
fn regression_shutdown_drains_running_calls() {
    check(
        vec![
            c(5, 0, 45, None, &[Step::Outlive]),
            c(5, 0, 45, None, &[Step::Fail(Outcome::Transient, 40)]),
        ],
        Some(45),
    );
}
