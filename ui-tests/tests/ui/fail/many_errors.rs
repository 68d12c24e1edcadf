//! All violations in one attribute are reported together, in the order
//! they are written in (line, then column), whatever rule finds them.
use herta::Failure;

#[herta::operation(effect = NonIdempotent, resources("worker" = 0, "worker" = 1),
                   retry(on = [Uncertain, Throttled], max = 1), timeout = "soon",
                   serialize_by = customer_id)]
async fn charge(customer: String) -> Result<u64, Failure<String>> {
    let _ = customer;
    Ok(1)
}

fn main() {}
