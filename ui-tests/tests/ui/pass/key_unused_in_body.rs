//! A `serialize_by` key the body does not use is no warning: herta uses it.
#![deny(unused_variables)]

use herta::Failure;

#[herta::operation(effect = Idempotent, serialize_by = user)]
async fn save(user: String, n: u32) -> Result<u32, Failure<std::io::Error>> {
    Ok(n)
}

fn main() {
    let _ = Save::bind;
}
