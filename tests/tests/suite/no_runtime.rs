//! A call that needs tokio's timers, awaited outside any tokio runtime,
//! panics with herta's own message naming the operation and what needs
//! them, not with tokio's from inside herta (README, "Depending on herta").

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;

use herta::{Failure, Resource, Runtime};

use crate::common::{self, panic_message, poll_once};

#[herta::operation(effect = Idempotent, resources("slots" = 1), timeout = "1s")]
async fn timed() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1), deadline = "1s")]
async fn bounded() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("slots" = 1),
                   retry(on = Transient, max = 2, backoff(base = "10ms", cap = "1s")))]
async fn backing_off() -> Result<(), Failure<String>> {
    Err(Failure::transient("again".to_owned()))
}

#[herta::operation(effect = Idempotent, resources("slots" = 1))]
async fn plain() -> Result<u32, Failure<String>> {
    Ok(7)
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("slots", 1))
        .build()
        .unwrap()
}

/// The panic message of polling `fut` once on this thread (no runtime).
fn panic_of<F: std::future::Future>(fut: F) -> String {
    common::quiet_deliberate_panics();
    let mut fut = pin!(fut);
    match catch_unwind(AssertUnwindSafe(|| poll_once(fut.as_mut()).is_ready())) {
        Ok(ready) => panic!("no panic (ready: {ready}): a call needing timers must panic here"),
        Err(panic) => panic_message(&*panic),
    }
}

#[test]
fn each_key_that_needs_timers_names_itself_and_the_operation() {
    let rt = runtime();
    let cases = [
        (
            panic_of(Timed::bind(&rt).unwrap().call()),
            "timed",
            "`timeout`",
        ),
        (
            panic_of(Bounded::bind(&rt).unwrap().call()),
            "bounded",
            "deadline",
        ),
        (
            panic_of(BackingOff::bind(&rt).unwrap().call()),
            "backing_off",
            "backoff sleep",
        ),
    ];
    for (message, operation, what) in cases {
        assert!(
            message.starts_with(&format!(
                "herta: operation `{operation}` needs tokio's timers for its {what}"
            )),
            "{message}"
        );
        assert!(message.contains("enable_time()"), "{message}");
    }
}

#[test]
fn a_call_that_needs_no_timer_runs_outside_a_runtime() {
    let rt = runtime();
    let op = Plain::bind(&rt).unwrap();
    let mut call = pin!(op.call());
    match poll_once(call.as_mut()) {
        std::task::Poll::Ready(result) => assert_eq!(result.unwrap(), 7),
        std::task::Poll::Pending => panic!("an uncontended call completes in one poll"),
    }
}
