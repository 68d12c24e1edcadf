//! A borrowed `serialize_by` key whose type is not `Clone`: the key table
//! cannot own a copy. One error, on the borrowed type.
use herta::Failure;

#[derive(PartialEq, Eq, Hash, Debug)]
pub struct Brand(String);

#[herta::operation(effect = Idempotent, serialize_by = brand)]
async fn replace(brand: &Brand, rows: Vec<u32>) -> Result<u64, Failure<std::io::Error>> {
    let _ = brand;
    Ok(rows.len() as u64)
}

fn main() {}
