//! A retry without a timeout on an error type that is not `Classify` could
//! never fire: every failure would be Permanent.
use herta::Runtime;

#[herta::operation(effect = Idempotent, resources("worker" = 1), retry(on = Transient, max = 3))]
async fn fetch(url: String) -> Result<String, std::io::Error> {
    Ok(url)
}

async fn serve(rt: &Runtime) -> Result<String, Box<dyn std::error::Error>> {
    let fetch = Fetch::bind(rt)?;
    Ok(fetch.call("/".to_owned()).await?)
}

fn main() {
    let _ = serve;
}
