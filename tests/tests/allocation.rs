//! The uncontended call path performs no heap allocation (issue 4, item 8),
//! nor does a key's hand-over to a queued call (issue 31).
//!
//! A counting global allocator counts allocations made on the test's thread
//! while tracking is on; the runtime is current-thread, so every poll of the
//! call happens on that thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;

use herta::{Failure, Resource, Runtime};

struct Counting;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn count() {
    // `try_with`: the thread-locals may already be gone while a thread exits.
    let _ = TRACKING.try_with(|t| {
        if t.get() {
            let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
        }
    });
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made while `calls` futures run, one after another.
fn allocations_during<F: Future>(calls: impl Fn() -> F, rounds: u32) -> u64 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        calls().await; // warm-up: lazily built tables and timer state
        ALLOCATIONS.with(|a| a.set(0));
        TRACKING.with(|t| t.set(true));
        for _ in 0..rounds {
            calls().await;
        }
        TRACKING.with(|t| t.set(false));
        ALLOCATIONS.with(|a| a.get())
    })
}

#[herta::operation(effect = Idempotent, resources("worker" = 1))]
async fn plain(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(x + 1)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1, "db" = 2),
                   retry(on = Transient, max = 3), timeout = "2s")]
async fn guarded(x: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(x + 1)
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), serialize_by = key)]
async fn keyed(key: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(key + 1)
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(Resource::new("db", 4))
        .build()
        .unwrap()
}

#[test]
fn an_uncontended_call_allocates_nothing() {
    let rt = runtime();
    let op = Plain::bind(&rt).unwrap();
    let n = allocations_during(|| async { op.call(1).await.unwrap() }, 1000);
    assert_eq!(n, 0, "allocations in 1000 uncontended calls");
}

#[test]
fn an_uncontended_call_with_timeout_retry_and_two_budgets_allocates_nothing() {
    let rt = runtime();
    let op = Guarded::bind(&rt).unwrap();
    let n = allocations_during(|| async { op.call(1).await.unwrap() }, 1000);
    assert_eq!(n, 0, "allocations in 1000 uncontended calls");
}

#[test]
fn an_uncontended_keyed_call_allocates_nothing() {
    let rt = runtime();
    let op = Keyed::bind(&rt).unwrap();
    let n = allocations_during(|| async { op.call(7).await.unwrap() }, 1000);
    assert_eq!(n, 0, "allocations in 1000 uncontended keyed calls");
}

/// Handlers of `handed_over` running now.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[herta::operation(effect = Idempotent, resources("worker" = 1), admission = Wait,
                   serialize_by = key)]
async fn handed_over(key: u64) -> Result<u64, Failure<std::io::Error>> {
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!(
        RUNNING.fetch_add(1, SeqCst),
        0,
        "two calls on one key at once"
    );
    // Holds the key across a yield, so the other call finds it held and queues.
    tokio::task::yield_now().await;
    RUNNING.fetch_sub(1, SeqCst);
    Ok(key + 1)
}

#[test]
fn a_key_handed_over_to_a_queued_call_allocates_nothing() {
    // Two calls on one key, polled together: the second queues behind the
    // first (which yields holding the key) and is handed the key when the
    // first ends. The waiter lives in the call's future, and the key's
    // waiter list is a spare of its shard after the warm-up round.
    let rt = runtime();
    let op = HandedOver::bind(&rt).unwrap();
    let n = allocations_during(
        || async {
            let (a, b) = tokio::join!(op.call(7), op.call(7));
            assert_eq!((a.unwrap(), b.unwrap()), (8, 8));
        },
        1000,
    );
    assert_eq!(n, 0, "allocations in 1000 hand-overs");
}

#[test]
fn the_counter_sees_allocations() {
    let n = allocations_during(
        || async {
            std::hint::black_box(Box::new(1u64));
        },
        10,
    );
    assert_eq!(n, 10, "one allocation per round");
}
