//! Procedural macros for [herta](https://docs.rs/herta). Use them through the
//! `herta` crate, which re-exports them as `herta::operation`,
//! `herta::resources!` and `herta::Classify`; everything they generate refers
//! to `::herta::...`.
//!
//! The crate is laid out like `thiserror-impl` and `tracing-attributes`:
//!
//! * [`parse`] reads the attribute (with `darling`) and the function into a
//!   loosely typed, fully spanned model and reports shape errors;
//! * [`validate`] applies the contract rules of herta's design (§5), one
//!   function per rule, accumulating every error with the span of the
//!   offending token, and resolves a best-effort contract;
//! * [`expand`] generates the wrapper type with `quote`.
//!
//! [`resources`](mod@resources) and [`classify`] implement the other two macros.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod classify;
mod expand;
mod parse;
mod resources;
mod validate;
mod vocab;

use proc_macro::TokenStream;

/// Declares an execution contract for an `async fn` and generates its wrapper
/// type. See `herta::operation` for the full documentation.
#[proc_macro_attribute]
pub fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::operation(args.into(), item.into()).into()
}

/// Declares named budgets as `herta::Resource` constants. See
/// `herta::resources!` for the full documentation.
#[proc_macro]
pub fn resources(input: TokenStream) -> TokenStream {
    resources::expand(input.into()).into()
}

/// Implements `herta::Classify` from `#[outcome(...)]` attributes. See
/// `herta::Classify` for the full documentation.
#[proc_macro_derive(Classify, attributes(outcome))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}
