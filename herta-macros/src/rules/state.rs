//! Rule 15: the state parameter (`#[state] ledger: &Ledger`) is one, first,
//! plain `#[state]`, by shared reference, to a type that owns its data.

use syn::spanned::Spanned;
use syn::{Ident, Type};

use crate::diag::{error, error_spanned};
use crate::state::StateParam;
use crate::syntax::{owned, pretty};

/// Rule 15: one state parameter, first, written `#[state] name: &Type`,
/// whose type owns its data. One error per offending parameter.
pub(super) fn rule_15_state(states: &[StateParam], function: &Ident) -> Vec<syn::Error> {
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
    (!owned(&r.elem)).then(|| {
        error_spanned(
            &*r.elem,
            format_args!("the state type must own its data (be `'static`): the wrapper keeps it for as long as it is bound, and `{referent}` borrows"),
            "hold owned values (or `Arc`s) in the state type",
        )
    })
}
