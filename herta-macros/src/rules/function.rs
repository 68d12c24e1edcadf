//! Rule 11, the function's half: an `async fn` returning a `Result`, with
//! no type parameters, no `self`, not in an `impl` block, and its `Context`
//! first and by value.

use syn::{FnArg, GenericParam, ReturnType, Type};

use crate::diag::{error, error_spanned};
use crate::handler::{self as h, Handler, MisplacedContext};
use crate::syntax::pretty;

/// Rule 11: the function's shape.
pub(super) fn rule_11_handler_shape(handler: &Handler) -> Vec<syn::Error> {
    let sig = &handler.sig;
    let name = &sig.ident;
    let mut errors = Vec::new();
    let returns_future = matches!(&sig.output, ReturnType::Type(_, ty) if impl_future(ty));
    if returns_future {
        errors.push(error_spanned(
            &sig.output,
            format_args!("an operation must be an `async fn`: `{name}` returns `impl Future` instead"),
            format_args!("write it as `async fn {name}(...) -> Result<T, E>`, with the future's body in the function"),
        ));
    } else if sig.asyncness.is_none() {
        errors.push(error(
            sig.fn_token.span,
            format_args!("an operation must be an `async fn`, and `{name}` is not async"),
            format_args!("write `async fn {name}(...)`"),
        ));
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        errors.push(error(
            unsafety.span,
            "an operation cannot be an `unsafe fn`: its wrapper's `call` is safe to call",
            "make the function safe and keep the `unsafe` block inside it",
        ));
    }
    if !returns_future {
        errors.extend(returns_result(handler));
    }
    errors.extend(no_generics(handler));
    errors.extend(free_function(handler));
    errors
}

/// `-> impl Future<...>` (or `impl IntoFuture`).
fn impl_future(ty: &Type) -> bool {
    let Type::ImplTrait(t) = ty else { return false };
    t.bounds.iter().any(|b| match b {
        syn::TypeParamBound::Trait(t) => t
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Future" || s.ident == "IntoFuture"),
        _ => false,
    })
}

fn returns_result(handler: &Handler) -> Option<syn::Error> {
    let sig = &handler.sig;
    let name = &sig.ident;
    match &sig.output {
        ReturnType::Default => Some(error(
            sig.paren_token.span.close(),
            format_args!("an operation must return `Result<T, E>`, and `{name}` returns nothing"),
            "return `Result<(), E>`; the error tells herta what failed and whether to retry (see `herta::Classify`)",
        )),
        ReturnType::Type(_, ty) if !h::may_be_result(ty) => {
            let shown = pretty(ty);
            Some(error_spanned(
                ty,
                format_args!("an operation must return `Result<T, E>`, and `{name}` returns `{shown}`"),
                format_args!("return `Result<{shown}, E>`; the error tells herta what failed and whether to retry (see `herta::Classify`)"),
            ))
        }
        ReturnType::Type(..) => None,
    }
}

fn no_generics(handler: &Handler) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    for param in &handler.sig.generics.params {
        let (span, what) = match param {
            GenericParam::Lifetime(_) => continue,
            GenericParam::Type(t) => (t.ident.span(), "type parameters"),
            GenericParam::Const(c) => (c.ident.span(), "const parameters"),
        };
        errors.push(error(
            span,
            format_args!("an operation cannot have {what}: its wrapper type is one concrete type"),
            "use concrete types, or a generic helper called from a concrete operation",
        ));
    }
    for arg in &handler.sig.inputs {
        if let FnArg::Typed(arg) = arg {
            if let Some(span) = h::impl_trait(&arg.ty) {
                errors.push(error(
                    span,
                    "an operation cannot take `impl Trait` parameters: its wrapper type is one concrete type",
                    "use a concrete type, or a `Box<dyn Trait>`",
                ));
            }
        }
    }
    errors
}

/// A method (`self`) or an associated function (it names `Self`): no
/// wrapper type can be declared inside an `impl` block.
fn free_function(handler: &Handler) -> Option<syn::Error> {
    let name = &handler.sig.ident;
    if let Some(receiver) = handler.sig.receiver() {
        return Some(error(
            receiver.self_token.span,
            format_args!("an operation cannot take `self`: `#[herta::operation]` generates a wrapper type next to `{name}`, which cannot be inside an `impl` block"),
            format_args!("make it a free `async fn` that takes the value as its state, first: `async fn {name}(#[state] value: &Type, ...)`, bound once with `bind_with(&runtime, value)`"),
        ));
    }
    h::mentions_self(&handler.sig).map(|span| {
        error(
            span,
            format_args!("an operation must be a free `async fn`, and `{name}` names `Self`: `#[herta::operation]` generates a wrapper type next to it, which cannot be inside an `impl` block"),
            format_args!("move `{name}` out of the `impl` block and name the type instead of `Self`"),
        )
    })
}

/// Rule 11: the `Context` is the first parameter, by value, and only one.
pub(super) fn rule_11_context_first(handler: &Handler) -> Vec<syn::Error> {
    handler
        .misplaced_contexts
        .iter()
        .map(|misplaced| match misplaced {
            MisplacedContext::ByReference(and) => error(
                *and,
                "an operation takes its `Context` by value, not by reference",
                "remove the `&`: `Context` is `Copy`",
            ),
            MisplacedContext::NotFirst(ty) if handler.has_context => error_spanned(
                ty,
                "an operation takes one `Context`, as its first parameter, and this is a second one",
                "remove this parameter and use the first `Context`",
            ),
            MisplacedContext::NotFirst(ty) if handler.states.first().is_some_and(|s| s.index == 0) => error_spanned(
                ty,
                "the `Context` must come first, right after the state parameter",
                format_args!("move it: `async fn {}(#[state] ..., ctx: {}, ...)`", handler.sig.ident, pretty(ty)),
            ),
            MisplacedContext::NotFirst(ty) => error_spanned(
                ty,
                "the `Context` must be the first parameter of an operation",
                format_args!("move it first: `async fn {}(ctx: {}, ...)`", handler.sig.ident, pretty(ty)),
            ),
        })
        .collect()
}
