use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = Permanent, max = 3))]
async fn upsert(id: u64) -> Result<(), Failure<String>> {
    let _ = id;
    Ok(())
}

fn main() {}
