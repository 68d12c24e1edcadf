use herta::Failure;

#[herta::operation(effect = Idempotent, resources("worker" = 1), max_wait = "100 ms")]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), max_wait = "0ms")]
async fn publish(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), max_wait = 100)]
async fn archive(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
