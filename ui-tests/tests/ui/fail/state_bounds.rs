//! An operation with state is bound with `bind_with`: `bind` is one error
//! saying so; a state type that is not `Send + Sync` is one error on it.
use std::cell::RefCell;
use std::sync::Arc;

use herta::{Failure, Runtime};

struct Ledger;

#[herta::operation(effect = Pure)]
async fn credit(#[state] ledger: &Ledger, cents: u64) -> Result<u64, Failure<String>> {
    let _ = ledger;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn tally(#[state] counts: &RefCell<Vec<u64>>, cents: u64) -> Result<u64, Failure<String>> {
    counts.borrow_mut().push(cents);
    Ok(cents)
}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let a = Credit::bind(rt)?.call(1).await?;
    let b = Tally::bind_with(rt, Arc::new(RefCell::new(Vec::new())))?.call(2).await?;
    Ok(a + b)
}

fn main() {
    let _ = serve;
}
