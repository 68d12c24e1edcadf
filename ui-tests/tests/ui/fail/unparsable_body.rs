//! A body that does not parse still gets its wrapper: the syntax error is
//! the only error, and code using the wrapper type-checks.
use herta::{Failure, Runtime};

#[herta::operation(effect = Idempotent)]
async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
    let x = ;
    Ok(job)
}

async fn serve(rt: &Runtime) -> Result<String, Box<dyn std::error::Error>> {
    Ok(Render::bind(rt)?.call("job".to_owned()).await?)
}

fn main() {
    let _ = serve;
}
