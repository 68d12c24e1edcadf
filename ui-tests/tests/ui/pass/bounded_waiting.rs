use herta::{Admission, Failure};
use std::time::Duration;

herta::resources! {
    pub DB: "db-write" = 4, queue = 64;
    pub WORKER: "worker" = 2;
}

const LIMIT: u32 = 8;

herta::resources! {
    pub CACHE: "cache" = 2, queue = LIMIT;
}

#[herta::operation(effect = Idempotent, resources(DB = 1), max_wait = "100ms")]
async fn write(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

// `max_wait` with the default admission, a deadline, and both with a timeout.
#[herta::operation(effect = Idempotent, resources(WORKER = 1), admission = Wait,
                   max_wait = "2s", deadline = "5s", timeout = "1s")]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = NonIdempotent, resources(CACHE = 1), admission = Reject,
                   deadline = "1m")]
async fn fill(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {
    assert_eq!(DB.queue_limit(), Some(64));
    assert_eq!(CACHE.queue_limit(), Some(8));
    assert_eq!(WORKER.queue_limit(), None);
    assert_eq!(Write::CONTRACT.max_wait(), Some(Duration::from_millis(100)));
    assert_eq!(Render::CONTRACT.deadline(), Some(Duration::from_secs(5)));
    assert_eq!(Fill::CONTRACT.admission(), Admission::Reject);
    assert_eq!(Fill::CONTRACT.max_wait(), None);
}
