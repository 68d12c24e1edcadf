//! Model checks of the arbiter's state machine: every interleaving of grant,
//! release, cancel and close among 2–3 threads on small capacities.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.

use super::*;
use loom::future::block_on;
use loom::thread;

fn needs(list: &[(usize, u32)]) -> Arc<[Need]> {
    list.iter()
        .map(|&(resource, units)| Need { resource, units })
        .collect()
}

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
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let arb = Arc::clone(&arb);
                thread::spawn(move || {
                    let one = needs(&[(0, 1)]);
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
        let t = thread::spawn(move || {
            let ab = needs(&[(0, 1), (1, 1)]);
            drop(block_on(a.acquire(&ab)).unwrap());
        });
        let b = needs(&[(1, 1)]);
        drop(block_on(arb.acquire(&b)).unwrap());
        let a_only = needs(&[(0, 1)]);
        drop(block_on(arb.acquire(&a_only)).unwrap());
        t.join().unwrap();
        assert_quiescent(&arb);
    });
}

#[test]
fn a_cancelled_waiter_never_strands_units() {
    loom::model(|| {
        let arb = Arc::new(Arbiter::new([2]));
        let two = needs(&[(0, 2)]);
        let held = arb.try_acquire(&two).unwrap();
        let a = Arc::clone(&arb);
        // A waiter that gives up after one poll, racing the release.
        let canceller = thread::spawn(move || {
            let one = needs(&[(0, 1)]);
            let mut fut = Box::pin(a.acquire(&one));
            let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            drop(fut);
        });
        let b = Arc::clone(&arb);
        let waiter = thread::spawn(move || {
            let two = needs(&[(0, 2)]);
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
        let spawn = |list: &'static [(usize, u32)]| {
            let arb = Arc::clone(&arb);
            thread::spawn(move || {
                let n = needs(list);
                let permit = block_on(arb.acquire(&n)).unwrap();
                for b in arb.snapshot() {
                    assert!(b.in_use <= b.capacity);
                }
                drop(permit);
            })
        };
        let both = spawn(&[(0, 1), (1, 1)]);
        let first = spawn(&[(0, 1)]);
        let second = needs(&[(1, 1)]);
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
        let one = needs(&[(0, 1)]);
        let held = arb.try_acquire(&one).unwrap();
        let a = Arc::clone(&arb);
        let waiter = thread::spawn(move || {
            let one = needs(&[(0, 1)]);
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
