//! Under `#![deny(missing_docs)]`, an undocumented public operation is one
//! error, on the function: the generated public items (the wrapper, whose
//! docs always include the `# Contract` section, `NAME`, `CONTRACT`, `bind`,
//! `call`) are documented, so they add none.
#![deny(missing_docs)]

/// The operations of this crate.
pub mod ops {
    use herta::Failure;

    #[herta::operation(effect = Pure, resources("cpu" = 1))]
    pub async fn render(job: String) -> Result<String, Failure<std::io::Error>> {
        Ok(job)
    }
}

fn main() {}
