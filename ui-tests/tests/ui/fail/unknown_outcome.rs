use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = Transeint, max = 3), admission = Rejct)]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
