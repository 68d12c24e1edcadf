//! One place that picks std or loom synchronization, so every state machine
//! of the crate (the budget arbiter, the key table, the admission gate) is
//! model-checked with the same code that ships.
//!
//! Build and run the models with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p herta --lib --release loom`.

mod sync;

pub(crate) use sync::{
    lock, seq_cst_point, AtomicBool, AtomicU32, AtomicU64, Mutex, MutexGuard, Ordering,
};

/// The gate's signals: tokio's `Notify`, or under loom a stand-in with the
/// same contract built on loom's mutex (tokio's own lock is invisible to
/// loom).
#[cfg(not(loom))]
pub(crate) use tokio::sync::Notify;
#[cfg(loom)]
mod notify;
#[cfg(loom)]
pub(crate) use notify::Notify;
