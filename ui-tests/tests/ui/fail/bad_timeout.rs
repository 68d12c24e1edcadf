use herta::Failure;

#[herta::operation(effect = Idempotent, timeout = "5 sec")]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, timeout = "0ms")]
async fn publish(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, timeout = "2h")]
async fn archive(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
