use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = Throttled, max = 3))]
async fn fetch(url: String) -> Result<String, Failure<String>> {
    Ok(url)
}

fn main() {}
