//! An operation with state whose handler holds a `std::sync::MutexGuard`
//! across an `.await`: the same one error at the attribute as an operation
//! without state ("future returned by `call` is not `Send`"), naming the
//! guard and the await; a borrowed parameter does not change it.
use std::sync::Mutex;

use herta::Failure;

pub struct Ledger {
    total: Mutex<u64>,
}

/// Credits a customer, holding the lock across an await.
#[herta::operation(effect = Idempotent)]
pub async fn credit(#[state] ledger: &Ledger, customer: &str, cents: u64) -> Result<u64, Failure<String>> {
    let mut total = ledger.total.lock().unwrap();
    tokio::task::yield_now().await;
    *total += cents;
    let _ = customer;
    Ok(*total)
}

fn main() {}
