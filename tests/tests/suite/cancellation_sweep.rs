//! Cancellation sweep (RELIABILITY.md §2, DESIGN §3 "Caller cancellation").
//!
//! For every point where a call can be suspended, the call future is dropped
//! exactly there, and the test asserts that
//!
//! * nothing is held: every budget can be taken whole and the key taken by a
//!   `Reject` probe (which would fail with `Throttled` otherwise), and the
//!   stats show no unit, waiter or key left behind;
//! * the waiters queued behind it proceed;
//! * the stats count it as cancelled, exactly once, and `admitted == finished`.
//!
//! The points, in the order of one call (DESIGN §3):
//!
//! | point | test |
//! |---|---|
//! | before the first poll (the admission gate is one atomic step, not a wait) | `dropped_before_its_first_poll_*` |
//! | waiting for its key | `dropped_while_waiting_for_its_key` |
//! | handed its key, not yet polled | `dropped_after_being_handed_its_key_before_seeing_it` |
//! | waiting for its budgets (one short, one free) | `dropped_while_waiting_for_its_budgets`, `plain_dropped_while_waiting_for_its_budget` |
//! | waiting for its budgets, ahead of smaller waiters it blocks | `dropped_while_waiting_ahead_of_smaller_waiters` |
//! | granted its budgets, not yet polled | `dropped_after_being_granted_its_budgets_before_seeing_them` |
//! | inside the first attempt (timeout armed / not) | `dropped_inside_the_first_attempt`, `plain_dropped_inside_its_attempt`, `reject_dropped_inside_its_attempt` |
//! | between attempts: a failed attempt not yet seen | `dropped_with_a_failed_attempt_not_yet_seen` |
//! | between attempts: an expired timeout not yet seen | `dropped_with_an_expired_timeout_not_yet_seen` |
//! | inside a retry attempt (after a failure / after a timeout) | `dropped_inside_a_retry_attempt`, `dropped_inside_the_attempt_after_a_timeout` |
//!
//! The retry loop has no await of its own between attempts (no backoff): a
//! failed attempt is classified and the next one started in the same poll,
//! so "between attempts" is covered by its two edges — the previous attempt
//! finished but not yet observed, and the next attempt at its first await.
//!
//! The call under test is polled by hand (`poll_once`, with a waker that
//! does nothing), so a grant it receives stays unseen until it is dropped.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{all_free, poll_once, settle, until, within, Probe};
use herta::{Context, Error, Failure, Resource, Runtime};
use tokio::task::JoinHandle;

/// What one attempt of the call under test does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Return `Ok` at once.
    Done,
    /// Fail `Transient` at once.
    Transient,
    /// Wait for the probe's gate, then return `Ok`.
    Hold,
    /// Wait for the probe's gate, then fail `Transient`.
    HoldThenTransient,
    /// Sleep an hour: outlives the 1 s timeout.
    Hang,
}

/// One attempt's step per attempt number, and the probe the attempts report to.
#[derive(Clone)]
struct Plan {
    steps: Arc<[Step]>,
    probe: Arc<Probe>,
}

fn plan(probe: &Arc<Probe>, steps: &[Step]) -> Plan {
    Plan {
        steps: steps.into(),
        probe: Arc::clone(probe),
    }
}

type Outcome = Result<u32, Error<Failure<String>>>;

async fn act(ctx: Context, plan: Plan) -> Result<u32, Failure<String>> {
    let step = plan.steps[ctx.attempt() as usize - 1];
    match step {
        Step::Done => {
            let _inside = plan.probe.enter();
            Ok(ctx.attempt())
        }
        Step::Transient => {
            let _inside = plan.probe.enter();
            Err(Failure::transient(format!("attempt {}", ctx.attempt())))
        }
        Step::Hold => {
            plan.probe.hold().await;
            Ok(ctx.attempt())
        }
        Step::HoldThenTransient => {
            plan.probe.hold().await;
            Err(Failure::transient(format!("attempt {}", ctx.attempt())))
        }
        Step::Hang => {
            let _inside = plan.probe.enter();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(ctx.attempt())
        }
    }
}

/// The full shape: a key (shared scope "k"), two budgets, retry, timeout.
#[herta::operation(effect = Idempotent, resources("a" = 1, "b" = 2),
                   serialize_by(key, scope = "k"), retry(on = Transient, max = 3),
                   timeout = "1s")]
async fn full(ctx: Context, key: u32, plan: Plan) -> Result<u32, Failure<String>> {
    let _ = key;
    act(ctx, plan).await
}

/// The plain shape: no key, one budget, no retry, no timeout.
#[herta::operation(effect = NonIdempotent, resources("a" = 1))]
async fn plain(ctx: Context, plan: Plan) -> Result<u32, Failure<String>> {
    act(ctx, plan).await
}

/// The fail-fast shape: `Reject`, keyed in the same scope.
#[herta::operation(effect = NonIdempotent, resources("b" = 1), admission = Reject,
                   serialize_by(key, scope = "k"), wrapper = RejectShape)]
async fn reject(ctx: Context, key: u32, plan: Plan) -> Result<u32, Failure<String>> {
    let _ = key;
    act(ctx, plan).await
}

/// Holds all of budget `a` until its probe opens.
#[herta::operation(effect = Idempotent, resources("a" = 2))]
async fn hog_a(probe: Arc<Probe>) -> Result<(), Failure<String>> {
    probe.hold().await;
    Ok(())
}

/// Takes all of `a` or fails with `Throttled`.
#[herta::operation(effect = Pure, resources("a" = 2), admission = Reject)]
async fn whole_a() -> Result<(), Failure<String>> {
    Ok(())
}

/// Takes all of `b` or fails with `Throttled`.
#[herta::operation(effect = Pure, resources("b" = 3), admission = Reject)]
async fn whole_b() -> Result<(), Failure<String>> {
    Ok(())
}

/// Takes `key` in scope "k" (and a budget nobody else uses) or fails.
#[herta::operation(effect = Pure, resources("z" = 1), admission = Reject,
                   serialize_by(key, scope = "k"))]
async fn free_key(key: u32) -> Result<(), Failure<String>> {
    let _ = key;
    Ok(())
}

struct World {
    rt: Runtime,
    full: Full,
    plain: Plain,
    reject: RejectShape,
    hog: HogA,
    whole_a: WholeA,
    whole_b: WholeB,
    free_key: FreeKey,
}

fn world() -> World {
    let rt = Runtime::builder()
        .resource(Resource::new("a", 2))
        .resource(Resource::new("b", 3))
        .resource(Resource::new("z", 1))
        .build()
        .unwrap();
    World {
        full: Full::bind(&rt).unwrap(),
        plain: Plain::bind(&rt).unwrap(),
        reject: RejectShape::bind(&rt).unwrap(),
        hog: HogA::bind(&rt).unwrap(),
        whole_a: WholeA::bind(&rt).unwrap(),
        whole_b: WholeB::bind(&rt).unwrap(),
        free_key: FreeKey::bind(&rt).unwrap(),
        rt,
    }
}

impl World {
    fn spawn_full(&self, key: u32, plan: Plan) -> JoinHandle<Outcome> {
        let op = self.full.clone();
        tokio::spawn(async move { op.call(key, plan).await })
    }

    fn spawn_plain(&self, plan: Plan) -> JoinHandle<Outcome> {
        let op = self.plain.clone();
        tokio::spawn(async move { op.call(plan).await })
    }

    /// Holds all of `a` until `probe` opens; returns once it is inside.
    async fn hog_a(&self, probe: &Arc<Probe>) -> JoinHandle<Result<(), Error<Failure<String>>>> {
        let (op, p) = (self.hog.clone(), Arc::clone(probe));
        let task = tokio::spawn(async move { op.call(p).await });
        probe.entered(1).await;
        task
    }

    /// `(in_use, waiting)` of budget `name`.
    fn budget(&self, name: &str) -> (u32, u32) {
        let s = self.rt.stats();
        let r = s.resource(name).unwrap();
        (r.in_use, r.waiting)
    }

    /// Nothing is held: `Reject` probes take each budget whole and each key.
    async fn assert_nothing_held(&self, keys: &[u32]) {
        let s = self.rt.stats();
        assert!(all_free(&self.rt), "something is still held: {s}");
        within(self.whole_a.call())
            .await
            .unwrap_or_else(|e| panic!("all of `a` should be free: {e}"));
        within(self.whole_b.call())
            .await
            .unwrap_or_else(|e| panic!("all of `b` should be free: {e}"));
        for &key in keys {
            within(self.free_key.call(key))
                .await
                .unwrap_or_else(|e| panic!("key {key} should be free: {e}"));
        }
    }

    /// After everything resolved: counted once as cancelled, every call
    /// counted out, nothing held, and shutdown drains at once.
    async fn finish(&self, keys: &[u32]) {
        self.assert_nothing_held(keys).await;
        let s = self.rt.stats();
        assert_eq!(s.cancelled, 1, "exactly the dropped call is cancelled: {s}");
        assert_eq!(s.in_flight, 0, "{s}");
        assert_eq!(s.admitted, s.finished, "{s}");
        assert!(s.started <= s.admitted, "{s}");
        within(self.rt.shutdown()).await;
    }
}

#[tokio::test(start_paused = true)]
async fn dropped_before_its_first_poll_full() {
    let w = world();
    let p = Probe::new();
    let dut = w.full.call(1, plan(&p, &[Step::Done]));
    drop(dut);
    let s = w.rt.stats();
    assert_eq!((s.admitted, s.finished, s.cancelled), (0, 0, 0), "{s}");
    assert_eq!(p.attempts(), 0);
    w.assert_nothing_held(&[1]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_before_its_first_poll_plain_and_reject() {
    let w = world();
    let p = Probe::new();
    drop(w.plain.call(plan(&p, &[Step::Done])));
    drop(w.reject.call(1, plan(&p, &[Step::Done])));
    let s = w.rt.stats();
    assert_eq!((s.admitted, s.finished, s.cancelled), (0, 0, 0), "{s}");
    assert_eq!(p.attempts(), 0);
    w.assert_nothing_held(&[1]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_while_waiting_for_its_key() {
    let w = world();
    let hp = Probe::new();
    let holder = w.spawn_full(7, plan(&hp, &[Step::Hold]));
    hp.entered(1).await;

    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(7, plan(&dp, &[Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending(), "key 7 is held");
    // Waiting for the key, it holds no budget: only the holder's units.
    assert_eq!(w.budget("a"), (1, 0));
    assert_eq!(w.budget("b"), (2, 0));
    let bp = Probe::new();
    let behind = w.spawn_full(7, plan(&bp, &[Step::Done]));
    until(|| w.rt.stats().in_flight == 3).await;

    drop(dut);
    let s = w.rt.stats();
    assert_eq!((s.cancelled, s.in_flight, s.keys), (1, 2, 1), "{s}");
    assert_eq!(w.budget("a"), (1, 0));
    assert_eq!(w.budget("b"), (2, 0));

    hp.open(1);
    within(holder).await.unwrap().unwrap();
    assert_eq!(
        within(behind).await.unwrap().unwrap(),
        1,
        "the waiter behind ran"
    );
    assert_eq!(dp.attempts(), 0, "the dropped call never ran");
    w.finish(&[7]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_after_being_handed_its_key_before_seeing_it() {
    let w = world();
    let hp = Probe::new();
    let holder = w.spawn_full(7, plan(&hp, &[Step::Hold]));
    hp.entered(1).await;

    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(7, plan(&dp, &[Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending(), "key 7 is held");
    let bp = Probe::new();
    let behind = w.spawn_full(7, plan(&bp, &[Step::Done]));
    until(|| w.rt.stats().in_flight == 3).await;

    // The holder leaves: key 7 is handed to the call under test, which
    // never sees it (its waker does nothing).
    hp.open(1);
    within(holder).await.unwrap().unwrap();
    settle().await;
    assert!(!behind.is_finished(), "the call under test is ahead of it");
    let s = w.rt.stats();
    assert_eq!((s.keys, s.in_flight), (1, 2), "{s}");
    assert_eq!(w.budget("a"), (0, 0), "a key holder holds no budget yet");

    drop(dut);
    assert_eq!(
        within(behind).await.unwrap().unwrap(),
        1,
        "the key was passed on"
    );
    assert_eq!(dp.attempts(), 0);
    w.finish(&[7]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_while_waiting_for_its_budgets() {
    let w = world();
    let hog = Probe::new();
    let hog_task = w.hog_a(&hog).await;

    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &[Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending(), "`a` is full");
    assert_eq!(w.rt.stats().keys, 1, "it holds its key while it waits");
    assert_eq!(w.budget("a"), (2, 1));
    assert_eq!(w.budget("b"), (0, 1), "all or nothing: no unit of `b` held");
    // `b` is free although it waits for it: a Reject probe takes all of it.
    within(w.whole_b.call())
        .await
        .expect("the waiter holds nothing of `b`");
    let bp = Probe::new();
    let behind = w.spawn_full(2, plan(&bp, &[Step::Done]));
    until(|| w.budget("a").1 == 2).await;

    drop(dut);
    let s = w.rt.stats();
    assert_eq!((s.cancelled, s.keys), (1, 1), "key 1 released: {s}");
    assert_eq!(w.budget("a"), (2, 1), "only the waiter behind is left");
    assert_eq!(w.budget("b"), (0, 1));
    within(w.free_key.call(1)).await.expect("key 1 is free");

    hog.open(1);
    within(hog_task).await.unwrap().unwrap();
    assert_eq!(within(behind).await.unwrap().unwrap(), 1);
    assert_eq!(dp.attempts(), 0);
    w.finish(&[1, 2]).await;
}

#[tokio::test(start_paused = true)]
async fn plain_dropped_while_waiting_for_its_budget() {
    let w = world();
    let hog = Probe::new();
    let hog_task = w.hog_a(&hog).await;

    let dp = Probe::new();
    let mut dut = Box::pin(w.plain.call(plan(&dp, &[Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending(), "`a` is full");
    assert_eq!(w.budget("a"), (2, 1));
    let bp = Probe::new();
    let behind = w.spawn_plain(plan(&bp, &[Step::Done]));
    until(|| w.budget("a").1 == 2).await;

    drop(dut);
    assert_eq!(w.budget("a"), (2, 1));
    assert_eq!(w.rt.stats().cancelled, 1);
    hog.open(1);
    within(hog_task).await.unwrap().unwrap();
    within(behind).await.unwrap().unwrap();
    assert_eq!(dp.attempts(), 0);
    w.finish(&[]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_while_waiting_ahead_of_smaller_waiters() {
    let w = world();
    // One unit of `a` is held; the call under test needs both, so it
    // queues and blocks `a` for everyone behind it (no starvation).
    let hp = Probe::new();
    let holder = w.spawn_plain(plan(&hp, &[Step::Hold]));
    hp.entered(1).await;
    let dp = Probe::new();
    let mut dut = Box::pin(w.hog.call(dp.clone()));
    assert!(
        poll_once(dut.as_mut()).is_pending(),
        "needs 2 of the 1 free"
    );
    let small = w.spawn_plain(plan(&Probe::new(), &[Step::Done]));
    until(|| w.budget("a").1 == 2).await;
    settle().await;
    assert!(
        !small.is_finished(),
        "the small waiter queues behind the large one"
    );

    // Its departure lets the small waiter in at once, while the holder
    // still holds its unit.
    drop(dut);
    within(small).await.unwrap().unwrap();
    assert_eq!(hp.inside(), 1);
    assert_eq!(w.rt.stats().cancelled, 1);
    hp.open(1);
    within(holder).await.unwrap().unwrap();
    assert_eq!(dp.attempts(), 0);
    w.finish(&[]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_after_being_granted_its_budgets_before_seeing_them() {
    let w = world();
    let hog = Probe::new();
    let hog_task = w.hog_a(&hog).await;

    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &[Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending(), "`a` is full");
    let bp = Probe::new();
    let behind = w.spawn_full(2, plan(&bp, &[Step::Done]));
    until(|| w.budget("a").1 == 2).await;

    // The hog leaves: the call under test is granted a=1, b=2 but never
    // sees it; the one behind needs b=2 of the 1 left, so it still waits.
    hog.open(1);
    within(hog_task).await.unwrap().unwrap();
    settle().await;
    assert_eq!(w.budget("a"), (1, 1), "granted to the call under test");
    assert_eq!(w.budget("b"), (2, 1));
    assert!(!behind.is_finished());

    drop(dut);
    assert_eq!(
        within(behind).await.unwrap().unwrap(),
        1,
        "the units went on to the waiter behind at once"
    );
    assert_eq!(dp.attempts(), 0, "granted but never started");
    let s = w.rt.stats();
    assert_eq!(s.started, 2, "hog and the waiter behind: {s}");
    w.finish(&[1, 2]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_inside_the_first_attempt() {
    let w = world();
    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &[Step::Hold, Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending());
    assert_eq!((dp.attempts(), dp.inside()), (1, 1));
    // One waiter for its key, one for its budgets (`b` has 1 of 3 left).
    let same_key = w.spawn_full(1, plan(&Probe::new(), &[Step::Done]));
    let budget = w.spawn_full(2, plan(&Probe::new(), &[Step::Done]));
    until(|| w.rt.stats().in_flight == 3 && w.budget("b").1 == 1).await;

    drop(dut);
    assert_eq!(dp.inside(), 0, "the attempt's future was dropped");
    assert_eq!(w.rt.stats().cancelled, 1);
    within(same_key).await.unwrap().unwrap();
    within(budget).await.unwrap().unwrap();
    dp.open(10);
    settle().await;
    assert_eq!(dp.attempts(), 1, "no attempt after the drop");
    let s = w.rt.stats();
    assert_eq!((s.retried, s.timed_out), (0, 0), "{s}");
    w.finish(&[1, 2]).await;
}

#[tokio::test(start_paused = true)]
async fn plain_dropped_inside_its_attempt() {
    let w = world();
    let dp = Probe::new();
    let mut dut = Box::pin(w.plain.call(plan(&dp, &[Step::Hold])));
    assert!(poll_once(dut.as_mut()).is_pending());
    assert_eq!(dp.inside(), 1);
    let hog = Probe::new();
    let hog_task = {
        let (op, p) = (w.hog.clone(), hog.clone());
        tokio::spawn(async move { op.call(p).await })
    };
    until(|| w.budget("a").1 == 1).await;

    drop(dut);
    assert_eq!(dp.inside(), 0);
    hog.entered(1).await; // the waiter behind got all of `a`
    hog.open(1);
    within(hog_task).await.unwrap().unwrap();
    w.finish(&[]).await;
}

#[tokio::test(start_paused = true)]
async fn reject_dropped_inside_its_attempt() {
    let w = world();
    let dp = Probe::new();
    let mut dut = Box::pin(w.reject.call(5, plan(&dp, &[Step::Hold])));
    assert!(poll_once(dut.as_mut()).is_pending());
    assert_eq!(dp.inside(), 1);
    // Key 5 is busy meanwhile: a Reject call on it is throttled.
    let err = within(w.free_key.call(5)).await.unwrap_err();
    assert!(matches!(err, Error::Throttled { .. }), "{err:?}");

    drop(dut);
    assert_eq!(dp.inside(), 0);
    let s = w.rt.stats();
    assert_eq!((s.cancelled, s.keys), (1, 0), "{s}");
    w.finish(&[5]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_with_a_failed_attempt_not_yet_seen() {
    let w = world();
    let dp = Probe::new();
    let steps = [Step::HoldThenTransient, Step::Done, Step::Done];
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &steps)));
    assert!(poll_once(dut.as_mut()).is_pending());
    // Attempt 1 may now fail Transient, but the call is never polled again.
    dp.open(1);
    settle().await;
    let behind = w.spawn_full(1, plan(&Probe::new(), &[Step::Done]));
    until(|| w.rt.stats().in_flight == 2).await;

    drop(dut);
    within(behind).await.unwrap().unwrap();
    assert_eq!(dp.attempts(), 1, "no retry after the drop");
    let s = w.rt.stats();
    assert_eq!(s.retried, 0, "{s}");
    w.finish(&[1]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_inside_a_retry_attempt() {
    let w = world();
    let dp = Probe::new();
    let steps = [Step::Transient, Step::Hold, Step::Done];
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &steps)));
    assert!(poll_once(dut.as_mut()).is_pending());
    // The retry passes through the scheduler first (a yield).
    assert_eq!(
        (dp.attempts(), dp.inside()),
        (1, 0),
        "attempt 2 waits for its turn"
    );
    assert!(poll_once(dut.as_mut()).is_pending());
    assert_eq!((dp.attempts(), dp.inside()), (2, 1), "attempt 2 is inside");
    assert_eq!(w.rt.stats().retried, 1);
    let behind = w.spawn_full(1, plan(&Probe::new(), &[Step::Done]));
    until(|| w.rt.stats().in_flight == 2).await;

    drop(dut);
    assert_eq!(dp.inside(), 0);
    within(behind).await.unwrap().unwrap();
    dp.open(10);
    settle().await;
    assert_eq!(dp.attempts(), 2, "no attempt 3 after the drop");
    assert_eq!(w.rt.stats().retried, 1);
    w.finish(&[1]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_with_an_expired_timeout_not_yet_seen() {
    let w = world();
    let dp = Probe::new();
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &[Step::Hang, Step::Done])));
    assert!(poll_once(dut.as_mut()).is_pending());
    tokio::time::advance(Duration::from_millis(1001)).await;
    settle().await;
    // The 1 s timeout has expired, but the call has not seen it.
    drop(dut);
    assert_eq!(dp.inside(), 0);
    let s = w.rt.stats();
    assert_eq!((s.timed_out, s.retried, s.cancelled), (0, 0, 1), "{s}");
    assert_eq!(dp.attempts(), 1);
    w.finish(&[1]).await;
}

#[tokio::test(start_paused = true)]
async fn dropped_inside_the_attempt_after_a_timeout() {
    let w = world();
    let dp = Probe::new();
    let steps = [Step::Hang, Step::Hold, Step::Done];
    let mut dut = Box::pin(w.full.call(1, plan(&dp, &steps)));
    assert!(poll_once(dut.as_mut()).is_pending());
    tokio::time::advance(Duration::from_millis(1001)).await;
    // Attempt 1 timed out (Transient for Idempotent): attempt 2 starts,
    // after a pass through the scheduler (a yield).
    assert!(poll_once(dut.as_mut()).is_pending());
    assert!(poll_once(dut.as_mut()).is_pending());
    assert_eq!((dp.attempts(), dp.inside()), (2, 1));
    let s = w.rt.stats();
    assert_eq!((s.timed_out, s.retried), (1, 1), "{s}");
    let behind = w.spawn_full(1, plan(&Probe::new(), &[Step::Done]));
    until(|| w.rt.stats().in_flight == 2).await;

    drop(dut);
    assert_eq!(dp.inside(), 0);
    within(behind).await.unwrap().unwrap();
    dp.open(10);
    tokio::time::advance(Duration::from_secs(5)).await;
    settle().await;
    assert_eq!(dp.attempts(), 2, "no attempt 3 after the drop");
    w.finish(&[1]).await;
}
