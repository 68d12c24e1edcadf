//! `#[herta::contract]`: the unit struct as written, documented with its
//! contract, with `NAME` and `CONTRACT`, `herta::DeclaredContract`, and the
//! same rustc checks of its resources as an operation's wrapper.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt as _;

use super::contract::Spec;
use crate::diag::Errors;
use crate::model::ContractItem;
use crate::{parse, rules};

/// `#[herta::contract(args)] item`.
pub(crate) fn contract(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let Some(contract) = parse::contract(args, item.clone(), &mut errors) else {
        let errors = errors.to_compile_errors();
        return quote! { #item #errors };
    };
    rules::check_contract(&contract, &mut errors);
    let errors = errors.to_compile_errors();
    let generated = expand(&contract);
    quote! {
        #generated
        #errors
    }
}

/// The struct and its items; the struct alone when it is generic (rule
/// 16 reported it, and impls for it would only add errors).
fn expand(contract: &ContractItem) -> TokenStream {
    let ContractItem { attr, item } = contract;
    let ident = &item.ident;
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        return quote!(#item);
    }
    let struct_name = ident.unraw().to_string();
    let spec = Spec {
        attr,
        name: attr.name_or(|| struct_name.clone()),
        path: quote!(#ident),
        cfgs: item.attrs.iter().filter(|a| a.path().is_ident("cfg")).collect(),
        resources: attr.resources(),
        retry: attr.retry(),
        timeout: attr.timeout(),
        key: attr.serialize_by.as_ref().map(|by| {
            let (scope, show_key) = attr.key_space().unwrap_or_default();
            (by.param.unraw().to_string(), scope, show_key)
        }),
        intro: format!(
            "Declared by `#[herta::contract]` on `{struct_name}`; run a `tower::Service` under it with `herta::tower::ContractLayer::<{struct_name}>`."
        ),
        state: None,
    };
    let cfgs = &spec.cfgs;
    let name = &spec.name;
    let contract_const = spec.contract_const();
    let docs = spec
        .contract_doc()
        .into_iter()
        .map(|line| quote!(#[doc = #line]));
    let paths: Vec<&syn::Path> = spec.path_resources().collect();
    let resource_consts = (!paths.is_empty()).then(|| {
        let count = paths.len();
        quote! {
            #[doc(hidden)]
            const __HERTA_RESOURCES: [::herta::Resource; #count] = [#(#paths),*];
        }
    });
    let keying = match spec.key {
        Some(_) => quote!(::herta::__private::Keyed),
        None => quote!(::herta::__private::Unkeyed),
    };
    let requests = match spec.retry {
        Some(_) => quote!(::herta::__private::Retried),
        None => quote!(::herta::__private::OneAttempt),
    };
    let breaker = match spec.attr.breaker {
        Some(_) => quote!(::herta::__private::WithBreaker),
        None => quote!(::herta::__private::NoBreaker),
    };
    let checks = spec.resource_checks();
    quote! {
        #(#docs)*
        #item

        #(#cfgs)*
        #[allow(deprecated)]
        impl #ident {
            /// The contract's name, used in errors, stats and `bind` checks.
            pub const NAME: &'static str = #name;

            /// The declared contract, as the runtime enforces it (see the type's documentation).
            pub const CONTRACT: ::herta::Contract = #contract_const;

            #resource_consts
        }

        #(#cfgs)*
        #[allow(deprecated)]
        impl ::herta::__private::ContractParts for #ident {
            type Keying = #keying;
            type Requests = #requests;
            type Breaker = #breaker;
        }

        #(#cfgs)*
        #[allow(deprecated)]
        impl ::herta::DeclaredContract for #ident {
            const CONTRACT: ::herta::Contract = #ident::CONTRACT;
        }

        #(#checks)*
    }
}
