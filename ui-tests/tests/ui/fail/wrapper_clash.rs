//! A wrapper name taken by another item is one error that suggests
//! `wrapper = ...`.
use herta::Failure;
use std::time::Instant;

struct LedgerUpdate;

#[herta::operation(effect = Idempotent)]
async fn ledger_update(entry: String) -> Result<String, Failure<String>> {
    Ok(entry)
}

#[herta::operation(effect = Pure)]
async fn instant(at: u64) -> Result<u64, Failure<String>> {
    Ok(at)
}

fn main() {
    let _ = (LedgerUpdate, Instant::now());
}
