//! Generating the wrapper type of an operation.
//!
//! Whatever the errors, the function is emitted exactly as written and the
//! wrapper type is emitted with its usual items and signatures, so the only
//! errors a user sees are the contract's own.

use proc_macro2::{Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, ItemFn, ReturnType, Type};

use crate::contract::Contract;
use crate::handler::{self, Handler};
use crate::parse::{self, ResourceKey};
use crate::validate;
use crate::vocab::error;

/// `#[herta::operation(args)] item`.
pub(crate) fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    let attr = parse::attr(args, &mut errors);
    let Ok(item_fn) = syn::parse2::<ItemFn>(item.clone()) else {
        errors.push(error(
            parse::attribute_span(),
            "`#[herta::operation]` goes on an `async fn` with a body",
            "put it on the function the operation runs: `#[herta::operation(effect = Idempotent)] async fn render(job: String) -> Result<String, E> { ... }`",
        ));
        let errors = errors.finish().err().map(darling::Error::write_errors);
        return quote! { #item #errors };
    };
    let handler = handler::handler(item_fn);
    let contract = validate::contract(&attr, &handler, &mut errors);
    let errors = errors.finish().err().map(darling::Error::write_errors);
    let function = &handler.item;
    if contract.is_method {
        // A wrapper type cannot be declared inside an `impl` block.
        return quote! { #function #errors };
    }
    let wrapper = Wrapper::new(&handler, &contract).expand();
    quote! {
        #function
        #wrapper
        #errors
    }
}

/// Everything the generated items are made of.
struct Wrapper<'a> {
    handler: &'a Handler,
    contract: &'a Contract,
    ident: &'a Ident,
    cfgs: Vec<&'a Attribute>,
    /// `T` and `E` of a `Result<T, E>` return type (through
    /// `HandlerOutput` for aliases such as `io::Result<T>`), or `()` and
    /// `Infallible` when the function returns no `Result` (an error already).
    ok: TokenStream,
    err: TokenStream,
    key: Key,
}

/// The serialization key: its owned type and how `call` computes it.
struct Key {
    ty: TokenStream,
    /// `Option<K>` from the call's parameters.
    value: TokenStream,
    /// The spans of the first and last tokens of the key parameter's type
    /// (its referent, for a reference), for rustc errors about it.
    span: Option<(Span, Span)>,
}

impl<'a> Wrapper<'a> {
    fn new(handler: &'a Handler, contract: &'a Contract) -> Self {
        let (ok, err) = match &handler.item.sig.output {
            ReturnType::Type(_, ty) if contract.returns_result => match result_args(ty) {
                // `Result<T, E>` as written: the docs show `T` and `E`. Were
                // it an odd alias, `call`'s body would not type-check.
                Some((t, e)) => (t.to_token_stream(), e.to_token_stream()),
                None => {
                    let span = ty.span();
                    (
                        quote_spanned!(span=> <#ty as ::herta::__private::HandlerOutput>::Ok),
                        quote_spanned!(span=> <#ty as ::herta::__private::HandlerOutput>::Err),
                    )
                }
            },
            // Not a `Result` (an error already): the stub `call` yields the
            // declared type, so call sites written for it add no second error.
            ReturnType::Type(_, ty) if !matches!(**ty, Type::ImplTrait(_)) => {
                (ty.to_token_stream(), quote!(::core::convert::Infallible))
            }
            _ => (quote!(()), quote!(::core::convert::Infallible)),
        };
        Wrapper {
            handler,
            contract,
            ident: &contract.wrapper,
            cfgs: handler
                .item
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("cfg"))
                .collect(),
            ok,
            err,
            key: key(handler, contract),
        }
    }

    fn expand(&self) -> TokenStream {
        let Wrapper { ident, cfgs, .. } = self;
        let vis = &self.handler.item.vis;
        let docs = self
            .handler
            .item
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"));
        let deprecated = self
            .handler
            .item
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("deprecated"));
        let contract_doc = self
            .contract_doc()
            .into_iter()
            .map(|line| quote!(#[doc = #line]));
        let key_ty = &self.key.ty;
        let name = &self.contract.name;
        let contract = self.contract_const();
        let paths: Vec<&syn::Path> = self.path_resources().collect();
        let resource_consts = (!paths.is_empty()).then(|| {
            let count = paths.len();
            quote! {
                #[doc(hidden)]
                const __HERTA_RESOURCES: [::herta::Resource; #count] = [#(#paths),*];
            }
        });
        let methods = if self.contract.callable {
            self.methods()
        } else {
            self.stub_methods()
        };
        let operation_impl = self.operation_impl();
        let checks = self.checks();
        quote! {
            #(#cfgs)*
            #(#docs)*
            #(#contract_doc)*
            #(#deprecated)*
            #[derive(::core::clone::Clone)]
            #vis struct #ident {
                bound: ::herta::__private::Bound<#key_ty>,
            }

            #(#cfgs)*
            #[allow(deprecated)]
            impl #ident {
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
            impl ::core::fmt::Debug for #ident {
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

    /// The path resources, in order: `__HERTA_RESOURCES[i]` is the i-th.
    fn path_resources(&self) -> impl Iterator<Item = &syn::Path> {
        self.contract.resources.iter().filter_map(|r| match &r.key {
            ResourceKey::Path(path) => Some(path),
            ResourceKey::Name(_) => None,
        })
    }

    /// How the i-th resource's name is written in a constant.
    fn resource_names(&self) -> Vec<TokenStream> {
        let ident = self.ident;
        let mut path_index = 0usize;
        self.contract
            .resources
            .iter()
            .map(|r| match &r.key {
                ResourceKey::Name(lit) => lit.to_token_stream(),
                ResourceKey::Path(_) => {
                    let index = path_index;
                    path_index += 1;
                    quote!(#ident::__HERTA_RESOURCES[#index].name())
                }
            })
            .collect()
    }

    /// `Contract::__new(...)`, as a constant expression.
    fn contract_const(&self) -> TokenStream {
        let contract = self.contract;
        let name = &contract.name;
        let effect = Ident::new(contract.effect.name(), Span::call_site());
        let admission = Ident::new(contract.admission.name(), Span::call_site());
        let resources = self
            .resource_names()
            .into_iter()
            .zip(&contract.resources)
            .map(|(name, r)| {
                let units = r.units;
                quote!(::herta::ResourceUse::__new(#name, #units))
            });
        let (retry_on, max) = match &contract.retry {
            Some(retry) => {
                let on = retry
                    .on
                    .iter()
                    .map(|o| Ident::new(o.name(), Span::call_site()));
                (quote!(#(::herta::Outcome::#on),*), retry.max)
            }
            None => (TokenStream::new(), 1),
        };
        let timeout = match &contract.timeout {
            Some(t) => {
                let millis = t.millis;
                quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
            }
            None => quote!(::core::option::Option::None),
        };
        let serialize_by = match &contract.key {
            Some(key) => {
                let param = self.key_name();
                let scope = match &key.scope {
                    Some(scope) => quote!(::core::option::Option::Some(#scope)),
                    None => quote!(::core::option::Option::None),
                };
                quote!(::core::option::Option::Some(::herta::KeySpec::__new(#param, #scope)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote! {{
            const RESOURCES: &[::herta::ResourceUse] = &[#(#resources),*];
            const RETRY_ON: &[::herta::Outcome] = &[#retry_on];
            ::herta::Contract::__new(
                #name,
                ::herta::Effect::#effect,
                ::herta::Admission::#admission,
                RESOURCES,
                RETRY_ON,
                #max,
                #timeout,
                #serialize_by,
            )
        }}
    }

    /// The key parameter's name as the function declares it.
    fn key_name(&self) -> String {
        self.contract
            .key
            .as_ref()
            .and_then(|k| self.handler.params[k.param].declared.as_ref())
            .map(|i| syn::ext::IdentExt::unraw(i).to_string())
            .unwrap_or_default()
    }

    /// `bind`, `call` and their private helpers.
    fn methods(&self) -> TokenStream {
        let Wrapper { ok, err, .. } = self;
        let handler = self.handler;
        let function = &handler.item.sig.ident;
        let generics = &handler.item.sig.generics;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types: Vec<&Type> = handler.params.iter().map(|p| &p.ty).collect();
        let key_ty = &self.key.ty;
        let key_value = &self.key.value;
        let context = if handler.has_context {
            quote!(__herta_ctx,)
        } else {
            TokenStream::new()
        };
        let context_param = if handler.has_context {
            quote!(__herta_ctx)
        } else {
            quote!(_)
        };
        // Only `bind` needs the key bounds (rule 8), through the trait
        // `KeyBound`: a key type without them is one error, on the self
        // type of this path, which covers the key parameter's type.
        let serialize_by = match self.key.span {
            Some(range) => private_path("SerializeBy", range),
            None => quote!(::herta::__private::SerializeBy),
        };
        let bind = quote! {
            <#serialize_by as ::herta::__private::KeyBound<#key_ty>>::bind(
                runtime,
                &Self::CONTRACT,
                Self::__herta_describe_key,
            )
        };
        let call_once = quote!(::herta::__private::Bound::<#key_ty>::call_once);
        let call = quote!(::herta::__private::Bound::<#key_ty>::call);
        let describe_key = match self.contract.key {
            Some(_) => quote! {
                use ::herta::__private::{DescribeViaDebug as _, DescribeViaType as _};
                (&::herta::__private::Probe(key)).__herta_describe()
            },
            None => quote!(match *key {}),
        };
        let run = match &self.contract.retry {
            Some(_) => {
                // Each attempt clones each parameter; spanned on the type, so a
                // parameter that is not `Clone` is the error's location (rule 9).
                let clones = handler.params.iter().map(|p| {
                    let (name, ty) = (&p.name, &p.ty);
                    // The self type of this path covers the parameter's
                    // type, so rustc underlines all of it.
                    let retry = private_path("Retry", span_range(ty));
                    quote! {
                        let #name = <#retry as ::herta::__private::RetryArg<#ty>>::retry_arg(&#name);
                    }
                });
                quote! {
                    #call(&self.bound, __herta_key, Self::__herta_classify, |#context_param: ::herta::Context| {
                        #(#clones)*
                        #function(#context #(#names),*)
                    })
                    .await
                }
            }
            None => quote! {
                #call_once(&self.bound, __herta_key, Self::__herta_classify, move |#context_param: ::herta::Context| {
                    #function(#context #(#names),*)
                })
                .await
            },
        };
        // A retry without a timeout can only fire on a classified failure:
        // require `Classify`, spanned on the error type.
        let classify = if self.contract.retry.is_some() && self.contract.timeout.is_none() {
            let classified = private_path("Classified", span_range(&self.err));
            quote!(<#classified as ::herta::__private::RetryClassify<#err>>::retry_outcome(error))
        } else {
            quote! {
                use ::herta::__private::{ViaDefault as _, ViaTrait as _};
                (&::herta::__private::Probe(error)).__herta_outcome()
            }
        };
        let call_doc = self
            .call_doc()
            .into_iter()
            .map(|line| quote!(#[doc = #line]));
        quote! {
            /// Checks the contract against `runtime` and binds the operation to it.
            ///
            /// # Errors
            ///
            /// A `herta::BindError` if a resource the contract names is not
            /// declared by `runtime`, has less capacity than the units one call
            /// holds, or if a shared `serialize_by` scope is already keyed by
            /// another type.
            pub fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                #bind.map(|bound| Self { bound })
            }

            #(#call_doc)*
            pub async fn call #generics (&self, #(#names: #types),*)
                -> ::core::result::Result<#ok, ::herta::Error<#err>>
            {
                let __herta_key: ::core::option::Option<#key_ty> = #key_value;
                #run
            }

            #[doc(hidden)]
            fn __herta_classify(error: &#err) -> ::herta::Outcome {
                #classify
            }

            #[doc(hidden)]
            fn __herta_describe_key(key: &#key_ty) -> ::std::string::String {
                #describe_key
            }
        }
    }

    /// Signatures only, for a function `call` cannot invoke (errors already
    /// reported): uses of the wrapper keep type-checking.
    fn stub_methods(&self) -> TokenStream {
        let Wrapper { ok, err, .. } = self;
        let handler = self.handler;
        let generics = &handler.item.sig.generics;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types: Vec<&Type> = handler.params.iter().map(|p| &p.ty).collect();
        let message = format!(
            "the contract of `{}` has compile errors",
            handler.item.sig.ident
        );
        quote! {
            /// Checks the contract against `runtime` and binds the operation to it.
            pub fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                let _ = runtime;
                ::core::unreachable!(#message)
            }

            /// Calls the operation under its contract.
            #[allow(unused_variables)]
            pub async fn call #generics (&self, #(#names: #types),*)
                -> ::core::result::Result<#ok, ::herta::Error<#err>>
            {
                let _ = &self.bound;
                ::core::unreachable!(#message)
            }
        }
    }

    /// `impl Operation`, when `call` takes only owned parameters.
    fn operation_impl(&self) -> Option<TokenStream> {
        let handler = self.handler;
        if !self.contract.callable
            || !handler.item.sig.generics.params.is_empty()
            || !handler.params.iter().all(|p| owned(&p.ty))
        {
            return None;
        }
        let Wrapper {
            ident,
            cfgs,
            ok,
            err,
            ..
        } = self;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types: Vec<&Type> = handler.params.iter().map(|p| &p.ty).collect();
        Some(quote! {
            #(#cfgs)*
            #[automatically_derived]
            #[allow(deprecated)]
            impl ::herta::Operation for #ident {
                const NAME: &'static str = #ident::NAME;
                const CONTRACT: ::herta::Contract = #ident::CONTRACT;
                type Args = (#(#types,)*);
                type Output = #ok;
                type Error = #err;

                fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                    #ident::bind(runtime)
                }

                fn call_with(
                    &self,
                    args: Self::Args,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<Self::Output, ::herta::Error<Self::Error>>,
                > + ::core::marker::Send + '_ {
                    let (#(#names,)*) = args;
                    #ident::call(self, #(#names),*)
                }
            }
        })
    }

    /// Compile-time assertions rustc checks: a constant resource has room for
    /// the units (rule 6) and names no resource listed twice (rule 7).
    fn checks(&self) -> TokenStream {
        let Wrapper { ident, cfgs, .. } = self;
        let names = self.resource_names();
        let mut assertions = Vec::new();
        let mut compares_names = false;
        let mut path_index = 0usize;
        for (i, r) in self.contract.resources.iter().enumerate() {
            if let ResourceKey::Path(path) = &r.key {
                let shown = parse::path_text(path);
                let units = Literal::u32_unsuffixed(r.units);
                let message = format!(
                    "`{shown} = {}` asks for more units than `{shown}` has, so no call could ever be admitted\n\
                     help: hold at most the capacity declared for `{shown}`, or raise that capacity",
                    r.units
                );
                let index = path_index;
                path_index += 1;
                assertions.push(quote_spanned! {r.units_span=>
                    if #units > #ident::__HERTA_RESOURCES[#index].capacity() {
                        ::core::panic!("{}", #message)
                    }
                });
            }
            for (j, earlier) in self.contract.resources[..i].iter().enumerate() {
                if matches!(
                    (&r.key, &earlier.key),
                    (ResourceKey::Name(_), ResourceKey::Name(_))
                ) {
                    continue; // the macro compared those already
                }
                compares_names = true;
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
        let same_name = compares_names.then(|| {
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
            }
        });
        let resources = (!assertions.is_empty()).then(|| {
            quote! {
                #(#cfgs)*
                #[allow(deprecated)]
                const _: () = {
                    #same_name
                    #(#assertions)*
                };
            }
        });
        resources.unwrap_or_default()
    }

    /// The `# Contract` section of the wrapper's documentation.
    fn contract_doc(&self) -> Vec<String> {
        let contract = self.contract;
        let function = syn::ext::IdentExt::unraw(&self.handler.item.sig.ident).to_string();
        let mut lines = vec![
            String::new(),
            "# Contract".to_owned(),
            String::new(),
            format!("Generated by `#[herta::operation]` for `async fn {function}`; bind it with `bind`, run it with `call`."),
            String::new(),
            format!("- **operation**: `{}`", contract.name),
            format!("- **effect**: `{}`", contract.effect),
        ];
        let resources: Vec<String> = contract
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
        lines.push(format!("- **admission**: `{}`", contract.admission));
        lines.push(match &contract.retry {
            Some(retry) => {
                let on: Vec<String> = retry.on.iter().map(|o| format!("`{o}`")).collect();
                format!(
                    "- **retry**: on {}, at most {} attempts",
                    on.join(", "),
                    retry.max
                )
            }
            None => "- **retry**: none (one attempt)".to_owned(),
        });
        lines.push(match &contract.timeout {
            Some(t) => format!("- **timeout**: {} per attempt", t.text),
            None => "- **timeout**: none".to_owned(),
        });
        if let Some(key) = &contract.key {
            let scope = match &key.scope {
                Some(scope) => format!(", in the key space `{scope}` shared with other operations"),
                None => String::new(),
            };
            lines.push(format!(
                "- **serialized by**: `{}` (calls with the same value run one at a time{scope})",
                self.key_name()
            ));
        }
        lines
    }

    /// The documentation of `call`.
    fn call_doc(&self) -> Vec<String> {
        let contract = self.contract;
        let function = syn::ext::IdentExt::unraw(&self.handler.item.sig.ident).to_string();
        let attempts = match &contract.retry {
            Some(retry) => format!("up to {} attempts", retry.max),
            None => "one attempt".to_owned(),
        };
        vec![
            format!(
                "Calls `{function}` under the contract: admission, key, budgets, then {attempts}."
            ),
            String::new(),
            "Dropping the returned future releases everything the call holds or waits for."
                .to_owned(),
            String::new(),
            "# Errors".to_owned(),
            String::new(),
            "A `herta::Error`: the handler's error with its outcome and attempt count, a timeout, \
             `Throttled` (admission `Reject` found the key or a budget busy) or `Stopping` \
             (the runtime is shutting down)."
                .to_owned(),
        ]
    }
}

/// `T` and `E` of a return type written `Result<T, E>` (any path ending so).
fn result_args(ty: &Type) -> Option<(&Type, &Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    match (types.next(), types.next(), types.next()) {
        (Some(Some(t)), Some(Some(e)), None) => Some((t, e)),
        _ => None,
    }
}

/// The key type and value for `serialize_by`, or `NoKey`.
fn key(handler: &Handler, contract: &Contract) -> Key {
    // Stubs never compute a key: the parameter types may not even resolve.
    let Some(key) = contract.key.as_ref().filter(|_| contract.callable) else {
        return Key {
            ty: quote!(::herta::__private::NoKey),
            value: quote!(::core::option::Option::None),
            span: None,
        };
    };
    let param = &handler.params[key.param];
    let name = &param.name;
    let span = param.ty.span();
    let (ty, value) = match &param.ty {
        // `&str` → `String`, `&[u8]` → `Vec<u8>`, `&Path` → `PathBuf`.
        Type::Reference(r) if unsized_borrow(&r.elem) => {
            let target = &*r.elem;
            (
                quote_spanned!(span=> <#target as ::std::borrow::ToOwned>::Owned),
                quote_spanned!(span=> <#target as ::std::borrow::ToOwned>::to_owned(#name)),
            )
        }
        // `&Brand` → `Brand` and `Brand` → `Brand`, cloned through
        // `Bound::key`, which needs no bound on the type: a key type that is
        // not `KeyBound` (`Clone` included) is one error, at `bind`.
        Type::Reference(r) => (
            r.elem.to_token_stream(),
            quote_spanned!(span=> ::herta::__private::Bound::key(&self.bound, #name)),
        ),
        ty => (
            ty.to_token_stream(),
            quote_spanned!(span=> ::herta::__private::Bound::key(&self.bound, &#name)),
        ),
    };
    let spanned = match &param.ty {
        Type::Reference(r) => &*r.elem,
        ty => ty,
    };
    Key {
        ty: quote_spanned!(span=> #ty),
        value: quote_spanned!(span=> ::core::option::Option::Some(#value)),
        span: Some(span_range(spanned)),
    }
}

/// The spans of the first and last tokens of `tokens`: a path whose first
/// token has the first span and whose last has the second makes rustc report
/// an error on the whole range (what `syn::Error::new_spanned` does).
fn span_range(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// `::herta::__private::<name>`, its first tokens spanned at `start` and
/// its last at `end`: rustc reports an error about the path (such as an
/// unimplemented trait with it as the self type) on the whole range.
fn private_path(name: &str, (start, end): (Span, Span)) -> TokenStream {
    let last = Ident::new(name, end);
    quote_spanned!(start=> ::herta::__private::#last)
}

/// Whether `&ty` borrows one of the standard unsized types whose owned form
/// is another type (`str` → `String`, `[T]` → `Vec<T>`, `Path` → `PathBuf`,
/// `OsStr` → `OsString`, `CStr` → `CString`). Any other borrowed key is
/// owned as its own type, by cloning.
fn unsized_borrow(ty: &Type) -> bool {
    match ty {
        Type::Slice(_) => true,
        Type::Paren(p) => unsized_borrow(&p.elem),
        Type::Group(g) => unsized_borrow(&g.elem),
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().is_some_and(|s| {
            s.arguments.is_none()
                && ["str", "Path", "OsStr", "CStr"]
                    .iter()
                    .any(|n| s.ident == n)
        }),
        _ => false,
    }
}

/// A type with no lifetime but `'static` (so no elided reference either):
/// usable in `Operation::Args`.
fn owned(ty: &Type) -> bool {
    fn scan(tokens: TokenStream) -> bool {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            let next_is = |offset: usize, text: &str| {
                tokens
                    .get(i + offset)
                    .is_some_and(|t| t.to_string() == text)
            };
            match token {
                // `&'static T` is owned enough; `&T` and `&'a T` are not.
                TokenTree::Punct(p)
                    if p.as_char() == '&' && !(next_is(1, "'") && next_is(2, "static")) =>
                {
                    return false;
                }
                TokenTree::Punct(p) if p.as_char() == '\'' && !next_is(1, "static") => {
                    return false
                }
                TokenTree::Group(g) if !scan(g.stream()) => return false,
                _ => {}
            }
        }
        true
    }
    scan(ty.to_token_stream())
}
