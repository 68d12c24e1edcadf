//! `show_key` takes a `bool` literal; a misspelled key is named with its fix.
use herta::Failure;

#[herta::operation(effect = Idempotent, serialize_by(email, show_key = "yes"))]
async fn notify(email: String) -> Result<(), Failure<String>> {
    let _ = email;
    Ok(())
}

#[herta::operation(effect = Idempotent, serialize_by(email, show_kye = true))]
async fn remind(email: String) -> Result<(), Failure<String>> {
    let _ = email;
    Ok(())
}

fn main() {}
