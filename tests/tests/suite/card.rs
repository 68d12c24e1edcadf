//! The product card's contract, exactly as written, compiles and behaves.

use std::sync::atomic::{AtomicU32, Ordering};

use herta::{Outcome, Resource, Runtime};

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    sku: String,
}

#[derive(Debug, thiserror::Error, herta::Classify)]
pub enum DbError {
    #[error("database is busy")]
    #[outcome(Transient)]
    Busy,
}

static BUSY_LEFT: AtomicU32 = AtomicU32::new(2);

#[herta::operation(effect = Idempotent, resources("worker" = 1), admission = Wait,
                   retry(on = Transient, max = 3), serialize_by = brand)]
async fn replace_catalogue(brand: String, rows: Vec<Row>) -> Result<u64, DbError> {
    let _ = brand;
    // Busy twice, then done: the third and last attempt succeeds.
    if BUSY_LEFT
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return Err(DbError::Busy);
    }
    Ok(rows.len() as u64)
}

#[tokio::test]
async fn the_cards_contract_retries_transient_failures_within_max() {
    let contract = ReplaceCatalogue::CONTRACT;
    assert_eq!(contract.max_attempts(), 3);
    assert_eq!(contract.retry_on(), &[Outcome::Transient]);
    assert_eq!(contract.serialize_by().unwrap().parameter(), "brand");

    let rt = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .build()
        .unwrap();
    let op = ReplaceCatalogue::bind(&rt).unwrap();
    let rows = vec![Row { sku: "A-1".into() }, Row { sku: "A-2".into() }];
    assert_eq!(rows[0].sku, "A-1");
    assert_eq!(op.call("acme".into(), rows).await.unwrap(), 2);
    let stats = rt.stats();
    assert_eq!((stats.retried, stats.keys), (2, 0));
}
