//! What every profiling example reads and runs on: `[which] [calls]` from
//! the command line (100 000 calls by default) and a current-thread tokio
//! runtime with its timer.

/// The loop to run: the first argument, else `default`.
#[allow(dead_code)] // `profile_keyed` runs one loop
pub fn which(default: &str) -> String {
    std::env::args()
        .nth(1)
        .unwrap_or_else(|| default.to_owned())
}

/// How many calls: the argument at `position` (1 is the first), else
/// 100 000.
pub fn calls(position: usize) -> u64 {
    std::env::args()
        .nth(position)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000)
}

/// The current-thread tokio runtime the loop runs on.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime")
}
