//! Another library's name for `max`: one error, which names `max` and what
//! it counts (no "must say how many attempts" after it).
#[herta::operation(effect = Idempotent, retry(on = Transient, attempts = 3), timeout = "1s")]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
