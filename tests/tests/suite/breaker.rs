//! Circuit breakers (issue 27, DESIGN §9.2), under a paused clock: what
//! counts (per attempt: `Transient`, `Uncertain`, timeouts and slow
//! attempts fail; `Permanent` and success succeed; `Throttled`, panics and
//! cancellations are neutral), the states (exactly `probes` probes,
//! reserved when an attempt starts, never by a call still queued for its
//! key or budgets, freed at once without a verdict; results from before a
//! transition ignored), and the refusal (before the call queues; when its
//! attempt starts, if every probe is out; a retry about to start), shared
//! by the operations that name the breaker, and no effect on those that do
//! not.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{settle, until, within, Probe};
use herta::{BindError, BreakerState, Busy, ConfigError, Error, Runtime};

herta::breakers! {
    /// The upstream: 50 % of at least 4 attempts in 10 s opens it for 30 s.
    pub UP: "upstream" = breaker(failure_rate = 50, min_calls = 4, window = "10s",
                                 open_for = "30s", probes = 2);
    /// Slow attempts (100 ms or more) open it when half are slow.
    pub SLOW: "slow" = breaker(failure_rate = 100, min_calls = 2, slow_call = "100ms",
                               slow_rate = 50);
    /// 50 % of at least 3 attempts in 10 s (the default window).
    pub THIRD: "third" = breaker(failure_rate = 50, min_calls = 3);
    /// Half slow of at least 3 attempts (failures alone never open it).
    pub SLOW_THIRD: "slow-third" = breaker(failure_rate = 100, min_calls = 3,
                                           slow_call = "100ms", slow_rate = 50);
}

#[derive(Debug, thiserror::Error, herta::Classify)]
enum UpError {
    #[error("unavailable")]
    #[outcome(Transient)]
    Unavailable,
    #[error("lost reply")]
    #[outcome(Uncertain)]
    Lost,
    #[error("bad request")]
    BadRequest,
    #[error("rate limited")]
    #[outcome(Throttled)]
    RateLimited,
}

/// How the upstream answers the next attempts.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    Ok,
    Transient,
    Uncertain,
    Permanent,
    Throttled,
    Panic,
    Hang,
    Slow,
}

/// A scripted upstream: counts the attempts that reached it; with `hold`
/// set, an attempt first waits on the probe's gate, then answers as
/// `mode` says then.
struct Upstream {
    mode: AtomicU8,
    hold: AtomicBool,
    hits: AtomicU32,
    probe: Arc<Probe>,
}

impl Upstream {
    fn new(mode: Mode) -> Arc<Self> {
        Arc::new(Upstream {
            mode: AtomicU8::new(mode as u8),
            hold: AtomicBool::new(false),
            hits: AtomicU32::new(0),
            probe: Probe::new(),
        })
    }

    fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    fn hold(&self, hold: bool) {
        self.hold.store(hold, Ordering::SeqCst);
    }

    fn hits(&self) -> u32 {
        self.hits.load(Ordering::SeqCst)
    }

    async fn answer(&self) -> Result<(), UpError> {
        self.hits.fetch_add(1, Ordering::SeqCst);
        if self.hold.load(Ordering::SeqCst) {
            self.probe.hold().await;
        }
        let mode = self.mode.load(Ordering::SeqCst);
        match mode {
            m if m == Mode::Ok as u8 => Ok(()),
            m if m == Mode::Transient as u8 => Err(UpError::Unavailable),
            m if m == Mode::Uncertain as u8 => Err(UpError::Lost),
            m if m == Mode::Permanent as u8 => Err(UpError::BadRequest),
            m if m == Mode::Throttled as u8 => Err(UpError::RateLimited),
            m if m == Mode::Panic as u8 => panic!("deliberate"),
            m if m == Mode::Slow as u8 => {
                tokio::time::sleep(Duration::from_millis(150)).await;
                Ok(())
            }
            _ => std::future::pending().await,
        }
    }
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = UP)]
async fn fetch(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Pure, resources("slots" = 1), breaker = "upstream")]
async fn lookup(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = UP,
                   retry(on = Transient, max = 5, backoff(base = "1s", cap = "1s", jitter = None)))]
async fn fetch_retried(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = UP, timeout = "1s")]
async fn fetch_timed(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = NonIdempotent, resources("slots" = 1), breaker = UP,
                   retry(on = Transient, max = 3))]
async fn charge(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("other" = 1), breaker = UP)]
async fn elsewhere(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = UP, serialize_by = id)]
async fn keyed(up: Arc<Upstream>, id: u32) -> Result<(), UpError> {
    let _ = id;
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = SLOW)]
async fn search(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = THIRD)]
async fn thirds(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), breaker = SLOW_THIRD)]
async fn slow_thirds(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn plain(up: Arc<Upstream>) -> Result<(), UpError> {
    up.answer().await
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(herta::Resource::new("slots", 8))
        .breaker(UP)
        .breaker(SLOW)
        .breaker(THIRD)
        .breaker(SLOW_THIRD)
        .build()
        .unwrap()
}

fn state(rt: &Runtime) -> BreakerState {
    rt.stats().breaker("upstream").unwrap().state
}

/// Asserts `err` is the breaker's refusal, with `retry_after`.
fn assert_refused(err: &Error<UpError>, retry_after: Option<Duration>) {
    match err {
        Error::Throttled { busy, .. } => {
            assert_eq!(
                busy,
                &Busy::Breaker {
                    breaker: "upstream"
                }
            );
        }
        other => panic!("expected the breaker's refusal, got {other:?}"),
    }
    assert_eq!(err.retry_after(), retry_after);
    // One message for both refusing states: it must not claim "open" alone.
    assert!(err
        .to_string()
        .contains("circuit breaker `upstream` is open (or half-open with every probe out)"));
}

/// Four failing calls of `fetch`: the breaker opens.
async fn trip(rt: &Runtime, up: &Arc<Upstream>) {
    let fetch = Fetch::bind(rt).unwrap();
    up.set(Mode::Transient);
    for _ in 0..4 {
        assert!(matches!(
            fetch.call(up.clone()).await,
            Err(Error::Failed { .. })
        ));
    }
    assert_eq!(state(rt), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn failures_open_it_and_calls_are_refused_without_reaching_upstream() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    let fetch = Fetch::bind(&rt).unwrap();
    fetch.call(up.clone()).await.unwrap();
    up.set(Mode::Transient);
    fetch.call(up.clone()).await.unwrap_err();
    up.set(Mode::Uncertain);
    fetch.call(up.clone()).await.unwrap_err();
    assert_eq!(
        state(&rt),
        BreakerState::Closed,
        "no verdict before 4 calls"
    );
    fetch.call(up.clone()).await.unwrap_err();
    assert_eq!(state(&rt), BreakerState::Open, "3 failures of 4: 75 %");
    let hits = up.hits();
    tokio::time::advance(Duration::from_secs(9)).await;
    let err = fetch.call(up.clone()).await.unwrap_err();
    assert_refused(&err, Some(Duration::from_secs(21)));
    assert_eq!(up.hits(), hits, "the upstream was not reached");
    let stats = rt.stats();
    let b = stats.breaker("upstream").unwrap();
    assert_eq!(
        (b.opened, b.refused, b.calls, b.failure_rate),
        (1, 1, 4, 75)
    );
    assert_eq!(stats.throttled, 1);
    assert!(stats.to_string().contains(
        "breaker upstream: open, failure rate 75% of 4 calls in the window, opened 1, refused 1"
    ));
}

#[tokio::test(start_paused = true)]
async fn permanent_throttled_and_panicking_attempts_do_not_open_it() {
    common::quiet_deliberate_panics();
    let rt = runtime();
    let up = Upstream::new(Mode::Permanent);
    let fetch = Fetch::bind(&rt).unwrap();
    for _ in 0..5 {
        fetch.call(up.clone()).await.unwrap_err();
    }
    up.set(Mode::Throttled);
    for _ in 0..5 {
        fetch.call(up.clone()).await.unwrap_err();
    }
    up.set(Mode::Panic);
    for _ in 0..5 {
        let call = tokio::spawn({
            let (fetch, up) = (fetch.clone(), up.clone());
            async move { fetch.call(up).await }
        });
        assert!(call.await.unwrap_err().is_panic());
    }
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!(
        (b.state, b.calls, b.failure_rate),
        (BreakerState::Closed, 5, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_attempt_is_neutral() {
    let rt = runtime();
    let up = Upstream::new(Mode::Hang);
    let fetch = Fetch::bind(&rt).unwrap();
    for i in 1..=5 {
        let call = tokio::spawn({
            let (fetch, up) = (fetch.clone(), up.clone());
            async move { fetch.call(up).await }
        });
        until(|| up.hits() == i).await;
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
    }
    assert_eq!(up.hits(), 5);
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!((b.state, b.calls), (BreakerState::Closed, 0));
}

#[tokio::test(start_paused = true)]
async fn half_open_lets_exactly_the_probes_through_then_closes() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    up.set(Mode::Ok);
    up.hold(true);
    let fetch = Fetch::bind(&rt).unwrap();
    let probes: Vec<_> = (0..2)
        .map(|_| {
            let (fetch, up) = (fetch.clone(), up.clone());
            tokio::spawn(async move { fetch.call(up).await })
        })
        .collect();
    up.probe.entered(2).await;
    assert_eq!(state(&rt), BreakerState::HalfOpen);
    let err = fetch.call(up.clone()).await.unwrap_err();
    assert_refused(&err, None);
    assert_eq!(
        up.probe.attempts(),
        2,
        "a third probe never reached upstream"
    );
    up.probe.open(2);
    for probe in probes {
        within(probe).await.unwrap().unwrap();
    }
    assert_eq!(state(&rt), BreakerState::Closed);
    assert_eq!(
        rt.stats().breaker("upstream").unwrap().calls,
        0,
        "a new window"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_it_for_a_full_open_for() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    let fetch = Fetch::bind(&rt).unwrap();
    fetch.call(up.clone()).await.unwrap_err();
    assert_eq!(state(&rt), BreakerState::Open);
    assert_eq!(rt.stats().breaker("upstream").unwrap().opened, 2);
    tokio::time::advance(Duration::from_secs(29)).await;
    let err = fetch.call(up.clone()).await.unwrap_err();
    assert_refused(&err, Some(Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_probe_frees_its_slot_at_once() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("slots", 8))
        .breaker(UP.with_probes(1))
        .build()
        .unwrap();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    up.set(Mode::Hang);
    let fetch = Fetch::bind(&rt).unwrap();
    let probe = tokio::spawn({
        let (fetch, up) = (fetch.clone(), up.clone());
        async move { fetch.call(up).await }
    });
    until(|| up.hits() == 5).await;
    assert_refused(&fetch.call(up.clone()).await.unwrap_err(), None);
    probe.abort();
    assert!(probe.await.unwrap_err().is_cancelled());
    up.set(Mode::Ok);
    fetch.call(up.clone()).await.unwrap();
    assert_eq!(state(&rt), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_result_from_before_the_last_transition_changes_nothing() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    let early = Upstream::new(Mode::Transient);
    early.hold(true);
    let fetch = Fetch::bind(&rt).unwrap();
    let late = tokio::spawn({
        let (fetch, early) = (fetch.clone(), early.clone());
        async move { fetch.call(early).await }
    });
    early.probe.entered(1).await;
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    up.set(Mode::Ok);
    fetch.call(up.clone()).await.unwrap();
    fetch.call(up.clone()).await.unwrap();
    assert_eq!(state(&rt), BreakerState::Closed);
    // The attempt admitted before the trip fails now: not counted.
    early.probe.open(1);
    within(late).await.unwrap().unwrap_err();
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!((b.state, b.calls, b.opened), (BreakerState::Closed, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn two_operations_share_one_breaker() {
    let rt = runtime();
    let up = Upstream::new(Mode::Transient);
    let (fetch, lookup) = (Fetch::bind(&rt).unwrap(), Lookup::bind(&rt).unwrap());
    fetch.call(up.clone()).await.unwrap_err();
    lookup.call(up.clone()).await.unwrap_err();
    fetch.call(up.clone()).await.unwrap_err();
    lookup.call(up.clone()).await.unwrap_err();
    assert_eq!(state(&rt), BreakerState::Open);
    assert_refused(
        &lookup.call(up.clone()).await.unwrap_err(),
        Some(Duration::from_secs(30)),
    );
    assert_refused(
        &fetch.call(up.clone()).await.unwrap_err(),
        Some(Duration::from_secs(30)),
    );
    assert_eq!(up.hits(), 4);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_while_the_budget_is_busy_without_queueing() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("slots", 1))
        .breaker(UP)
        .build()
        .unwrap();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    let holder = Upstream::new(Mode::Ok);
    holder.hold(true);
    let plain = Plain::bind(&rt).unwrap();
    let held = tokio::spawn({
        let holder = holder.clone();
        async move { plain.call(holder).await }
    });
    holder.probe.entered(1).await;
    let fetch = Fetch::bind(&rt).unwrap();
    let err = within(fetch.call(up.clone())).await.unwrap_err();
    assert_refused(&err, Some(Duration::from_secs(30)));
    assert_eq!(rt.stats().resource("slots").unwrap().waiting, 0);
    holder.probe.open(1);
    within(held).await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_retry_is_refused_by_a_breaker_that_opened_between_attempts() {
    let rt = runtime();
    let up = Upstream::new(Mode::Transient);
    let retried = Upstream::new(Mode::Transient);
    let op = FetchRetried::bind(&rt).unwrap();
    let call = tokio::spawn({
        let retried = retried.clone();
        async move { op.call(retried).await }
    });
    until(|| retried.hits() == 1).await;
    settle().await;
    // During its backoff sleep, three other failures open the breaker.
    let fetch = Fetch::bind(&rt).unwrap();
    for _ in 0..3 {
        fetch.call(up.clone()).await.unwrap_err();
    }
    assert_eq!(state(&rt), BreakerState::Open);
    let err = within(call).await.unwrap().unwrap_err();
    assert_refused(&err, err.retry_after());
    assert!(err.retry_after().unwrap() < Duration::from_secs(30));
    assert_eq!(retried.hits(), 1, "the retry never started");
    assert_eq!(rt.stats().retried, 0);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_counts_as_a_failure() {
    let rt = runtime();
    let up = Upstream::new(Mode::Hang);
    let op = FetchTimed::bind(&rt).unwrap();
    for _ in 0..4 {
        assert!(matches!(
            within(op.call(up.clone())).await,
            Err(Error::TimedOut { .. })
        ));
    }
    assert_eq!(state(&rt), BreakerState::Open);
    assert_refused(
        &op.call(up.clone()).await.unwrap_err(),
        Some(Duration::from_secs(30)),
    );
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_uncertain_is_counted_and_never_retried() {
    let rt = runtime();
    let up = Upstream::new(Mode::Uncertain);
    let op = Charge::bind(&rt).unwrap();
    for _ in 0..4 {
        let err = op.call(up.clone()).await.unwrap_err();
        assert_eq!(err.attempts(), 1);
    }
    assert_eq!(up.hits(), 4, "never retried");
    assert_eq!(state(&rt), BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn contracts_without_a_breaker_are_unaffected() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    up.set(Mode::Transient);
    let plain = Plain::bind(&rt).unwrap();
    for _ in 0..10 {
        assert!(matches!(
            plain.call(up.clone()).await,
            Err(Error::Failed { .. })
        ));
    }
    up.set(Mode::Ok);
    plain.call(up.clone()).await.unwrap();
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!((b.calls, b.refused), (4, 0), "plain calls count nowhere");
}

#[tokio::test(start_paused = true)]
async fn window_buckets_expire_on_time() {
    let rt = runtime();
    let up = Upstream::new(Mode::Transient);
    let fetch = Fetch::bind(&rt).unwrap();
    for _ in 0..3 {
        fetch.call(up.clone()).await.unwrap_err();
    }
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(rt.stats().breaker("upstream").unwrap().calls, 0);
    fetch.call(up.clone()).await.unwrap_err();
    assert_eq!(
        state(&rt),
        BreakerState::Closed,
        "1 failure of 1 call: no verdict"
    );
    tokio::time::advance(Duration::from_secs(1_000_000)).await;
    assert_eq!(rt.stats().breaker("upstream").unwrap().calls, 0);
}

#[tokio::test(start_paused = true)]
async fn slow_attempts_open_a_breaker_with_slow_call() {
    let rt = runtime();
    let up = Upstream::new(Mode::Ok);
    let op = Search::bind(&rt).unwrap();
    op.call(up.clone()).await.unwrap();
    up.set(Mode::Slow);
    op.call(up.clone()).await.unwrap();
    let b = rt.stats().breaker("slow").cloned().unwrap();
    assert_eq!(b.state, BreakerState::Open, "1 slow of 2: 50 %");
}

/// Asserts `err` is `breaker`'s refusal (open).
fn assert_open_refusal(err: &Error<UpError>, name: &'static str) {
    match err {
        Error::Throttled { busy, .. } => assert_eq!(busy, &Busy::Breaker { breaker: name }),
        other => panic!("expected the breaker's refusal, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_success_that_reaches_min_calls_opens_it() {
    // DESIGN §9.6 (opossum #276): the rate is judged at every attempt
    // recorded once the window holds `min_calls`, a success included.
    let rt = runtime();
    let up = Upstream::new(Mode::Transient);
    let op = Thirds::bind(&rt).unwrap();
    op.call(up.clone()).await.unwrap_err();
    tokio::time::advance(Duration::from_secs(1)).await;
    op.call(up.clone()).await.unwrap_err();
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(
        rt.stats().breaker("third").unwrap().state,
        BreakerState::Closed,
        "no verdict before 3 calls"
    );
    up.set(Mode::Ok);
    op.call(up.clone()).await.unwrap();
    let hits = up.hits();
    let err = op.call(up.clone()).await.unwrap_err();
    assert_open_refusal(&err, "third");
    assert_eq!(up.hits(), hits, "the upstream was not reached");
    let b = rt.stats().breaker("third").cloned().unwrap();
    assert_eq!(
        (b.state, b.opened, b.calls, b.failure_rate),
        (BreakerState::Open, 1, 3, 66),
        "2 failures of 3: 67 %"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fast_success_that_reaches_min_calls_opens_it_on_the_slow_rate() {
    let rt = runtime();
    let up = Upstream::new(Mode::Slow);
    let op = SlowThirds::bind(&rt).unwrap();
    op.call(up.clone()).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    op.call(up.clone()).await.unwrap();
    tokio::time::advance(Duration::from_secs(1)).await;
    up.set(Mode::Ok);
    op.call(up.clone()).await.unwrap();
    let err = op.call(up.clone()).await.unwrap_err();
    assert_open_refusal(&err, "slow-third");
    let b = rt.stats().breaker("slow-third").cloned().unwrap();
    assert_eq!(
        (b.state, b.opened, b.calls),
        (BreakerState::Open, 1, 3),
        "2 slow of 3"
    );
}

#[test]
fn bind_and_build_check_the_breakers() {
    #[herta::operation(effect = Pure, resources("slots" = 1), breaker = "upstrem")]
    async fn typo() -> Result<(), UpError> {
        Ok(())
    }
    let err = Typo::bind(&runtime()).unwrap_err();
    assert_eq!(
        err,
        BindError::UnknownBreaker {
            operation: "typo",
            breaker: "upstrem",
            constant: None,
            suggestion: Some("upstream".to_owned()),
        }
    );
    assert!(err.to_string().contains("did you mean `upstream`?"));
    // A constant is not a typo: the fix is to add it, not a near miss.
    const UPSTREAM2: herta::Breaker = herta::Breaker::new("upstream2");
    #[herta::operation(effect = Pure, resources("slots" = 1), breaker = UPSTREAM2)]
    async fn undeclared() -> Result<(), UpError> {
        Ok(())
    }
    let err = Undeclared::bind(&runtime()).unwrap_err();
    assert_eq!(
        err,
        BindError::UnknownBreaker {
            operation: "undeclared",
            breaker: "upstream2",
            constant: Some("UPSTREAM2"),
            suggestion: None,
        }
    );
    assert!(
        err.to_string()
            .ends_with("(the constant `UPSTREAM2`), which this runtime does not declare; add `.breaker(UPSTREAM2)` to the builder"),
        "{err}"
    );
    let twice = Runtime::builder()
        .resource(herta::Resource::new("slots", 1))
        .breaker(UP)
        .breaker(herta::Breaker::new("upstream"))
        .build()
        .unwrap_err();
    assert_eq!(
        twice,
        ConfigError::DuplicateBreaker {
            breaker: "upstream".to_owned()
        }
    );
    let invalid = Runtime::builder()
        .resource(herta::Resource::new("slots", 1))
        .breaker(herta::Breaker::new("b").with_probes(0))
        .build()
        .unwrap_err();
    assert!(matches!(invalid, ConfigError::InvalidBreaker { .. }));
}

/// A runtime of `slots` units of `slots` and one of `other`, `UP` with
/// `probes` probes; tripped, then past its open period (half-open for the
/// next attempt).
async fn half_open(probes: u16, slots: u32) -> (Runtime, Arc<Upstream>) {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("slots", slots))
        .resource(herta::Resource::new("other", 1))
        .breaker(UP.with_probes(probes))
        .build()
        .unwrap();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    up.set(Mode::Ok);
    (rt, up)
}

/// Holds `n` units of `slots` with `plain` calls held in their handler;
/// the holder's upstream lets them go.
async fn hold_slots(
    rt: &Runtime,
    n: u32,
) -> (
    Arc<Upstream>,
    Vec<tokio::task::JoinHandle<Result<(), Error<UpError>>>>,
) {
    let holder = Upstream::new(Mode::Ok);
    holder.hold(true);
    let plain = Plain::bind(rt).unwrap();
    let held = (0..n)
        .map(|_| {
            let (plain, holder) = (plain.clone(), holder.clone());
            tokio::spawn(async move { plain.call(holder).await })
        })
        .collect();
    holder.probe.entered(n).await;
    (holder, held)
}

#[tokio::test(start_paused = true)]
async fn a_call_queued_for_its_budget_holds_no_probe_slot() {
    let (rt, up) = half_open(1, 1).await;
    let (holder, held) = hold_slots(&rt, 1).await;
    // The first caller passes the breaker's refusal check and queues for
    // the busy budget: it has no probe yet.
    let queued = tokio::spawn({
        let (fetch, up) = (Fetch::bind(&rt).unwrap(), up.clone());
        async move { fetch.call(up).await }
    });
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    assert_eq!(state(&rt), BreakerState::HalfOpen);
    // A second caller, whose budget is free, starts at once: the probe.
    let prober = Upstream::new(Mode::Ok);
    prober.hold(true);
    let probe = tokio::spawn({
        let (elsewhere, prober) = (Elsewhere::bind(&rt).unwrap(), prober.clone());
        async move { elsewhere.call(prober).await }
    });
    prober.probe.entered(1).await;
    // The budget frees while the probe is out: the queued call takes it,
    // finds the one probe out, and is refused, giving the budget back.
    let hits = up.hits();
    holder.probe.open(1);
    let err = within(queued).await.unwrap().unwrap_err();
    assert_refused(&err, None);
    assert_eq!(up.hits(), hits, "the refused call never reached upstream");
    let slots = rt.stats().resource("slots").cloned().unwrap();
    assert_eq!((slots.in_use, slots.waiting), (0, 0));
    for call in held {
        within(call).await.unwrap().unwrap();
    }
    prober.probe.open(1);
    within(probe).await.unwrap().unwrap();
    assert_eq!(state(&rt), BreakerState::Closed);
    Fetch::bind(&rt).unwrap().call(up.clone()).await.unwrap();
    assert!(common::all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_call_that_queued_while_half_open_is_refused_if_the_probe_reopened_it() {
    let (rt, up) = half_open(1, 1).await;
    let (holder, held) = hold_slots(&rt, 1).await;
    let queued = tokio::spawn({
        let (fetch, up) = (Fetch::bind(&rt).unwrap(), up.clone());
        async move { fetch.call(up).await }
    });
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    // The probe (through the other budget) fails: open again for 30 s.
    let prober = Upstream::new(Mode::Transient);
    Elsewhere::bind(&rt)
        .unwrap()
        .call(prober)
        .await
        .unwrap_err();
    assert_eq!(state(&rt), BreakerState::Open);
    tokio::time::advance(Duration::from_secs(5)).await;
    let hits = up.hits();
    holder.probe.open(1);
    let err = within(queued).await.unwrap().unwrap_err();
    assert_refused(&err, Some(Duration::from_secs(25)));
    assert_eq!(up.hits(), hits);
    for call in held {
        within(call).await.unwrap().unwrap();
    }
    assert!(common::all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_probe_is_reserved_when_its_attempt_starts() {
    // The open period ends while the call waits for its budget: it was let
    // through the refusal check (open, then), and becomes the probe once it
    // holds the budget.
    let rt = Runtime::builder()
        .resource(herta::Resource::new("slots", 1))
        .breaker(UP.with_probes(1))
        .build()
        .unwrap();
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    let (holder, held) = hold_slots(&rt, 1).await;
    up.set(Mode::Ok);
    let queued = tokio::spawn({
        let (fetch, up) = (Fetch::bind(&rt).unwrap(), up.clone());
        async move { fetch.call(up).await }
    });
    until(|| rt.stats().resource("slots").unwrap().waiting == 1).await;
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!((b.state, b.refused), (BreakerState::HalfOpen, 0));
    holder.probe.open(1);
    within(queued).await.unwrap().unwrap();
    assert_eq!(state(&rt), BreakerState::Closed, "its success closed it");
    for call in held {
        within(call).await.unwrap().unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn racing_callers_never_exceed_the_probes() {
    // Six callers queue for four busy units; the units free at once, so the
    // six take them in one pass and race for the two probes.
    let (rt, up) = half_open(2, 4).await;
    let (holder, held) = hold_slots(&rt, 4).await;
    up.hold(true);
    let fetch = Fetch::bind(&rt).unwrap();
    let callers: Vec<_> = (0..6)
        .map(|_| {
            let (fetch, up) = (fetch.clone(), up.clone());
            tokio::spawn(async move { fetch.call(up).await })
        })
        .collect();
    until(|| rt.stats().resource("slots").unwrap().waiting == 6).await;
    holder.probe.open(4);
    for call in held {
        within(call).await.unwrap().unwrap();
    }
    up.probe.entered(2).await;
    settle().await;
    assert_eq!(up.probe.attempts(), 2, "two probes reached upstream");
    assert_eq!(up.probe.peak(), 2);
    let slots = rt.stats().resource("slots").cloned().unwrap();
    assert_eq!(
        (slots.in_use, slots.waiting),
        (2, 0),
        "the refused gave theirs back"
    );
    up.probe.open(2);
    let mut refused = 0;
    for call in callers {
        match within(call).await.unwrap() {
            Ok(()) => {}
            Err(err) => {
                assert_refused(&err, None);
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 4);
    let b = rt.stats().breaker("upstream").cloned().unwrap();
    assert_eq!((b.state, b.refused), (BreakerState::Closed, 4));
    assert!(common::all_free(&rt));
}

#[tokio::test(start_paused = true)]
async fn a_call_queued_for_its_key_holds_no_probe_slot() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("slots", 8))
        .breaker(UP.with_probes(1))
        .build()
        .unwrap();
    let keyed = Keyed::bind(&rt).unwrap();
    // Key 7 is held by a call admitted while the breaker was closed.
    let holder = Upstream::new(Mode::Ok);
    holder.hold(true);
    let held = tokio::spawn({
        let (keyed, holder) = (keyed.clone(), holder.clone());
        async move { keyed.call(holder, 7).await }
    });
    holder.probe.entered(1).await;
    let up = Upstream::new(Mode::Ok);
    trip(&rt, &up).await;
    tokio::time::advance(Duration::from_secs(30)).await;
    up.set(Mode::Ok);
    // The first caller queues for key 7, holding no probe.
    let queued = tokio::spawn({
        let (keyed, up) = (keyed.clone(), up.clone());
        async move { keyed.call(up, 7).await }
    });
    settle().await;
    let slots = rt.stats().resource("slots").cloned().unwrap();
    assert_eq!(slots.in_use, 1, "it waits for the key, before the budget");
    // Another caller starts at once: the probe.
    let prober = Upstream::new(Mode::Ok);
    prober.hold(true);
    let probe = tokio::spawn({
        let (fetch, prober) = (Fetch::bind(&rt).unwrap(), prober.clone());
        async move { fetch.call(prober).await }
    });
    prober.probe.entered(1).await;
    // The key frees (its holder's result, from before the trip, counts
    // nowhere): the queued call finds the probe out and is refused,
    // giving the key back.
    let hits = up.hits();
    holder.probe.open(1);
    within(held).await.unwrap().unwrap();
    let err = within(queued).await.unwrap().unwrap_err();
    assert_refused(&err, None);
    assert_eq!(up.hits(), hits);
    assert_eq!(rt.stats().keys, 0, "the key was given back");
    prober.probe.open(1);
    within(probe).await.unwrap().unwrap();
    assert_eq!(state(&rt), BreakerState::Closed);
    keyed.call(up.clone(), 7).await.unwrap();
    assert!(common::all_free(&rt));
}
