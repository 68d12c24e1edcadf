//! A lib-like crate under `#![deny(missing_docs)]`: a documented public
//! operation gives a documented public wrapper (the function's `///` and
//! `#[doc]` lines, then a `# Contract` section), and every public item the
//! macro generates (`NAME`, `CONTRACT`, `bind`, `call`) is documented too, so
//! such a crate compiles. The lint does check macro-generated items; the
//! order of the carried lines is checked on the tokens by the macro crate's
//! `the_wrapper_carries_visibility_and_docs` test.
#![deny(missing_docs)]

/// The operations of this crate.
pub mod ops {
    use herta::Failure;

    /// Renders one page.
    ///
    /// A second paragraph, carried as well.
    #[herta::operation(effect = Idempotent, resources("cpu" = 1), retry(on = Transient, max = 2),
                       timeout = "2s", serialize_by = job)]
    pub async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
        Ok(job)
    }

    /// Charges a customer; `#[doc = ...]` attributes are carried like `///`.
    #[doc = "Not retried."]
    #[herta::operation(effect = NonIdempotent, resources("cpu" = 1), admission = Reject)]
    pub async fn charge(customer: u64) -> Result<u64, Failure<std::io::Error>> {
        Ok(customer)
    }
}

fn main() {
    assert_eq!(ops::Render::NAME, "render");
    assert_eq!(ops::Charge::NAME, "charge");
}
