//! Function shapes the wrapper keeps: attributes, `cfg`, `mut` and pattern
//! parameters, a parameter named like the function, `Context` by path,
//! visibility, an `io::Result` alias and an error type that is not `Classify`.
#![deny(warnings)]

mod ops {
    use herta::Failure;

    /// Counts.
    #[herta::operation(effect = Pure)]
    #[cfg(all())]
    #[allow(clippy::needless_pass_by_value)]
    pub(crate) async fn count(
        mut items: Vec<u32>,
        (a, b): (u32, u32),
    ) -> Result<usize, Failure<()>> {
        items.push(a + b);
        Ok(items.len())
    }

    #[herta::operation(effect = Idempotent, serialize_by = user, retry(on = Transient, max = 2), timeout = "1s")]
    pub async fn user(ctx: herta::Context, user: u64) -> std::io::Result<u64> {
        let _ = ctx.operation();
        Ok(user)
    }

    /// Compiled out, wrapper included: `Missing` does not exist.
    #[cfg(any())]
    #[herta::operation(effect = Pure)]
    pub async fn gone(missing: Missing) -> Result<(), Missing> {
        Ok(())
    }

    #[herta::operation(effect = Pure, resources(crate::CPU = 1))]
    #[deprecated = "use count"]
    pub async fn old() -> Result<(), String> {
        Ok(())
    }

    #[herta::operation(effect = NonIdempotent, admission = Reject, name = "ops.fail")]
    pub async fn fail(code: i32) -> Result<(), String> {
        Err(code.to_string())
    }
}

const CPU: herta::Resource = herta::Resource::new("cpu", 1);

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = herta::Runtime::builder().resource(CPU).build().unwrap();
    let count = ops::Count::bind(&rt).unwrap();
    assert_eq!(count.call(vec![1], (2, 3)).await.unwrap(), 2);
    let user = ops::User::bind(&rt).unwrap();
    assert_eq!(user.call(7).await.unwrap(), 7);
    let fail = ops::Fail::bind(&rt).unwrap();
    let err = fail.call(3).await.unwrap_err();
    // Not `Classify`: Permanent, never retried.
    assert_eq!(err.outcome(), herta::Outcome::Permanent);
    assert_eq!(err.operation(), "ops.fail");
    assert_eq!(ops::Fail::NAME, "ops.fail");
    #[allow(deprecated)]
    let old = ops::Old::bind(&rt).unwrap();
    old.call().await.unwrap();
}
