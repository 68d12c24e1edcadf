use herta::Failure;

herta::resources! {
    pub API: "api" = 100 per "1s", burst = 2;
}

#[herta::operation(effect = Idempotent, resources(API = 3))]
async fn fetch() -> Result<(), Failure<std::io::Error>> {
    Ok(())
}

fn main() {}
