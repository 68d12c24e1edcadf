//! The state parameter's place and form (rule 15), and `serialize_by` on
//! it: one error at the offending token each, and call sites written for
//! the operation (`bind_with`, `call` without the state) type-check.
use herta::{Context, Failure, Runtime};

struct Ledger;

#[herta::operation(effect = Pure)]
async fn not_first(customer: String, #[state] ledger: &Ledger) -> Result<u32, Failure<String>> {
    let _ = (customer, ledger);
    Ok(1)
}

struct Mailer;

#[herta::operation(effect = Pure)]
async fn two_states(#[state] ledger: &Ledger, #[state] mailer: &Mailer) -> Result<u32, Failure<String>> {
    let _ = (ledger, mailer);
    Ok(2)
}

#[herta::operation(effect = Pure)]
async fn by_value(#[state] ledger: Ledger, cents: u64) -> Result<u64, Failure<String>> {
    let _ = ledger;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn by_mut(#[state] ledger: &mut Ledger, cents: u64) -> Result<u64, Failure<String>> {
    let _ = ledger;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn pinned(#[state] ledger: &'static Ledger, cents: u64) -> Result<u64, Failure<String>> {
    let _ = ledger;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn with_args(#[state(shared)] ledger: &Ledger, cents: u64) -> Result<u64, Failure<String>> {
    let _ = ledger;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn borrowing(#[state] names: &Vec<&str>, cents: u64) -> Result<u64, Failure<String>> {
    let _ = names;
    Ok(cents)
}

#[herta::operation(effect = Pure)]
async fn context_late(#[state] ledger: &Ledger, cents: u64, ctx: Context) -> Result<u64, Failure<String>> {
    let _ = (ledger, ctx);
    Ok(cents)
}

#[herta::operation(effect = NonIdempotent, serialize_by = ledger)]
async fn keyed_by_state(#[state] ledger: &Ledger, customer: String) -> Result<u64, Failure<String>> {
    let _ = (ledger, customer);
    Ok(0)
}

async fn serve(rt: &Runtime) -> Result<u64, Box<dyn std::error::Error>> {
    let a = NotFirst::bind_with(rt, Ledger)?.call("ada".into()).await?;
    let b = TwoStates::bind_with(rt, Ledger)?.call().await?;
    let c = ByValue::bind_with(rt, Ledger)?.call(3).await?;
    let d = ByMut::bind_with(rt, Ledger)?.call(4).await?;
    let e = WithArgs::bind_with(rt, Ledger)?.call(5).await?;
    let f = Borrowing::bind_with(rt, Vec::<&str>::new())?.call(6).await?;
    let g = ContextLate::bind_with(rt, Ledger)?.call(7).await?;
    let h = KeyedByState::bind_with(rt, Ledger)?.call("bob".into()).await?;
    Ok(u64::from(a + b) + c + d + e + f + g + h)
}

fn main() {
    let _ = serve;
}
