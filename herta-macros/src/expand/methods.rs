//! The wrapper's `bind` and `call` (or their stubs), and its
//! `impl herta::Operation`.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{Ident, Type};

use super::types::private_path;
use super::wrapper::Wrapper;
use crate::syntax::{name_elided, owned, span_range};

impl Wrapper<'_> {
    /// `bind`, `call` and their private helpers.
    pub(super) fn methods(&self) -> TokenStream {
        let Wrapper { ok, err, .. } = self;
        let handler = &self.op.handler;
        let generics = &handler.sig.generics;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types: Vec<&Type> = handler.params.iter().map(|p| &p.ty).collect();
        let key_ty = &self.key.ty;
        let key_value = &self.key.value;
        // Only `bind` needs the key bounds (rule 8), through the trait
        // `KeyBound`: a key type without them is one error, on the self
        // type of this path, which covers the key parameter's type.
        let serialize_by = match self.key.span {
            Some(range) => private_path("SerializeBy", range),
            None => quote!(::herta::__private::SerializeBy),
        };
        let run = self.run();
        let classify = self.classify();
        let describe_key = match self.key_use {
            Some(_) => quote! {
                use ::herta::__private::{DescribeViaDebug as _, DescribeViaType as _};
                (&::herta::__private::Probe(key)).__herta_describe()
            },
            None => quote!(match *key {}),
        };
        let call_doc = self
            .call_doc()
            .into_iter()
            .map(|line| quote!(#[doc = #line]));
        // The state is lent to every attempt: `&*self.state`, never cloned.
        let lend_state = self
            .state
            .map(|_| quote!(let __herta_state = &*self.state;));
        let bind = self.bind_method(&serialize_by, key_ty);
        let send_check = self.send_check();
        quote! {
            #bind

            #send_check

            #(#call_doc)*
            pub async fn call #generics (&self, #(#names: #types),*)
                -> ::core::result::Result<#ok, ::herta::Error<#err>>
            {
                let __herta_key: ::core::option::Option<#key_ty> = #key_value;
                #lend_state
                #run
            }

            #[doc(hidden)]
            fn __herta_classify(error: &#err) -> ::herta::Outcome {
                #classify
            }

            #[doc(hidden)]
            #[allow(dead_code)]
            fn __herta_retry_after(error: &#err) -> ::core::option::Option<::core::time::Duration> {
                use ::herta::__private::{HintViaDefault as _, HintViaTrait as _};
                (&::herta::__private::Probe(error)).__herta_retry_after()
            }

            /// How `Error::Failed` reaches the handler's error as its
            /// `source()`, chosen at the error type.
            #[doc(hidden)]
            fn __herta_source() -> impl ::herta::__private::ErrorSource<#err> {
                use ::herta::__private::{SourceViaAsRef as _, SourceViaError as _, SourceViaNone as _};
                (&&&::herta::__private::SourceProbe::<#err>::new()).__herta_source()
            }

            #[doc(hidden)]
            fn __herta_describe_key(key: &#key_ty) -> ::std::string::String {
                #describe_key
            }
        }
    }

    /// For an operation with state (which has no `impl Operation`, whose
    /// `call_with` returns a `Send` future): a hidden method that returns
    /// `call`'s future as `impl Future + Send`, so that a handler holding a
    /// value that is not `Send` across an `.await` is the same one error at
    /// the attribute ("future returned by `call` is not `Send`"). Every
    /// elided lifetime of a parameter is named, one lifetime for all, so
    /// that the return type can say what the future captures. Not for a
    /// generic function (its future is `Send` only for some arguments) nor
    /// one with an `impl Trait` parameter (an anonymous type parameter).
    /// A state type that is not `Send + Sync` is already its own error, at
    /// the type (`herta::__private::StateBound`): the method
    /// then assumes it is, so that it does not report a second one. The
    /// bound is higher-ranked only so that rustc takes it as an
    /// assumption, not as a trivially false where clause (an error).
    fn send_check(&self) -> Option<TokenStream> {
        let state = self.state?;
        let handler = &self.op.handler;
        let anonymous = |ty: &Type| {
            ty.to_token_stream()
                .into_iter()
                .any(|t| t.to_string() == "impl")
        };
        if !handler.sig.generics.params.is_empty()
            || handler.params.iter().any(|p| anonymous(&p.ty))
        {
            return None;
        }
        let Wrapper { ok, err, .. } = self;
        let lifetime = syn::Lifetime::new("'__herta", proc_macro2::Span::call_site());
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types = handler.params.iter().map(|p| name_elided(&p.ty, &lifetime));
        Some(quote! {
            #[doc(hidden)]
            #[allow(dead_code, clippy::needless_lifetimes, clippy::extra_unused_lifetimes)]
            fn __herta_send_check<#lifetime>(&#lifetime self, #(#names: #types),*) -> impl ::core::future::Future<
                Output = ::core::result::Result<#ok, ::herta::Error<#err>>,
            > + ::core::marker::Send + #lifetime
            where
                for<'__herta_state> #state: ::core::marker::Send + ::core::marker::Sync,
            {
                Self::call(self, #(#names),*)
            }
        })
    }

    /// `bind` (or, for an operation with state, `bind_with`).
    fn bind_method(&self, serialize_by: &TokenStream, key_ty: &TokenStream) -> TokenStream {
        let bind = quote! {
            <#serialize_by as ::herta::__private::KeyBound<#key_ty>>::bind(
                runtime,
                &Self::CONTRACT,
                Self::__herta_describe_key,
            )
        };
        if self.state.is_some() {
            return self.bind_with(bind);
        }
        quote! {
            /// Checks the contract against `runtime` and binds the operation to it.
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
            pub fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                #bind.map(|bound| Self { bound })
            }
        }
    }

    /// The body of `call` after the key: one attempt, or attempts that
    /// each get a clone of each parameter.
    fn run(&self) -> TokenStream {
        let handler = &self.op.handler;
        let function = &handler.sig.ident;
        let key_ty = &self.key.ty;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let (context, context_param) = if handler.has_context {
            (quote!(__herta_ctx,), quote!(__herta_ctx))
        } else {
            (TokenStream::new(), quote!(_))
        };
        let context = match self.state {
            Some(_) => quote!(__herta_state, #context),
            None => context,
        };
        // A contract that declares `deadline` runs its handler in a
        // `herta::deadline` scope of the call's deadline, so that the calls
        // it makes inherit it; the others call the handler as it is.
        let (handler_call, context_param) = if self.op.attr.deadline().is_some() {
            (
                quote!(::herta::__private::within_call_deadline(__herta_ctx, #function(#context #(#names),*))),
                quote!(__herta_ctx),
            )
        } else {
            (quote!(#function(#context #(#names),*)), context_param)
        };
        if self.retry.is_none() {
            return quote! {
                ::herta::__private::Bound::<#key_ty>::call_once(&self.bound, __herta_key, Self::__herta_classify, Self::__herta_source(), move |#context_param: ::herta::Context| {
                    #handler_call
                })
                .await
            };
        }
        // Each attempt clones each parameter; spanned on the type, so a
        // parameter that is not `Clone` is the error's location (rule 9).
        let clones = handler.params.iter().map(|p| {
            let (name, ty) = (&p.name, &p.ty);
            // The self type of this path covers the parameter's type, so
            // rustc underlines all of it.
            let retry = private_path("Retry", span_range(ty));
            quote! {
                let #name = <#retry as ::herta::__private::RetryArg<#ty>>::retry_arg(&#name);
            }
        });
        quote! {
            ::herta::__private::Bound::<#key_ty>::call(&self.bound, __herta_key, Self::__herta_classify, Self::__herta_retry_after, Self::__herta_source(), |#context_param: ::herta::Context| {
                #(#clones)*
                #handler_call
            })
            .await
        }
    }

    /// The body of `__herta_classify`. A retry can only fire on a
    /// classified failure, or on a timeout it retries: where rule 5b applies
    /// ([`Self::needs_classify`]) it requires `Classify`, spanned on the
    /// error type.
    fn classify(&self) -> TokenStream {
        let err = &self.err;
        if self.needs_classify() {
            let classified = private_path("Classified", span_range(err));
            quote!(<#classified as ::herta::__private::RetryClassify<#err>>::retry_outcome(error))
        } else {
            quote! {
                use ::herta::__private::{ViaDefault as _, ViaTrait as _};
                (&::herta::__private::Probe(error)).__herta_outcome()
            }
        }
    }

    /// Rule 5b: a contract that retries needs a `Classify` error type,
    /// unless it retries its timeouts (a `timeout` whose outcome for the
    /// effect is in `on`: `Transient` for Pure and Idempotent). Not checked
    /// when the rules have reported an error about `effect`, `on` or
    /// `timeout` already (a word unknown or refused, `on` missing or
    /// unreadable, a timeout out of range): one error, no cascade.
    fn needs_classify(&self) -> bool {
        let Some(retry) = &self.retry else {
            return false;
        };
        let attr = &self.op.attr;
        let written = attr.retry_outcomes().count();
        let on_valid = attr.retry.as_ref().is_some_and(|r| r.on.is_some())
            && written > 0
            && retry.on.len() == written;
        let timeout_valid = attr.timeout.is_none() || self.timeout.is_some();
        if !on_valid || !timeout_valid {
            return false;
        }
        let retries_timeouts =
            self.timeout.is_some() && retry.on.contains(&attr.effect().timeout_outcome());
        !retries_timeouts
    }

    /// Signatures only, for a function `call` cannot invoke (errors already
    /// reported): uses of the wrapper keep type-checking.
    pub(super) fn stub_methods(&self) -> TokenStream {
        let Wrapper { ok, err, .. } = self;
        let handler = &self.op.handler;
        let generics = &handler.sig.generics;
        let names: Vec<&Ident> = handler.params.iter().map(|p| &p.name).collect();
        let types: Vec<&Type> = handler.params.iter().map(|p| &p.ty).collect();
        let message = format!("the contract of `{}` has compile errors", handler.sig.ident);
        let bind_with = self.stateful().then(|| {
            quote! {
                /// Checks the contract against `runtime` and binds the operation to it with its state.
                pub fn bind_with<S>(runtime: &::herta::Runtime, state: S) -> ::core::result::Result<Self, ::herta::BindError> {
                    let _ = (runtime, state);
                    ::core::unreachable!(#message)
                }
            }
        });
        quote! {
            /// Checks the contract against `runtime` and binds the operation to it.
            pub fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                let _ = runtime;
                ::core::unreachable!(#message)
            }

            #bind_with

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
    pub(super) fn operation_impl(&self) -> Option<TokenStream> {
        let handler = &self.op.handler;
        if !self.callable
            || self.stateful()
            || !handler.sig.generics.params.is_empty()
            || !handler.params.iter().all(|p| owned(&p.ty))
        {
            return None;
        }
        let Wrapper {
            path,
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
            impl ::herta::Operation for #path {
                const NAME: &'static str = #path::NAME;
                const CONTRACT: ::herta::Contract = #path::CONTRACT;
                type Args = (#(#types,)*);
                type Output = #ok;
                type Error = #err;

                fn bind(runtime: &::herta::Runtime) -> ::core::result::Result<Self, ::herta::BindError> {
                    #path::bind(runtime)
                }

                fn call_with(
                    &self,
                    args: Self::Args,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<Self::Output, ::herta::Error<Self::Error>>,
                > + ::core::marker::Send + '_ {
                    let (#(#names,)*) = args;
                    #path::call(self, #(#names),*)
                }
            }
        })
    }
}

impl Wrapper<'_> {
    /// The documentation of `call`.
    pub(super) fn call_doc(&self) -> Vec<String> {
        let function = self.op.function_name();
        let attempts = match &self.retry {
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
             `Throttled` (admission `Reject` found the key or a budget busy, or `max_wait` ran \
             out), `DeadlineExceeded` (the call's deadline passed) or `Stopping` \
             (the runtime is shutting down)."
                .to_owned(),
        ]
    }
}
