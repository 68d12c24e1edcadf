//! A `serialize_by` key type of several tokens: the error underlines all of it.
use herta::Failure;

#[herta::operation(effect = Idempotent, serialize_by = point)]
async fn plot(point: Option<(u32, f64)>) -> Result<(), Failure<std::io::Error>> {
    let _ = point;
    Ok(())
}

fn main() {}
