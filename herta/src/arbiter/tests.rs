//! Scenario tests of the arbiter's grant rules, polled by hand.

use super::*;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::task::{Context as TaskContext, Waker};

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = Waker::noop();
    Pin::new(f).poll(&mut TaskContext::from_waker(waker))
}

#[test]
fn a_waiter_holds_nothing_while_another_budget_is_full() {
    let arb = Arbiter::new([1, 1]);
    let b = arb.needs_of(&[(1, 1)]);
    let ab = arb.needs_of(&[(0, 1), (1, 1)]);
    let a = arb.needs_of(&[(0, 1)]);
    let held_b = arb.try_acquire(&b).unwrap();
    let mut x = Box::pin(arb.acquire(&ab));
    assert!(poll(&mut x).is_pending());
    // Y needs only `a`, which X wants but is not short of: granted.
    let y = arb.try_acquire(&a).unwrap();
    assert_eq!(arb.snapshot()[0].in_use, 1);
    drop(y);
    drop(held_b);
    assert!(matches!(poll(&mut x), Poll::Ready(Ok(_))));
}

#[test]
fn cancelling_a_large_waiter_grants_the_small_one_behind_it() {
    let arb = Arbiter::new([10]);
    let five = arb.needs_of(&[(0, 5)]);
    let ten = arb.needs_of(&[(0, 10)]);
    let one = arb.needs_of(&[(0, 1)]);
    let _held = arb.try_acquire(&five).unwrap();
    let mut big = Box::pin(arb.acquire(&ten));
    assert!(poll(&mut big).is_pending());
    let mut small = Box::pin(arb.acquire(&one));
    assert!(poll(&mut small).is_pending(), "FIFO: queued behind the 10");
    drop(big);
    assert!(matches!(poll(&mut small), Poll::Ready(Ok(_))));
}

#[test]
fn granted_but_unpolled_waiter_hands_units_on_when_dropped() {
    let arb = Arbiter::new([1]);
    let one = arb.needs_of(&[(0, 1)]);
    let held = arb.try_acquire(&one).unwrap();
    let mut first = Box::pin(arb.acquire(&one));
    let mut second = Box::pin(arb.acquire(&one));
    assert!(poll(&mut first).is_pending());
    assert!(poll(&mut second).is_pending());
    drop(held); // grants `first`, which is never polled again
    drop(first);
    assert!(matches!(poll(&mut second), Poll::Ready(Ok(_))));
}

#[test]
fn close_withdraws_waiters_and_refuses_new_ones() {
    let arb = Arbiter::new([1]);
    let one = arb.needs_of(&[(0, 1)]);
    let held = arb.try_acquire(&one).unwrap();
    let mut w = Box::pin(arb.acquire(&one));
    assert!(poll(&mut w).is_pending());
    arb.close();
    assert!(matches!(
        poll(&mut w),
        Poll::Ready(Err(AcquireError::Closed))
    ));
    assert_eq!(arb.try_acquire(&one).err(), Some(TryAcquireError::Closed));
    drop(held);
    assert_eq!(arb.snapshot()[0].in_use, 0);
    assert_eq!(arb.snapshot()[0].waiting, 0);
}

#[test]
fn a_full_queue_refuses_the_next_waiter_and_a_departure_frees_a_place() {
    let mut arb = Arbiter::new([1, 1]);
    arb.limit_queues([Some(1), None]);
    let a = arb.needs_of(&[(0, 1)]);
    let ab = arb.needs_of(&[(0, 1), (1, 1)]);
    let held = arb.try_acquire(&a).unwrap();
    let mut first = Box::pin(arb.acquire(&a));
    assert!(poll(&mut first).is_pending());
    // A second waiter for budget 0, alone or with budget 1: refused at once.
    let mut second = Box::pin(arb.acquire(&ab));
    assert!(matches!(
        poll(&mut second),
        Poll::Ready(Err(AcquireError::QueueFull(0)))
    ));
    drop(second);
    assert_eq!(arb.snapshot()[0].waiting, 1);
    assert_eq!(
        arb.snapshot()[1].waiting,
        0,
        "the refused waiter never queued"
    );
    assert_eq!(arb.snapshot()[0].queue_limit, Some(1));
    assert_eq!(arb.snapshot()[1].queue_limit, None);
    // The first waiter leaves: its place is free at once.
    drop(first);
    let mut third = Box::pin(arb.acquire(&a));
    assert!(poll(&mut third).is_pending());
    drop(held);
    assert!(matches!(poll(&mut third), Poll::Ready(Ok(_))));
}

#[test]
fn equal_need_lists_share_one_entry_of_the_table() {
    let arb = Arbiter::new([1, 1]);
    let a = arb.needs_of(&[(0, 1)]);
    let ab = arb.needs_of(&[(0, 1), (1, 1)]);
    let a_again = arb.needs_of(&[(0, 1)]);
    assert_eq!(a.id, a_again.id);
    assert_ne!(a.id, ab.id);
    assert_eq!(arb.lock().lists.len(), 2);
}

#[test]
fn a_withdrawn_waiter_dropped_unpolled_leaves_no_count_behind() {
    let arb = Arbiter::new([1, 1]);
    let ab = arb.needs_of(&[(0, 1), (1, 1)]);
    let held = arb.try_acquire(&ab).unwrap();
    let mut w = Box::pin(arb.acquire(&ab));
    assert!(poll(&mut w).is_pending());
    assert!(arb.snapshot().iter().all(|b| b.waiting == 1));
    arb.close();
    assert!(arb.snapshot().iter().all(|b| b.waiting == 0));
    drop(w);
    drop(held);
    for b in arb.snapshot() {
        assert_eq!((b.in_use, b.waiting), (0, 0));
    }
}

/// A rate budget's head named by a pass (woken to arm its timer) that is
/// polled only once its units exist: it takes them then, instead of
/// finding nothing left to time and sleeping forever over a full bucket.
#[tokio::test(start_paused = true)]
async fn a_new_head_polled_after_its_units_exist_is_granted() {
    use std::time::Duration;
    let arb = Arbiter::with_kinds([permits::Kind::Rate {
        count: 1_000,
        period: Duration::from_secs(1),
        burst: 1,
    }]);
    let one = arb.needs_of(&[(0, 1)]);
    let drawn = arb.try_acquire(&one).unwrap();
    drop(drawn);
    let (mut first, mut second) = (Box::pin(arb.acquire(&one)), Box::pin(arb.acquire(&one)));
    assert!(poll(&mut first).is_pending(), "the bucket is empty");
    assert!(poll(&mut second).is_pending());
    // The first one's timer fires at 1 ms: its pass grants it and names
    // the second the head (its unit exists at 2 ms).
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(matches!(poll(&mut first), Poll::Ready(Ok(_))));
    // The second is polled late, its unit long there.
    tokio::time::advance(Duration::from_millis(5)).await;
    assert!(
        matches!(poll(&mut second), Poll::Ready(Ok(_))),
        "the head is lost"
    );
    assert_eq!(arb.snapshot()[0].waiting, 0);
}
