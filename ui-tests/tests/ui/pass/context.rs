//! A first parameter of type `herta::Context` (imported or by path): passed
//! by the runtime, not a parameter of `call`; it gives the attempt number,
//! the attempt count, the operation name and the attempt's deadline.
use herta::{Context, Failure, Runtime};

#[herta::operation(effect = Idempotent, resources("cpu" = 1), timeout = "2s",
                   retry(on = Transient, max = 3), name = "ctx.probe")]
async fn probe(ctx: Context, fail_until: u32) -> Result<(u32, u32, &'static str, bool), Failure<String>> {
    if ctx.attempt() < fail_until {
        return Err(Failure::transient("not yet".to_owned()));
    }
    Ok((
        ctx.attempt(),
        ctx.max_attempts(),
        ctx.operation(),
        ctx.deadline().is_some(),
    ))
}

/// Only a context: `call()` takes no argument.
#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn only_context(ctx: herta::Context) -> Result<Option<tokio::time::Instant>, Failure<String>> {
    Ok(ctx.deadline())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    let probe = Probe::bind(&rt).unwrap();
    assert_eq!(probe.call(1).await.unwrap(), (1, 3, "ctx.probe", true));
    assert_eq!(probe.call(3).await.unwrap(), (3, 3, "ctx.probe", true));
    let only = OnlyContext::bind(&rt).unwrap();
    assert_eq!(only.call().await.unwrap(), None, "no timeout, no deadline");
}
