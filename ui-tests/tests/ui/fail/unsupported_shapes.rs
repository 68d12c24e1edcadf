//! Shapes `#[herta::operation]` cannot wrap get herta's own message.
use std::future::Future;

use herta::Failure;

struct Service;

impl Service {
    #[herta::operation(effect = Pure)]
    async fn build(value: u32) -> Result<Self, Failure<String>> {
        let _ = value;
        Ok(Service)
    }
}

#[herta::operation(effect = Pure)]
fn later(value: u32) -> impl Future<Output = Result<u32, Failure<String>>> {
    async move { Ok(value) }
}

fn main() {
    let _ = Later::NAME;
}
