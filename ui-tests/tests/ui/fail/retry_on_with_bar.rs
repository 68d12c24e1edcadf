//! Several outcomes joined with `|` (as in a match pattern): the error is
//! on the `|` and shows the list form.
#[herta::operation(effect = Idempotent, retry(on = Transient | Uncertain, max = 3), timeout = "1s")]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
