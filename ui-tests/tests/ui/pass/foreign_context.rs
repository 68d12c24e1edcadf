//! A parameter whose type is another crate's or module's `Context` (such as
//! `opentelemetry::Context`) is an ordinary argument of `call`, first or
//! not, beside herta's own: only `Context` and `herta::Context` name herta's.
use herta::{Failure, Runtime};

mod my {
    #[derive(Clone, Debug, PartialEq)]
    pub struct Context(pub u32);
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1), retry(on = Transient, max = 2))]
async fn traced(job: String, trace: my::Context) -> Result<(String, u32), Failure<String>> {
    Ok((job, trace.0))
}

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn traced_first(trace: my::Context) -> Result<u32, Failure<String>> {
    Ok(trace.0)
}

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn both(ctx: herta::Context, trace: my::Context) -> Result<u32, Failure<String>> {
    Ok(trace.0 + ctx.attempt())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    let traced = Traced::bind(&rt).unwrap();
    assert_eq!(
        traced.call("job".to_owned(), my::Context(7)).await.unwrap(),
        ("job".to_owned(), 7)
    );
    let first = TracedFirst::bind(&rt).unwrap();
    assert_eq!(first.call(my::Context(1)).await.unwrap(), 1);
    let both = Both::bind(&rt).unwrap();
    assert_eq!(both.call(my::Context(1)).await.unwrap(), 2);
}
