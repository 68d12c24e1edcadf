use herta::Failure;

#[herta::operation(effect = Idempotnet, resources("worker" = 1))]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
