//! The smallest contract: an effect. No parameters, no resources, no retry.
use herta::{Admission, Effect, Failure, Operation, Runtime};

#[herta::operation(effect = Pure)]
async fn ping() -> Result<&'static str, Failure<String>> {
    Ok("pong")
}

async fn call_any<O: Operation>(op: &O, args: O::Args) -> Option<O::Output> {
    op.call_with(args).await.ok()
}

fn assert_send_sync_clone<T: Send + Sync + Clone + std::fmt::Debug + 'static>() {}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_send_sync_clone::<Ping>();
    let c = Ping::CONTRACT;
    assert_eq!(c.operation(), "ping");
    assert_eq!(c.effect(), Effect::Pure);
    assert_eq!(c.admission(), Admission::Wait);
    assert!(c.resources().is_empty());
    assert!(c.retry_on().is_empty());
    assert_eq!(c.max_attempts(), 1);
    assert_eq!(c.timeout(), None);
    assert!(c.serialize_by().is_none());
    assert_eq!(<Ping as Operation>::NAME, "ping");

    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    let ping = Ping::bind(&rt).unwrap();
    assert_eq!(ping.call().await.unwrap(), "pong");
    assert_eq!(call_any(&ping, ()).await, Some("pong"));
    assert_eq!(format!("{ping:?}"), "Ping { operation: \"ping\", .. }");
}
