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
        // `2s` lexes as the integer 2 with the suffix `s`: a unit, unquoted.
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) if matches!(i.suffix(), "ms" | "s" | "m" | "h") => Err(error(
            i.span(),
            format_args!("`{key}` takes its duration as a string"),
            format_args!(
                "put it in quotes: `{key} = \"{}{}\"`",
                i.base10_digits(),
                i.suffix()
            ),
        )),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Err(error(
            i.span(),
            format_args!("`{key}` needs a unit: a bare number could mean milliseconds or seconds"),
            format_args!(
                "write `{key} = \"{digits}ms\"` or `{key} = \"{digits}s\"`",
                digits = i.base10_digits()
            ),
        )),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a string with a unit"),
            format_args!("write a string with a unit, e.g. `{key} = \"{example}\"` or `\"1m\"`"),
        )),
    }
}
