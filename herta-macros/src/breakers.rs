//! `herta::breakers! { pub PAYMENTS: "payments" = breaker(failure_rate = 50,
//! min_calls = 10, window = "10s", open_for = "30s", probes = 2); }`.
//!
//! `window` is a duration (`"10s"`: a time window) or an integer (`100`:
//! a count window, the last 100 attempts).
//!
//! Each entry becomes a `herta::Breaker` constant. Every option is
//! optional (the defaults of `Breaker::new`). Errors (an unknown option,
//! with the closest known one; a rate outside 1–100; `min_calls` or
//! `probes` 0; a window shorter than its buckets; a count window of 0
//! attempts, of more than `MAX_WINDOW_CALLS`, or of fewer than
//! `min_calls`; `slow_rate` without
//! `slow_call`; a name or identifier declared twice) are reported together,
//! each spanned on the offending token, and every constant is still
//! emitted (with the default in place of a bad value), so uses elsewhere
//! keep resolving and no error cascades.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, LitStr, Meta, Token, Visibility};

use crate::diag::error;
use crate::parse::parse_timeout;
use crate::syntax::{int_literal, IntLiteral};

/// The options of `breaker(...)`, in documentation order.
const OPTIONS: [&str; 7] = [
    "failure_rate",
    "min_calls",
    "window",
    "open_for",
    "probes",
    "slow_call",
    "slow_rate",
];

/// The fewest buckets' worth of milliseconds a window may span: 10 buckets
/// of at least 1 ms (`herta::BUCKETS`, `herta::MIN_BUCKET`).
const MIN_WINDOW_MS: u64 = 10;

/// The most attempts a count window may hold (`herta::MAX_WINDOW_CALLS`).
const MAX_WINDOW_CALLS: u32 = 100_000;

/// `min_calls` when not given (`herta::Breaker::new`'s).
const DEFAULT_MIN_CALLS: u32 = 10;

/// One `pub NAME: "name" = breaker(...);` entry, as read (options
/// unchecked).
struct Entry {
    attrs: Vec<Attribute>,
    vis: Visibility,
    ident: Ident,
    name: LitStr,
    /// `breaker`, where the options start (for errors about the whole
    /// list).
    head: Span,
    options: Vec<Meta>,
}

fn entry(input: ParseStream<'_>) -> syn::Result<Entry> {
    let attrs = input.call(Attribute::parse_outer)?;
    let vis: Visibility = input.parse()?;
    let ident: Ident = input.parse().map_err(|e| {
        error(
            e.span(),
            "expected a breaker declaration such as `pub PAYMENTS: \"payments\" = breaker(failure_rate = 50);`",
            "write `VISIBILITY IDENT: \"name\" = breaker(options);`",
        )
    })?;
    let example = ident.to_string().to_lowercase().replace('_', "-");
    input.parse::<Token![:]>().map_err(|e| {
        error(
            e.span(),
            format_args!(
                "breaker `{ident}` needs a name: the string contracts and stats refer to it by"
            ),
            format_args!("write `{ident}: \"{example}\" = breaker(...);`"),
        )
    })?;
    let name: LitStr = input.parse().map_err(|e| {
        error(
            e.span(),
            "expected the breaker's name as a string",
            format_args!("write `{ident}: \"{example}\" = breaker(...);`"),
        )
    })?;
    input.parse::<Token![=]>().map_err(|e| {
        error(
            e.span(),
            format_args!("breaker `{ident}` needs its options"),
            format_args!(
                "write `{ident}: {:?} = breaker(failure_rate = 50);`",
                name.value()
            ),
        )
    })?;
    let head: Ident = input.parse()?;
    if head != "breaker" {
        return Err(error(
            head.span(),
            format_args!("expected `breaker(...)`, found `{head}`"),
            format_args!(
                "write `{ident}: {:?} = breaker(failure_rate = 50);`",
                name.value()
            ),
        ));
    }
    let content;
    syn::parenthesized!(content in input);
    let options = Punctuated::<Meta, Token![,]>::parse_terminated(&content)?
        .into_iter()
        .collect();
    Ok(Entry {
        attrs,
        vis,
        ident,
        name,
        head: head.span(),
        options,
    })
}

fn entries(input: ParseStream<'_>) -> syn::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    while !input.is_empty() {
        entries.push(entry(input)?);
        if input.is_empty() {
            break;
        }
        input.parse::<Token![;]>().map_err(|e| {
            error(
                e.span(),
                "expected `;` after a breaker declaration",
                "end each declaration with `;`",
            )
        })?;
    }
    Ok(entries)
}

/// An entry's valid values: what the constant is made of.
#[derive(Default)]
struct Values {
    failure_rate: Option<u8>,
    min_calls: Option<u32>,
    window: Option<u64>,
    /// A count window: its size, and the span of its value.
    count_window: Option<(u32, Span)>,
    open_for: Option<u64>,
    probes: Option<u16>,
    slow_call: Option<u64>,
    slow_rate: Option<u8>,
}

/// `option = value` as an integer in `range`, or the error on the value.
fn integer(meta: &Meta, key: &str, range: (u128, u128), rule: &str) -> syn::Result<u128> {
    let value = value(meta, key, "50")?;
    match int_literal(value) {
        Some(IntLiteral::Value(n)) if n >= range.0 && n <= range.1 => Ok(n),
        Some(_) => Err(error(
            value.span(),
            format_args!("`{key}` is {}; {rule}", quote!(#value)),
            format_args!("give `{key}` a value from {} to {}", range.0, range.1),
        )),
        None => Err(error(
            value.span(),
            format_args!("`{key}` takes an integer literal"),
            format_args!("write `{key} = {}`", range.0.max(1)),
        )),
    }
}

/// `option = "10s"` as milliseconds, or the error on the value.
fn duration(meta: &Meta, key: &str, example: &str) -> syn::Result<(u64, Span)> {
    let value = value(meta, key, example)?;
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    }) = value
    else {
        return Err(error(
            value.span(),
            format_args!("`{key}` takes a duration as a string"),
            format_args!("write `{key} = \"{example}\"` (units: ms, s, m, h)"),
        ));
    };
    match parse_timeout(&text.value()) {
        Ok(millis) => Ok((millis, text.span())),
        Err(_) => Err(error(
            text.span(),
            format_args!("`{key} = {:?}` is not a positive duration", text.value()),
            format_args!("write `{key} = \"{example}\"` (a whole number and a unit: ms, s, m, h)"),
        )),
    }
}

/// The value of `key = value`.
fn value<'a>(meta: &'a Meta, key: &str, example: &str) -> syn::Result<&'a Expr> {
    match meta {
        Meta::NameValue(nv) => Ok(&nv.value),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a value"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}

/// Reads and checks `entry`'s options: its values, and an error per
/// problem.
fn values(entry: &Entry, errors: &mut Vec<syn::Error>) -> Values {
    let mut values = Values::default();
    let mut seen: Vec<String> = Vec::new();
    let mut slow_rate_span = None;
    for meta in &entry.options {
        let key = meta.path().get_ident().map(Ident::to_string);
        let Some(key) = key.filter(|k| OPTIONS.contains(&k.as_str())) else {
            let written = crate::syntax::path_text(meta.path());
            let help = match herta_contract::closest(&written, OPTIONS) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "the options are {}",
                    OPTIONS.map(|o| format!("`{o}`")).join(", ")
                ),
            };
            errors.push(error(
                meta.path().span(),
                format_args!("unknown breaker option `{written}`"),
                help,
            ));
            continue;
        };
        if seen.contains(&key) {
            errors.push(error(
                meta.path().span(),
                format_args!("`{key}` is given twice"),
                "keep one",
            ));
            continue;
        }
        seen.push(key.clone());
        let rate = (1, 100);
        let result = match key.as_str() {
            "failure_rate" => integer(meta, &key, rate, "it is a percentage from 1 to 100")
                .map(|n| values.failure_rate = Some(n as u8)),
            "slow_rate" => {
                slow_rate_span = Some(meta.path().span());
                integer(meta, &key, rate, "it is a percentage from 1 to 100")
                    .map(|n| values.slow_rate = Some(n as u8))
            }
            "min_calls" => integer(
                meta,
                &key,
                (1, u128::from(u32::MAX)),
                "a verdict needs at least 1 call in the window",
            )
            .map(|n| values.min_calls = Some(n as u32)),
            "probes" => integer(
                meta,
                &key,
                (1, u128::from(u16::MAX)),
                "a half-open breaker lets at least 1 probe through",
            )
            .map(|n| values.probes = Some(n as u16)),
            "window" if is_integer(meta) => count_window(meta).map(|(calls, span)| {
                values.count_window = Some((calls, span));
            }),
            "window" => duration(meta, &key, "10s").and_then(|(ms, span)| {
                if ms < MIN_WINDOW_MS {
                    return Err(error(
                        span,
                        format_args!(
                            "`window` is {ms}ms, shorter than its 10 buckets of at least 1ms each"
                        ),
                        "give it a window of at least \"10ms\"",
                    ));
                }
                values.window = Some(ms);
                Ok(())
            }),
            "open_for" => duration(meta, &key, "30s").map(|(ms, _)| values.open_for = Some(ms)),
            _ => duration(meta, &key, "2s").map(|(ms, _)| values.slow_call = Some(ms)),
        };
        if let Err(e) = result {
            errors.push(e);
        }
    }
    if let (Some(span), false) = (slow_rate_span, seen.iter().any(|k| k == "slow_call")) {
        errors.push(error(
            span,
            "`slow_rate` needs `slow_call`: the duration from which an attempt is slow",
            "add `slow_call = \"2s\"`, or remove `slow_rate`",
        ));
    }
    holds_min_calls(&mut values, errors);
    let _ = entry.head;
    values
}

/// A count window smaller than `min_calls` (given, or the default): the
/// error on the window's value, and the window dropped.
fn holds_min_calls(values: &mut Values, errors: &mut Vec<syn::Error>) {
    let Some((calls, span)) = values.count_window else {
        return;
    };
    let min_calls = values.min_calls.unwrap_or(DEFAULT_MIN_CALLS);
    if calls >= min_calls {
        return;
    }
    let given = if values.min_calls.is_some() {
        format!("`min_calls = {min_calls}`")
    } else {
        format!("`min_calls` ({min_calls} when not given)")
    };
    errors.push(error(
        span,
        format_args!(
            "`window = {calls}` holds the last {calls} attempts, fewer than {given}: \
             the breaker would never judge its rates"
        ),
        format_args!("give `window` at least {min_calls}, or lower `min_calls` to {calls}"),
    ));
    values.count_window = None;
}

/// Whether `meta`'s value is an integer literal (a count window).
fn is_integer(meta: &Meta) -> bool {
    matches!(meta, Meta::NameValue(nv) if int_literal(&nv.value).is_some())
}

/// `window = 100` as a count, or the error on the value.
fn count_window(meta: &Meta) -> syn::Result<(u32, Span)> {
    let value = value(meta, "window", "100")?;
    match int_literal(value) {
        Some(IntLiteral::Value(0)) => Err(error(
            value.span(),
            "`window = 0` holds no attempts: a count window is the last N attempts, N at least 1",
            "write `window = 100` (the last 100 attempts), or a duration such as `window = \"10s\"`",
        )),
        Some(IntLiteral::Value(n)) if n <= u128::from(MAX_WINDOW_CALLS) => Ok((n as u32, value.span())),
        _ => Err(error(
            value.span(),
            format_args!(
                "`window = {}` is not a count window: it holds from 1 to {MAX_WINDOW_CALLS} attempts",
                quote!(#value)
            ),
            format_args!(
                "give `window` a count from 1 to {MAX_WINDOW_CALLS}, or a duration such as `window = \"10s\"`"
            ),
        )),
    }
}

/// `breakers! { ... }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let entries = match entries.parse2(input) {
        Ok(entries) => entries,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Vec::new();
    let mut items = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let earlier = &entries[..i];
        if entry.name.value().trim().is_empty() {
            errors.push(error(
                entry.name.span(),
                "a breaker name cannot be empty: contracts, errors and stats refer to the breaker by it",
                format_args!("name it, e.g. `{}: \"payments\" = breaker(...)`", entry.ident),
            ));
        } else if earlier.iter().any(|e| e.name.value() == entry.name.value()) {
            errors.push(error(
                entry.name.span(),
                format_args!(
                    "the breaker name {:?} is declared twice",
                    entry.name.value()
                ),
                "rename one of them, or remove the second declaration",
            ));
        }
        let values = values(entry, &mut errors);
        if earlier.iter().any(|e| e.ident == entry.ident) {
            errors.push(error(
                entry.ident.span(),
                format_args!("the breaker constant `{}` is declared twice", entry.ident),
                "rename one of them, or remove the second declaration",
            ));
            continue;
        }
        let Entry {
            attrs,
            vis,
            ident,
            name,
            ..
        } = entry;
        let ms = |ms: u64| quote!(::core::time::Duration::from_millis(#ms));
        let mut chain = TokenStream::new();
        if let Some(rate) = values.failure_rate {
            chain.extend(quote!(.with_failure_rate(#rate)));
        }
        if let Some(calls) = values.min_calls {
            chain.extend(quote!(.with_min_calls(#calls)));
        }
        if let Some(window) = values.window {
            let window = ms(window);
            chain.extend(quote!(.with_window(#window)));
        }
        if let Some((calls, _)) = values.count_window {
            chain.extend(quote!(.with_count_window(#calls)));
        }
        if let Some(open_for) = values.open_for {
            let open_for = ms(open_for);
            chain.extend(quote!(.with_open_for(#open_for)));
        }
        if let Some(probes) = values.probes {
            chain.extend(quote!(.with_probes(#probes)));
        }
        if let Some(slow) = values.slow_call {
            let (slow, rate) = (ms(slow), values.slow_rate.unwrap_or(100));
            chain.extend(quote!(.with_slow_call(#slow, #rate)));
        }
        items.push(quote! {
            #(#attrs)*
            #vis const #ident: ::herta::Breaker = ::herta::Breaker::new(#name)#chain;
        });
    }
    let errors: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    quote! {
        #(#items)*
        #errors
    }
}
