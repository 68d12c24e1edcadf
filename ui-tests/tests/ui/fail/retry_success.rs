use herta::Failure;

#[herta::operation(effect = Pure, retry(on = [Transient, Success], max = 2))]
async fn parse(text: String) -> Result<u32, Failure<String>> {
    text.parse().map_err(|_| Failure::permanent(text))
}

fn main() {}
