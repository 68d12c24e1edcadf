//! `resources("worker" = 1, DB_WRITE = 3)`.

use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Meta, Token};

use crate::diag::{error, error_spanned};
use crate::model::{ResourceEntry, ResourceKey, Units};
use crate::syntax::int_literal;

/// The entries of `resources(...)`.
pub(super) fn resources(meta: &Meta) -> syn::Result<Vec<ResourceEntry>> {
    let list = match meta {
        Meta::List(list) => list,
        other => {
            return Err(error(
                other.path().span(),
                "`resources` takes a list of resources and units",
                "write `resources(\"worker\" = 1)` or `resources(WORKER = 1, DB_WRITE = 2)`",
            ))
        }
    };
    let entries = Punctuated::<ResourceEntry, Token![,]>::parse_terminated
        .parse2(list.tokens.clone())
        .map_err(|e| {
            if e.to_string().contains("\nhelp: ") {
                e
            } else {
                error(e.span(), &e, "write `resources(\"worker\" = 1, DB_WRITE = 2)`: resources and their units, separated by commas")
            }
        })?;
    Ok(entries.into_iter().collect())
}

impl syn::parse::Parse for ResourceEntry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = if input.peek(LitStr) {
            ResourceKey::Name(input.parse()?)
        } else if input.peek(Ident::peek_any) || input.peek(Token![::]) {
            ResourceKey::Path(input.call(syn::Path::parse_mod_style)?)
        } else {
            return Err(input.error(
                "expected a resource: a name such as `\"worker\"` or a constant such as `WORKER`\n\
                 help: write `resources(\"worker\" = 1)` or `resources(WORKER = 1)`",
            ));
        };
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!(
                    "resource {} needs the number of units one call holds\n\
                     help: write `{} = 1`",
                    key.display(),
                    key.source()
                ),
            ));
        }
        input.parse::<Token![=]>()?;
        let expr: Expr = input.parse()?;
        let Some(value) = int_literal(&expr) else {
            return Err(error_spanned(
                &expr,
                "resource units must be an integer literal",
                format_args!("write the units as a number, e.g. `{} = 2`", key.source()),
            ));
        };
        let tokens = expr.to_token_stream();
        let span = tokens
            .clone()
            .into_iter()
            .find(|t| matches!(t, proc_macro2::TokenTree::Literal(_)))
            .map_or_else(|| expr.span(), |t| t.span());
        Ok(ResourceEntry {
            key,
            units: Units {
                value,
                tokens,
                span,
            },
        })
    }
}
