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

#[path = "profile/cli.rs"]
mod cli;
#[path = "profile/workload.rs"]
mod workload;

fn main() {
    let workload::Workload {
        which,
        calls,
        rt,
        op,
        sem,
    } = workload::workload();
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
