//! A contract error shows that error only: the wrapper type still exists with
//! its `bind` and `call`, so the code using it type-checks.
use herta::{Failure, Runtime};

#[herta::operation(effect = NonIdempotent, resources("worker" = 1),
                   retry(on = Uncertain, max = 3))]
async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
    Ok(job)
}

async fn serve(rt: &Runtime) -> Result<String, Box<dyn std::error::Error>> {
    let render = Render::bind(rt)?;
    let page: String = render.call("job-42".to_owned()).await?;
    let _ = <Render as herta::Operation>::NAME;
    Ok(page)
}

fn main() {
    let _ = serve;
}
