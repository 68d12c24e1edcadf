//! The wrapper is no more visible than the function: a private wrapper
//! cannot be named outside its module, and a `pub(crate)` one cannot be
//! re-exported as `pub`.
mod ops {
    use herta::Failure;

    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    pub(crate) async fn internal() -> Result<(), Failure<std::io::Error>> {
        Ok(())
    }

    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    async fn secret() -> Result<(), Failure<std::io::Error>> {
        Ok(())
    }
}

#[allow(unused_imports)]
pub use ops::Internal;

fn main() {
    let _ = ops::Secret::NAME;
}
