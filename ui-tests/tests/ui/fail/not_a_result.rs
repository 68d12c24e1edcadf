#[herta::operation(effect = Pure)]
async fn double(value: u32) -> u32 {
    value * 2
}

// Code written for the declared return type shows no second error.
async fn use_it(rt: &herta::Runtime) -> Result<u32, Box<dyn std::error::Error>> {
    let op = Double::bind(rt)?;
    let doubled: u32 = op.call(2).await?;
    Ok(doubled)
}

fn main() {
    let _ = use_it;
}
