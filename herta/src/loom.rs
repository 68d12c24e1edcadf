//! One place that picks std or loom synchronization, so every state machine
//! of the crate (the budget arbiter, the key table, the admission gate) is
//! model-checked with the same code that ships.
//!
//! Build and run the models with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p herta --lib --release loom`.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use ::loom::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

pub(crate) use std::sync::atomic::Ordering;

/// The gate's signals: tokio's `Notify`, or under loom a stand-in with the
/// same contract built on loom's mutex (tokio's own lock is invisible to
/// loom).
#[cfg(not(loom))]
pub(crate) use tokio::sync::Notify;
#[cfg(loom)]
mod notify;
#[cfg(loom)]
pub(crate) use notify::Notify;

/// Between a `SeqCst` write and a `SeqCst` read of another location that
/// must not pass it (the gate's Dekker protocol, `gate.rs`): nothing in a
/// real build, where the `SeqCst` operations themselves forbid that
/// reordering; a `SeqCst` fence under loom, which models fences but lets a
/// `SeqCst` read pass an earlier `SeqCst` write (tokio-rs/loom#180).
#[inline(always)]
pub(crate) fn seq_cst_point() {
    #[cfg(loom)]
    ::loom::sync::atomic::fence(Ordering::SeqCst);
}

/// Locks `mutex`. A panic while it was held cannot leave the state half
/// updated (every critical section either completes or panics before its
/// first write), so a poisoned lock is used as is.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    return mutex.lock().unwrap();
    #[cfg(not(loom))]
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
