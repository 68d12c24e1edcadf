//! `profile_call`'s workload awaited as criterion's `to_async(..).iter(routine)`
//! awaits it: the call inside a future that a closure returns, moved once
//! per call. Compared with `profile_call herta`, it shows what the call
//! future's size costs a caller that moves it (BENCHMARKS.md, "The time
//! gap"):
//!
//! ```text
//! cargo build --release -p herta --example profile_moved
//! valgrind --tool=callgrind target/release/examples/profile_moved herta 100000
//! valgrind --tool=callgrind target/release/examples/profile_moved semaphore 100000
//! ```
//!
//! A binary of its own: a third workload in `profile_call`'s loop changed
//! how the compiler inlined the other two (+61 instructions per herta call).

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
            if which == "semaphore" {
                let routine = || async {
                    let _permit = sem.acquire().await.expect("open");
                    black_box(i)
                };
                black_box(routine().await);
            } else {
                let routine = || async { black_box(op.call(i).await.ok()) };
                black_box(routine().await);
            }
        }
    });
}
