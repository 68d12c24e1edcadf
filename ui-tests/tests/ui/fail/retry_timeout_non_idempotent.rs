//! A NonIdempotent operation's timeout is Uncertain, which it may never
//! retry: `retry(on = Transient)` with a timeout but an error type that is
//! not `Classify` could never fire.
#[herta::operation(effect = NonIdempotent, resources("worker" = 1), retry(on = Transient, max = 3),
                   timeout = "50ms")]
async fn charge(card: String) -> Result<String, std::io::Error> {
    Ok(card)
}

fn main() {}
