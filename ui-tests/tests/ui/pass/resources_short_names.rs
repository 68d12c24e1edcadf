//! A constant resource in a module that has items named `N` and `C` (an
//! operation `n` has the wrapper type `N`): the capacity check the macro
//! writes beside the contract must not read them as its own parameters.
use herta::Failure;

herta::resources! {
    pub DB: "db" = 4;
}

/// A user type named like a const parameter.
pub struct C;

#[herta::operation(effect = Idempotent, resources(DB = 1))]
async fn n(id: u64) -> Result<u64, Failure<std::io::Error>> {
    Ok(id)
}

#[herta::operation(effect = Pure, resources(DB = 4))]
async fn c_user() -> Result<u64, Failure<std::io::Error>> {
    let _ = C;
    Ok(0)
}

fn main() {}
