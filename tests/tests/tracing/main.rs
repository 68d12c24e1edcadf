//! herta's tracing output, captured by subscribers: its own test binary,
//! because tracing caches each callsite's interest process-wide, so these
//! tests would see (and disturb) the callsites of the other tests.
//! `cargo test -p herta-tests --test tracing`.

#[path = "../suite/common.rs"]
mod common;

mod counted_out;
mod span_end;
mod spans;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Runs the tests of this binary that install a subscriber one at a time.
///
/// tracing caches each callsite's interest globally, computed from the
/// subscribers registered when the callsite is first hit; a thread without a
/// subscriber hitting a callsite for the first time while another thread
/// installs its own can leave that callsite disabled for the other thread.
/// Applications install one global subscriber and never see this; tests that
/// install one per thread must not race.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}
