//! A misspelt outcome in `on`, with a timeout and an error type that is not
//! `Classify`: one error, the typo's (rule 5b stays quiet about an `on` the
//! rules have refused already).
#[herta::operation(effect = Idempotent, retry(on = Transeint, max = 3), timeout = "50ms")]
async fn fetch(url: String) -> Result<String, std::io::Error> {
    Ok(url)
}

fn main() {}
