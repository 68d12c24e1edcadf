//! A fixed workload for instruction-level profiling of one uncontended call
//! through a rate budget whose units are always available, beside the same
//! call through a concurrency budget (BENCHMARKS.md, "Rate budgets"):
//!
//! ```text
//! cargo build --release -p herta --example profile_rate
//! valgrind --tool=callgrind target/release/examples/profile_rate plain 100000
//! valgrind --tool=callgrind target/release/examples/profile_rate rate 100000
//! valgrind --tool=callgrind target/release/examples/profile_rate both 100000
//! ```
//!
//! `plain` calls an operation needing 1 unit of a budget of 4; `rate` the
//! same operation shape needing 1 unit of a rate budget that never runs
//! short; `both` one needing 1 of each. Instruction counts are
//! deterministic: subtract a run of N calls from a run of 2N for the
//! marginal cost of a call.

#[path = "profile/cli.rs"]
mod cli;

use std::hint::black_box;
use std::time::Duration;

use herta::{Failure, Resource, Runtime};

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn plain(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("api" = 1))]
async fn rated(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1, "api" = 1))]
async fn both(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

fn main() {
    let (which, calls, rt) = (cli::which("rate"), cli::calls(2), cli::current_thread());
    // A rate no run of this program can exhaust (100 million per second,
    // the most at once), as realistic rates are computed: in 64 bits.
    let api = Resource::rate("api", 100_000_000, Duration::from_secs(1)).expect("valid rate");
    let herta = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(api)
        .build()
        .expect("valid resources");
    let (plain, rated, both) = (
        Plain::bind(&herta).expect("bind"),
        Rated::bind(&herta).expect("bind"),
        Both::bind(&herta).expect("bind"),
    );
    rt.block_on(async {
        for i in 0..calls {
            let ok = match which.as_str() {
                "plain" => plain.call(i).await.is_ok(),
                "both" => both.call(i).await.is_ok(),
                _ => rated.call(i).await.is_ok(),
            };
            assert!(ok, "a call was refused");
            black_box(i);
        }
    });
}
