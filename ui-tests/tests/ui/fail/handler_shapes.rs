use herta::Failure;

#[herta::operation(effect = Pure)]
async fn generic<T: Clone>(value: T) -> Result<T, Failure<String>> {
    Ok(value)
}

#[herta::operation(effect = Pure)]
async fn no_result(value: u32) {
    let _ = value;
}

struct Service;

impl Service {
    #[herta::operation(effect = Pure)]
    async fn method(&self, value: u32) -> Result<u32, Failure<String>> {
        Ok(value)
    }
}

fn main() {
    let _ = Service;
}
