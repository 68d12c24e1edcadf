//! Scenario tests of resizing, polled by hand: the debt a shrink leaves,
//! the lock it keeps the budget on, and the needs registered at bind.

use super::budget::{SLOW, UNIT};
use super::*;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::task::{Context as TaskContext, Waker};

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut TaskContext::from_waker(Waker::noop()))
}

/// (free units, `SLOW` set, debt) of budget `i`.
fn word(arb: &Arbiter, i: usize) -> (u64, bool, u32) {
    let w = arb.budgets[i]
        .word
        .load(std::sync::atomic::Ordering::SeqCst);
    (w / UNIT, w & SLOW != 0, arb.lock().track[i].debt)
}

#[test]
fn a_shrink_below_the_units_in_use_owes_them_and_keeps_the_budget_on_the_lock() {
    let arb = Arbiter::new([4]);
    let one = arb.needs_of(&[(0, 1)]);
    let held: Vec<_> = (0..4).map(|_| arb.try_acquire(&one).unwrap()).collect();
    arb.set_capacity(0, 1).unwrap();
    assert_eq!(word(&arb, 0), (0, true, 3));
    let b = arb.snapshot()[0];
    assert_eq!((b.capacity, b.in_use), (1, 4));
    let mut held = held.into_iter();
    for debt in [2, 1, 0] {
        drop(held.next());
        assert_eq!(word(&arb, 0), (0, debt != 0, debt), "repaid first");
        assert_eq!(arb.try_acquire(&one).err(), Some(TryAcquireError::Busy(0)));
    }
    drop(held.next());
    assert_eq!(word(&arb, 0), (1, false, 0), "off the lock once repaid");
    let p = arb.try_acquire(&one).unwrap();
    assert_eq!(arb.try_acquire(&one).err(), Some(TryAcquireError::Busy(0)));
    drop(p);
    assert_eq!(arb.snapshot()[0].in_use, 0);
}

#[test]
fn a_shrink_within_the_free_units_owes_nothing_and_leaves_the_fast_path() {
    let arb = Arbiter::new([4]);
    let one = arb.needs_of(&[(0, 1)]);
    let p = arb.try_acquire(&one).unwrap();
    arb.set_capacity(0, 2).unwrap();
    assert_eq!(word(&arb, 0), (1, false, 0));
    arb.set_capacity(0, 7).unwrap();
    assert_eq!(word(&arb, 0), (6, false, 0));
    drop(p);
    assert_eq!(word(&arb, 0), (7, false, 0));
}

#[test]
fn a_two_budget_waiter_waits_out_a_debt_while_others_use_its_other_budget() {
    let arb = Arbiter::new([2, 2]);
    let (a, b) = (arb.needs_of(&[(0, 1)]), arb.needs_of(&[(1, 1)]));
    let ab = arb.needs_of(&[(0, 1), (1, 1)]);
    let held = [arb.try_acquire(&a).unwrap(), arb.try_acquire(&a).unwrap()];
    let mut w = Box::pin(arb.acquire(&ab));
    assert!(poll(&mut w).is_pending());
    arb.set_capacity(0, 1).unwrap();
    // W is short of `a` only: a newcomer on `b` passes it.
    drop(arb.try_acquire(&b).unwrap());
    let [first, second] = held;
    drop(first);
    assert!(
        poll(&mut w).is_pending(),
        "2 in use on capacity 1, then 1: no room"
    );
    drop(second);
    let granted = match poll(&mut w) {
        Poll::Ready(Ok(p)) => p,
        _ => panic!("granted once a unit of `a` is free"),
    };
    assert_eq!(arb.snapshot()[0].in_use, 1);
    drop(granted);
    assert_eq!(word(&arb, 0), (1, false, 0));
    assert_eq!(word(&arb, 1), (2, false, 0));
}

#[test]
fn a_growth_grants_in_queue_order_and_a_larger_waiter_keeps_its_turn() {
    let arb = Arbiter::new([1]);
    let (one, two) = (arb.needs_of(&[(0, 1)]), arb.needs_of(&[(0, 2)]));
    let held = arb.try_acquire(&one).unwrap();
    let mut big = Box::pin(arb.acquire(&two));
    let mut small = Box::pin(arb.acquire(&one));
    assert!(poll(&mut big).is_pending());
    assert!(poll(&mut small).is_pending());
    arb.set_capacity(0, 2).unwrap();
    assert!(
        poll(&mut small).is_pending(),
        "one free unit: the 2-unit waiter blocks it"
    );
    assert!(poll(&mut big).is_pending());
    arb.set_capacity(0, 3).unwrap();
    let Poll::Ready(Ok(granted)) = poll(&mut big) else {
        panic!("two free units: the 2-unit waiter first");
    };
    assert!(poll(&mut small).is_pending());
    drop(held);
    assert!(matches!(poll(&mut small), Poll::Ready(Ok(_))));
    drop(granted);
    assert_eq!(word(&arb, 0), (3, false, 0));
}

#[test]
fn a_bound_need_refuses_a_shrink_below_it_and_a_bind_checks_the_capacity_now() {
    let arb = Arbiter::new([4, 4]);
    let need = |resource, units| Need { resource, units };
    arb.bind("small", vec![need(0, 1), need(1, 2)]).unwrap();
    arb.bind("large", vec![need(1, 3)]).unwrap();
    arb.bind("tie", vec![need(1, 3)]).unwrap();
    let refused = arb.set_capacity(1, 2).unwrap_err();
    assert_eq!((refused.operation, refused.units), ("large", 3));
    assert_eq!(arb.snapshot()[1].capacity, 4, "nothing changed");
    arb.set_capacity(1, 3).unwrap();
    let above = arb.bind("huge", vec![need(1, 4)]).unwrap_err();
    assert_eq!((above.resource, above.units, above.capacity), (1, 4, 3));
    arb.set_capacity(0, 1).unwrap();
    assert_eq!(arb.set_queue_limit(0, Some(3)), None);
    assert_eq!(arb.set_queue_limit(0, None), Some(3));
}
