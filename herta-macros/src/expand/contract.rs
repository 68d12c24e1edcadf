//! A contract's `CONTRACT` constant and the documentation that states it,
//! from its [`Spec`]: the same for an operation's wrapper type and a
//! `#[herta::contract]` struct.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::{Attribute, Ident};

use crate::best_effort::{Resource, RetryPolicy};
use crate::model::{Attr, ResourceKey};

/// What a contract declares, read leniently: everything its constant, its
/// documentation and its rustc checks are made of.
pub(crate) struct Spec<'a> {
    pub attr: &'a Attr,
    /// The contract's name (`name = "..."`, or the function's or struct's).
    pub name: String,
    /// The path of the type the constants are on.
    pub path: TokenStream,
    pub cfgs: Vec<&'a Attribute>,
    pub resources: Vec<Resource<'a>>,
    pub retry: Option<RetryPolicy>,
    pub timeout: Option<(u64, String)>,
    /// `serialize_by`: the key's name, its scope and `show_key`.
    pub key: Option<(String, Option<String>, bool)>,
    /// The first line of the `# Contract` documentation.
    pub intro: String,
    /// `T` of an operation's `#[state] name: &T`.
    pub state: Option<&'a syn::Type>,
}

impl Spec<'_> {
    /// The path resources, in order: `__HERTA_RESOURCES[i]` is the i-th.
    pub(super) fn path_resources(&self) -> impl Iterator<Item = &syn::Path> {
        self.resources.iter().filter_map(|r| match r.key {
            ResourceKey::Path(path) => Some(path),
            ResourceKey::Name(_) => None,
        })
    }

    /// How the i-th resource's name is written in a constant (`owner` is
    /// the type's path: `Self` cannot be used in a nested constant).
    pub(super) fn resource_names(&self, owner: &impl ToTokens) -> Vec<TokenStream> {
        let mut path_index = 0usize;
        self.resources
            .iter()
            .map(|r| match r.key {
                ResourceKey::Name(lit) => lit.to_token_stream(),
                ResourceKey::Path(_) => {
                    let index = path_index;
                    path_index += 1;
                    quote!(#owner::__HERTA_RESOURCES[#index].name())
                }
            })
            .collect()
    }

    /// The breaker's name as the constant writes it: `Some("payments")`,
    /// or the declared constant's name (its type checked by rustc, on the
    /// path, as a `herta::Breaker`).
    pub(super) fn breaker_name(&self) -> TokenStream {
        match &self.attr.breaker {
            None => quote!(::core::option::Option::None),
            Some(ResourceKey::Name(lit)) => quote!(::core::option::Option::Some(#lit)),
            Some(ResourceKey::Path(path)) => {
                let span = syn::spanned::Spanned::span(path);
                quote::quote_spanned!(span=> ::core::option::Option::Some(::herta::Breaker::name(&#path)))
            }
        }
    }

    /// `ContractFields { .. }.into_contract()`, as a constant expression.
    pub(super) fn contract_const(&self) -> TokenStream {
        let name = &self.name;
        let effect = Ident::new(self.attr.effect().name(), Span::call_site());
        let admission = Ident::new(self.attr.admission().name(), Span::call_site());
        let resources = self
            .resource_names(&self.path)
            .into_iter()
            .zip(&self.resources)
            .map(|(name, r)| {
                let units = r.units;
                let constant = constant_as_written(r.key);
                quote!(::herta::ResourceUse::__new(#name, #units, #constant))
            });
        let (retry_on, max) = match &self.retry {
            Some(retry) => {
                let on = retry
                    .on
                    .iter()
                    .map(|o| Ident::new(o.name(), Span::call_site()));
                (quote!(#(::herta::Outcome::#on),*), retry.max)
            }
            None => (TokenStream::new(), 1),
        };
        let none = quote!(::core::option::Option::None);
        let backoff = match self.retry.as_ref().and_then(|r| r.backoff.as_ref()) {
            Some(b) => {
                let (base, cap) = (b.base_ms, b.cap_ms);
                let jitter = Ident::new(b.jitter.name(), Span::call_site());
                quote!(::core::option::Option::Some(::herta::Backoff::new(
                    ::core::time::Duration::from_millis(#base),
                    ::core::time::Duration::from_millis(#cap),
                    ::herta::Jitter::#jitter,
                )))
            }
            None => none.clone(),
        };
        let timeout = match &self.timeout {
            Some((millis, _)) => {
                quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
            }
            None => none.clone(),
        };
        let duration = |d: Option<(u64, String)>| match d {
            Some((millis, _)) => {
                quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
            }
            None => quote!(::core::option::Option::None),
        };
        let max_wait = duration(self.attr.max_wait());
        let deadline = duration(self.attr.deadline());
        let serialize_by = match &self.key {
            Some((param, scope, show_key)) => {
                let scope = match scope {
                    Some(scope) => quote!(::core::option::Option::Some(#scope)),
                    None => none.clone(),
                };
                quote!(::core::option::Option::Some(::herta::KeySpec::__new(
                    #param, #scope, #show_key
                )))
            }
            None => none,
        };
        let breaker = self.breaker_name();
        let breaker_constant = match &self.attr.breaker {
            Some(key) => constant_as_written(key),
            None => quote!(::core::option::Option::None),
        };
        quote! {{
            const RESOURCES: &[::herta::ResourceUse] = &[#(#resources),*];
            const RETRY_ON: &[::herta::Outcome] = &[#retry_on];
            ::herta::__private::ContractFields {
                operation: #name,
                effect: ::herta::Effect::#effect,
                admission: ::herta::Admission::#admission,
                resources: RESOURCES,
                retry_on: RETRY_ON,
                max_attempts: #max,
                timeout: #timeout,
                serialize_by: #serialize_by,
                backoff: #backoff,
                max_wait: #max_wait,
                deadline: #deadline,
                breaker: #breaker,
                breaker_constant: #breaker_constant,
            }
            .into_contract()
        }}
    }

    /// The `# Contract` section of the wrapper's documentation.
    pub(super) fn contract_doc(&self) -> Vec<String> {
        let mut lines = vec![
            String::new(),
            "# Contract".to_owned(),
            String::new(),
            self.intro.clone(),
            String::new(),
            format!("- **operation**: `{}`", self.name),
            format!("- **effect**: `{}`", self.attr.effect()),
        ];
        if let Some(state) = self.state {
            lines.push(format!(
                "- **state**: `{}`, given once to `bind_with` and lent to every attempt of every call, never cloned",
                crate::syntax::pretty(state)
            ));
        }
        let resources: Vec<String> = self
            .resources
            .iter()
            .map(|r| format!("`{}` × {}", r.key.source(), r.units))
            .collect();
        lines.push(format!(
            "- **resources**: {}",
            if resources.is_empty() {
                "none".to_owned()
            } else {
                resources.join(", ")
            }
        ));
        lines.push(format!("- **admission**: `{}`", self.attr.admission()));
        lines.push(match &self.retry {
            Some(retry) => {
                let on: Vec<String> = retry.on.iter().map(|o| format!("`{o}`")).collect();
                let backoff = match &retry.backoff {
                    Some(b) => format!(
                        ", backing off from {} up to {} (jitter `{}`)",
                        b.base,
                        b.cap,
                        b.jitter.name()
                    ),
                    None => String::new(),
                };
                format!(
                    "- **retry**: on {}, at most {} attempts{backoff}",
                    on.join(", "),
                    retry.max
                )
            }
            None => "- **retry**: none (one attempt)".to_owned(),
        });
        lines.push(match &self.timeout {
            Some((_, text)) => format!("- **timeout**: {text} per attempt"),
            None => "- **timeout**: none".to_owned(),
        });
        if let Some((_, text)) = self.attr.max_wait() {
            lines.push(format!(
                "- **max wait**: {text} for key and budgets together (then `Throttled`)"
            ));
        }
        if let Some((_, text)) = self.attr.deadline() {
            lines.push(format!(
                "- **deadline**: {text} for the whole call, from admission (then `DeadlineExceeded`)"
            ));
        }
        if let Some((name, scope, show_key)) = &self.key {
            let scope = match scope {
                Some(scope) => format!(", in the key space `{scope}` shared with other operations"),
                None => String::new(),
            };
            let shown = if *show_key {
                "; errors and traces show its value"
            } else {
                "; errors and traces name the parameter, never its value"
            };
            lines.push(format!(
                "- **serialized by**: `{name}` (calls with the same value run one at a time{scope}{shown})"
            ));
        }
        lines
    }
}

/// `Some("UP_RATE")` for a budget or breaker named by a constant, its path
/// as the user wrote it (segments joined by `::`), so `bind` can tell the
/// user to add that constant; `None` for a name written as a string.
fn constant_as_written(key: &ResourceKey) -> TokenStream {
    match key {
        ResourceKey::Name(_) => quote!(::core::option::Option::None),
        ResourceKey::Path(path) => {
            let written = path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect::<Vec<_>>()
                .join("::");
            let written = if path.leading_colon.is_some() {
                format!("::{written}")
            } else {
                written
            };
            quote!(::core::option::Option::Some(#written))
        }
    }
}
