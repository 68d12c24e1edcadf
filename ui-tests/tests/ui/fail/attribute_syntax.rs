use herta::Failure;

#[herta::operation(effect Idempotent)]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1 "db" = 1))]
async fn publish(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = "Idempotent", serialize_by = "job")]
async fn archive(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {
    let _ = (Render::NAME, Publish::NAME, Archive::NAME);
}
