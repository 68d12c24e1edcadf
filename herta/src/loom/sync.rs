//! The synchronization primitives every state machine of the crate uses:
//! std's, or loom's under `--cfg loom`.

#[cfg(loom)]
pub(crate) use ::loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use ::loom::sync::{Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

pub(crate) use std::sync::atomic::Ordering;

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
