//! Fixture of `tests/json_span.rs` (does not compile, on purpose): units
//! above a constant resource's capacity.
use herta::Failure;

herta::resources! {
    pub R: "r" = 2;
}

#[herta::operation(effect = Idempotent, resources(R = 5))]
async fn reserve(rows: Vec<u32>) -> Result<u64, Failure<std::io::Error>> {
    Ok(rows.len() as u64)
}

fn main() {
    let _ = Reserve::NAME;
}
