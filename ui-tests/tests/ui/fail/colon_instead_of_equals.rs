//! `effect: Idempotent`, written as in a struct literal: the error names the
//! `:` and the fix, not syn's "expected `,`".
#[herta::operation(effect: Idempotent)]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
