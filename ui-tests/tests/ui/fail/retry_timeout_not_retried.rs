//! A timeout makes a retry meaningful only if the retry retries it: a Pure
//! operation's timeout is Transient, so `on = Uncertain` never fires on one,
//! and with an error type that is not `Classify` it never fires at all.
#[herta::operation(effect = Pure, resources("worker" = 1), retry(on = Uncertain, max = 3),
                   timeout = "50ms")]
async fn fetch(url: String) -> Result<String, std::io::Error> {
    Ok(url)
}

fn main() {}
