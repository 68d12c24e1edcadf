//! Operations that own state: `#[state] ledger: &Ledger` first, bound once
//! with `bind_with`, shared by every call, every attempt and every clone of
//! the wrapper, and never cloned. Paused clock where time matters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herta::{Context, Failure, Resource, Runtime};
use tokio::sync::Barrier;
use tokio::time::Instant;

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("ledger", 2))
        .build()
        .unwrap()
}

/// A per-customer ledger. Not `Clone`: it can only be shared.
#[derive(Default)]
struct Ledger {
    balances: Mutex<HashMap<String, i64>>,
}

impl Ledger {
    fn balance(&self, customer: &str) -> i64 {
        self.balances
            .lock()
            .unwrap()
            .get(customer)
            .copied()
            .unwrap_or(0)
    }
}

#[herta::operation(effect = NonIdempotent, resources("ledger" = 1), serialize_by = customer)]
async fn credit(
    #[state] ledger: &Ledger,
    customer: String,
    cents: i64,
) -> Result<i64, Failure<std::io::Error>> {
    let mut balances = ledger.balances.lock().unwrap();
    let balance = balances.entry(customer).or_default();
    *balance += cents;
    Ok(*balance)
}

#[tokio::test]
async fn calls_and_clones_of_the_wrapper_share_one_state() {
    let rt = runtime();
    let ledger = Arc::new(Ledger::default());
    let op = Credit::bind_with(&rt, Arc::clone(&ledger)).unwrap();
    let copy = op.clone();
    assert_eq!(op.call("ada".into(), 100).await.unwrap(), 100);
    assert_eq!(copy.call("ada".into(), 20).await.unwrap(), 120);
    assert_eq!(op.call("bob".into(), 7).await.unwrap(), 7);
    // The caller's handle sees what every call did: one ledger.
    assert_eq!(ledger.balance("ada"), 120);
    assert_eq!(ledger.balance("bob"), 7);
    // The wrapper and its clone each hold a reference to the one state,
    // never a copy of it; it is freed with the last of them.
    drop((op, copy));
    assert_eq!(Arc::strong_count(&ledger), 1);
}

#[tokio::test]
async fn a_state_passed_by_value_is_moved_in_once() {
    let rt = runtime();
    let op = Credit::bind_with(&rt, Ledger::default()).unwrap();
    op.call("ada".into(), 5).await.unwrap();
    assert_eq!(op.clone().call("ada".into(), 5).await.unwrap(), 10);
}

/// A state that records where each attempt saw it. Not `Clone`: that the
/// operation compiles proves herta never clones its state, and the
/// addresses seen show every attempt had the same one.
#[derive(Default)]
struct Counted {
    attempts: AtomicU32,
    seen_at: Mutex<Vec<(usize, Instant)>>,
}

/// Fails `Transient` on its first two attempts.
#[herta::operation(effect = Idempotent, resources("ledger" = 1),
                   retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1s", jitter = None)))]
async fn flaky(
    #[state] counted: &Counted,
    ctx: Context,
    customer: String,
) -> Result<u32, Failure<String>> {
    let n = counted.attempts.fetch_add(1, Ordering::SeqCst) + 1;
    assert_eq!(
        n,
        ctx.attempt(),
        "each attempt sees the previous ones' writes"
    );
    let at = std::ptr::from_ref(counted) as usize;
    counted.seen_at.lock().unwrap().push((at, Instant::now()));
    if n < 3 {
        return Err(Failure::transient(format!("{customer}: busy")));
    }
    Ok(n)
}

#[tokio::test(start_paused = true)]
async fn every_attempt_of_a_retried_call_sees_the_same_state_never_cloned() {
    let rt = runtime();
    let counted = Arc::new(Counted::default());
    let op = Flaky::bind_with(&rt, Arc::clone(&counted)).unwrap();
    let start = Instant::now();
    assert_eq!(op.call("ada".into()).await.unwrap(), 3);

    let seen = counted.seen_at.lock().unwrap().clone();
    let here = Arc::as_ptr(&counted) as usize;
    assert!(
        seen.iter().all(|&(at, _)| at == here),
        "one state: {seen:?}"
    );
    // The backoff slept between the attempts (10 ms, then 20 ms).
    let times: Vec<Duration> = seen.iter().map(|&(_, t)| t - start).collect();
    assert_eq!(times, [0, 10, 30].map(Duration::from_millis));
    assert_eq!(rt.stats().retried, 2);
}

/// Holds a barrier that two calls must reach together.
struct Rendezvous {
    barrier: Barrier,
    inside: AtomicU32,
}

#[herta::operation(effect = Pure, resources("ledger" = 1))]
async fn meet(#[state] rv: &Rendezvous, who: u32) -> Result<u32, Failure<String>> {
    rv.inside.fetch_add(1, Ordering::SeqCst);
    // Returns only once both calls are inside: they share one barrier.
    rv.barrier.wait().await;
    Ok(who)
}

#[tokio::test]
async fn concurrent_calls_see_the_same_state() {
    let rt = runtime();
    let rv = Arc::new(Rendezvous {
        barrier: Barrier::new(2),
        inside: AtomicU32::new(0),
    });
    let op = Meet::bind_with(&rt, Arc::clone(&rv)).unwrap();
    let other = op.clone();
    let spawned = tokio::spawn(async move { other.call(2).await });
    assert_eq!(op.call(1).await.unwrap(), 1);
    assert_eq!(spawned.await.unwrap().unwrap(), 2);
    assert_eq!(rv.inside.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn two_operations_can_share_one_state() {
    let rt = runtime();
    let ledger = Arc::new(Ledger::default());
    let credit = Credit::bind_with(&rt, Arc::clone(&ledger)).unwrap();
    let debit = Debit::bind_with(&rt, Arc::clone(&ledger)).unwrap();
    credit.call("ada".into(), 50).await.unwrap();
    assert_eq!(debit.call("ada".into(), 20).await.unwrap(), 30);
    assert_eq!(ledger.balance("ada"), 30);
}

#[herta::operation(effect = NonIdempotent, resources("ledger" = 1), serialize_by = customer)]
async fn debit(
    #[state] ledger: &Ledger,
    customer: String,
    cents: i64,
) -> Result<i64, Failure<std::io::Error>> {
    let mut balances = ledger.balances.lock().unwrap();
    let balance = balances.entry(customer).or_default();
    *balance -= cents;
    Ok(*balance)
}

/// A state behind a trait, so tests can bind a fake.
trait Mailer: Send + Sync {
    fn send(&self, to: &str) -> u32;
}

struct FakeMailer(AtomicU32);

impl Mailer for FakeMailer {
    fn send(&self, _to: &str) -> u32 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
}

#[herta::operation(effect = NonIdempotent)]
async fn notify(#[state] mailer: &dyn Mailer, to: &str) -> Result<u32, Failure<String>> {
    Ok(mailer.send(to))
}

#[tokio::test]
async fn a_trait_object_can_be_the_state() {
    let rt = runtime();
    let fake = Arc::new(FakeMailer(AtomicU32::new(0)));
    let mailer: Arc<dyn Mailer> = fake.clone();
    let op = Notify::bind_with(&rt, mailer).unwrap();
    assert_eq!(op.call("ada@example.com").await.unwrap(), 1);
    assert_eq!(op.call("bob@example.com").await.unwrap(), 2);
    assert_eq!(fake.0.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_handler_stays_a_plain_function() {
    // Unit-testable without herta: the state is an ordinary reference.
    let ledger = Ledger::default();
    assert_eq!(credit(&ledger, "ada".into(), 3).await.unwrap(), 3);
}

#[tokio::test]
async fn binding_a_stateful_operation_to_a_closed_runtime_fails() {
    let rt = runtime();
    rt.close();
    let err = Credit::bind_with(&rt, Ledger::default()).unwrap_err();
    assert!(
        matches!(err, herta::BindError::RuntimeClosed { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn an_operation_with_state_serves_through_tower_service_fn() {
    use tower::{Service, ServiceExt};
    let rt = runtime();
    let ledger = Arc::new(Ledger::default());
    let op = Credit::bind_with(&rt, Arc::clone(&ledger)).unwrap();
    let mut svc = tower::service_fn(move |(customer, cents): (String, i64)| {
        let op = op.clone();
        async move { op.call(customer, cents).await }
    });
    let total = svc.ready().await.unwrap().call(("ada".into(), 5)).await;
    assert_eq!(total.unwrap(), 5);
    assert_eq!(ledger.balance("ada"), 5);
}
