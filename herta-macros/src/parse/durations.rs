//! Every duration key — `timeout`, `max_wait`, `deadline`, and `backoff`'s
//! `base` and `cap` — read one way, with the `timeout` parser; their values
//! are checked by the rules (rule 10, `rules/waiting.rs`, rule 13).

use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Meta};

use super::values::{parse_timeout, value_of};
use crate::diag::error;
use crate::model::Timeout;

/// `key = "100ms"`; `example` is a valid value without its quotes.
pub(super) fn duration(meta: &Meta, key: &str, example: &str) -> syn::Result<Timeout> {
    match value_of(meta, key, &format!("\"{example}\""))? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(Timeout {
            lit: s.clone(),
            millis: parse_timeout(&s.value()),
        }),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Err(error(
            i.span(),
            format_args!("`{key}` needs a unit: a bare number could mean milliseconds or seconds"),
            format_args!("write `{key} = \"{i}ms\"` or `{key} = \"{i}s\"`"),
        )),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a string with a unit"),
            format_args!("write `{key} = \"{example}\"`, `\"2s\"` or `\"1m\"`"),
        )),
    }
}
