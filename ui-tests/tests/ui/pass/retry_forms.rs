//! `retry` with one outcome (bare or as a one-element list) and with several,
//! for every effect that allows it: each compiles, and the declared outcomes
//! are the ones retried.
use herta::{Context, Effect, Failure, Outcome, Runtime};

type Io<T> = Result<T, Failure<String>>;

/// Fails with `outcome` until the last attempt.
fn flaky(ctx: &Context, outcome: Outcome) -> Io<u32> {
    if ctx.attempt() < ctx.max_attempts() {
        Err(Failure::new(outcome, format!("attempt {}", ctx.attempt())))
    } else {
        Ok(ctx.attempt())
    }
}

#[herta::operation(effect = Pure, resources("cpu" = 1), retry(on = Transient, max = 2))]
async fn pure_one(ctx: Context) -> Io<u32> {
    flaky(&ctx, Outcome::Transient)
}

#[herta::operation(effect = Pure, resources("cpu" = 1), retry(on = [Uncertain], max = 3))]
async fn pure_list_of_one(ctx: Context) -> Io<u32> {
    flaky(&ctx, Outcome::Uncertain)
}

#[herta::operation(effect = Idempotent, resources("cpu" = 1),
                   retry(on = [Transient, Uncertain], max = 4))]
async fn idempotent_several(ctx: Context, uncertain: bool) -> Io<u32> {
    let outcome = if uncertain { Outcome::Uncertain } else { Outcome::Transient };
    flaky(&ctx, outcome)
}

#[herta::operation(effect = NonIdempotent, resources("cpu" = 1), retry(on = Transient, max = 3))]
async fn non_idempotent_transient(ctx: Context) -> Io<u32> {
    flaky(&ctx, Outcome::Transient)
}

#[herta::operation(effect = NonIdempotent, resources("cpu" = 1), retry(on = [Transient], max = 2))]
async fn non_idempotent_uncertain_is_final(ctx: Context) -> Io<u32> {
    flaky(&ctx, Outcome::Uncertain)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();

    assert_eq!(PureOne::CONTRACT.retry_on(), &[Outcome::Transient]);
    assert_eq!(PureOne::CONTRACT.max_attempts(), 2);
    assert_eq!(PureOne::bind(&rt).unwrap().call().await.unwrap(), 2);

    assert_eq!(PureListOfOne::CONTRACT.retry_on(), &[Outcome::Uncertain]);
    assert_eq!(PureListOfOne::bind(&rt).unwrap().call().await.unwrap(), 3);

    let c = IdempotentSeveral::CONTRACT;
    assert_eq!(c.effect(), Effect::Idempotent);
    assert_eq!(c.retry_on(), &[Outcome::Transient, Outcome::Uncertain]);
    let op = IdempotentSeveral::bind(&rt).unwrap();
    assert_eq!(op.call(false).await.unwrap(), 4);
    assert_eq!(op.call(true).await.unwrap(), 4);

    let op = NonIdempotentTransient::bind(&rt).unwrap();
    assert_eq!(op.call().await.unwrap(), 3);

    // `Uncertain` is not listed (and could not be, for a NonIdempotent
    // operation): the first attempt's failure is the call's.
    let op = NonIdempotentUncertainIsFinal::bind(&rt).unwrap();
    let err = op.call().await.unwrap_err();
    assert_eq!((err.outcome(), err.attempts()), (Outcome::Uncertain, 1));
}
