use herta::Failure;

pub struct Job {
    pub id: u64,
}

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3))]
async fn render(name: String, job: Job) -> Result<u64, Failure<String>> {
    let _ = name;
    Ok(job.id)
}

#[herta::operation(effect = Idempotent, retry(on = Transient, max = 3))]
async fn render_all(jobs: Vec<Job>) -> Result<usize, Failure<String>> {
    Ok(jobs.len())
}

fn main() {}
