use herta::Failure;

#[herta::operation(effect = Idempotent, resources("worker" = -1, "" = 1))]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
