//! A fixed workload for instruction-level profiling of one uncontended call
//! (BENCHMARKS.md, "Where the time goes"):
//!
//! ```text
//! cargo build --release -p herta --example profile_call
//! valgrind --tool=callgrind target/release/examples/profile_call herta 100000
//! valgrind --tool=callgrind target/release/examples/profile_call semaphore 100000
//! ```
//!
//! Instruction counts are deterministic, so two builds can be compared
//! without a quiet machine.

use std::hint::black_box;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn work(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "herta".to_owned());
    let calls: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime");
    let herta = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .build()
        .expect("valid resources");
    let op = Work::bind(&herta).expect("bind");
    let sem = tokio::sync::Semaphore::new(4);
    rt.block_on(async {
        for i in 0..calls {
            match which.as_str() {
                "semaphore" => {
                    let _permit = sem.acquire().await.expect("open");
                    black_box(i);
                }
                _ => {
                    black_box(op.call(i).await.ok());
                }
            }
        }
    });
}
