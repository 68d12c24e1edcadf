//! `timeout = 2s` has its unit but not its quotes: the fix is the quotes.
#[herta::operation(effect = Idempotent, timeout = 2s)]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
