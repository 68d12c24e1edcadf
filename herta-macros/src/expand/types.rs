//! Types the generated code is written with: `T` and `E` of the return
//! type, the key type, and paths spanned for rustc's errors.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Ident, ReturnType, Type};

use crate::best_effort::KeyUse;
use crate::model::Operation;
use crate::syntax::span_range;

/// The serialization key: its owned type and how `call` computes it.
pub(super) struct Key {
    pub ty: TokenStream,
    /// `Option<K>` from the call's parameters.
    pub value: TokenStream,
    /// The spans of the first and last tokens of the key parameter's type
    /// (its referent, for a reference), for rustc errors about it.
    pub span: Option<(Span, Span)>,
}

/// The visibility `vis` written one module deeper, where the wrapper
/// struct is declared: private becomes `pub(super)`, `pub(super)` becomes
/// `pub(in super::super)`; `pub` and `pub(crate)` stay.
pub(super) fn one_level_down(vis: &syn::Visibility) -> TokenStream {
    match vis {
        syn::Visibility::Inherited => quote!(pub(super)),
        syn::Visibility::Restricted(r) => {
            let path = &r.path;
            if path.is_ident("crate") {
                quote!(pub(crate))
            } else if path.is_ident("self") {
                quote!(pub(super))
            } else if path.leading_colon.is_none()
                && path.segments.first().is_some_and(|s| s.ident == "crate")
            {
                quote!(pub(in #path))
            } else {
                quote!(pub(in super::#path))
            }
        }
        syn::Visibility::Public(_) => quote!(pub),
    }
}

/// `T` and `E` of the function's `Result<T, E>`.
pub(super) fn ok_and_err(op: &Operation) -> (TokenStream, TokenStream) {
    match &op.handler.sig.output {
        ReturnType::Type(_, ty) if op.returns_result() => match result_args(ty) {
            // `Result<T, E>` as written: the docs show `T` and `E`. Were
            // it an odd alias, `call`'s body would not type-check.
            Some((t, e)) => (t.to_token_stream(), e.to_token_stream()),
            None => {
                let span = ty.span();
                (
                    quote_spanned!(span=> <#ty as ::herta::__private::HandlerOutput>::Ok),
                    quote_spanned!(span=> <#ty as ::herta::__private::HandlerOutput>::Err),
                )
            }
        },
        // Not a `Result` (an error already): the stub `call` yields the
        // declared type, so call sites written for it add no second error.
        ReturnType::Type(_, ty) if !matches!(**ty, Type::ImplTrait(_)) => {
            (ty.to_token_stream(), quote!(::core::convert::Infallible))
        }
        _ => (quote!(()), quote!(::core::convert::Infallible)),
    }
}

/// `T` and `E` of a return type written `Result<T, E>` (any path ending so).
fn result_args(ty: &Type) -> Option<(&Type, &Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    match (types.next(), types.next(), types.next()) {
        (Some(Some(t)), Some(Some(e)), None) => Some((t, e)),
        _ => None,
    }
}

/// The key type and value for `serialize_by`, or `NoKey`.
pub(super) fn key(op: &Operation, key_use: Option<&KeyUse>) -> Key {
    // Stubs never compute a key: the parameter types may not even resolve.
    let Some(key) = key_use else {
        return Key {
            ty: quote!(::herta::__private::NoKey),
            value: quote!(::core::option::Option::None),
            span: None,
        };
    };
    let param = &op.handler.params[key.param];
    let name = &param.name;
    let span = param.ty.span();
    let (ty, value) = match &param.ty {
        // `&str` → `String`, `&[u8]` → `Vec<u8>`, `&Path` → `PathBuf`.
        Type::Reference(r) if unsized_borrow(&r.elem) => {
            let target = &*r.elem;
            (
                quote_spanned!(span=> <#target as ::std::borrow::ToOwned>::Owned),
                quote_spanned!(span=> <#target as ::std::borrow::ToOwned>::to_owned(#name)),
            )
        }
        // `&Brand` → `Brand` and `Brand` → `Brand`, cloned through
        // `Bound::key`, which needs no bound on the type: a key type that is
        // not `KeyBound` (`Clone` included) is one error, at `bind`.
        Type::Reference(r) => (
            r.elem.to_token_stream(),
            quote_spanned!(span=> ::herta::__private::Bound::key(&self.bound, #name)),
        ),
        ty => (
            ty.to_token_stream(),
            quote_spanned!(span=> ::herta::__private::Bound::key(&self.bound, &#name)),
        ),
    };
    let spanned = match &param.ty {
        Type::Reference(r) => &*r.elem,
        ty => ty,
    };
    Key {
        ty: quote_spanned!(span=> #ty),
        value: quote_spanned!(span=> ::core::option::Option::Some(#value)),
        span: Some(span_range(spanned)),
    }
}

/// `::herta::__private::<name>`, its first tokens spanned at `start` and
/// its last at `end`: rustc reports an error about the path (such as an
/// unimplemented trait with it as the self type) on the whole range.
pub(super) fn private_path(name: &str, (start, end): (Span, Span)) -> TokenStream {
    let last = Ident::new(name, end);
    quote_spanned!(start=> ::herta::__private::#last)
}

/// Whether `&ty` borrows one of the standard unsized types whose owned form
/// is another type (`str` → `String`, `[T]` → `Vec<T>`, `Path` → `PathBuf`,
/// `OsStr` → `OsString`, `CStr` → `CString`). Any other borrowed key is
/// owned as its own type, by cloning.
fn unsized_borrow(ty: &Type) -> bool {
    match ty {
        Type::Slice(_) => true,
        Type::Paren(p) => unsized_borrow(&p.elem),
        Type::Group(g) => unsized_borrow(&g.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.arguments.is_none()
                && ["str", "Path", "OsStr", "CStr"]
                    .iter()
                    .any(|n| s.ident == n)
        }),
        _ => false,
    }
}
