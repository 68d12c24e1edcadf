//! A duration key takes a string literal, not a `Duration` expression.
#[herta::operation(effect = Idempotent, timeout = std::time::Duration::from_secs(2))]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
