use herta::Failure;

// base above cap
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = "2s", cap = "1s")))]
async fn above(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// zero base
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = "0ms", cap = "1s")))]
async fn zero(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// unparsable cap
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1 sec")))]
async fn unparsable(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// missing cap
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = "10ms")))]
async fn missing(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// unknown jitter mode
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = "10ms", cap = "1s", jitter = Half)))]
async fn jitter(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// a bare number
#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3, backoff(base = 10, cap = "1s")))]
async fn bare(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {}
