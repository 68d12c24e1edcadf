//! Model checks of the half-open probe reservation: every interleaving of
//! callers reserving probes (at their attempt's start, after the check
//! that let them queue, which reserves nothing) while a probe's slot is
//! released and another probe's failure moves the breaker. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.

use std::sync::Arc;
use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

use super::circuit::{BreakerState, Circuit, Verdict};
use super::declaration::Breaker;

const S: u64 = 1_000_000_000;

fn bounded() -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model
}

/// Opened at 1 s (4 failures of 4 calls), open for 30 s, `probes` probes.
fn opened(probes: u16) -> Circuit {
    let c = Circuit::new(
        Breaker::new("model")
            .with_min_calls(4)
            .with_open_for(Duration::from_secs(30))
            .with_probes(probes),
    );
    for _ in 0..4 {
        let (ticket, _) = c.pass_now(S).expect("closed");
        c.counted(ticket, true, S);
    }
    assert_eq!(c.state(), BreakerState::Open);
    c
}

/// `n` threads passing `c` at 31 s, each counting itself in the count
/// returned when it was admitted.
fn racing_passes(c: &Arc<Circuit>, n: usize) -> (Arc<AtomicUsize>, Vec<thread::JoinHandle<()>>) {
    let admitted = Arc::new(AtomicUsize::new(0));
    let callers = (0..n)
        .map(|_| {
            let (c, admitted) = (Arc::clone(c), Arc::clone(&admitted));
            thread::spawn(move || {
                if c.pass_now(31 * S).is_ok() {
                    admitted.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    (admitted, callers)
}

/// Three callers find the open period over at once: exactly one moves it
/// to half-open and holds the one probe; the others are refused.
#[test]
fn racing_callers_reserve_exactly_the_probes() {
    bounded().check(|| {
        let c = Arc::new(opened(1));
        let (admitted, callers) = racing_passes(&c, 3);
        for caller in callers {
            caller.join().unwrap();
        }
        assert_eq!(admitted.load(Ordering::SeqCst), 1);
        assert_eq!(c.state(), BreakerState::HalfOpen);
    });
}

/// Half-open with two probes, one held (`a`): a caller reserves and
/// releases a probe (no verdict), another reserves one and succeeds, while
/// `a` fails. Never more than two probes out at once; `a`'s failure always
/// reopens the breaker (two successes are needed to close it); a probe of
/// the period before changes nothing once it reopened.
#[test]
fn a_release_and_a_transition_race_the_reservation() {
    bounded().check(|| {
        let c = Arc::new(opened(2));
        let (a, _) = c.pass_now(31 * S).expect("the first probe");
        let out = Arc::new(AtomicUsize::new(1));
        let spawn = |verdict: Verdict| {
            let (c, out) = (Arc::clone(&c), Arc::clone(&out));
            thread::spawn(move || {
                if let Ok((probe, _)) = c.pass_now(31 * S) {
                    let now_out = out.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now_out <= 2, "{now_out} probes out");
                    out.fetch_sub(1, Ordering::SeqCst);
                    c.probe_ended(probe, verdict, 31 * S);
                }
            })
        };
        let releaser = spawn(Verdict::Neutral);
        let succeeder = spawn(Verdict::Success);
        out.fetch_sub(1, Ordering::SeqCst);
        let moved = c.probe_ended(a, Verdict::Failure, 32 * S);
        releaser.join().unwrap();
        succeeder.join().unwrap();
        assert_eq!(moved.map(|m| m.to), Some(BreakerState::Open));
        assert_eq!(c.state(), BreakerState::Open);
        assert_eq!(
            c.pass_now(32 * S).unwrap_err(),
            Some(Duration::from_secs(30))
        );
    });
}

/// Callers let through the check before they queue (the open period
/// over) reserve nothing there; they race for the two probes when their
/// attempts start, while a third caller checks: exactly two are admitted,
/// and a check after they are out refuses.
#[test]
fn checked_callers_reserve_exactly_the_probes_when_they_start() {
    bounded().check(|| {
        let c = Arc::new(opened(2));
        for _ in 0..3 {
            assert!(c.admits_now(31 * S).is_ok());
        }
        assert_eq!(c.state(), BreakerState::Open, "a check reserves nothing");
        let (admitted, callers) = racing_passes(&c, 2);
        let checked = c.admits_now(31 * S).is_ok();
        let last = c.pass_now(31 * S).is_ok();
        for caller in callers {
            caller.join().unwrap();
        }
        let admitted = admitted.load(Ordering::SeqCst) + usize::from(last);
        assert_eq!(admitted, 2);
        assert!(
            checked || !last,
            "a refused check is never followed by a probe"
        );
        assert_eq!(c.state(), BreakerState::HalfOpen);
        assert_eq!(c.admits_now(31 * S), Err(None), "every probe out");
    });
}
