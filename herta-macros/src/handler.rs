//! The function `#[herta::operation]` is on: which parameter is the
//! `Context`, what `call` takes, and facts about its signature.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, Type};

/// The function the attribute is on.
pub(crate) struct Handler {
    pub item: ItemFn,
    /// Whether the first parameter is the `Context`, passed by `call`.
    pub has_context: bool,
    /// The other parameters, in order: the parameters of `call`.
    pub params: Vec<Param>,
}

/// One parameter of `call`.
pub(crate) struct Param {
    /// The name `call` gives it (the function's own where possible).
    pub name: Ident,
    /// The identifier the function binds it to, if it is a plain binding.
    pub declared: Option<Ident>,
    pub ty: Type,
}

/// Reads the function: which parameter is the context, and what `call` takes.
pub(crate) fn handler(item: ItemFn) -> Handler {
    let mut has_context = false;
    let mut params = Vec::new();
    for (index, arg) in item.sig.inputs.iter().enumerate() {
        let FnArg::Typed(arg) = arg else {
            continue; // `self`: rule 11
        };
        if index == 0 && is_context(&arg.ty) {
            has_context = true;
            continue;
        }
        let declared = match &*arg.pat {
            Pat::Ident(p) => Some(p.ident.clone()),
            _ => None,
        };
        let name = match (&*arg.pat, &declared) {
            // `call` can reuse the name unless it would shadow the function it calls.
            (Pat::Ident(p), Some(ident)) if p.subpat.is_none() && *ident != item.sig.ident => {
                ident.clone()
            }
            _ => Ident::new(&format!("__herta_arg{index}"), arg.pat.span()),
        };
        params.push(Param {
            name,
            declared,
            ty: (*arg.ty).clone(),
        });
    }
    Handler {
        item,
        has_context,
        params,
    }
}

/// A type whose path ends in `Context`: `Context`, `herta::Context`.
pub(crate) fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Context")
        }
        Type::Group(g) => is_context(&g.elem),
        Type::Paren(p) => is_context(&p.elem),
        _ => false,
    }
}

pub(crate) fn key_param(handler: &Handler, name: &Ident) -> Option<usize> {
    handler
        .params
        .iter()
        .position(|p| p.declared.as_ref() == Some(name))
}

pub(crate) fn context_ident(handler: &Handler) -> Option<Ident> {
    match handler.item.sig.inputs.first()? {
        FnArg::Typed(arg) => match &*arg.pat {
            syn::Pat::Ident(p) => Some(p.ident.clone()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

/// Whether `ty` may name a `Result` (maybe through an alias such as
/// `io::Result<T>`; rustc decides). `false` for types that certainly are not.
pub(crate) fn may_be_result(ty: &Type) -> bool {
    const NOT_RESULTS: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64", "String", "Vec", "VecDeque", "Option", "Box", "Rc",
        "Arc", "Cow", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "Duration",
    ];
    match ty {
        Type::Path(p) => {
            p.qself.is_some()
                || p.path
                    .segments
                    .last()
                    .is_some_and(|s| !NOT_RESULTS.contains(&s.ident.to_string().as_str()))
        }
        Type::Group(g) => may_be_result(&g.elem),
        Type::Paren(p) => may_be_result(&p.elem),
        Type::Macro(_) | Type::Verbatim(_) => true,
        _ => false,
    }
}

/// `herta::Context` or `::herta::Context`, spelled out.
pub(crate) fn is_herta_path(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    segments == ["herta", "Context"]
}

/// The span of an `impl Trait` anywhere in `ty`.
pub(crate) fn impl_trait(ty: &Type) -> Option<Span> {
    fn scan(tokens: proc_macro2::TokenStream) -> Option<Span> {
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(i) if i == "impl" => return Some(i.span()),
                proc_macro2::TokenTree::Group(g) => {
                    if let Some(span) = scan(g.stream()) {
                        return Some(span);
                    }
                }
                _ => {}
            }
        }
        None
    }
    scan(quote::ToTokens::to_token_stream(ty))
}
