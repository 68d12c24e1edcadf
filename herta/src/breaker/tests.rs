//! The circuit's state machine and window, driven with explicit times (ns
//! since the circuit was made): no clock, no runtime.

use std::time::Duration;

use super::circuit::{BreakerState, Circuit, Ticket, Transition, Verdict};
use super::declaration::Breaker;
use crate::error::ConfigError;

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;

/// 50 %, 4 calls, a 10 s window (1 s buckets), open 30 s, 2 probes.
fn circuit() -> Circuit {
    Circuit::new(
        Breaker::new("payments")
            .with_failure_rate(50)
            .with_min_calls(4)
            .with_window(Duration::from_secs(10))
            .with_open_for(Duration::from_secs(30))
            .with_probes(2),
    )
}

fn pass(c: &Circuit, now: u64) -> Ticket {
    c.pass_now(now).expect("admitted").0
}

/// One closed attempt admitted and ended at `now`.
fn attempt(c: &Circuit, now: u64, failed: bool) -> Option<Transition> {
    let ticket = pass(c, now);
    c.counted(ticket, failed, now)
}

/// Trips `c` at `now` (4 failures).
fn trip(c: &Circuit, now: u64) {
    for _ in 0..4 {
        attempt(c, now, true);
    }
    assert_eq!(c.state(), BreakerState::Open);
}

#[test]
fn no_verdict_before_min_calls() {
    let c = circuit();
    for _ in 0..3 {
        assert_eq!(attempt(&c, S, true), None);
    }
    assert_eq!(c.state(), BreakerState::Closed);
    let moved = attempt(&c, S, true).expect("the fourth failure opens it");
    assert_eq!(
        (moved.from, moved.to),
        (BreakerState::Closed, BreakerState::Open)
    );
    assert_eq!((moved.counts.calls, moved.counts.failures), (4, 4));
}

#[test]
fn opens_at_the_rate_not_below() {
    let c = circuit();
    // 2 successes, 1 failure: 33 %.
    attempt(&c, S, false);
    attempt(&c, S, false);
    attempt(&c, S, true);
    assert_eq!(attempt(&c, S, false), None, "1 failure of 4: 25 %");
    assert_eq!(c.state(), BreakerState::Closed);
    // 4 calls, 1 failure (25 %); then a failure: 2 of 5 (40 %).
    assert_eq!(attempt(&c, S, true), None);
    assert_eq!(c.state(), BreakerState::Closed);
    // 3 of 6: 50 %.
    assert!(attempt(&c, S, true).is_some());
}

#[test]
fn a_success_that_reaches_min_calls_opens_it() {
    // A success can open the breaker: in one bucket period (the successes past the period's
    // first take the window's cursor), the success that makes 4 is judged.
    let c = circuit();
    attempt(&c, S, true);
    attempt(&c, S, true);
    assert_eq!(attempt(&c, S, false), None, "3 calls: no verdict");
    let moved = attempt(&c, S, false).expect("2 failures of 4: 50 %");
    assert_eq!(
        (
            moved.from,
            moved.to,
            moved.counts.calls,
            moved.counts.failures
        ),
        (BreakerState::Closed, BreakerState::Open, 4, 2)
    );
}

#[test]
fn a_success_after_a_bucket_expired_is_judged() {
    let c = circuit();
    for _ in 0..4 {
        attempt(&c, 0, false);
    }
    attempt(&c, 5 * S, true);
    assert_eq!(attempt(&c, 5 * S, true), None, "2 failures of 6: 33 %");
    // At 10 s the successes of 0 s leave the window: 3 calls, then 4.
    assert_eq!(attempt(&c, 10 * S, false), None);
    let moved = attempt(&c, 10 * S, false).expect("2 failures of 4: 50 %");
    assert_eq!((moved.counts.calls, moved.counts.failures), (4, 2));
}

#[test]
fn open_refuses_with_the_time_left_then_lets_probes_through() {
    let c = circuit();
    trip(&c, S);
    let refused = c.pass_now(S + 10 * S).unwrap_err();
    assert_eq!(refused, Some(Duration::from_secs(20)));
    // At exactly opened + open_for it is half-open.
    let (probe, moved) = c.pass_now(31 * S).expect("the first probe");
    assert_eq!(moved.map(|m| m.to), Some(BreakerState::HalfOpen));
    assert!(probe.is_probe());
    let (_second, moved) = c.pass_now(31 * S).expect("the second probe");
    assert_eq!(moved, None);
    assert_eq!(c.pass_now(31 * S).unwrap_err(), None, "both probes are out");
}

#[test]
fn the_check_before_queueing_refuses_but_reserves_nothing() {
    let c = circuit();
    assert!(c.admits_now(S).is_ok(), "closed");
    trip(&c, S);
    assert_eq!(c.admits_now(11 * S), Err(Some(Duration::from_secs(20))));
    // The open period over: let through, still open, nothing reserved.
    for _ in 0..5 {
        assert!(c.admits_now(31 * S).is_ok());
    }
    assert_eq!(c.state(), BreakerState::Open);
    let a = pass(&c, 31 * S);
    assert!(c.admits_now(31 * S).is_ok(), "one probe of two out");
    let _b = pass(&c, 31 * S);
    assert_eq!(c.admits_now(31 * S), Err(None), "every probe out");
    c.probe_ended(a, Verdict::Neutral, 31 * S);
    assert!(c.admits_now(31 * S).is_ok(), "a slot freed");
    let refused = c.snapshot().3;
    assert_eq!(refused, 2, "each refusal counted once");
}

#[test]
fn all_probes_succeeding_close_it_with_an_empty_window() {
    let c = circuit();
    trip(&c, S);
    let a = pass(&c, 31 * S);
    let b = pass(&c, 31 * S);
    assert_eq!(c.probe_ended(a, Verdict::Success, 31 * S), None);
    assert_eq!(c.state(), BreakerState::HalfOpen);
    assert_eq!(
        c.pass_now(31 * S).unwrap_err(),
        None,
        "a probe succeeded: no new slot"
    );
    let moved = c.probe_ended(b, Verdict::Success, 31 * S).expect("closes");
    assert_eq!(
        (moved.from, moved.to),
        (BreakerState::HalfOpen, BreakerState::Closed)
    );
    assert_eq!(c.counts(31 * S).calls, 0, "a new window");
    // Three failures do not reopen it: the window starts again.
    for _ in 0..3 {
        attempt(&c, 31 * S, true);
    }
    assert_eq!(c.state(), BreakerState::Closed);
}

#[test]
fn a_failed_probe_reopens_for_a_full_open_for() {
    let c = circuit();
    trip(&c, S);
    let a = pass(&c, 31 * S);
    let b = pass(&c, 31 * S);
    let moved = c.probe_ended(a, Verdict::Failure, 40 * S).expect("reopens");
    assert_eq!(
        (moved.from, moved.to),
        (BreakerState::HalfOpen, BreakerState::Open)
    );
    assert_eq!(
        c.pass_now(40 * S).unwrap_err(),
        Some(Duration::from_secs(30))
    );
    // The other probe's late success, of the half-open period before,
    // changes nothing.
    assert_eq!(c.probe_ended(b, Verdict::Success, 41 * S), None);
    assert_eq!(c.state(), BreakerState::Open);
    assert!(c.pass_now(70 * S).is_ok(), "half-open again at 40 s + 30 s");
}

#[test]
fn a_probe_without_verdict_frees_its_slot_at_once() {
    let c = circuit();
    trip(&c, S);
    let a = pass(&c, 31 * S);
    let _b = pass(&c, 31 * S);
    assert!(c.pass_now(31 * S).is_err());
    assert_eq!(c.probe_ended(a, Verdict::Neutral, 31 * S), None);
    assert_eq!(c.state(), BreakerState::HalfOpen);
    assert!(c.pass_now(31 * S).is_ok(), "the freed slot is taken again");
}

#[test]
fn results_from_before_the_last_transition_change_nothing() {
    let c = circuit();
    let early = pass(&c, S);
    trip(&c, S);
    // Late failure of an attempt admitted while closed: the breaker is open.
    assert_eq!(c.counted(early, true, 2 * S), None);
    // It closes again; the early ticket's result still counts nowhere.
    let a = pass(&c, 31 * S);
    let b = pass(&c, 31 * S);
    c.probe_ended(a, Verdict::Success, 31 * S);
    c.probe_ended(b, Verdict::Success, 31 * S);
    assert_eq!(c.state(), BreakerState::Closed);
    for _ in 0..4 {
        assert_eq!(c.counted(early, true, 32 * S), None);
    }
    assert_eq!(c.counts(32 * S).calls, 0);
    assert_eq!(c.state(), BreakerState::Closed);
}

#[test]
fn buckets_expire_on_time_however_long_the_gap() {
    let c = circuit();
    for _ in 0..3 {
        attempt(&c, 0, true);
    }
    assert_eq!(c.counts(9 * S + 999 * MS).calls, 3, "still in the window");
    assert_eq!(c.counts(10 * S).calls, 0, "its bucket expired");
    // A fourth failure 10 s later is one failure of one call.
    assert_eq!(attempt(&c, 10 * S, true), None);
    assert_eq!(c.state(), BreakerState::Closed);
    // Gaps of whole windows, however long (a stamp's range, 2^32 periods,
    // and more), leave nothing behind.
    for gap in [10 * S, 1_000 * S, 4_294_967_296 * S, 3 * 4_294_967_296 * S] {
        let c = circuit();
        for _ in 0..3 {
            attempt(&c, 5 * S, true);
        }
        assert_eq!(c.counts(5 * S + gap).calls, 0, "gap {gap}");
        assert_eq!(attempt(&c, 5 * S + gap, true), None, "gap {gap}");
    }
}

#[test]
fn the_window_sums_its_buckets() {
    let c = Circuit::new(
        Breaker::new("sum")
            .with_failure_rate(100)
            .with_min_calls(100),
    );
    for i in 0..10 {
        attempt(&c, i * S, i % 3 == 0);
    }
    let counts = c.counts(9 * S);
    assert_eq!((counts.calls, counts.failures), (10, 4));
    let counts = c.counts(12 * S);
    assert_eq!(
        (counts.calls, counts.failures),
        (7, 3),
        "buckets 0 to 2 expired"
    );
}

#[test]
fn successes_through_the_cursor_count_in_their_own_bucket() {
    let c = Circuit::new(
        Breaker::new("cursor")
            .with_failure_rate(100)
            .with_min_calls(1000),
    );
    // Successes of each period, the first renewing its bucket and moving
    // the cursor, the others added through it; one late success of the
    // period before (its clock read before the cursor moved on).
    for period in 0..25 {
        for k in 0..3 {
            attempt(&c, period * S + k * MS, false);
        }
        if period > 0 {
            attempt(&c, period * S - MS, false);
        }
        let counts = c.counts(period * S);
        // This period's 3, and 4 for each earlier period in the window.
        assert_eq!(counts.calls, 3 + 4 * period.min(9), "period {period}");
    }
    // A success ending past the cursor's period (a gap of 2 periods):
    // periods 18 to 23 hold 4, 24 holds 3, 27 this one.
    attempt(&c, 27 * S, false);
    assert_eq!(c.counts(27 * S).calls, 4 * 6 + 3 + 1);
    // A success whose clock was read a whole window before the latest
    // renewal counts nowhere (and empties nothing).
    attempt(&c, 17 * S, false);
    assert_eq!(c.counts(27 * S).calls, 4 * 6 + 3 + 1);
    // Closing empties the window and moves the cursor back: the rest of
    // the period counts from zero, in the right bucket.
    c.window_cleared();
    for _ in 0..2 {
        attempt(&c, 27 * S + 500 * MS, false);
    }
    assert_eq!(c.counts(27 * S + 500 * MS).calls, 2);
    assert_eq!(c.counts(37 * S).calls, 0, "its bucket expired on time");
}

#[test]
fn slow_attempts_count_as_failures_and_open_it_at_the_slow_rate() {
    let c = Circuit::new(
        Breaker::new("slow")
            .with_failure_rate(100)
            .with_min_calls(2)
            .with_slow_call(Duration::from_millis(100), 50),
    );
    let fast = pass(&c, S);
    assert_eq!(c.counted(fast, false, S + 99 * MS), None);
    let slow = pass(&c, S);
    let moved = c
        .counted(slow, false, S + 100 * MS)
        .expect("1 slow of 2: 50 %");
    assert_eq!(moved.to, BreakerState::Open);
    assert_eq!((moved.counts.failures, moved.counts.slow), (1, 1));
}

#[test]
fn invalid_values_are_refused() {
    let invalid = |b: Breaker| match b.check() {
        Err(ConfigError::InvalidBreaker { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    assert!(invalid(Breaker::new("a").with_failure_rate(0)).contains("1 to 100"));
    assert!(invalid(Breaker::new("a").with_failure_rate(101)).contains("1 to 100"));
    assert!(invalid(Breaker::new("a").with_probes(0)).contains("probes"));
    assert!(invalid(Breaker::new("a").with_min_calls(0)).contains("min_calls"));
    assert!(invalid(Breaker::new("a").with_window(Duration::from_millis(9))).contains("buckets"));
    assert!(invalid(Breaker::new("a").with_open_for(Duration::ZERO)).contains("open_for"));
    assert!(
        invalid(Breaker::new("a").with_slow_call(Duration::from_secs(1), 0)).contains("slow_rate")
    );
    assert_eq!(Breaker::new("").check(), Err(ConfigError::EmptyName));
    assert_eq!(Breaker::new("a").check(), Ok(()));
}

#[test]
fn a_bucket_skipped_for_a_stamp_range_does_not_come_back() {
    // Activity every period but those of bucket 3, for 2^32 periods: its
    // stale counts must not look current when the stamps wrap.
    let c = Circuit::new(
        Breaker::new("wrap")
            .with_failure_rate(100)
            .with_min_calls(1000),
    );
    for _ in 0..5 {
        attempt(&c, 3 * S, true);
    }
    let wrapped = (1u64 << 32) * S;
    attempt(&c, wrapped + 2 * S, false);
    assert_eq!(c.counts(wrapped + 3 * S).calls, 1);
    assert_eq!(c.counts(wrapped + 3 * S).failures, 0);
}

/// A count window's counts follow the last `size` attempts exactly, as a
/// queue of them does, through many laps of the ring and an emptying.
#[test]
fn a_count_window_holds_exactly_the_last_attempts() {
    use super::ring::Ring;
    use std::collections::VecDeque;
    for size in [1u32, 3, 64, 65, 100] {
        let ring = Ring::new(size, true);
        let mut model: VecDeque<(bool, bool)> = VecDeque::new();
        let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(size);
        for i in 0..1_000u32 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let (failed, slow) = (seed.is_multiple_of(3), seed.is_multiple_of(5));
            if i == 500 {
                ring.clear();
                model.clear();
            }
            let slot = ring.take();
            if failed || slow || !ring.holds_success(slot) {
                ring.put(slot, failed, slow);
            }
            model.push_back((failed || slow, slow));
            if model.len() > size as usize {
                model.pop_front();
            }
            let counts = ring.sum();
            let failures = model.iter().filter(|a| a.0).count() as u64;
            let slows = model.iter().filter(|a| a.1).count() as u64;
            assert_eq!(
                (counts.calls, counts.failures, counts.slow),
                (model.len() as u64, failures, slows),
                "size {size}, attempt {i}"
            );
        }
    }
}

/// A count window judges the success that brings it to `min_calls` (the
/// window held failures: the word holds `JUDGE`), and opens at it.
#[test]
fn a_count_window_judges_a_success_that_reaches_min_calls() {
    let c = Circuit::new(
        Breaker::new("count")
            .with_count_window(4)
            .with_min_calls(3)
            .with_failure_rate(50),
    );
    let ended = |verdict| {
        let ticket = c.pass_now(0).expect("closed").0;
        c.ended(ticket, verdict);
    };
    ended(Verdict::Failure);
    ended(Verdict::Failure);
    assert_eq!(c.state(), BreakerState::Closed, "no verdict before 3");
    ended(Verdict::Success);
    assert_eq!(
        c.state(),
        BreakerState::Open,
        "2 of 3, judged at the success"
    );
}
