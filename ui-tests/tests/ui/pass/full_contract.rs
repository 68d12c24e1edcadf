//! Every key of the contract, with path and string resources, a key and a context.
use herta::{Context, Effect, Failure, Outcome, Runtime};

herta::resources! {
    /// Render slots.
    pub WORKER: "worker" = 4;
    pub(crate) DB_WRITE: "db-write" = 4;
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row(u32);

#[derive(Debug, herta::Classify)]
pub enum DbError {
    #[outcome(Transient)]
    Busy,
    #[outcome(Uncertain)]
    LostReply {
        attempt: u32,
    },
    Corrupt(String),
}

/// Replace one brand's rows.
#[herta::operation(effect = Idempotent, resources("worker" = 1, DB_WRITE = 3), admission = Wait,
                   retry(on = [Transient, Uncertain], max = 3), timeout = "2s",
                   serialize_by(brand, scope = "catalogue"), name = "replace", wrapper = Replace)]
pub async fn replace_catalogue(
    ctx: Context,
    brand: String,
    rows: Vec<Row>,
) -> Result<u64, DbError> {
    if ctx.attempt() < 2 {
        return Err(DbError::Busy);
    }
    let _ = brand;
    Ok(rows.len() as u64)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let c = Replace::CONTRACT;
    assert_eq!(Replace::NAME, "replace");
    assert_eq!(c.operation(), "replace");
    assert_eq!(c.effect(), Effect::Idempotent);
    assert_eq!(c.resources().len(), 2);
    assert_eq!(c.resources()[1].resource(), "db-write");
    assert_eq!(c.resources()[1].units(), 3);
    assert_eq!(c.retry_on(), &[Outcome::Transient, Outcome::Uncertain]);
    assert_eq!(c.max_attempts(), 3);
    assert_eq!(c.timeout(), Some(std::time::Duration::from_secs(2)));
    assert_eq!(c.serialize_by().unwrap().parameter(), "brand");
    assert_eq!(c.serialize_by().unwrap().scope(), Some("catalogue"));

    let rt = Runtime::builder()
        .resource(WORKER)
        .resource(DB_WRITE)
        .build()
        .unwrap();
    let op = Replace::bind(&rt).unwrap();
    let n = op
        .call("acme".to_owned(), vec![Row(1), Row(2)])
        .await
        .unwrap();
    assert_eq!(n, 2);
    println!("{op:?}");
    let _unused: Result<(), Failure<()>> = Ok(());
}
