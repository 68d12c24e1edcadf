//! The short fleet run: 4 worker processes (the `herta-fleet` binary) of 16
//! callers each against one provider (`Q = 16`, `R = 400/s`), in 3-second
//! phases, `Q` halved in the third; then the naive fleet for 1-second phases.
//!
//! The invariants are exact (nothing lost, the provider's counts balance
//! the workers', in flight never above `Q`, retries within the retry
//! budget's own bound). The goodput floors and the storm's factor are bands
//! from measured runs under load (see the constants).

use std::path::PathBuf;
use std::time::Duration;

use herta_fleet::fleet::{self, Config};
use herta_fleet::violations;
use herta_fleet::worker::{Mode, RETRY_MIN_PER_SECOND, RETRY_RATIO, RETRY_WINDOW};

fn config(phase: Duration) -> Config {
    Config::new(PathBuf::from(env!("CARGO_BIN_EXE_herta-fleet")), phase)
}

/// The retry budget's bound on retries per call over a run of `secs`: its
/// ratio, plus each worker's reserve (`min_per_second × window`) once for
/// every window the run touches.
fn retry_bound(config: &Config, calls: u64) -> f64 {
    let secs = (config.phase * 4).as_secs_f64();
    let windows = (secs / RETRY_WINDOW.as_secs_f64()).ceil() + 1.0;
    let reserve = f64::from(config.workers)
        * f64::from(RETRY_MIN_PER_SECOND)
        * RETRY_WINDOW.as_secs_f64()
        * windows;
    f64::from(RETRY_RATIO) + reserve / calls.max(1) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooperative_fleet_uses_the_quota_without_a_storm_and_the_naive_one_storms() {
    let cooperative_config = config(Duration::from_secs(3));
    let cooperative = fleet::run(&cooperative_config, Mode::Cooperative)
        .await
        .expect("the cooperative fleet runs");
    println!("{}", cooperative.summary());
    let bound = retry_bound(&cooperative_config, cooperative.tally.calls);
    let problems = violations(&cooperative, GOODPUT_FLOOR, bound);
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        cooperative.settle_down.is_some() && cooperative.settle_up.is_some(),
        "the 429 rate did not settle within the phase: {}",
        cooperative.summary()
    );

    let naive = fleet::run(&config(Duration::from_secs(1)), Mode::Naive)
        .await
        .expect("the naive fleet runs");
    println!("{}", naive.summary());
    // The naive fleet loses nothing either (every call ends), and the
    // provider still holds its quota; what differs is the load it takes.
    assert_eq!(naive.lost(), 0, "{}", naive.summary());
    assert_eq!(naive.provider_requests, naive.tally.attempts);
    assert_eq!(naive.over_q, 0);
    assert!(
        naive.retries_per_call() > STORM_FACTOR * cooperative.retries_per_call(),
        "no storm to compare with: naive {:.3} retries per call, cooperative {:.3}",
        naive.retries_per_call(),
        cooperative.retries_per_call()
    );
}

/// The cooperative fleet's goodput floor in the short run (steady, halved,
/// restored), from 20 runs in a debug build at a load average of 6–7 on 2
/// CPUs: means 99.9 %, 87.5 %, 100.1 % (σ 1.4, 3.4, 1.8 points), so 90 %
/// (the target) is more than 3σ below the steady and restored
/// means, and 75 % 3.7σ below the halved one. The halved phase reads lower
/// because `Q` binds there: the provider holds each place 26.3–26.6 ms, not
/// 25 (its timer's lag), and a place stays empty between one request and
/// the next (a round trip through a debug build on busy CPUs).
const GOODPUT_FLOOR: [f64; 3] = [0.9, 0.75, 0.9];
/// How many times more retries per call the naive fleet must make: the
/// same runs read 23–78× (log-mean 40×, 3σ below it in log space: 13×).
const STORM_FACTOR: f64 = 10.0;
