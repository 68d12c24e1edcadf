//! [`Stats`]: what a runtime has done so far, and every budget's figures now;
//! [`OperationStats`], the same counters for one operation; and
//! [`Counters`], the atomic counters behind them (bumped only through the
//! event sink, [`crate::events`]).
//!
//! Every bound operation counts into its own [`OpCounters`] (one allocation,
//! shared by the clones of that binding, so calls of different operations
//! never bump one shared cache line), itself sharded by thread: a call
//! counts into one [`Counters`] shard of 128 bytes, its thread's, so two
//! threads calling one operation do not bump one shared line either. The
//! runtime keeps a [`Registry`] of them and sums them (every shard) when
//! [`Runtime::stats`](crate::Runtime::stats) reads.
//!
//! One file per reader: the runtime's figures in `runtime`, [`OperationStats`] in
//! `operation`, [`ResourceStats`] and [`RateStats`] in `budget`,
//! [`BreakerStats`] in `breaker`, and the counters behind them in `counters`.

mod breaker;
mod budget;
mod counters;
mod latency;
mod operation;
mod runtime;

pub use breaker::BreakerStats;
pub use budget::{RateStats, ResourceStats};
pub(crate) use counters::{Counters, OpCounters, Registry};
pub(crate) use latency::{Latency, Start as LatencyStart};
pub use operation::OperationStats;
pub use runtime::Stats;
