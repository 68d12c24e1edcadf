use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 1))]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
