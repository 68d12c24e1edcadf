use herta::Failure;

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 4294967295))]
async fn spin(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 101))]
async fn just_above(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent,
                   retry(on = Transient, max = 10001, backoff(base = "10ms", cap = "1s")))]
async fn with_backoff(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
