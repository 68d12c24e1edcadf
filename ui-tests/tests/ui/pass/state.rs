//! Operations that own state: `#[state]` first (a `Context` after it),
//! with retry, a key, a borrowed parameter, a trait object, bound from a
//! value or an `Arc`; the wrapper is `Clone + Send + Sync` and its call
//! future `Send`, also when the handler drops a `std::sync::MutexGuard`
//! before its `.await`.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use herta::{Context, Failure, Runtime};

#[derive(Default)]
pub struct Ledger {
    total: AtomicU64,
}

/// Credits a customer.
#[herta::operation(effect = Idempotent, serialize_by = customer, retry(on = Transient, max = 3))]
pub async fn credit(
    #[state] ledger: &Ledger,
    ctx: Context,
    customer: String,
    cents: u64,
) -> Result<u64, Failure<std::io::Error>> {
    let _ = (ctx.attempt(), customer);
    Ok(ledger.total.fetch_add(cents, Ordering::SeqCst) + cents)
}

#[herta::operation(effect = Pure, serialize_by = name)]
async fn greet(#[state] prefix: &String, name: &str) -> Result<String, Failure<String>> {
    Ok(format!("{prefix}{name}"))
}

pub trait Store: Send + Sync {
    fn get(&self) -> u64;
}

#[herta::operation(effect = Pure)]
async fn read(#[state] store: &dyn Store) -> Result<u64, Failure<String>> {
    Ok(store.get())
}

pub struct Totals {
    seen: std::sync::Mutex<Vec<u64>>,
}

/// Records a total, the guard dropped before the await.
#[herta::operation(effect = Idempotent)]
async fn record(#[state] totals: &Totals, label: &str, cents: u64) -> Result<usize, Failure<String>> {
    let count = {
        let mut seen = totals.seen.lock().unwrap();
        seen.push(cents);
        seen.len()
    };
    tokio::task::yield_now().await;
    Ok(count + label.len())
}

struct Fixed;
impl Store for Fixed {
    fn get(&self) -> u64 {
        7
    }
}

fn assert_send_sync_clone<T: Send + Sync + Clone>(_: &T) {}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let ledger = Arc::new(Ledger::default());
    let op = Credit::bind_with(rt, Arc::clone(&ledger))?;
    assert_send_sync_clone(&op);
    let spawned = tokio::spawn({
        let op = op.clone();
        async move { op.call("ada".into(), 5).await }
    });
    let greeting = Greet::bind_with(rt, "hello, ".to_owned())?.call("ada").await?;
    let store: Arc<dyn Store> = Arc::new(Fixed);
    let read = Read::bind_with(rt, store)?.call().await?;
    let totals = Totals {
        seen: std::sync::Mutex::new(Vec::new()),
    };
    let record = Record::bind_with(rt, totals)?;
    let recorded = tokio::spawn(async move { record.call("a", 1).await }).await??;
    Ok(spawned.await?? + greeting.len() as u64 + read + recorded as u64)
}

fn main() {
    let _ = serve;
}
