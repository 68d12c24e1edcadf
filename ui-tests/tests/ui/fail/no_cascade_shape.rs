//! A function the wrapper cannot call (not async, not a `Result`) still gets
//! its wrapper type, so code using it shows only the contract errors.
use herta::{Failure, Runtime};

#[herta::operation(effect = Idempotent)]
fn render(job: String) -> Result<String, Failure<std::io::Error>> {
    Ok(job)
}

#[herta::operation(effect = Pure)]
async fn double(value: u32) -> u32 {
    value * 2
}

async fn serve(rt: &Runtime) -> Result<String, Box<dyn std::error::Error>> {
    let render = Render::bind(rt)?;
    let page: String = render.call("job-42".to_owned()).await?;
    let double = Double::bind(rt)?;
    double.call(21).await?;
    Ok(page)
}

fn main() {
    let _ = serve;
}
