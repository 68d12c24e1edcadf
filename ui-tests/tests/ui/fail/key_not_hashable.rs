use herta::Failure;

#[derive(Clone, PartialEq, Debug)]
pub struct Brand(f64);

#[herta::operation(effect = Idempotent, serialize_by = brand)]
async fn replace(brand: Brand, rows: Vec<u32>) -> Result<u64, Failure<String>> {
    let _ = brand;
    Ok(rows.len() as u64)
}

fn main() {}
