use herta::Failure;

herta::resources! {
    pub DB_WRITE: "db-write" = 4;
}

#[herta::operation(effect = Idempotent, resources("db-write" = 1, DB_WRITE = 1))]
async fn replace(rows: Vec<u32>) -> Result<u64, Failure<String>> {
    Ok(rows.len() as u64)
}

fn main() {}
