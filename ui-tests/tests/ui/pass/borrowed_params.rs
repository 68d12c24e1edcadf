//! Borrowed parameters: `call` takes them as written; a `&str` key is owned
//! as a `String`. No `Operation` impl (its `Args` must be owned).
use herta::{Failure, Runtime};

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = brand,
                   retry(on = Transient, max = 2))]
async fn store(brand: &str, rows: &[u32], note: &'static str) -> Result<usize, Failure<String>> {
    Ok(brand.len() + rows.len() + note.len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("db", 2))
        .build()
        .unwrap();
    let store = Store::bind(&rt).unwrap();
    let brand = String::from("acme");
    let rows = vec![1, 2, 3];
    assert_eq!(store.call(&brand, &rows, "x").await.unwrap(), 8);
    assert_eq!(Store::CONTRACT.serialize_by().unwrap().parameter(), "brand");
}
