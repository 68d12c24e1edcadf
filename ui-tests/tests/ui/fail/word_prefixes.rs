//! Effects, outcomes and admission modes are plain names or
//! `herta::Type::Name`; any other prefix is refused, and help lines use
//! the names written.
use herta::Failure;

#[herta::operation(effect = foo::bar::Idempotent)]
async fn prefixed(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = Effect::Pure, admission = Admission::Reject,
                   retry(on = Outcome::Transient, max = 2))]
async fn short_prefix(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

#[herta::operation(effect = herta::Effect::Pure, wrapper = "Ledger2")]
async fn quoted_wrapper(job: String) -> Result<String, Failure<String>> {
    Ok(job)
}

fn main() {
    let _ = (Prefixed::NAME, ShortPrefix::NAME);
}
