//! A fleet of processes against one provider: what herta's part is when the
//! quota is global.
//!
//! herta is process-local: it bounds what *this* process sends. A quota
//! shared by many processes belongs to the provider that enforces it; each
//! process's part is to cooperate with the provider's answers (`429` and its
//! `Retry-After`, backoff with jitter, a retry budget) so that the fleet as a
//! whole uses the quota without a retry storm. This crate measures that:
//!
//! - [`provider`]: an axum server on loopback enforcing `Q` requests in
//!   flight and `R` per second, answering `429` with `Retry-After` above
//!   either, counting what it sees in time bins;
//! - [`worker`]: one worker process, with its own herta runtime and callers
//!   in a closed loop, cooperative or naive;
//! - [`fleet`]: the coordinator — the provider, 4 worker processes (this
//!   program's binary re-run with the `worker` role), the schedule (`Q`
//!   halved mid-run, then restored) and the figures;
//! - [`plot`]: the SVG figure of a run.
//!
//! `cargo run --release -p herta-fleet` runs both fleets and writes
//! `examples/fleet/fleet.svg`; `herta/docs/fleet.md` explains the figures.

pub mod fleet;
pub mod plot;
pub mod provider;
pub mod worker;

use fleet::Report;

/// What a cooperative run must show, as messages for each violation (empty:
/// all held): nothing lost (every call ended in a success or a reported
/// error, the provider's `200`s equal the workers' successes and its
/// requests their attempts), never
/// more in flight than `Q` once a change has drained, goodput at least
/// `min_goodput` of the capacity in the measured half-phases (steady,
/// halved, restored), and at most `max_retries` retries per call.
pub fn violations(report: &Report, min_goodput: [f64; 3], max_retries: f64) -> Vec<String> {
    let mut out = Vec::new();
    if report.lost() != 0 {
        out.push(format!("{} calls lost", report.lost()));
    }
    if report.provider_ok != report.tally.ok {
        out.push(format!(
            "the provider answered {} 200s, the workers saw {}",
            report.provider_ok, report.tally.ok
        ));
    }
    if report.provider_requests != report.tally.attempts {
        out.push(format!(
            "the provider received {} requests, the workers made {} attempts",
            report.provider_requests, report.tally.attempts
        ));
    }
    if report.over_q != 0 {
        out.push(format!("{} requests in flight above Q", report.over_q));
    }
    let phases = ["steady", "halved", "restored"].iter().zip(min_goodput);
    for ((phase, min_goodput), goodput) in phases.zip(report.goodput) {
        if goodput < min_goodput {
            out.push(format!(
                "{phase}: goodput {:.1} % of capacity, below {:.1} %",
                goodput * 100.0,
                min_goodput * 100.0
            ));
        }
    }
    if report.retries_per_call() > max_retries {
        out.push(format!(
            "{:.3} retries per call, above {max_retries:.3}",
            report.retries_per_call()
        ));
    }
    out
}
