//! `resources!`: docs, visibility, a capacity from a constant expression,
//! and constants used by path in contracts.
use herta::{Failure, Resource, Runtime};

const POOL: u32 = 3;

herta::resources! {
    /// Render slots.
    pub WORKER: "worker" = 4;
    pub(crate) DB_WRITE: "db-write" = POOL + 1;
    CACHE: "cache" = 1
}

#[herta::operation(effect = Idempotent, resources(WORKER = 4, DB_WRITE = 2, crate::CACHE = 1, "extra" = 1))]
async fn render() -> Result<(), Failure<String>> {
    Ok(())
}

fn main() {
    let _: Resource = WORKER;
    assert_eq!(WORKER.name(), "worker");
    assert_eq!(DB_WRITE.capacity(), 4);
    assert_eq!(CACHE.capacity(), 1);
    let names: Vec<_> = Render::CONTRACT
        .resources()
        .iter()
        .map(|r| (r.resource(), r.units()))
        .collect();
    assert_eq!(
        names,
        [("worker", 4), ("db-write", 2), ("cache", 1), ("extra", 1)]
    );
    let rt = Runtime::builder()
        .resource(WORKER)
        .resource(DB_WRITE)
        .resource(CACHE)
        .build()
        .unwrap();
    // "extra" is checked at bind.
    assert!(Render::bind(&rt).is_err());
}
