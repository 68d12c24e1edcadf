//! The state parameter: `#[state] ledger: &Ledger`, first, filled by the
//! wrapper from what `bind_with` was given. Read here from the function
//! (the attribute removed, so the function is emitted as plain Rust); rule
//! 15 (in [`rules`](crate::rules)) checks its place and form.

use syn::{Attribute, FnArg, Ident, Pat, Signature, Type};

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
            && self.referent.as_ref().is_some_and(crate::syntax::owned)
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
