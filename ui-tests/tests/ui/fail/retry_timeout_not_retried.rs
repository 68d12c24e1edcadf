//! A timeout makes a retry meaningful only if the retry retries it: a Pure
//! operation's timeout is Transient, so `on = Uncertain` never fires on one,
//! and with an error type that is not `Classify` it never fires at all.
use herta::Runtime;

#[herta::operation(effect = Pure, resources("worker" = 1), retry(on = Uncertain, max = 3),
                   timeout = "50ms")]
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
