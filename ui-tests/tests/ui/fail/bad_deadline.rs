use herta::Failure;

#[herta::operation(effect = Idempotent, deadline = "5 sec")]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, deadline = "0s")]
async fn publish(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, deadline = "2h")]
async fn archive(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
