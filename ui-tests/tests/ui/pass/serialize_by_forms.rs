//! `serialize_by` on owned parameters (a `String`, an integer, a tuple, a
//! derived struct), on borrowed ones (`&str`, `&[u8]`, `&Path`, `&Brand`),
//! with `Reject` admission, and with `scope` shared by two operations.
use std::path::Path;

use herta::{BindError, Failure, Runtime};

type Io<T> = Result<T, Failure<std::io::Error>>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Brand {
    pub name: String,
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = brand)]
async fn owned_string(brand: String, rows: Vec<u32>) -> Io<usize> {
    Ok(brand.len() + rows.len())
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = id)]
async fn owned_int(id: u64) -> Io<u64> {
    Ok(id)
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = cell)]
async fn owned_tuple(cell: (u32, String)) -> Io<u32> {
    Ok(cell.0)
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = brand,
                   retry(on = Transient, max = 2))]
async fn owned_struct(brand: Brand) -> Io<String> {
    Ok(brand.name)
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = brand)]
async fn borrowed_str(brand: &str) -> Io<usize> {
    Ok(brand.len())
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = bytes)]
async fn borrowed_slice(bytes: &[u8]) -> Io<usize> {
    Ok(bytes.len())
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = path)]
async fn borrowed_path(path: &Path) -> Io<bool> {
    Ok(path.is_absolute())
}

#[herta::operation(effect = Idempotent, resources("db" = 1), serialize_by = brand)]
async fn borrowed_struct(brand: &Brand) -> Io<usize> {
    Ok(brand.name.len())
}

#[herta::operation(effect = NonIdempotent, resources("db" = 1), serialize_by = brand,
                   admission = Reject)]
async fn rejecting(brand: String) -> Io<()> {
    let _ = brand;
    Ok(())
}

/// Two operations in one key space: a `replace` and a `delete` of the same
/// brand never overlap.
#[herta::operation(effect = Idempotent, resources("db" = 1),
                   serialize_by(brand, scope = "catalogue"))]
async fn replace(brand: String, rows: Vec<u32>) -> Io<usize> {
    let _ = brand;
    Ok(rows.len())
}

#[herta::operation(effect = Idempotent, resources("db" = 1),
                   serialize_by(brand, scope = "catalogue"))]
async fn delete(brand: String) -> Io<()> {
    let _ = brand;
    Ok(())
}

/// Same scope, another key type: refused at `bind`.
#[herta::operation(effect = Idempotent, resources("db" = 1),
                   serialize_by(id, scope = "catalogue"))]
async fn by_id(id: u64) -> Io<u64> {
    Ok(id)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("db", 2))
        .build()
        .unwrap();
    let brand = Brand {
        name: "acme".to_owned(),
    };

    assert_eq!(OwnedString::bind(&rt).unwrap().call("acme".to_owned(), vec![1]).await.unwrap(), 5);
    assert_eq!(OwnedInt::bind(&rt).unwrap().call(7).await.unwrap(), 7);
    assert_eq!(OwnedTuple::bind(&rt).unwrap().call((3, "a".to_owned())).await.unwrap(), 3);
    assert_eq!(OwnedStruct::bind(&rt).unwrap().call(brand.clone()).await.unwrap(), "acme");
    assert_eq!(BorrowedStr::bind(&rt).unwrap().call("acme").await.unwrap(), 4);
    assert_eq!(BorrowedSlice::bind(&rt).unwrap().call(&[1, 2]).await.unwrap(), 2);
    assert!(BorrowedPath::bind(&rt).unwrap().call(Path::new("/tmp")).await.unwrap());
    assert_eq!(BorrowedStruct::bind(&rt).unwrap().call(&brand).await.unwrap(), 4);
    Rejecting::bind(&rt).unwrap().call("acme".to_owned()).await.unwrap();

    let c = Replace::CONTRACT.serialize_by().unwrap();
    assert_eq!((c.parameter(), c.scope()), ("brand", Some("catalogue")));
    let replace = Replace::bind(&rt).unwrap();
    let delete = Delete::bind(&rt).unwrap();
    assert_eq!(replace.call("acme".to_owned(), vec![1, 2]).await.unwrap(), 2);
    delete.call("acme".to_owned()).await.unwrap();
    let err = ById::bind(&rt).unwrap_err();
    assert!(matches!(
        err,
        BindError::ScopeKeyMismatch { existing: "alloc::string::String", .. }
    ));

    // Every key was released: no entry is left behind.
    assert_eq!(rt.stats().keys, 0);
}
