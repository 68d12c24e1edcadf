// Units beyond a `u32` are one error, spanned on the units, for a declared
// constant too: no second, capacity error about a number never written.
use herta::Failure;

herta::resources! {
    pub WORKER: "worker" = 4;
}

#[herta::operation(effect = Idempotent, resources(WORKER = 99999999999, "db" = 4294967296))]
async fn replace(rows: Vec<u32>) -> Result<u64, Failure<String>> {
    Ok(rows.len() as u64)
}

fn main() {}
