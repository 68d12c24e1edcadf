// Rule 17: `max_wait` and `timeout` must be shorter than the `deadline`
// (the deadline ends waits and attempts first, so they would never apply).
use herta::Failure;

#[herta::operation(effect = Idempotent, resources("worker" = 1),
                   timeout = "5s", deadline = "1s", max_wait = "10s")]
async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
    Ok(job)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1),
                   deadline = "2s", timeout = "2s")]
async fn equal(job: String) -> Result<String, Failure<std::io::Error>> {
    Ok(job)
}

#[herta::contract(effect = Idempotent, resources("worker" = 1), deadline = "1s", max_wait = "1s")]
struct CallUpstream;

fn main() {}
