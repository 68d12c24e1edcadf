//! An operation with state (`#[state] ledger: &Ledger`): its `bind_with`,
//! which takes the state once and keeps it in an `Arc` every call lends
//! from, and a `bind` that cannot be called, whose error says to use
//! `bind_with`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::types::private_path;
use super::wrapper::Wrapper;
use crate::syntax::{pretty, span_range};

impl Wrapper<'_> {
    /// `bind_with(runtime, state)`, then the hidden `bind` that explains it.
    /// `bind` is `KeyBound::bind(...)`, the binding of the contract.
    pub(super) fn bind_with(&self, bind: TokenStream) -> TokenStream {
        let Some(state) = self.state else {
            return TokenStream::new();
        };
        // The `Send + Sync + 'static` check is spanned on the state type.
        let shared = private_path("SharedState", span_range(state));
        let needs_state = self.needs_state_path();
        let ident = &self.ident;
        // The hidden `bind` takes the runtime as a trait object, not through
        // a bound on a type parameter: rustc's error then ends with "required
        // for the cast from `&Runtime` to `&dyn CreditIsBoundWithBindWith`",
        // where a bound would add "required by a bound in `<impl ...>::bind`",
        // a note that prints the wrapper with its generated module.
        quote! {
            /// Checks the contract against `runtime` and binds the operation to it, with
            /// the state every call is lent: `state` is a value (moved into an `Arc`
            /// once) or an `Arc` you keep a clone of. The state is never cloned: each
            /// attempt of each call borrows it, and every clone of this wrapper shares it.
            ///
            /// # Errors
            ///
            /// A `herta::BindError` if a resource the contract names is not
            /// declared by `runtime`, has less capacity than the units one call
            /// holds, if a shared `serialize_by` scope is already keyed by
            /// another type, or if `runtime` is closed (`close`/`shutdown`).
            ///
            /// # Panics
            ///
            /// If this binding would be the 65 537th distinct set of resources
            /// (names with their units) bound to `runtime`.
            pub fn bind_with(
                runtime: &::herta::Runtime,
                state: impl ::core::convert::Into<::std::sync::Arc<#state>>,
            ) -> ::core::result::Result<Self, ::herta::BindError> {
                let state = <#shared as ::herta::__private::StateBound<#state>>::share(state.into());
                #bind.map(|bound| Self { bound, state })
            }

            /// Not callable: this operation owns state, bind it with `bind_with`.
            #[doc(hidden)]
            #[allow(private_interfaces)]
            pub fn bind(
                runtime: &dyn #needs_state,
            ) -> ::core::result::Result<Self, ::herta::BindError> {
                let _ = runtime;
                ::core::unreachable!(::core::concat!(::core::stringify!(#ident), " is bound with `bind_with`"))
            }
        }
    }

    /// The path of the trait no runtime implements, from the impl block.
    fn needs_state_path(&self) -> TokenStream {
        let module = &self.module;
        let name = self.needs_state_name();
        quote!(#module::#name)
    }

    /// The name of that trait, in the user's words: rustc shows it ("the
    /// trait `CreditIsBoundWithBindWith` is not implemented for
    /// `Runtime`"), and one per wrapper keeps it unique, so that rustc
    /// prints it without its module.
    fn needs_state_name(&self) -> syn::Ident {
        quote::format_ident!("{}IsBoundWithBindWith", self.ident)
    }

    /// The trait `bind`'s runtime must implement and none does: its
    /// message tells to call `bind_with`, naming the state.
    pub(super) fn needs_state_trait(&self) -> TokenStream {
        let ident = &self.ident;
        let function = self.op.function_name();
        let (name, shown) = match self.op.handler.states.first() {
            Some(s) => (
                s.declared
                    .as_ref()
                    .map_or_else(|| "state".to_owned(), ToString::to_string),
                s.referent.as_ref().map_or_else(|| pretty(&s.ty), pretty),
            ),
            None => ("state".to_owned(), String::new()),
        };
        let message = format!(
            "`{function}` owns state (`#[state] {name}: &{shown}`), which `bind` cannot give it: bind it with `{ident}::bind_with(&runtime, {name})`"
        );
        let label = format!("use `{ident}::bind_with(&runtime, {name})`");
        let note = format!(
            "`bind_with` takes the state once, as a `{shown}` or an `Arc<{shown}>`; every call and attempt then borrows it, never cloning it"
        );
        let span = self.op.handler.sig.ident.span();
        let name = self.needs_state_name();
        quote_spanned! {span=>
            #[doc(hidden)]
            #[allow(dead_code)] // named only by the hidden `bind`
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            pub trait #name {}
            #[diagnostic::do_not_recommend]
            impl #name for ::herta::__private::NoKey {}
        }
    }
}
