//! The size of a call's future next to a bare semaphore acquire's
//! (BENCHMARKS.md, "Where the time goes"):
//! `cargo run --release -p herta --example future_size`.

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn work(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(x)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), retry(on = Transient, max = 3),
                   timeout = "1s")]
async fn retried(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(x)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), serialize_by = key)]
async fn keyed(key: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(key)
}

fn main() {
    let rt = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .build()
        .expect("valid resources");
    let plain = Work::bind(&rt).expect("bind");
    let retried = Retried::bind(&rt).expect("bind");
    let keyed = Keyed::bind(&rt).expect("bind");
    let semaphore = tokio::sync::Semaphore::new(1);
    println!(
        "plain call: {} bytes",
        std::mem::size_of_val(&plain.call(1))
    );
    println!(
        "timeout + retry call: {} bytes",
        std::mem::size_of_val(&retried.call(1))
    );
    println!(
        "keyed call: {} bytes",
        std::mem::size_of_val(&keyed.call(1))
    );
    println!(
        "semaphore acquire: {} bytes",
        std::mem::size_of_val(&semaphore.acquire())
    );
}
