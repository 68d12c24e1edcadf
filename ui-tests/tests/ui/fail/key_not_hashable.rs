//! A `serialize_by` key that is not `Hash + Eq` (an `f64` inside): one error,
//! on the key parameter's type, even though the code also binds and calls
//! the operation.
use herta::{Failure, Runtime};

#[derive(Clone, PartialEq, Debug)]
pub struct Brand(f64);

#[herta::operation(effect = Idempotent, serialize_by = brand)]
async fn replace(brand: Brand, rows: Vec<u32>) -> Result<u64, Failure<std::io::Error>> {
    let _ = brand;
    Ok(rows.len() as u64)
}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let replace = Replace::bind(rt)?;
    Ok(replace.call(Brand(1.0), vec![1, 2]).await?)
}

fn main() {
    let _ = serve;
}
