//! herta's integration tests, one binary (one link instead of one per
//! file): each module is one area of behaviour, run with
//! `cargo test -p herta-tests --test suite AREA::` (e.g. `deadline::`).
//! Two areas are their own binaries: `--test allocation` installs a
//! counting global allocator, and `--test tracing` (spans and events, and one line per call) installs subscribers
//! (tracing caches a callsite's interest process-wide, so its tests would
//! see other tests' callsites).

mod common;

mod admission;
mod arbitration;
mod backoff;
mod bad_input;
mod bounded_waiting;
mod breaker;
mod cancellation;
mod cancellation_sweep;
mod card;
mod construction;
mod contract_layer;
mod deadline;
mod error_chain;
mod hammer;
mod handler_errors;
mod house;
mod key_space;
mod keys;
mod latency;
mod live_capacity;
mod metrics;
mod nested;
mod no_runtime;
mod queue_limit;
mod queue_scaling;
mod rate;
mod rate_refunds;
mod retry;
mod schedules;
mod service;
mod shutdown;
mod state;
mod stats;
