//! Model checks of the admission gate: every interleaving of calls entering
//! and leaving, `close`, the drain and `closed` waiters, among 2–3 threads.
//! The calls count themselves in and out on counters of their own, as the
//! runtime's operations do (one per operation; the drain sums endings
//! first, then admissions). The gate's `Notify` is the loom stand-in of
//! `crate::loom` (tokio's own lock is invisible to loom). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.

use super::count::{in_flight, Count};
use super::*;
use loom::future::block_on;
use loom::thread;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};

/// A model explored with at most two preemptions per execution: the fences
/// standing in for the protocol's `SeqCst` points multiply loom's states,
/// and without a bound the three-thread models take minutes.
fn bounded() -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model
}

/// Closed, nothing in flight, and it stays so.
fn assert_closed_and_empty(gate: &Gate, counts: &[Count]) {
    assert!(gate.is_closed());
    assert_eq!(in_flight(counts), 0, "count not zero");
    assert!(!counts[0].enter(gate), "a closed gate admitted a call");
    assert_eq!(in_flight(counts), 0);
}

/// A call: enters, marks itself inside while it runs, leaves. Returns
/// whether it was admitted; a refused call saw the gate closed.
fn call(gate: &Gate, count: &Count, inside: &AtomicBool) -> bool {
    if !count.enter(gate) {
        assert!(gate.is_closed(), "refused while open");
        return false;
    }
    inside.store(true, Ordering::SeqCst);
    inside.store(false, Ordering::SeqCst);
    count.exit(gate);
    true
}

/// Calls of two operations entering while the gate closes and the drain
/// starts: each is refused, or counted and waited for; the drain never
/// resolves while one is inside.
#[test]
fn a_call_entering_as_the_gate_closes_is_refused_or_drained() {
    bounded().check(|| {
        let gate = Arc::new(Gate::new());
        let counts = Arc::new([Count::new(), Count::new()]);
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let callers: Vec<_> = (0..2)
            .map(|i| {
                let (gate, counts, inside) =
                    (Arc::clone(&gate), Arc::clone(&counts), Arc::clone(&inside));
                thread::spawn(move || call(&gate, &counts[i], &inside[i]))
            })
            .collect();
        // Runtime::shutdown: close, then drain.
        gate.close();
        block_on(gate.drained(|| in_flight(&counts[..])));
        for i in inside.iter() {
            assert!(!i.load(Ordering::SeqCst), "drained while a call was inside");
        }
        for c in callers {
            c.join().unwrap();
        }
        assert_closed_and_empty(&gate, &counts[..]);
    });
}

/// The last call out, `close` and a drain that may start before `close`:
/// the drain always wakes (a lost wake-up is a loom deadlock), and only
/// once the gate is closed and the call is out.
#[test]
fn the_last_call_out_always_wakes_the_drainer() {
    bounded().check(|| {
        let gate = Arc::new(Gate::new());
        let counts = Arc::new([Count::new()]);
        assert!(counts[0].enter(&gate));
        let (g, c) = (Arc::clone(&gate), Arc::clone(&counts));
        let leaver = thread::spawn(move || c[0].exit(&g));
        let g = Arc::clone(&gate);
        let closer = thread::spawn(move || g.close());
        block_on(gate.drained(|| in_flight(&counts[..])));
        assert_eq!(in_flight(&counts[..]), 0);
        assert!(gate.is_closed(), "drained before the gate closed");
        leaver.join().unwrap();
        closer.join().unwrap();
        assert_closed_and_empty(&gate, &counts[..]);
    });
}

/// Two calls (of two operations) leaving at once after `close`: the drain
/// wakes once both are out.
#[test]
fn two_calls_leaving_together_wake_the_drain() {
    bounded().check(|| {
        let gate = Arc::new(Gate::new());
        let counts = Arc::new([Count::new(), Count::new()]);
        assert!(counts[0].enter(&gate));
        assert!(counts[1].enter(&gate));
        let leavers: Vec<_> = (0..2)
            .map(|i| {
                let (g, c) = (Arc::clone(&gate), Arc::clone(&counts));
                thread::spawn(move || c[i].exit(&g))
            })
            .collect();
        gate.close();
        block_on(gate.drained(|| in_flight(&counts[..])));
        assert_eq!(in_flight(&counts[..]), 0);
        for l in leavers {
            l.join().unwrap();
        }
        assert_closed_and_empty(&gate, &counts[..]);
    });
}

/// `closed` waiters, registered before or after `close`, all resolve; one
/// that gives up after one poll (its backoff sleep ended first) leaves
/// nothing behind.
#[test]
fn close_wakes_every_closed_waiter() {
    bounded().check(|| {
        let gate = Arc::new(Gate::new());
        let g = Arc::clone(&gate);
        let waiter = thread::spawn(move || block_on(g.closed()));
        let g = Arc::clone(&gate);
        let quitter = thread::spawn(move || {
            let mut fut = Box::pin(g.closed());
            let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        });
        gate.close();
        waiter.join().unwrap();
        quitter.join().unwrap();
        block_on(gate.closed());
    });
}

/// The shutdown of a call in a backoff sleep: the call waits on `closed`,
/// then leaves; `close`, then the drain. Both waits end.
#[test]
fn a_call_sleeping_on_closed_ends_and_the_drain_completes() {
    bounded().check(|| {
        let gate = Arc::new(Gate::new());
        let counts = Arc::new([Count::new()]);
        assert!(counts[0].enter(&gate));
        let (g, c) = (Arc::clone(&gate), Arc::clone(&counts));
        let sleeper = thread::spawn(move || {
            block_on(g.closed());
            c[0].exit(&g);
        });
        gate.close();
        block_on(gate.drained(|| in_flight(&counts[..])));
        sleeper.join().unwrap();
        assert_closed_and_empty(&gate, &counts[..]);
    });
}
