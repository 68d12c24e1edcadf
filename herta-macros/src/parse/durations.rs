//! Every duration key — `timeout`, `max_wait`, `deadline`, and `backoff`'s
//! `base` and `cap` — read one way, with one parser ([`parse_timeout`]);
//! their values are checked by the rules (rule 10, `rules/waiting.rs`,
//! rule 13).

use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Meta};

use super::items::value_of;
use crate::diag::error;
use crate::model::{Timeout, TimeoutError};

/// The longest per-attempt timeout a contract may declare (rule 10).
///
/// A per-attempt timeout above an hour is almost always a unit slip
/// (`"90m"` meant as seconds) and is never what an in-process retry budget
/// wants; an operation that truly runs longer declares no timeout.
pub(crate) const MAX_TIMEOUT_MS: u64 = 60 * 60 * 1000;

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

/// `"250ms"`, `"2s"`, `"1m"`, `"1h"` → milliseconds.
pub(crate) fn parse_timeout(text: &str) -> Result<u64, TimeoutError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    if number.is_empty() {
        return Err(TimeoutError::Unparsable);
    }
    let scale: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(TimeoutError::Unparsable),
    };
    let millis = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or(TimeoutError::TooLong)?;
    match millis {
        0 => Err(TimeoutError::Zero),
        m if m > MAX_TIMEOUT_MS => Err(TimeoutError::TooLong),
        m => Ok(m),
    }
}
