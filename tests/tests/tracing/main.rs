//! herta's tracing output, captured by subscribers: its own test binary,
//! because tracing caches each callsite's interest process-wide, so these
//! tests would see (and disturb) the callsites of the other tests.
//! `cargo test -p herta-tests --test tracing`.

#[path = "../suite/common.rs"]
mod common;

mod span_end;
mod spans;
