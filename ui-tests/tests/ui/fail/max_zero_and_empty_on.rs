use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = [], max = 0))]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, retry(max = 3))]
async fn publish(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
