//! `resources!`: docs, visibility, a capacity from a constant expression,
//! and constants used by path in contracts: a resource named by string only,
//! by path only (plain, `crate::`, from another module), and several mixed.
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

mod budgets {
    herta::resources! {
        /// Declared in another module.
        pub GPU: "gpu" = 2;
    }
}

#[herta::operation(effect = Pure, resources("worker" = 2))]
async fn by_name() -> Result<u32, Failure<String>> {
    Ok(1)
}

#[herta::operation(effect = Pure, resources(budgets::GPU = 2))]
async fn by_path() -> Result<u32, Failure<String>> {
    Ok(2)
}

#[herta::operation(effect = Pure, resources(WORKER = 1, "gpu" = 1, self::DB_WRITE = 4))]
async fn several() -> Result<u32, Failure<String>> {
    Ok(3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
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

    let rt = Runtime::builder()
        .resource(WORKER)
        .resource(DB_WRITE)
        .resource(budgets::GPU)
        .build()
        .unwrap();
    assert_eq!(ByPath::CONTRACT.resources()[0].resource(), "gpu");
    let total = ByName::bind(&rt).unwrap().call().await.unwrap()
        + ByPath::bind(&rt).unwrap().call().await.unwrap()
        + Several::bind(&rt).unwrap().call().await.unwrap();
    assert_eq!(total, 6);
    let db = rt.stats();
    assert_eq!(db.resource("db-write").unwrap().peak_in_use, 4);
}
