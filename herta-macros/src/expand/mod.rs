//! Generating the wrapper type of an operation from the
//! [model](crate::model) (through its [best-effort](crate::best_effort)
//! readings), with `quote`.
//!
//! Whatever the errors, the function is emitted exactly as written and the
//! wrapper type is emitted with its usual items and signatures, so the only
//! errors a user sees are the contract's own.
//!
//! The wrapper struct is declared in a private module next to the function
//! and brought in by a glob import, which any other item of the same name
//! shadows without an error: the generated `const` check then reports the
//! clash as one error that suggests `wrapper = ...`. Everything else names
//! the struct through the module, so a clash causes no further error.
//!
//! The price: rustc never shortens in its messages a name that the crate
//! uses through a glob import, so a type naming the wrapper prints with its
//! module (`State<__herta_put::Put>`). Declaring the struct beside the
//! function, or importing it by name, would print `Put`, but a clash would
//! then be rustc's own "defined multiple times" (E0428 or E0255), which
//! cannot suggest `wrapper = ...`, and with the struct beside the function
//! every generated `impl` would apply to the other item, a cascade.

mod checks;
mod contract;
mod declared;
mod methods;
mod state;
mod types;
mod wrapper;

use proc_macro2::TokenStream;
use quote::quote;

use crate::diag::Errors;
use crate::{parse, rules};
use wrapper::Wrapper;

pub(crate) use declared::contract;

/// `#[herta::operation(args)] item`.
pub(crate) fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let Some(op) = parse::operation(args, item.clone(), &mut errors) else {
        let errors = errors.to_compile_errors();
        return quote! { #item #errors };
    };
    rules::check(&op, &mut errors);
    let errors = errors.to_compile_errors();
    let key = op.attr.serialize_by.as_ref().map(|by| &by.param);
    let function = op.handler.with_key_used(key);
    if op.in_impl() {
        // A wrapper type cannot be declared inside an `impl` block.
        return quote! { #function #errors };
    }
    let wrapper = Wrapper::new(&op).expand();
    quote! {
        #function
        #wrapper
        #errors
    }
}

/// The assembly of the generated items, each made by its module.
impl Wrapper<'_> {
    /// The wrapper type and every item generated for it.
    fn expand(&self) -> TokenStream {
        let Wrapper {
            ident, path, cfgs, ..
        } = self;
        let key_ty = &self.key.ty;
        let name = self.op.name();
        let spec = self.spec();
        let contract = spec.contract_const();
        let paths: Vec<&syn::Path> = spec.path_resources().collect();
        let resource_consts = (!paths.is_empty()).then(|| {
            let count = paths.len();
            quote! {
                #[doc(hidden)]
                const __HERTA_RESOURCES: [::herta::Resource; #count] = [#(#paths),*];
            }
        });
        let methods = if self.callable {
            self.methods()
        } else {
            self.stub_methods()
        };
        let declaration = self.declaration();
        let operation_impl = self.operation_impl();
        let checks = self.checks();
        let state_impl = self.state.map(|state| {
            quote! {
                #(#cfgs)*
                #[allow(deprecated)]
                impl ::herta::__private::WrapperState for #path {
                    type State = #state;
                }
            }
        });
        quote! {
            #declaration

            #(#cfgs)*
            #[allow(deprecated)]
            impl ::herta::__private::WrapperKey for #path {
                type Key = #key_ty;
            }

            #state_impl

            #(#cfgs)*
            #[allow(deprecated)]
            impl #path {
                /// The operation's name, used in errors, stats and `bind` checks.
                pub const NAME: &'static str = #name;

                /// The declared contract, as the runtime enforces it (see the type's documentation).
                pub const CONTRACT: ::herta::Contract = #contract;

                #resource_consts

                #methods
            }

            #(#cfgs)*
            #[automatically_derived]
            #[allow(deprecated)]
            impl ::core::fmt::Debug for #path {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(::core::stringify!(#ident))
                        .field("operation", &Self::NAME)
                        .finish_non_exhaustive()
                }
            }

            #operation_impl

            #checks
        }
    }

    /// The wrapper struct, in its private module, documented with the
    /// function's docs and the contract, and its import with the
    /// function's visibility.
    fn declaration(&self) -> TokenStream {
        let Wrapper {
            ident,
            module,
            cfgs,
            ..
        } = self;
        let vis = &self.op.handler.vis;
        let inner_vis = types::one_level_down(vis);
        let docs = self.op.handler.attrs_named("doc");
        let deprecated = self.op.handler.attrs_named("deprecated");
        let contract_doc = self
            .spec()
            .contract_doc()
            .into_iter()
            .map(|line| quote!(#[doc = #line]));
        let state_field = self.state.map(|_| {
            quote! {
                pub(super) state: ::std::sync::Arc<
                    <Self as ::herta::__private::WrapperState>::State,
                >,
            }
        });
        let needs_state = self.stateful().then(|| self.needs_state_trait());
        quote! {
            #(#cfgs)*
            mod #module {
                // The function's documentation links resolve as beside it.
                #[allow(unused_imports)]
                use super::*;

                #(#docs)*
                #(#contract_doc)*
                #(#deprecated)*
                #[derive(::core::clone::Clone)]
                #inner_vis struct #ident {
                    pub(super) bound: ::herta::__private::Bound<
                        <Self as ::herta::__private::WrapperKey>::Key,
                    >,
                    #state_field
                }

                #needs_state
            }

            #(#cfgs)*
            #[allow(unused_imports)]
            #vis use #module::*;
        }
    }
}
