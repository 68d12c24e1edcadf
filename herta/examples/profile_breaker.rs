//! A fixed workload for instruction-level profiling of the circuit
//! breaker's paths (BENCHMARKS.md, "Circuit breakers"): the same
//! uncontended call as `profile_call`, without a breaker (`plain`),
//! through a closed breaker with a time window (`closed`) and with a count
//! window (`count`), refused by an open one (`open`), and, to compare the
//! refusal with, refused by a busy budget under `admission = Reject`
//! (`reject`), all in one binary:
//!
//! ```text
//! cargo build --release -p herta --example profile_breaker
//! valgrind --tool=callgrind target/release/examples/profile_breaker plain 100000
//! valgrind --tool=callgrind target/release/examples/profile_breaker closed 100000
//! valgrind --tool=callgrind target/release/examples/profile_breaker count 100000
//! valgrind --tool=callgrind target/release/examples/profile_breaker open 100000
//! valgrind --tool=callgrind target/release/examples/profile_breaker reject 100000
//! ```
//!
//! Instruction counts are deterministic, so the three compare without a
//! quiet machine; subtract a run of 0 calls for the setup.

#[path = "profile/cli.rs"]
mod cli;

use std::hint::black_box;
use std::time::Duration;

use herta::{Breaker, Failure, Resource, Runtime};

herta::breakers! {
    /// Never opened by this workload's successes.
    pub GUARD: "guard" = breaker(failure_rate = 50, min_calls = 10, window = "10s");
    /// The last 100 attempts: never opened by this workload's successes.
    pub LAST_100: "last-100" = breaker(failure_rate = 50, min_calls = 10, window = 100);
    /// Opened before the loop (one failure of one call), for an hour.
    pub TRIPPED: "tripped" = breaker(failure_rate = 1, min_calls = 1, open_for = "1h");
}

#[herta::operation(effect = Pure, resources("worker" = 1))]
async fn plain(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1), breaker = GUARD)]
async fn closed(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1), breaker = LAST_100)]
async fn count(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

/// Holds the one unit of `held` until the process ends.
#[herta::operation(effect = Pure, resources("held" = 1))]
async fn hold() -> Result<(), Failure<std::io::Error>> {
    std::future::pending().await
}

/// Refused at once: `held` is held.
#[herta::operation(effect = Pure, resources("held" = 1), admission = Reject)]
async fn reject(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

#[herta::operation(effect = Pure, resources("worker" = 1), breaker = TRIPPED)]
async fn open(x: u64) -> Result<u64, Failure<std::io::Error>> {
    if x == u64::MAX {
        return Err(Failure::transient(std::io::Error::other("trip")));
    }
    Ok(black_box(x))
}

fn main() {
    let (which, calls, rt) = (cli::which("closed"), cli::calls(2), cli::current_thread());
    let herta = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(Resource::new("held", 1))
        .breaker(GUARD)
        .breaker(LAST_100)
        .breaker(TRIPPED)
        .breaker(Breaker::new("unused").with_open_for(Duration::from_secs(1)))
        .build()
        .expect("valid declarations");
    let (plain, closed, count, open) = (
        Plain::bind(&herta).expect("bind"),
        Closed::bind(&herta).expect("bind"),
        Count::bind(&herta).expect("bind"),
        Open::bind(&herta).expect("bind"),
    );
    let (hold, reject) = (
        Hold::bind(&herta).expect("bind"),
        Reject::bind(&herta).expect("bind"),
    );
    rt.block_on(async {
        if which == "open" {
            assert!(open.call(u64::MAX).await.is_err());
            assert!(open.call(0).await.is_err(), "the breaker is open");
        }
        if which == "reject" {
            let held = tokio::spawn(async move { hold.call().await });
            while herta.stats().resource("held").map(|r| r.in_use) != Some(1) {
                tokio::task::yield_now().await;
            }
            assert!(reject.call(0).await.is_err(), "the budget is held");
            std::mem::forget(held);
        }
        for i in 0..calls {
            match which.as_str() {
                "plain" => black_box(plain.call(i).await.ok()),
                "count" => black_box(count.call(i).await.ok()),
                "open" => black_box(open.call(i).await.ok()),
                "reject" => black_box(reject.call(i).await.ok()),
                _ => black_box(closed.call(i).await.ok()),
            };
        }
    });
}
