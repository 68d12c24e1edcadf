//! Model checks of the key table: every interleaving of hand-over, cancel,
//! close and `Reject` probes among 2–3 threads on one key (two keys in the
//! last two models), in the one shard the loom build uses.
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p herta --lib --release loom`.

use super::*;
use loom::future::block_on;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use std::sync::Arc;

/// Runs `f` holding the key, checking nobody else holds it meanwhile.
fn exclusive(inside: &AtomicUsize) {
    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two holders");
    inside.fetch_sub(1, Ordering::SeqCst);
}

#[test]
fn a_cancelled_waiter_never_strands_the_key() {
    loom::model(|| {
        let table = Arc::new(KeyTable::new());
        let held = table.try_acquire(1u8).unwrap();
        let t = Arc::clone(&table);
        // A waiter that gives up after one poll, racing the release.
        let canceller = thread::spawn(move || {
            let mut fut = Box::pin(t.acquire(1));
            let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()));
            drop(fut);
        });
        let t = Arc::clone(&table);
        let waiter = thread::spawn(move || drop(block_on(t.acquire(1)).unwrap()));
        drop(held);
        canceller.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}

#[test]
fn hand_over_and_reject_probes_keep_one_holder() {
    loom::model(|| {
        let table = Arc::new(KeyTable::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let (t, i) = (Arc::clone(&table), Arc::clone(&inside));
        let waiter = thread::spawn(move || {
            let g = block_on(t.acquire(1u8)).unwrap();
            exclusive(&i);
            drop(g);
        });
        let (t, i) = (Arc::clone(&table), Arc::clone(&inside));
        let prober = thread::spawn(move || {
            if let Ok(g) = t.try_acquire(1) {
                exclusive(&i);
                drop(g);
            }
        });
        if let Ok(g) = table.try_acquire(1) {
            exclusive(&inside);
            drop(g);
        }
        waiter.join().unwrap();
        prober.join().unwrap();
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}

#[test]
fn close_racing_a_release_and_a_waiter_that_gives_up() {
    loom::model(|| {
        let table = Arc::new(KeyTable::new());
        let held = table.try_acquire(1u8).unwrap();
        let t = Arc::clone(&table);
        // Queued once, then dropped: granted, withdrawn or still queued.
        let waiter = thread::spawn(move || {
            let mut fut = Box::pin(t.acquire(1));
            let _ = Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()));
            drop(fut);
        });
        let t = Arc::clone(&table);
        let closer = thread::spawn(move || t.close());
        drop(held);
        waiter.join().unwrap();
        closer.join().unwrap();
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}

#[test]
fn close_withdraws_or_hands_over_every_waiter() {
    loom::model(|| {
        let table = Arc::new(KeyTable::new());
        let held = table.try_acquire(1u8).unwrap();
        let t = Arc::clone(&table);
        // Handed the key (the release won) or withdrawn (close won).
        let waiter = thread::spawn(move || drop(block_on(t.acquire(1))));
        let t = Arc::clone(&table);
        let closer = thread::spawn(move || t.close());
        drop(held);
        waiter.join().unwrap();
        closer.join().unwrap();
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
        assert!(matches!(table.try_acquire(1), Err(TryKeyError::Closed)));
    });
}

/// A waits (or holds at once), then B arrives, while the holder
/// releases: B never gets the key before A (no barging past a queued
/// or granted-but-unseen waiter), and never while A holds it.
#[test]
fn the_key_goes_to_waiters_in_arrival_order() {
    loom::model(|| {
        let table = Arc::new(KeyTable::new());
        let held = table.try_acquire(1u8).unwrap();
        let order = Arc::new(loom::sync::Mutex::new(Vec::new()));
        let (t, o) = (Arc::clone(&table), Arc::clone(&order));
        let first = thread::spawn(move || {
            let mut a = Box::pin(t.acquire(1));
            let polled = Pin::new(&mut a).poll(&mut Context::from_waker(Waker::noop()));
            // A has queued (or already holds the key): B comes after.
            let (t2, o2) = (Arc::clone(&t), Arc::clone(&o));
            let second = thread::spawn(move || {
                let g = block_on(t2.acquire(1)).unwrap();
                o2.lock().unwrap().extend([2, -2]);
                drop(g);
            });
            let g = match polled {
                Poll::Ready(g) => g.unwrap(),
                Poll::Pending => block_on(a).unwrap(),
            };
            o.lock().unwrap().push(1);
            o.lock().unwrap().push(-1);
            drop(g);
            second.join().unwrap();
        });
        drop(held);
        first.join().unwrap();
        // Held by A (1 … -1), then by B (2 … -2): in order, never both.
        assert_eq!(*order.lock().unwrap(), [1, -1, 2, -2]);
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}

/// Two keys in one shard (every key, under loom), a waiter on the held
/// key racing its release and `close`, a call on the other key: the
/// keys do not disturb each other (a withdrawn waiter whose entry left
/// and whose slot the other key reused touches nothing), and nothing
/// is left behind.
#[test]
fn two_keys_in_one_shard_stay_apart_through_release_and_close() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let table = Arc::new(KeyTable::new());
        let held = table.try_acquire(1u8).unwrap();
        let t = Arc::clone(&table);
        // Handed key 1 or withdrawn: either way it ends.
        let on_held = thread::spawn(move || drop(block_on(t.acquire(1))));
        let t = Arc::clone(&table);
        // Key 2 is free: held at once, unless the table closed first.
        let on_other = thread::spawn(move || match block_on(t.acquire(2)) {
            Ok(g) => drop(g),
            Err(Closed) => assert!(t.try_acquire(2).is_err()),
        });
        drop(held);
        table.close();
        on_held.join().unwrap();
        on_other.join().unwrap();
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}

/// Two contended keys in one shard, handed over while the other's first
/// waiter queues: the list key 1's entry leaves behind (a spare of the
/// shard) may become key 2's. Each waiter gets its own key, only once its
/// holder released it, and nothing is left behind.
#[test]
fn a_spare_list_passes_from_one_contended_key_to_the_next() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let table = Arc::new(KeyTable::new());
        let held = [
            table.try_acquire(1u8).unwrap(),
            table.try_acquire(2u8).unwrap(),
        ];
        let released = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let waiter = |key: u8| {
            let (t, released) = (Arc::clone(&table), Arc::clone(&released));
            thread::spawn(move || {
                let g = block_on(t.acquire(key)).expect("the table stays open");
                let was = released[usize::from(key - 1)].load(Ordering::SeqCst);
                assert_eq!(was, 1, "key {key} handed over before its release");
                drop(g);
            })
        };
        let waiters = [waiter(1), waiter(2)];
        for (guard, flag) in held.into_iter().zip(released.iter()) {
            flag.store(1, Ordering::SeqCst);
            drop(guard);
        }
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(
            (table.len(), table.entries()),
            (0, 0),
            "nothing left behind"
        );
    });
}
