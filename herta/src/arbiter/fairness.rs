//! The fairness bound (the arbiter's module docs, "Bound"), checked for
//! every waiter of random schedules (arrivals `Wait` / `Reject` over three
//! budgets, releases, cancellations), driven step by step on one thread so
//! that each grant's step is known exactly. `PROPTEST_CASES` sets the number of schedules.

use super::acquire::Acquire;
use super::*;
use proptest::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Debug, Clone)]
enum Step {
    Arrive {
        needs: Vec<(usize, u32)>,
        reject: bool,
    },
    Release(usize),
    Cancel(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (
            proptest::collection::vec((0usize..3, 1u32..=3), 1..=3),
            proptest::bool::weighted(0.2),
        )
            .prop_map(|(needs, reject)| Step::Arrive { needs, reject }),
        3 => any::<usize>().prop_map(Step::Release),
        1 => any::<usize>().prop_map(Step::Cancel),
    ]
}

enum Phase<'a> {
    Waiting(Pin<Box<Acquire<'a>>>),
    /// Dropping the permit is the release.
    Holding(#[allow(dead_code)] Permit<'a>),
    Over,
}

struct Call<'a> {
    arrival: usize,
    resources: Vec<usize>,
    units: Vec<(usize, u32)>,
    queued: bool,
    granted: Option<usize>,
    released: Option<usize>,
    cancelled: Option<usize>,
    phase: Phase<'a>,
}

const NEVER: usize = usize::MAX;

fn run(caps: [u32; 3], steps: &[Step]) -> Result<(), TestCaseError> {
    let arb = Arbiter::new(caps);
    let mut calls: Vec<Call<'_>> = Vec::new();
    let cx = &mut Context::from_waker(Waker::noop());
    let mut k = 0;
    let total = steps.len();
    loop {
        let step = if k < total {
            steps[k].clone()
        } else if calls.iter().any(|c| matches!(c.phase, Phase::Holding(_))) {
            Step::Release(0)
        } else {
            prop_assert!(
                !calls.iter().any(|c| matches!(c.phase, Phase::Waiting(_))),
                "a waiter is stuck with nothing held"
            );
            break;
        };
        match step {
            Step::Arrive { needs, reject } => {
                let mut units: Vec<(usize, u32)> = Vec::new();
                for (r, u) in needs {
                    if !units.iter().any(|&(x, _)| x == r) {
                        units.push((r, u.min(caps[r])));
                    }
                }
                let list: &'static Needs = Box::leak(Box::new(arb.needs_of(&units)));
                let mut call = Call {
                    arrival: k,
                    resources: units.iter().map(|&(r, _)| r).collect(),
                    units,
                    queued: false,
                    granted: None,
                    released: None,
                    cancelled: None,
                    phase: Phase::Over,
                };
                if reject {
                    if let Ok(p) = arb.try_acquire(list) {
                        call.granted = Some(k);
                        call.phase = Phase::Holding(p);
                    }
                } else {
                    let mut fut = Box::pin(arb.acquire(list));
                    match fut.as_mut().poll(cx) {
                        Poll::Ready(Ok(p)) => {
                            call.granted = Some(k);
                            call.phase = Phase::Holding(p);
                        }
                        Poll::Ready(Err(e)) => prop_assert!(false, "refused: {e:?}"),
                        Poll::Pending => {
                            call.queued = true;
                            call.phase = Phase::Waiting(fut);
                        }
                    }
                }
                calls.push(call);
            }
            Step::Release(i) => {
                let holding: Vec<usize> = (0..calls.len())
                    .filter(|&c| matches!(calls[c].phase, Phase::Holding(_)))
                    .collect();
                if !holding.is_empty() {
                    let c = holding[i % holding.len()];
                    calls[c].phase = Phase::Over;
                    calls[c].released = Some(k);
                }
            }
            Step::Cancel(i) => {
                let waiting: Vec<usize> = (0..calls.len())
                    .filter(|&c| matches!(calls[c].phase, Phase::Waiting(_)))
                    .collect();
                if !waiting.is_empty() {
                    let c = waiting[i % waiting.len()];
                    calls[c].phase = Phase::Over;
                    calls[c].cancelled = Some(k);
                }
            }
        }
        // Observe this step's grants.
        for c in calls.iter_mut() {
            if let Phase::Waiting(fut) = &mut c.phase {
                match fut.as_mut().poll(cx) {
                    Poll::Pending => {}
                    Poll::Ready(Ok(p)) => {
                        c.granted = Some(k);
                        c.phase = Phase::Holding(p);
                    }
                    Poll::Ready(Err(e)) => prop_assert!(false, "refused: {e:?}"),
                }
            }
        }
        // Exactness: the arbiter's figures are the units held.
        for (r, b) in arb.snapshot().iter().enumerate() {
            let held: u32 = calls
                .iter()
                .filter(|c| matches!(c.phase, Phase::Holding(_)))
                .flat_map(|c| c.units.iter())
                .filter(|&&(x, _)| x == r)
                .map(|&(_, u)| u)
                .sum();
            prop_assert_eq!(b.in_use, held);
            prop_assert!(b.in_use <= b.capacity);
        }
        k += 1;
        prop_assert!(k < 10 * total + 100, "the schedule does not drain");
    }
    check_bound(&calls)
}

/// The fairness bound for every call that queued.
fn check_bound(calls: &[Call<'_>]) -> Result<(), TestCaseError> {
    let released = |c: &Call<'_>| c.released.unwrap_or(NEVER);
    for (wi, w) in calls.iter().enumerate().filter(|(_, c)| c.queued) {
        let overlaps = |c: &Call<'_>| c.resources.iter().any(|r| w.resources.contains(r));
        let others = || {
            calls
                .iter()
                .enumerate()
                .filter(move |&(i, c)| i != wi && overlaps(c))
                .map(|(_, c)| c)
        };
        // (1): units held at W's arrival, and units granted to earlier
        // arrivals, released (an earlier waiter that left: its leaving).
        let mut t1 = w.arrival;
        for c in others() {
            let held_at_arrival =
                c.granted.is_some_and(|g| g < w.arrival) && released(c) >= w.arrival;
            let earlier_waiter =
                c.arrival < w.arrival && c.queued && c.granted.is_none_or(|g| g >= w.arrival);
            if held_at_arrival || (earlier_waiter && c.granted.is_some()) {
                t1 = t1.max(released(c));
            } else if earlier_waiter {
                t1 = t1.max(c.cancelled.unwrap_or(NEVER));
            }
        }
        if t1 == NEVER {
            continue;
        }
        // (2): units later arrivals took by passing W before then.
        let mut t2 = t1;
        for c in others().filter(|c| c.arrival > w.arrival) {
            if c.granted.is_some_and(|g| g < t1) {
                t2 = t2.max(released(c));
            }
        }
        let waiting_at =
            |s: usize| w.granted.is_none_or(|g| g > s) && w.cancelled.is_none_or(|x| x > s);
        if t2 != NEVER {
            prop_assert!(
                !waiting_at(t2),
                "call {} (arrived at step {}) still waits at step {} past its bound \
                 ((1) ended at {})",
                wi,
                w.arrival,
                t2,
                t1
            );
        }
        for (ci, c) in calls.iter().enumerate() {
            if ci == wi || c.arrival < w.arrival || !overlaps(c) {
                continue;
            }
            if let Some(g) = c.granted.filter(|&g| g >= t1) {
                prop_assert!(
                    !waiting_at(g) || (g == w.granted.unwrap_or(NEVER)),
                    "call {} (arrived at {}) passed waiter {} at step {} after its \
                     part (1) ended at {}",
                    ci,
                    c.arrival,
                    wi,
                    g,
                    t1
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]
    #[test]
    fn every_waiter_is_granted_within_the_fairness_bound(
        caps in proptest::array::uniform3(1u32..=3),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        run(caps, &steps)?;
    }
}
