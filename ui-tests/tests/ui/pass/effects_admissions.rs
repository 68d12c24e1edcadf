//! Every effect with every admission mode (and the default, `Wait`): each
//! contract compiles, records what it declared, binds and runs.
use herta::{Admission, Effect, Failure, Runtime};

type Io<T> = Result<T, Failure<std::io::Error>>;

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn pure_default(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = Pure, resources("cpu" = 1), admission = Wait)]
async fn pure_wait(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = Pure, resources("cpu" = 1), admission = Reject)]
async fn pure_reject(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1), admission = Wait)]
async fn idempotent_wait(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1), admission = Reject)]
async fn idempotent_reject(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = NonIdempotent, resources("cpu" = 1), admission = Wait)]
async fn non_idempotent_wait(x: u32) -> Io<u32> {
    Ok(x)
}

#[herta::operation(effect = NonIdempotent, resources("cpu" = 1), admission = Reject)]
async fn non_idempotent_reject(x: u32) -> Io<u32> {
    Ok(x)
}

macro_rules! check {
    ($rt:expr, $op:ident, $effect:ident, $admission:ident) => {{
        assert_eq!($op::CONTRACT.effect(), Effect::$effect);
        assert_eq!($op::CONTRACT.admission(), Admission::$admission);
        let op = $op::bind(&$rt).unwrap();
        assert_eq!(op.call(7).await.unwrap(), 7);
    }};
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    check!(rt, PureDefault, Pure, Wait);
    check!(rt, PureWait, Pure, Wait);
    check!(rt, PureReject, Pure, Reject);
    check!(rt, IdempotentWait, Idempotent, Wait);
    check!(rt, IdempotentReject, Idempotent, Reject);
    check!(rt, NonIdempotentWait, NonIdempotent, Wait);
    check!(rt, NonIdempotentReject, NonIdempotent, Reject);
    assert_eq!(rt.stats().finished, 7);
}
