use herta::{Failure, Runtime};

herta::resources! {
    pub API: "api" = 100 per "1s", burst = 10, queue = 64;
    pub DAILY: "daily" = 1000 per "24h";
    pub DB: "db" = 4;
}

#[herta::operation(effect = Idempotent, resources(API = 1, DB = 1, DAILY = 1))]
async fn fetch(id: u32) -> Result<u32, Failure<std::io::Error>> {
    Ok(id)
}

fn main() {
    assert_eq!(API.capacity(), 10);
    assert_eq!(API.rate_of(), Some((100, std::time::Duration::from_secs(1))));
    assert_eq!(DAILY.capacity(), 1000);
    let rt = Runtime::builder()
        .resource(API)
        .resource(DAILY)
        .resource(DB)
        .build()
        .unwrap();
    let _fetch = Fetch::bind(&rt).unwrap();
}
