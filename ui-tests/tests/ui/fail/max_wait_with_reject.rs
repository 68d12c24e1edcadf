use herta::Failure;

#[herta::operation(effect = Idempotent, resources("worker" = 1), admission = Reject,
                   max_wait = "100ms")]
async fn render(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {
    // The wrapper is generated anyway: no cascade.
    let _ = Render::NAME;
}
