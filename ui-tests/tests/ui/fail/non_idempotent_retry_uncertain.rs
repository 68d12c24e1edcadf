use herta::Failure;

#[herta::operation(effect = NonIdempotent, resources("worker" = 1),
                   retry(on = [Transient, Uncertain], max = 3))]
async fn charge(customer: String) -> Result<u64, Failure<String>> {
    let _ = customer;
    Ok(42)
}

fn main() {}
