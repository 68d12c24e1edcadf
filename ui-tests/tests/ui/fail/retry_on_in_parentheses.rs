//! Several outcomes in parentheses (a tuple habit): the error is on the
//! parentheses and shows the list form.
#[herta::operation(effect = Idempotent, retry(on = (Transient, Uncertain), max = 3), timeout = "1s")]
async fn fetch(url: String) -> Result<String, herta::Failure<std::io::Error>> {
    Ok(url)
}

fn main() {}
