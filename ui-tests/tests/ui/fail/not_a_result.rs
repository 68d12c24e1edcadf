#[herta::operation(effect = Pure)]
async fn double(value: u32) -> u32 {
    value * 2
}

fn main() {}
