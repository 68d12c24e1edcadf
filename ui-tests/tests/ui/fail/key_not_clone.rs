//! A `serialize_by` key the key table cannot copy: one error, on the key
//! parameter's type, even though the code also binds and calls the operation.
use herta::{Failure, Runtime};

#[derive(PartialEq, Eq, Hash, Debug)]
pub struct Brand(String);

#[herta::operation(effect = Idempotent, serialize_by = brand)]
async fn replace(brand: Brand, rows: Vec<u32>) -> Result<u64, Failure<std::io::Error>> {
    let _ = brand;
    Ok(rows.len() as u64)
}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let replace = Replace::bind(rt)?;
    Ok(replace.call(Brand("acme".into()), vec![1, 2]).await?)
}

fn main() {
    let _ = serve;
}
