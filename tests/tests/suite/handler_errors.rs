//! `?` inside handlers: an untagged error is Permanent (never retried); a
//! line tagged with `ResultExt` carries its outcome into the retry decision.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use herta::{Failure, Outcome, Resource, ResultExt as _, Runtime};

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("io", 1))
        .build()
        .unwrap()
}

fn refused() -> Result<(), std::io::Error> {
    Err(std::io::ErrorKind::ConnectionRefused.into())
}

#[herta::operation(effect = Idempotent, resources("io" = 1), retry(on = Transient, max = 3))]
async fn untagged(attempts: Arc<AtomicU32>) -> Result<(), Failure<std::io::Error>> {
    attempts.fetch_add(1, Ordering::SeqCst);
    refused()?;
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("io" = 1), retry(on = Transient, max = 3))]
async fn tagged(attempts: Arc<AtomicU32>) -> Result<(), Failure<std::io::Error>> {
    attempts.fetch_add(1, Ordering::SeqCst);
    refused().transient()?;
    Ok(())
}

#[tokio::test]
async fn question_mark_on_an_untagged_error_is_permanent_and_not_retried() {
    let rt = runtime();
    let attempts = Arc::new(AtomicU32::new(0));
    let err = Untagged::bind(&rt)
        .unwrap()
        .call(attempts.clone())
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Permanent);
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(
        err.handler_error().map(|f| f.error().kind()),
        Some(std::io::ErrorKind::ConnectionRefused)
    );
}

#[tokio::test]
async fn a_line_tagged_transient_is_retried_up_to_max() {
    let rt = runtime();
    let attempts = Arc::new(AtomicU32::new(0));
    let err = Tagged::bind(&rt)
        .unwrap()
        .call(attempts.clone())
        .await
        .unwrap_err();
    assert_eq!(err.outcome(), Outcome::Transient);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[test]
fn each_tag_sets_its_outcome_and_leaves_ok_alone() {
    let err = || Err::<(), _>("e");
    assert_eq!(err().transient().unwrap_err().outcome(), Outcome::Transient);
    assert_eq!(err().uncertain().unwrap_err().outcome(), Outcome::Uncertain);
    assert_eq!(err().permanent().unwrap_err().outcome(), Outcome::Permanent);
    assert_eq!(err().throttled().unwrap_err().outcome(), Outcome::Throttled);
    assert_eq!(Ok::<u8, &str>(7).transient(), Ok(7));
}
