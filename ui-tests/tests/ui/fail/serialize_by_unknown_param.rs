use herta::Failure;

#[herta::operation(effect = Idempotent, serialize_by = brnd)]
async fn replace_catalogue(brand: String, rows: Vec<u32>) -> Result<u64, Failure<String>> {
    let _ = brand;
    Ok(rows.len() as u64)
}

fn main() {}
