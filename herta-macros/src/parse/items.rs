//! The items of a comma-separated list (`key = value`, `key(...)`, or a
//! stray literal) and their keys.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Ident, Lit, Meta, Token};

use crate::diag::{did_you_mean, error, Errors};
use crate::model::{DuplicateKey, Key, Keys, UnknownKey, Within};
use crate::syntax::path_text;

/// One item of a list.
pub(super) enum Item {
    Meta(Box<Meta>),
    Lit(Lit),
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Lit) && !(input.peek(syn::LitBool) && input.peek2(Token![=])) {
            input.parse().map(Item::Lit)
        } else {
            let meta: Meta = input.parse()?;
            // `effect: Idempotent` (struct-literal habit): name the slip
            // instead of syn's "expected `,`".
            if matches!(meta, Meta::Path(_)) && input.peek(Token![:]) && !input.peek(Token![::]) {
                let colon: Token![:] = input.parse()?;
                return Err(syn::Error::new(
                    colon.span,
                    format!(
                        "a key takes its value after `=`, not `:`: write `{} = ...`",
                        path_text(meta.path())
                    ),
                ));
            }
            Ok(Item::Meta(Box::new(meta)))
        }
    }
}

/// The items of `tokens`; a syntax error is reported with `help`.
pub(super) fn list(tokens: TokenStream, errors: &mut Errors, help: &str) -> Option<Vec<Item>> {
    let parsed = Punctuated::<Item, Token![,]>::parse_terminated.parse2(tokens);
    errors
        .handle(parsed.map_err(|e| error(e.span(), &e, help)))
        .map(|items| items.into_iter().collect())
}

/// An item must be `key = value` or `key(...)`, not a bare literal.
pub(super) fn meta(item: Item, within: Within, example: &str, errors: &mut Errors) -> Option<Meta> {
    match item {
        Item::Meta(meta) => Some(*meta),
        Item::Lit(lit) => {
            errors.push(error(
                lit.span(),
                format_args!(
                    "expected `key = value` in {}, found a literal",
                    within.shown()
                ),
                format_args!("write the contract as keys and values, e.g. `{example}`"),
            ));
            None
        }
    }
}

/// The key of one item; records unknown and duplicate keys and returns
/// `None` for them, so their values are not looked at (no cascade).
pub(super) fn key(
    meta: &Meta,
    within: Within,
    seen: &mut Vec<Key>,
    keys: &mut Keys,
) -> Option<(Key, Ident)> {
    let path = meta.path();
    let known = within.keys();
    let found = path.get_ident().and_then(|ident| {
        known
            .iter()
            .find(|k| ident == k.name())
            .map(|&k| (k, ident))
    });
    let Some((key, ident)) = found else {
        let name = path_text(path);
        let closest = within.synonym(&name).map(|(key, _)| key).or_else(|| {
            did_you_mean(&name, &within.names())
                .and_then(|close| known.iter().copied().find(|k| k.name() == close))
        });
        keys.unknown.push(UnknownKey {
            name,
            span: path.span(),
            within,
            closest,
        });
        return None;
    };
    keys.written.push(key);
    if seen.contains(&key) {
        keys.duplicates.push(DuplicateKey {
            ident: ident.clone(),
            within,
        });
        return None;
    }
    seen.push(key);
    Some((key, ident.clone()))
}

/// The value of `key = value`; anything else is a shape error showing `example`.
pub(super) fn value_of<'a>(meta: &'a Meta, key: &str, example: &str) -> syn::Result<&'a Expr> {
    match meta {
        Meta::NameValue(nv) => Ok(&nv.value),
        Meta::Path(path) => Err(error(
            path.span(),
            format_args!("`{key}` needs a value"),
            format_args!("write `{key} = {example}`"),
        )),
        Meta::List(list) => Err(error(
            list.path.span(),
            format_args!("`{key}` takes a value with `=`, not a list"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}
