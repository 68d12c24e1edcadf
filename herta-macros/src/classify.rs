//! `#[derive(Classify)]`: `#[outcome(Transient)]` on variants (or on the
//! type) implements `herta::Classify`. Unannotated variants are `Permanent`.

use herta_contract::Outcome;
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Meta};

use crate::diag::{error, Errors};
use crate::vocab::unknown_word;

/// The outcome named by the one `#[outcome(...)]` in `attrs`, if any.
/// Errors (rule 12 and shape errors) go to `errors`.
pub(crate) fn outcome_attr(attrs: &[Attribute], errors: &mut Errors) -> Option<Outcome> {
    let mut found: Option<Outcome> = None;
    let mut seen = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("outcome")) {
        if seen {
            errors.push(error(
                attr.path().span(),
                "`#[outcome(...)]` is given twice; an error has one outcome",
                "remove one of them",
            ));
            continue;
        }
        seen = true;
        let Meta::List(list) = &attr.meta else {
            errors.push(error(
                attr.path().span(),
                "`#[outcome]` needs the outcome in parentheses",
                "write `#[outcome(Transient)]`, `#[outcome(Uncertain)]`, `#[outcome(Permanent)]` or `#[outcome(Throttled)]`",
            ));
            continue;
        };
        let Some(word) = errors.handle(list.parse_args::<Ident>().map_err(|e| {
            error(
                e.span(),
                "`#[outcome(...)]` takes one outcome name",
                "write `#[outcome(Transient)]`, `#[outcome(Uncertain)]`, `#[outcome(Permanent)]` or `#[outcome(Throttled)]`",
            )
        })) else {
            continue;
        };
        let text = word.to_string();
        match Outcome::from_name(&text) {
            None => errors.push(unknown_word::<Outcome>(word.span(), &text)),
            Some(Outcome::Success) => errors.push(error(
                word.span(),
                "an error cannot be classified as `Success`",
                "use the outcome that describes the failure: `Transient`, `Uncertain`, `Permanent` or `Throttled`",
            )),
            Some(outcome) => found = Some(outcome),
        }
    }
    found
}

/// `#[outcome]` belongs on variants or the type, not on fields.
fn no_field_attrs(fields: &Fields, errors: &mut Errors) {
    for field in fields {
        for attr in field.attrs.iter().filter(|a| a.path().is_ident("outcome")) {
            errors.push(error(
                attr.path().span(),
                "`#[outcome(...)]` goes on an enum variant or on the type, not on a field",
                "move it to the variant this field belongs to",
            ));
        }
    }
}

/// The field marked `#[retry_after]` among `fields`, as an expression on
/// the binding `field` (a `Duration` or an `Option<Duration>`, both read
/// through `herta::__private::RetryAfterField`); errors for a second one or
/// a malformed attribute.
fn retry_after_field(
    fields: &Fields,
    errors: &mut Errors,
) -> Option<(syn::Member, proc_macro2::Span)> {
    let mut found = None;
    for (i, field) in fields.iter().enumerate() {
        for attr in field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("retry_after"))
        {
            if !matches!(attr.meta, Meta::Path(_)) {
                errors.push(error(
                    attr.meta.span(),
                    "`#[retry_after]` takes no arguments",
                    "write `#[retry_after]` on the field that holds the hint (a `Duration` or an `Option<Duration>`)",
                ));
                continue;
            }
            if found.is_some() {
                errors.push(error(
                    attr.path().span(),
                    "`#[retry_after]` is given on two fields; an error has one hint",
                    "keep it on one field",
                ));
                continue;
            }
            let member = match &field.ident {
                Some(ident) => syn::Member::Named(ident.clone()),
                None => syn::Member::Unnamed(syn::Index::from(i)),
            };
            found = Some((member, field.ty.span()));
        }
    }
    found
}

/// The `retry_after` body for one set of fields bound as `Self::…` or
/// `self`: `None` without a `#[retry_after]` field.
fn hint_expr(member: Option<(syn::Member, proc_macro2::Span)>, value: TokenStream) -> TokenStream {
    match member {
        Some((member, span)) => quote::quote_spanned! {span=>
            ::herta::__private::RetryAfterField::retry_after_hint(&#value.#member)
        },
        None => quote!(::core::option::Option::None),
    }
}

/// `#[derive(Classify)]`.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors::default();
    let default = outcome_attr(&input.attrs, &mut errors);
    let mut hint_arms: Vec<TokenStream> = Vec::new();
    let mut any_hint = false;
    let (body, hint_body) = match &input.data {
        Data::Struct(data) => {
            no_field_attrs(&data.fields, &mut errors);
            let outcome = outcome_tokens(default.unwrap_or(Outcome::Permanent));
            let member = retry_after_field(&data.fields, &mut errors);
            any_hint = member.is_some();
            (quote!(#outcome), hint_expr(member, quote!(self)))
        }
        Data::Enum(data) => {
            let arms: Vec<TokenStream> = data
                .variants
                .iter()
                .map(|variant| {
                    no_field_attrs(&variant.fields, &mut errors);
                    let outcome = outcome_attr(&variant.attrs, &mut errors)
                        .or(default)
                        .unwrap_or(Outcome::Permanent);
                    let ident = &variant.ident;
                    if let Some((member, span)) = retry_after_field(&variant.fields, &mut errors) {
                        any_hint = true;
                        let read = quote::quote_spanned! {span=>
                            ::herta::__private::RetryAfterField::retry_after_hint(__herta_hint)
                        };
                        hint_arms
                            .push(quote!(Self::#ident { #member: __herta_hint, .. } => #read,));
                    }
                    let outcome = outcome_tokens(outcome);
                    quote!(Self::#ident { .. } => #outcome,)
                })
                .collect();
            let body = if arms.is_empty() {
                quote!(match *self {})
            } else {
                quote!(match self { #(#arms)* })
            };
            let hints = quote! {
                #[allow(unreachable_patterns)]
                match self {
                    #(#hint_arms)*
                    _ => ::core::option::Option::None,
                }
            };
            (body, hints)
        }
        Data::Union(data) => {
            errors.push(error(
                data.union_token.span,
                "`#[derive(Classify)]` supports structs and enums, not unions",
                "implement `herta::Classify` by hand",
            ));
            (
                outcome_tokens(Outcome::Permanent),
                quote!(::core::option::Option::None),
            )
        }
    };
    let retry_after = any_hint.then(|| {
        quote! {
            fn retry_after(&self) -> ::core::option::Option<::core::time::Duration> {
                #hint_body
            }
        }
    });
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let errors = errors.to_compile_errors();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::herta::Classify for #ident #ty_generics #where_clause {
            fn outcome(&self) -> ::herta::Outcome {
                #body
            }
            #retry_after
        }
        #errors
    }
}

fn outcome_tokens(outcome: Outcome) -> TokenStream {
    let ident = Ident::new(outcome.name(), proc_macro2::Span::call_site());
    quote!(::herta::Outcome::#ident)
}
