//! The workload `profile_call` and `profile_moved` share: one uncontended
//! operation on a budget of 4, a bare semaphore of 4 beside it, and the
//! command line (`<herta|semaphore|...> [calls]`, 100 000 calls by default).

use std::hint::black_box;

use herta::{Failure, Resource, Runtime};

use crate::cli;

#[herta::operation(effect = Pure, resources("worker" = 1))]
pub async fn work(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(black_box(x))
}

/// What one profiling run needs.
pub struct Workload {
    /// Which loop to run (the first argument; `herta` by default).
    pub which: String,
    /// How many calls (the second argument).
    pub calls: u64,
    /// The current-thread tokio runtime the loop runs on.
    pub rt: tokio::runtime::Runtime,
    /// `work`, bound to a herta runtime with `worker` = 4.
    pub op: Work,
    /// The bare semaphore of 4 units.
    pub sem: tokio::sync::Semaphore,
}

/// Reads the command line and builds both runtimes.
pub fn workload() -> Workload {
    let (which, calls, rt) = (cli::which("herta"), cli::calls(2), cli::current_thread());
    let herta = Runtime::builder()
        .resource(Resource::new("worker", 4))
        .build()
        .expect("valid resources");
    let op = Work::bind(&herta).expect("bind");
    let sem = tokio::sync::Semaphore::new(4);
    Workload {
        which,
        calls,
        rt,
        op,
        sem,
    }
}
