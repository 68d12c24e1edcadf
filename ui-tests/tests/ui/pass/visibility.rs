//! The wrapper has the function's visibility: a `pub` wrapper is public
//! (it can be re-exported with `pub use`) and usable from another module, a
//! `pub(crate)` one is usable across the crate, `pub(super)` in the parent,
//! a private one inside its module. `fail/visibility_not_widened.rs` shows
//! the private and `pub(crate)` wrappers are no more visible than that.
#![deny(warnings)]

pub mod ops {
    use herta::{Failure, Runtime};

    type Io<T> = Result<T, Failure<std::io::Error>>;

    /// Public.
    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    pub async fn publish() -> Io<u32> {
        Ok(1)
    }

    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    pub(crate) async fn internal() -> Io<u32> {
        Ok(2)
    }

    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    async fn secret() -> Io<u32> {
        Ok(3)
    }

    /// The private wrapper, used where it is visible.
    pub async fn run_secret(rt: &Runtime) -> u32 {
        Secret::bind(rt).unwrap().call().await.unwrap()
    }

    pub mod nested {
        #[herta::operation(effect = Pure, resources("cpu" = 1))]
        pub(super) async fn parent_only() -> super::Io<u32> {
            Ok(4)
        }
    }

    /// `pub(super)`: visible here, in the parent of `nested`.
    pub async fn run_parent_only(rt: &Runtime) -> u32 {
        nested::ParentOnly::bind(rt).unwrap().call().await.unwrap()
    }
}

/// Only a `pub` item can be re-exported with `pub use`.
pub use ops::Publish;

mod consumer {
    use herta::Runtime;

    pub async fn total(rt: &Runtime) -> u32 {
        let public = crate::ops::Publish::bind(rt).unwrap();
        let internal = crate::ops::Internal::bind(rt).unwrap();
        public.call().await.unwrap()
            + internal.call().await.unwrap()
            + crate::ops::run_secret(rt).await
            + crate::ops::run_parent_only(rt).await
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rt = herta::Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    assert_eq!(consumer::total(&rt).await, 10);
    assert_eq!(Publish::NAME, "publish");
}
