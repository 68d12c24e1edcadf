//! Nested calls (DESIGN §9.4): a call made from inside a handler. A
//! contract's `deadline` is a `herta::deadline` scope for its handler, so
//! the calls it makes inherit it (earliest wins) and see it in
//! `Context::deadline()`.

use crate::common;

use std::time::Duration;

use common::within;
use herta::{Context, Error, Failure, Resource, Runtime};
use tokio::time::{sleep, Instant};

/// Sleeps `ms`, reporting the deadline its attempt saw.
#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn inner(ctx: Context, ms: u64) -> Result<Option<Instant>, Failure<String>> {
    sleep(Duration::from_millis(ms)).await;
    Ok(ctx.deadline())
}

/// What the inner call returned, seen from the outer handler.
type Seen = Result<Option<Instant>, String>;

fn seen(result: Result<Option<Instant>, Error<Failure<String>>>) -> Seen {
    result.map_err(|err| match err {
        Error::DeadlineExceeded { attempts, .. } => format!("deadline after {attempts} attempt"),
        other => format!("{other:?}"),
    })
}

/// Calls `inner` for `ms` under a 200 ms deadline, returning what it saw.
#[herta::operation(effect = Idempotent, deadline = "200ms", resources("outer" = 1))]
async fn outer(inner: Inner, ms: u64) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(ms).await))
}

/// The same without a deadline of its own.
#[herta::operation(effect = Idempotent, resources("outer" = 1))]
async fn open_outer(inner: Inner, ms: u64) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(ms).await))
}

/// A 50 ms deadline, retrying: each attempt calls `inner` in the same
/// scope, the call's deadline.
#[herta::operation(effect = Idempotent, deadline = "50ms", timeout = "30ms",
                   resources("outer" = 1), retry(on = Transient, max = 2))]
async fn short_outer(inner: Inner) -> Result<Seen, Failure<String>> {
    Ok(seen(inner.call(0).await))
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .resource(Resource::new("outer", 1))
        .build()
        .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn a_nested_call_sees_the_outer_contract_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(Outer::bind(&rt).unwrap().call(inner.clone(), 10)).await;
    assert_eq!(seen.unwrap(), Ok(Some(start + ms(200))));
    // Outside the handler, and under an outer without a deadline: none.
    assert_eq!(inner.call(0).await.unwrap(), None);
    let open = OpenOuter::bind(&rt).unwrap();
    assert_eq!(within(open.call(inner, 0)).await.unwrap(), Ok(None));
}

#[tokio::test(start_paused = true)]
async fn the_inherited_deadline_ends_the_inner_call_at_the_outer_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(Outer::bind(&rt).unwrap().call(inner, 1_000)).await;
    // The inner call itself ended at the outer deadline, and the outer
    // handler saw why.
    assert_eq!(seen.unwrap(), Err("deadline after 1 attempt".to_owned()));
    assert_eq!(start.elapsed(), ms(200));
    let stats = rt.stats();
    assert_eq!((stats.deadline_exceeded, stats.succeeded), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn an_earlier_enclosing_scope_wins_over_the_outer_contract_deadline() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let at = Instant::now() + ms(80);
    let outer = Outer::bind(&rt).unwrap();
    let seen = within(herta::deadline(at, outer.call(inner, 0))).await;
    assert_eq!(seen.unwrap(), Ok(Some(at)));
}

#[tokio::test(start_paused = true)]
async fn the_scope_is_the_call_deadline_not_the_attempt_timeout() {
    let rt = runtime();
    let inner = Inner::bind(&rt).unwrap();
    let start = Instant::now();
    let seen = within(ShortOuter::bind(&rt).unwrap().call(inner)).await;
    assert_eq!(seen.unwrap(), Ok(Some(start + ms(50))));
}
