//! The state parameter: `#[state] ledger: &Ledger`, first, filled by the
//! wrapper from what `bind_with` was given. Read here from the function
//! (the attribute removed, so the function is emitted as plain Rust); rule
//! 15 ([`rule_15_state`]) checks its place and form.

use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Pat, Signature, Type};

use crate::diag::{error, error_spanned};
use crate::syntax::pretty;

/// A parameter marked `#[state]`.
pub(crate) struct StateParam {
    /// Its position among the function's parameters.
    pub index: usize,
    /// The `#[state]` attribute as written, for errors about its place.
    pub attr: Attribute,
    /// The identifier the function binds it to, if a plain binding.
    pub declared: Option<Ident>,
    /// Its type as written.
    pub ty: Type,
    /// `T` of a `&T` (elided or named lifetime): the state type the
    /// wrapper holds in an `Arc`; `None` for any other form (rule 15).
    pub referent: Option<Type>,
}

/// Whether `attr` is `#[state]` (with arguments or not).
fn is_state(attr: &Attribute) -> bool {
    attr.path().is_ident("state")
}

impl StateParam {
    /// First, plain `#[state]`, `&T` with `T` owned: rule 15 holds for
    /// it alone (a second state is the other one's error).
    pub fn valid(&self) -> bool {
        self.index == 0
            && matches!(self.attr.meta, syn::Meta::Path(_))
            && self
                .referent
                .as_ref()
                .is_some_and(crate::expand::types::owned)
    }
}

/// Removes every `#[state]` from `sig`'s parameters and returns the
/// parameters it marked.
pub(crate) fn take(sig: &mut Signature) -> Vec<StateParam> {
    let mut states = Vec::new();
    for (index, arg) in sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(arg) = arg else { continue };
        let Some(at) = arg.attrs.iter().position(is_state) else {
            continue;
        };
        let attr = arg.attrs.remove(at);
        arg.attrs.retain(|a| !is_state(a));
        let referent = match &*arg.ty {
            Type::Reference(r)
                if r.mutability.is_none()
                    && r.lifetime.as_ref().is_none_or(|l| l.ident != "static") =>
            {
                Some((*r.elem).clone())
            }
            _ => None,
        };
        states.push(StateParam {
            index,
            attr,
            declared: match &*arg.pat {
                Pat::Ident(p) => Some(p.ident.clone()),
                _ => None,
            },
            ty: (*arg.ty).clone(),
            referent,
        });
    }
    states
}

/// Rule 15: one state parameter, first, written `#[state] name: &Type`,
/// whose type owns its data. One error per offending parameter.
pub(crate) fn rule_15_state(states: &[StateParam], function: &Ident) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let name = state
            .declared
            .as_ref()
            .map_or_else(|| "state".to_owned(), Ident::to_string);
        let shown = pretty(&state.ty);
        let error = if i > 0 {
            error_spanned(
                &state.attr,
                "an operation has one state parameter, and this is a second one",
                format_args!("put what `{function}` needs in one struct, e.g. `struct Deps {{ ledger: Ledger, mailer: Mailer }}`, and take `#[state] deps: &Deps`"),
            )
        } else if state.index != 0 {
            error_spanned(
                &state.attr,
                "the state parameter must be the first parameter of an operation",
                format_args!("move it first: `async fn {function}(#[state] {name}: {shown}, ...)`; a `Context` comes right after it"),
            )
        } else if !matches!(state.attr.meta, syn::Meta::Path(_)) {
            error_spanned(
                &state.attr,
                "`#[state]` takes no arguments",
                "write `#[state]` before the parameter",
            )
        } else if let Some(e) = form(state, &name) {
            e
        } else {
            continue;
        };
        errors.push(error);
    }
    errors
}

/// The state's form: by shared reference, not `'static`, to an owned type.
fn form(state: &StateParam, name: &str) -> Option<syn::Error> {
    let Type::Reference(r) = &state.ty else {
        let shown = pretty(&state.ty);
        return Some(error_spanned(
            &state.ty,
            format_args!("the state parameter is taken by shared reference: bound once, it is shared by every call and attempt, never moved or cloned, and `{shown}` is by value"),
            format_args!("write `#[state] {name}: &{shown}`"),
        ));
    };
    let referent = pretty(&r.elem);
    if let Some(mutability) = r.mutability {
        return Some(error(
            mutability.span(),
            "the state parameter cannot be `&mut`: concurrent calls share it",
            format_args!(
                "take `&{referent}` and keep what changes behind a `Mutex` or an atomic inside it"
            ),
        ));
    }
    if let Some(lifetime) = r.lifetime.as_ref().filter(|l| l.ident == "static") {
        return Some(error(
            lifetime.span(),
            "the state is lent to each call by its wrapper, not for `'static`",
            format_args!("write `#[state] {name}: &{referent}`"),
        ));
    }
    (!crate::expand::types::owned(&r.elem)).then(|| {
        error_spanned(
            &*r.elem,
            format_args!("the state type must own its data (be `'static`): the wrapper keeps it for as long as it is bound, and `{referent}` borrows"),
            "hold owned values (or `Arc`s) in the state type",
        )
    })
}
