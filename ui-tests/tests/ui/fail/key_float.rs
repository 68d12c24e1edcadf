//! `serialize_by` on an `f64`: one error on the type, saying a float cannot
//! be a key and what to key by, even though the code also binds and calls
//! the operation (no "derive `Hash` for `f64`").
use herta::{Failure, Runtime};

#[herta::operation(effect = Idempotent, serialize_by = price)]
async fn quote(price: f64, qty: u32) -> Result<u64, Failure<std::io::Error>> {
    Ok(u64::from(qty) + price as u64)
}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let quote = Quote::bind(rt)?;
    Ok(quote.call(9.5, 2).await?)
}

fn main() {
    let _ = serve;
}
