//! Model checks of the arbiter's state machine: every interleaving of grant,
//! release, cancel and close among 2–3 threads on small capacities.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.

use super::permits::Kind;
use super::*;
use loom::future::block_on;
use loom::thread;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Waker};

fn assert_quiescent(arb: &Arbiter) {
    for b in arb.snapshot() {
        assert_eq!((b.in_use, b.waiting), (0, 0));
        assert!(b.peak_in_use <= b.capacity);
    }
}

#[test]
fn contending_waiters_never_exceed_capacity_and_all_finish() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new([1]));
        let one = arb.needs_of(&[(0, 1)]);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (arb, one) = (Arc::clone(&arb), one.clone());
                thread::spawn(move || {
                    let permit = block_on(arb.acquire(&one)).unwrap();
                    assert_eq!(arb.snapshot()[0].in_use, 1);
                    drop(permit);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_quiescent(&arb);
    });
}

#[test]
fn multi_budget_waiters_in_opposite_orders_do_not_deadlock() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new([1, 1]));
        let a = Arc::clone(&arb);
        let (ab, b, a_only) = (
            arb.needs_of(&[(0, 1), (1, 1)]),
            arb.needs_of(&[(1, 1)]),
            arb.needs_of(&[(0, 1)]),
        );
        let t = thread::spawn(move || {
            drop(block_on(a.acquire(&ab)).unwrap());
        });
        drop(block_on(arb.acquire(&b)).unwrap());
        drop(block_on(arb.acquire(&a_only)).unwrap());
        t.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn a_cancelled_waiter_never_strands_units() {
    // Bounded like the three-task model: the lock-free release and the
    // queued waiter's CAS fallbacks multiply the interleavings.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([2]));
        let two = arb.needs_of(&[(0, 2)]);
        let one = arb.needs_of(&[(0, 1)]);
        let held = arb.try_acquire(&two).unwrap();
        let a = Arc::clone(&arb);
        // A waiter that gives up after one poll, racing the release.
        let canceller = thread::spawn(move || {
            let mut fut = Box::pin(a.acquire(&one));
            let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            drop(fut);
        });
        let (b, two) = (Arc::clone(&arb), two.clone());
        let waiter = thread::spawn(move || {
            drop(block_on(b.acquire(&two)).unwrap());
        });
        drop(held);
        canceller.join().unwrap();
        waiter.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn three_tasks_over_two_budgets_all_finish_within_capacity() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([1, 1]));
        let second = arb.needs_of(&[(1, 1)]);
        let spawn = |n: Needs| {
            let arb = Arc::clone(&arb);
            thread::spawn(move || {
                let permit = block_on(arb.acquire(&n)).unwrap();
                for b in arb.snapshot() {
                    assert!(b.in_use <= b.capacity);
                }
                drop(permit);
            })
        };
        let (both, first) = (arb.needs_of(&[(0, 1), (1, 1)]), arb.needs_of(&[(0, 1)]));
        let both = spawn(both);
        let first = spawn(first);
        drop(block_on(arb.acquire(&second)).unwrap());
        both.join().unwrap();
        first.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn close_withdraws_or_grants_every_waiter() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new([1]));
        let one = arb.needs_of(&[(0, 1)]);
        let held = arb.try_acquire(&one).unwrap();
        let (a, waiting) = (Arc::clone(&arb), one.clone());
        let waiter = thread::spawn(move || {
            let one = waiting;
            // Granted (the release won) or withdrawn (close won): never stuck.
            let _ = block_on(a.acquire(&one));
        });
        let c = Arc::clone(&arb);
        let closer = thread::spawn(move || c.close());
        drop(held);
        waiter.join().unwrap();
        closer.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn reject_probes_and_the_fast_path_never_exceed_capacity() {
    use loom::sync::atomic::{AtomicU32, Ordering};
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([1]));
        let inside = Arc::new(AtomicU32::new(0));
        let enter = |inside: &AtomicU32| {
            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "over capacity");
            inside.fetch_sub(1, Ordering::SeqCst);
        };
        let one = arb.needs_of(&[(0, 1)]);
        let (a, i, n) = (Arc::clone(&arb), Arc::clone(&inside), one.clone());
        let waiter = thread::spawn(move || {
            let p = block_on(a.acquire(&n)).unwrap();
            enter(&i);
            drop(p);
        });
        let (a, i, n) = (Arc::clone(&arb), Arc::clone(&inside), one.clone());
        let prober = thread::spawn(move || {
            if let Ok(p) = a.try_acquire(&n) {
                enter(&i);
                drop(p);
            };
        });
        if let Ok(p) = arb.try_acquire(&one) {
            enter(&inside);
            drop(p);
        }
        waiter.join().unwrap();
        prober.join().unwrap();
        assert_quiescent(&arb);
    });
}

/// The fairness bound (the arbiter's module docs) with a two-budget
/// waiter W and two single-budget newcomers: once the unit held at W's
/// arrival is released, no newcomer is granted `a` or `b` before W (in
/// every interleaving).
#[test]
fn a_two_budget_waiter_is_granted_before_later_newcomers_once_its_holders_left() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([1, 1]));
        let b = arb.needs_of(&[(1, 1)]);
        let ab = arb.needs_of(&[(0, 1), (1, 1)]);
        let a = arb.needs_of(&[(0, 1)]);
        let held = arb.try_acquire(&b).unwrap();
        let mut w = Box::pin(arb.acquire(&ab));
        let cx = &mut Context::from_waker(Waker::noop());
        assert!(w.as_mut().poll(cx).is_pending(), "b is held: W queues");
        let newcomer = |n: Needs| {
            let arb = Arc::clone(&arb);
            thread::spawn(move || {
                drop(block_on(arb.acquire(&n)).unwrap());
            })
        };
        let on_a = newcomer(a);
        let on_b = newcomer(b.clone());
        drop(held);
        drop(block_on(w).unwrap());
        on_a.join().unwrap();
        on_b.join().unwrap();
        assert_quiescent(&arb);
        let log = arb.take_log();
        let released = log
            .iter()
            .position(|e| matches!(e, Event::Released { stamp: 0, .. }))
            .expect("the held unit of b is released under the lock (W waits)");
        let granted = log
            .iter()
            .position(
                |e| matches!(e, Event::Granted { stamp: 1, resources } if resources.len() == 2),
            )
            .expect("W (ticket 1, the only two-budget call) is granted");
        assert!(
            !log[released..granted]
                .iter()
                .any(|e| matches!(e, Event::Granted { .. })),
            "a newcomer passed W after its part (1) ended: {log:?}"
        );
    });
}

/// Two-budget calls on the lock-free path racing each other and a
/// single-budget waiter on `waited` (0: the budget the fast path takes
/// first, so a raced partial take is given back through the lock to a
/// queued waiter; 1: the one it takes second): never over capacity on
/// either budget, and every waiter finishes.
fn two_budget_fast_paths_race_a_waiter_on(waited: usize) {
    use loom::sync::atomic::{AtomicU32, Ordering};
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let arb = Arc::new(Arbiter::new([1, 1]));
        let inside = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let run = |inside: &[AtomicU32; 2], budgets: &[usize]| {
            for &b in budgets {
                assert_eq!(inside[b].fetch_add(1, Ordering::SeqCst), 0, "over capacity");
            }
            for &b in budgets {
                inside[b].fetch_sub(1, Ordering::SeqCst);
            }
        };
        let both = arb.needs_of(&[(0, 1), (1, 1)]);
        let one = arb.needs_of(&[(waited, 1)]);
        let (a, i, n) = (Arc::clone(&arb), Arc::clone(&inside), both.clone());
        let prober = thread::spawn(move || {
            if let Ok(p) = a.try_acquire(&n) {
                run(&i, &[0, 1]);
                drop(p);
            };
        });
        let (a, i) = (Arc::clone(&arb), Arc::clone(&inside));
        let waiter = thread::spawn(move || {
            let p = block_on(a.acquire(&one)).unwrap();
            run(&i, &[waited]);
            drop(p);
        });
        if let Ok(p) = arb.try_acquire(&both) {
            run(&inside, &[0, 1]);
            drop(p);
        }
        prober.join().unwrap();
        waiter.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn two_budget_fast_paths_racing_a_waiter_on_their_second_budget() {
    two_budget_fast_paths_race_a_waiter_on(1);
}

#[test]
fn two_budget_fast_paths_racing_a_waiter_on_their_first_budget() {
    two_budget_fast_paths_race_a_waiter_on(0);
}

/// After every call has ended: the budget holds exactly `capacity` free
/// units, owes nothing, and is off the lock (`SLOW` clear), so a burst
/// takes exactly `capacity` units and no more; its peak never passed the
/// largest capacity it had.
fn assert_exact(arb: &Arbiter, capacity: u32, largest: u32) {
    let b = arb.snapshot()[0];
    assert_eq!((b.capacity, b.in_use, b.waiting), (capacity, 0, 0));
    assert!(b.peak_in_use <= largest);
    assert_eq!(arb.lock().track[0].debt, 0);
    assert_eq!(
        arb.budgets[0]
            .word
            .load(loom::sync::atomic::Ordering::SeqCst),
        u64::from(capacity) * budget::UNIT,
        "free = capacity, SLOW clear"
    );
    let one = arb.needs_of(&[(0, 1)]);
    let burst: Vec<_> = (0..capacity)
        .map(|_| arb.try_acquire(&one).expect("a free unit"))
        .collect();
    assert!(
        arb.try_acquire(&one).is_err(),
        "no unit beyond the capacity"
    );
    drop(burst);
}

/// A shrink below the units in use racing a release, a queued waiter's
/// grant and a cancelled waiter: never more units held than the larger
/// capacity, every waiter finishes, and the accounting is exact after.
#[test]
fn a_shrink_racing_a_release_a_grant_and_a_cancel_leaves_exact_accounting() {
    use loom::sync::atomic::{AtomicU32, Ordering};
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([2]));
        let one = arb.needs_of(&[(0, 1)]);
        let inside = Arc::new(AtomicU32::new(2));
        let (first, second) = (
            arb.try_acquire(&one).unwrap(),
            arb.try_acquire(&one).unwrap(),
        );
        let r = Arc::clone(&arb);
        let resizer = thread::spawn(move || r.set_capacity(0, 1).unwrap());
        let (a, i, n) = (Arc::clone(&arb), Arc::clone(&inside), one.clone());
        let waiter = thread::spawn(move || {
            let p = block_on(a.acquire(&n)).unwrap();
            assert!(i.fetch_add(1, Ordering::SeqCst) < 2, "over capacity");
            i.fetch_sub(1, Ordering::SeqCst);
            drop(p);
        });
        inside.fetch_sub(1, Ordering::SeqCst);
        drop(first);
        // A waiter that gives up after one poll, between the releases.
        let mut cancelled = Box::pin(arb.acquire(&one));
        if let std::task::Poll::Ready(p) = cancelled
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            assert!(inside.fetch_add(1, Ordering::SeqCst) < 2, "over capacity");
            inside.fetch_sub(1, Ordering::SeqCst);
            drop(p);
        }
        drop(cancelled);
        inside.fetch_sub(1, Ordering::SeqCst);
        drop(second);
        resizer.join().unwrap();
        waiter.join().unwrap();
        assert_exact(&arb, 1, 2);
    });
}

/// A growth racing a cancelled waiter grants the queued waiter at once,
/// while the unit held before it is still held (else the model would
/// deadlock: the holder waits for that grant), and the accounting is exact
/// after.
#[test]
fn a_growth_grants_a_queued_waiter_at_once_racing_a_cancel() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let arb = Arc::new(Arbiter::new([1]));
        let one = arb.needs_of(&[(0, 1)]);
        let held = arb.try_acquire(&one).unwrap();
        let mut w = Box::pin(arb.acquire(&one));
        let cx = &mut Context::from_waker(Waker::noop());
        assert!(
            w.as_mut().poll(cx).is_pending(),
            "the unit is held: W queues"
        );
        let r = Arc::clone(&arb);
        let resizer = thread::spawn(move || r.set_capacity(0, 2).unwrap());
        let (c, n) = (Arc::clone(&arb), one.clone());
        let canceller = thread::spawn(move || {
            let mut fut = Box::pin(c.acquire(&n));
            let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        });
        let granted = block_on(w).unwrap();
        assert_eq!(arb.snapshot()[0].in_use, 2);
        drop(granted);
        drop(held);
        resizer.join().unwrap();
        canceller.join().unwrap();
        assert_exact(&arb, 2, 2);
    });
}

/// A rate budget's lock-free grant (with a concurrency budget in the same
/// grant) racing a release of that budget and a waiter that gives up: the
/// rate units granted never pass the burst, a waiter's refund is exact, and
/// nothing is left held or queued. The rate is so slow that no unit accrues
/// while the model runs, so every interleaving sees the same bucket; the
/// burst covers the three grants, so no waiter arms a timer (loom has no
/// tokio timer; the timer is covered by the paused-clock suite).
#[test]
fn a_rate_grant_racing_a_release_and_a_cancel_keeps_the_bucket_exact() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let arb = Arc::new(Arbiter::with_kinds([
            Kind::Concurrency(1),
            Kind::Rate {
                count: 1,
                period: std::time::Duration::from_secs(3_600_000),
                burst: 3,
            },
        ]));
        let both = arb.needs_of(&[(0, 1), (1, 1)]);
        let rate = arb.needs_of(&[(1, 1)]);
        let held = arb.try_acquire(&both).unwrap();
        let a = Arc::clone(&arb);
        let both2 = both.clone();
        // A waiter for the slot (and a unit) that gives up after one poll,
        // racing the release of the slot.
        let canceller = thread::spawn(move || {
            let mut fut = Box::pin(a.acquire(&both2));
            let polled = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            let got = matches!(polled, std::task::Poll::Ready(Ok(_)));
            drop(polled);
            drop(fut);
            got
        });
        let b = Arc::clone(&arb);
        let taker = thread::spawn(move || b.try_acquire(&rate).is_ok());
        drop(held);
        let got = canceller.join().unwrap();
        let took = taker.join().unwrap();
        let granted = arb.budgets[1].granted.load(crate::loom::Ordering::Relaxed);
        // The first grant, the waiter's if it saw one, the taker's if it got
        // one: never more than the burst; a waiter that gave up before it
        // saw its grant had its unit refunded.
        assert_eq!(granted, 1 + u64::from(got) + u64::from(took));
        assert!(granted <= 3);
        assert_eq!(arb.snapshot()[1].available, 3 - granted as u32);
        assert_quiescent(&arb);
    });
}
