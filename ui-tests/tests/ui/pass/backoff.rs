use std::time::Duration;

use herta::{Backoff, Failure, Jitter};

#[herta::operation(effect = NonIdempotent,
                   retry(on = [Transient, Throttled], max = 5, backoff(base = "10ms", cap = "1s")))]
async fn send(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent,
                   retry(on = Transient, max = 10000,
                         backoff(base = "1s", cap = "1s", jitter = herta::Jitter::None)))]
async fn poll(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 100))]
async fn quick(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[derive(Debug, herta::Classify)]
enum ApiError {
    #[outcome(Throttled)]
    Limited {
        #[retry_after]
        after: Duration,
    },
    #[outcome(Transient)]
    Busy(#[retry_after] Option<Duration>),
    Bad,
}

#[herta::operation(effect = Idempotent,
                   retry(on = [Transient, Throttled], max = 3, backoff(base = "10ms", cap = "5s", jitter = Equal)))]
async fn call_api(job: String) -> Result<String, ApiError> {
    Ok(job)
}

fn main() {
    assert_eq!(
        Send::CONTRACT.backoff(),
        Some(Backoff::new(Duration::from_millis(10), Duration::from_secs(1), Jitter::Full))
    );
    assert_eq!(Poll::CONTRACT.backoff().unwrap().jitter(), Jitter::None);
    assert_eq!(Quick::CONTRACT.backoff(), None);
    assert_eq!(CallApi::CONTRACT.backoff().unwrap().jitter(), Jitter::Equal);
    assert!(Send::CONTRACT.retries(herta::Outcome::Throttled));
    assert!(!Quick::CONTRACT.retries(herta::Outcome::Throttled));
}
