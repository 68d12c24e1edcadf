use herta::Failure;

#[herta::operation(effect = Idempotent, retires(on = Transient, max = 3))]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
