//! Checks rustc runs on the generated code: the wrapper's name is not
//! taken by another item (one error suggesting `wrapper = ...`), a constant
//! resource has room for the units (rule 6, spanned on the units and naming
//! the capacity), and no resource is listed twice (rule 7).

use proc_macro2::{Literal, TokenStream};
use quote::{quote, quote_spanned};

use super::contract::Spec;
use super::wrapper::Wrapper;
use crate::model::ResourceKey;
use crate::syntax::path_text;

impl Wrapper<'_> {
    /// Every check, each in its own `const _` block.
    pub(super) fn checks(&self) -> TokenStream {
        let spec = self.spec();
        let name_check = spec.wrap_check(self.name_check());
        let resource_checks = spec.resource_checks();
        quote!(#name_check #(#resource_checks)*)
    }

    /// The wrapper's name resolves to the wrapper: another item of the same
    /// name (a `struct`, a `use`) shadows the glob import of it, and this
    /// is then the one error, spanned on the name.
    fn name_check(&self) -> TokenStream {
        let Wrapper { ident, path, .. } = self;
        let function = self.op.function_name();
        let message = format!(
            "the wrapper type `{ident}` of `{function}` cannot be declared: another item in this module is named `{ident}`"
        );
        let label = format!("the wrapper type of `{function}` would be `{ident}`");
        let note = format!(
            "name the wrapper type with `wrapper = {ident}Op` in `#[herta::operation(...)]`, or rename the other item"
        );
        let ident_span = ident.span();
        let check = quote_spanned!(ident_span=> <#ident as IsTheWrapper>::OK);
        quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait IsTheWrapper {
                const OK: () = ();
            }
            #[diagnostic::do_not_recommend]
            impl IsTheWrapper for #path {}
            #check
        }
    }
}

impl Spec<'_> {
    /// The checks of the resources (rules 6 and 7), each in its own
    /// `const _` block.
    pub(super) fn resource_checks(&self) -> Vec<TokenStream> {
        self.capacity_checks()
            .into_iter()
            .chain(self.same_resource_check())
            .map(|check| self.wrap_check(check))
            .collect()
    }

    /// `check` in a `const _` block, under the item's `cfg`s.
    pub(super) fn wrap_check(&self, check: TokenStream) -> TokenStream {
        let cfgs = &self.cfgs;
        quote! {
            #(#cfgs)*
            #[allow(deprecated)]
            const _: () = { #check };
        }
    }

    /// Rule 6 for constant resources: `Units<units, { units <= capacity }>`
    /// must have room, through a trait whose message names the resource
    /// and its capacity, spanned on the units.
    fn capacity_checks(&self) -> Vec<TokenStream> {
        let path = &self.path;
        let mut checks = Vec::new();
        let paths = self.resources.iter().filter_map(|r| match r.key {
            ResourceKey::Path(p) => Some((r, path_text(p))),
            ResourceKey::Name(_) => None,
        });
        for (index, (r, shown)) in paths.enumerate() {
            let units = Literal::u32_unsuffixed(r.units);
            let message = format!(
                "`{shown} = {units}` asks for more units than `{shown}` grants at once: its capacity (a rate budget's burst) is {{CAPACITY}}, so no call could ever be admitted"
            );
            let label = format!("more than `{shown}` grants at once, {{CAPACITY}}");
            let note = format!(
                "hold at most {{CAPACITY}} units of `{shown}`, or raise its capacity (a rate budget's `burst = n`) where it is declared"
            );
            let capacity = quote!(#path::__HERTA_RESOURCES[#index].capacity());
            let check = quote_spanned! {r.units_span=>
                <Units<#units, { #units <= #capacity }> as Fits<{ #capacity }>>::OK
            };
            // Every name is local, so rustc's own line reads "the trait
            // `Fits<4>` is not implemented for `Units<5, false>`", and
            // points at the units, where `Units` is declared.
            let units_type = quote_spanned! {r.units_span=>
                struct Units<const N: u32, const FITS: bool>;
            };
            checks.push(quote! {
                #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
                trait Fits<const CAPACITY: u32> {
                    const OK: () = ();
                }
                #units_type
                trait HasRoom {}
                // Braced: a bare `N` or `C` in a generic argument is read as
                // a type first, and the user's module may have one (an
                // operation `n` has a wrapper type `N`).
                impl<const N: u32> HasRoom for Units<{ N }, true> {}
                #[diagnostic::do_not_recommend]
                impl<T: HasRoom, const C: u32> Fits<{ C }> for T {}
                #check
            });
        }
        checks
    }

    /// Rule 7 where the macro cannot compare names: a constant resource and
    /// another resource have the same name (a `const` assertion).
    fn same_resource_check(&self) -> Option<TokenStream> {
        let names = self.resource_names(&self.path);
        let mut assertions = Vec::new();
        for (i, r) in self.resources.iter().enumerate() {
            for (j, earlier) in self.resources[..i].iter().enumerate() {
                if matches!(
                    (r.key, earlier.key),
                    (ResourceKey::Name(_), ResourceKey::Name(_))
                ) {
                    continue; // the macro compared those already
                }
                let (a, b) = (&names[j], &names[i]);
                let message = format!(
                    "{} and {} are the same resource, named twice in `resources(...)`; a call holds each resource once\n\
                     help: merge the two entries into one with the total units",
                    earlier.key.display(),
                    r.key.display(),
                );
                assertions.push(quote_spanned! {r.key.span()=>
                    if __herta_same_name(#a, #b) {
                        ::core::panic!("{}", #message)
                    }
                });
            }
        }
        (!assertions.is_empty()).then(|| {
            quote! {
                const fn __herta_same_name(a: &str, b: &str) -> bool {
                    let (a, b) = (a.as_bytes(), b.as_bytes());
                    if a.len() != b.len() {
                        return false;
                    }
                    let mut i = 0;
                    while i < a.len() {
                        if a[i] != b[i] {
                            return false;
                        }
                        i += 1;
                    }
                    true
                }
                #(#assertions)*
            }
        })
    }
}
