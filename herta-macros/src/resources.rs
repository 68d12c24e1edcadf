//! `herta::resources! { pub WORKER: "worker" = 4; pub DB: "db-write" = 4, queue = 64; }`.
//!
//! Each entry becomes a `herta::Resource` constant. Errors (capacity 0, an
//! empty name, a name or identifier declared twice) are reported together,
//! spanned on the offending token, and every constant that can be emitted is
//! still emitted, so uses elsewhere keep resolving.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, LitStr, Token, Visibility};

use crate::diag::error;
use crate::syntax::{int_literal, IntLiteral};

/// One `pub NAME: "name" = capacity;` (or `= capacity, queue = n;`) entry.
pub(crate) struct Entry {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub ident: Ident,
    pub name: LitStr,
    pub capacity: Expr,
    /// `, queue = 64`: the most calls that may queue for it.
    pub queue: Option<Expr>,
    /// `= 100 per "1s"`: a rate budget's period (the capacity is then its
    /// count per period).
    pub period: Option<LitStr>,
    /// `, burst = 10`: a rate budget's most units at once.
    pub burst: Option<Expr>,
}

impl Parse for Entry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let ident: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected a resource declaration such as `pub WORKER: \"worker\" = 4;`\n\
                 help: write `VISIBILITY IDENT: \"name\" = capacity;`",
            )
        })?;
        if !input.peek(Token![:]) {
            return Err(syn::Error::new(
                ident.span(),
                format!(
                    "resource `{ident}` needs a name: the string contracts and stats refer to it by\n\
                     help: write `{ident}: \"{}\" = 4;`",
                    ident.to_string().to_lowercase().replace('_', "-")
                ),
            ));
        }
        input.parse::<Token![:]>()?;
        let name: LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!(
                    "expected the resource's name as a string\n\
                     help: write `{ident}: \"{}\" = 4;`",
                    ident.to_string().to_lowercase().replace('_', "-")
                ),
            )
        })?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "resource `{ident}` needs a capacity: how many units calls may hold at once\n\
                     help: write `{ident}: {:?} = 4;`",
                    name.value()
                ),
            ));
        }
        input.parse::<Token![=]>()?;
        let capacity: Expr = input.parse()?;
        let period = parse_period(input, &ident)?;
        let (queue, burst) = parse_options(input, &ident, &name, period.is_some())?;
        Ok(Entry {
            attrs,
            vis,
            ident,
            name,
            capacity,
            queue,
            period,
            burst,
        })
    }
}

/// `, queue = n` and (`rate`: a rate budget) `, burst = n` after the
/// capacity, in any order.
fn parse_options(
    input: ParseStream<'_>,
    ident: &Ident,
    name: &LitStr,
    rate: bool,
) -> syn::Result<(Option<Expr>, Option<Expr>)> {
    let (mut queue, mut burst) = (None, None);
    while input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
        let example = if rate {
            "= 100 per \"1s\", burst = 10, queue = 64"
        } else {
            "= 4, queue = 64"
        };
        let option: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `queue = n` or `burst = n` after the capacity\nhelp: write `{ident}: {:?} {example};`", name.value()),
            )
        })?;
        let slot = match option.to_string().as_str() {
            "queue" => &mut queue,
            "burst" if rate => &mut burst,
            "burst" => {
                return Err(syn::Error::new(
                    option.span(),
                    format!(
                        "resource `{ident}` is a concurrency budget, which has no burst: its capacity is the most units at once\n\
                         help: remove `burst`, or make it a rate budget: `{ident}: {:?} = 100 per \"1s\", burst = 10;`",
                        name.value()
                    ),
                ))
            }
            _ => {
                return Err(syn::Error::new(
                    option.span(),
                    format!(
                        "unknown resource option `{option}`: the options are `queue`, the most calls that may wait for it, and a rate budget's `burst`\n\
                         help: write `{ident}: {:?} {example};`",
                        name.value()
                    ),
                ));
            }
        };
        input.parse::<Token![=]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!(
                    "`{option}` needs a value\nhelp: write `{ident}: {:?} {example};`",
                    name.value()
                ),
            )
        })?;
        *slot = Some(input.parse()?);
    }
    Ok((queue, burst))
}

/// `per "1s"` after a rate budget's count, if there.
fn parse_period(input: ParseStream<'_>, ident: &Ident) -> syn::Result<Option<LitStr>> {
    if !input.peek(Ident) || !input.fork().parse::<Ident>().is_ok_and(|p| p == "per") {
        return Ok(None);
    }
    input.parse::<Ident>()?;
    input.parse::<LitStr>().map(Some).map_err(|e| {
        syn::Error::new(
            e.span(),
            format!(
                "a rate budget's period is a string with a unit\nhelp: write `{ident}: \"...\" = 100 per \"1s\";`"
            ),
        )
    })
}

/// A period's milliseconds: `"100ms"`, `"1s"`, `"1m"`, `"24h"` (no upper
/// bound: `1000 per "24h"` is a daily quota); `None` when unparsable or 0.
fn period_millis(period: &LitStr) -> Option<u64> {
    let text = period.value();
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let scale: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&ms| ms > 0)
}

/// The period parses and is not 0; the burst is a number, at least 1.
fn rate_errors(entry: &Entry, period: &LitStr) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    if period_millis(period).is_none() {
        errors.push(error(
            period.span(),
            format_args!(
                "resource `{}` has period {:?}, which is not a period herta can use: a whole number and a unit, not 0",
                entry.ident,
                period.value()
            ),
            "write a duration such as `\"100ms\"`, `\"1s\"`, `\"1m\"` or `\"24h\"`",
        ));
    }
    if let Some(burst) = &entry.burst {
        match int_literal(burst) {
            Some(IntLiteral::Value(0)) => errors.push(error(
                burst.span(),
                format_args!(
                    "resource `{}` has `burst = 0`, so no call could ever be granted",
                    entry.ident
                ),
                "give it a burst of at least 1, or remove `burst` (it defaults to the count)",
            )),
            Some(IntLiteral::Negative) => errors.push(crate::diag::error_spanned(
                burst,
                format_args!("resource `{}` has a negative burst", entry.ident),
                "give it a burst of at least 1",
            )),
            Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) => errors.push(error(
                burst.span(),
                format_args!("resource `{}` has a burst above `u32::MAX`", entry.ident),
                "use a burst that fits in a `u32`",
            )),
            Some(IntLiteral::Value(_)) | None if quoted(burst).is_some() => errors.push(error(
                burst.span(),
                format_args!(
                    "resource `{}` takes its burst as a number, not a string",
                    entry.ident
                ),
                "write `burst = 10` without the quotes",
            )),
            Some(IntLiteral::Value(_)) | None => {}
        }
    }
    errors
}

/// Parses `;`-separated entries (the last `;` optional).
pub(crate) fn entries(input: ParseStream<'_>) -> syn::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    while !input.is_empty() {
        entries.push(input.parse()?);
        if input.is_empty() {
            break;
        }
        input.parse::<Token![;]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `;` after a resource declaration\nhelp: end each declaration with `;`",
            )
        })?;
    }
    Ok(entries)
}

/// Checks every entry; one error per problem, entry by entry.
pub(crate) fn validate(entries: &[Entry]) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        errors.extend(name_errors(entry, &entries[..i]));
        errors.extend(capacity_errors(entry));
        if let Some(queue) = &entry.queue {
            errors.extend(queue_errors(entry, queue));
        }
        if let Some(period) = &entry.period {
            errors.extend(rate_errors(entry, period));
        }
    }
    errors
}

/// The name is not empty, and neither the name nor the constant's
/// identifier was declared by an `earlier` entry.
fn name_errors(entry: &Entry, earlier: &[Entry]) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    if entry.name.value().trim().is_empty() {
        errors.push(error(
            entry.name.span(),
            "a resource name cannot be empty: contracts, errors and stats refer to the resource by it",
            format_args!(
                "name it, e.g. `{}: \"{}\" = ...`",
                entry.ident,
                entry.ident.to_string().to_lowercase().replace('_', "-")
            ),
        ));
    } else if let Some(first) = earlier
        .iter()
        .find(|e| e.name.value() == entry.name.value())
    {
        errors.push(error(
            entry.name.span(),
            format_args!(
                "the resource name {:?} is declared twice (also by `{}`); each resource has its own name",
                entry.name.value(),
                first.ident
            ),
            "rename one of them, or remove the second declaration",
        ));
    }
    if earlier.iter().any(|e| e.ident == entry.ident) {
        errors.push(error(
            entry.ident.span(),
            format_args!("the resource constant `{}` is declared twice", entry.ident),
            "rename one of them, or remove the second declaration",
        ));
    }
    errors
}

/// The capacity is a number (not a string), at least 1 and a `u32`.
fn capacity_errors(entry: &Entry) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    if let Some(text) = quoted(&entry.capacity) {
        errors.push(error(
            entry.capacity.span(),
            format_args!(
                "resource `{}` takes its capacity as a number, not a string",
                entry.ident
            ),
            format_args!("write `= {}` without the quotes", number_or(&text, "4")),
        ));
    }
    match capacity(&entry.capacity) {
        Some(IntLiteral::Value(0)) if entry.period.is_some() => errors.push(error(
            entry.capacity.span(),
            format_args!(
                "rate budget `{}` grants 0 units per period, so no call could ever be granted",
                entry.ident
            ),
            "give it a count of at least 1, e.g. `= 100 per \"1s\"`",
        )),
        Some(IntLiteral::Value(0)) => errors.push(error(
            entry.capacity.span(),
            format_args!(
                "resource `{}` has capacity 0, so no call could ever hold it",
                entry.ident
            ),
            "give it a capacity of at least 1",
        )),
        Some(IntLiteral::Negative) => errors.push(crate::diag::error_spanned(
            &entry.capacity,
            format_args!("resource `{}` has a negative capacity", entry.ident),
            "give it a capacity of at least 1",
        )),
        Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) => errors.push(error(
            entry.capacity.span(),
            format_args!("resource `{}` has a capacity above `u32::MAX`", entry.ident),
            "use a capacity that fits in a `u32`",
        )),
        Some(IntLiteral::Value(_)) | None => {}
    }
    errors
}

/// The queue limit is a number (not a string), at least 1 and a `u32`.
fn queue_errors(entry: &Entry, queue: &Expr) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    if let Some(text) = quoted(queue) {
        errors.push(error(
            queue.span(),
            format_args!(
                "resource `{}` takes its queue limit as a number, not a string",
                entry.ident
            ),
            format_args!(
                "write `queue = {}` without the quotes",
                number_or(&text, "64")
            ),
        ));
    }
    match int_literal(queue) {
        Some(IntLiteral::Value(0)) => errors.push(error(
            queue.span(),
            format_args!(
                "resource `{}` has `queue = 0`, so every call that has to wait would be refused",
                entry.ident
            ),
            "give it a queue of at least 1, or remove `queue` and declare `admission = Reject` on the operations that must never wait",
        )),
        Some(IntLiteral::Negative) => errors.push(crate::diag::error_spanned(
            queue,
            format_args!("resource `{}` has a negative queue limit", entry.ident),
            "give it a queue of at least 1",
        )),
        Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) => errors.push(error(
            queue.span(),
            format_args!("resource `{}` has a queue limit above `u32::MAX`", entry.ident),
            "use a queue limit that fits in a `u32`, or remove `queue` for no limit",
        )),
        Some(IntLiteral::Value(_)) | None => {}
    }
    errors
}

/// The text of a string literal written where a number belongs
/// (`= "4"`), reported once; expansion puts a harmless number in its place.
fn quoted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// `text` if it is a plain number, else `example`: what the help suggests.
fn number_or<'a>(text: &'a str, example: &'a str) -> &'a str {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text
    } else {
        example
    }
}

/// A capacity: a literal, or a constant expression checked by a `const`
/// assertion.
fn capacity(expr: &Expr) -> Option<IntLiteral> {
    int_literal(expr)
}

/// `resources! { ... }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let entries = match entries.parse2(input) {
        Ok(entries) => entries,
        Err(e) => return e.to_compile_error(),
    };
    let errors = validate(&entries);
    let mut emitted: Vec<&Ident> = Vec::new();
    let mut items = Vec::new();
    for entry in &entries {
        // A second constant with the same identifier would only add rustc's
        // "defined multiple times" to the error above.
        if emitted.contains(&&entry.ident) {
            continue;
        }
        emitted.push(&entry.ident);
        let Entry {
            attrs,
            vis,
            ident,
            name,
            capacity,
            queue,
            period,
            burst,
        } = entry;
        let quoted_capacity = quoted(capacity).is_some();
        let check = (self::capacity(capacity).is_none() && !quoted_capacity).then(|| {
            let message = format!(
                "resources!: resource `{ident}` has capacity 0, so no call could ever hold it\n\
                 help: give it a capacity of at least 1"
            );
            quote_spanned! {capacity.span()=>
                const _: () = if #ident.capacity() == 0 { ::core::panic!(#message) };
            }
        });
        let capacity = match self::capacity(capacity) {
            _ if quoted_capacity => quote!(1),
            Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) => quote!(0),
            Some(IntLiteral::Negative) => quote!(0),
            _ => quote!(#capacity),
        };
        let queue = queue.as_ref().map(|queue| {
            let limit = match int_literal(queue) {
                _ if quoted(queue).is_some() => quote!(1),
                Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) => quote!(1),
                Some(IntLiteral::Negative | IntLiteral::Value(0)) => quote!(1),
                _ => quote!(#queue),
            };
            quote!(.with_queue_limit(#limit))
        });
        let queue_check = entry
            .queue
            .as_ref()
            .filter(|q| int_literal(q).is_none() && quoted(q).is_none())
            .map(|q| {
            let message = format!(
                "resources!: resource `{ident}` has `queue = 0`, so every call that has to wait would be refused\n\
                 help: give it a queue of at least 1, or remove `queue`"
            );
            quote_spanned! {q.span()=>
                const _: () = if let ::core::option::Option::Some(0) = #ident.queue_limit() { ::core::panic!(#message) };
            }
        });
        let constructor = constructor(name, &capacity, period.as_ref(), burst.as_ref());
        items.push(quote! {
            #(#attrs)*
            #vis const #ident: ::herta::Resource = #constructor #queue;
            #check
            #queue_check
        });
    }
    let errors: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    quote! {
        #(#items)*
        #errors
    }
}

/// The constant's value: `Resource::new`, or a rate budget's
/// `Resource::rate_unchecked` with its burst.
fn constructor(
    name: &LitStr,
    capacity: &TokenStream,
    period: Option<&LitStr>,
    burst: Option<&Expr>,
) -> TokenStream {
    match period {
        None => quote!(::herta::Resource::new(#name, #capacity)),
        Some(period) => {
            let millis = period_millis(period).unwrap_or(1);
            let burst = burst.as_ref().map(|burst| {
                let burst = match int_literal(burst) {
                    _ if quoted(burst).is_some() => quote!(1),
                    Some(IntLiteral::Value(n)) if n > u128::from(u32::MAX) || n == 0 => {
                        quote!(1)
                    }
                    Some(IntLiteral::Negative) => quote!(1),
                    _ => quote!(#burst),
                };
                quote!(.with_burst(#burst))
            });
            quote!(::herta::Resource::rate_unchecked(
                #name,
                #capacity,
                ::core::time::Duration::from_millis(#millis),
            )#burst)
        }
    }
}
