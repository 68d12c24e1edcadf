//! The function `#[herta::operation]` is on, read into the model: its
//! signature parsed, its body kept as raw tokens (as tracing-attributes
//! does, so a body with a syntax error still gets its wrapper and the only
//! error is rustc's about the syntax), which parameter is the state
//! (`#[state]`, removed from the function as emitted), which is the
//! `Context`, and what `call` takes.
//!
//! The `Context` is recognised by how its type is written: `Context`,
//! `herta::Context` or `::herta::Context`, by value or by reference (see
//! [`is_context`]). Another path ending in `Context` (another crate's, a
//! re-export) or a renamed import (`use herta::Context as Ctx`) is not:
//! such a parameter is an ordinary argument of `call`.

use proc_macro2::{Group, Span, TokenStream};
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Pat, Signature, Type, Visibility};

/// The function the attribute is on.
pub(crate) struct Handler {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// The body as written, unparsed: `{ ... }`.
    pub body: Group,
    /// Whether the first parameter (after the state) is the `Context`,
    /// passed by `call`.
    pub has_context: bool,
    /// The parameters of `call`: every parameter but the state and the
    /// `Context`s.
    pub params: Vec<Param>,
    /// Parameters typed `Context` other than a first one by value (rule 11).
    pub misplaced_contexts: Vec<MisplacedContext>,
    /// Every parameter marked `#[state]`, in order (rule 15 wants one, first).
    pub states: Vec<crate::state::StateParam>,
}

/// One parameter of `call`.
pub(crate) struct Param {
    /// The name `call` gives it (the function's own where possible).
    pub name: Ident,
    /// The identifier the function binds it to, if it is a plain binding.
    pub declared: Option<Ident>,
    pub ty: Type,
}

/// A `Context` parameter in the wrong place or form.
pub(crate) enum MisplacedContext {
    /// `&Context` or `&mut Context`: the `&` token.
    ByReference(Span),
    /// A `Context` after the first parameter (also a second one): its type.
    NotFirst(Box<Type>),
}

impl Parse for Handler {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body: Group = input.parse()?;
        if body.delimiter() != proc_macro2::Delimiter::Brace || !input.is_empty() {
            return Err(input.error("expected a function body"));
        }
        Ok(Handler::new(attrs, vis, sig, body))
    }
}

impl ToTokens for Handler {
    /// The function exactly as written.
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let Handler {
            attrs,
            vis,
            sig,
            body,
            ..
        } = self;
        tokens.extend(quote!(#(#attrs)* #vis #sig #body));
    }
}

impl Handler {
    /// The function as written, but for `#[allow(unused_variables)]` on
    /// the parameter named `key` (the `serialize_by` key): herta uses it,
    /// so a body that does not is not a mistake worth a warning.
    pub fn with_key_used(&self, key: Option<&Ident>) -> TokenStream {
        let Some(key) = key else {
            return self.to_token_stream();
        };
        let mut sig = self.sig.clone();
        for arg in &mut sig.inputs {
            if let FnArg::Typed(arg) = arg {
                if matches!(&*arg.pat, Pat::Ident(p) if p.ident == *key) {
                    arg.attrs
                        .push(syn::parse_quote!(#[allow(unused_variables)]));
                }
            }
        }
        let Handler {
            attrs, vis, body, ..
        } = self;
        quote!(#(#attrs)* #vis #sig #body)
    }

    /// Reads the parameters: which is the context, and what `call` takes.
    pub fn new(attrs: Vec<Attribute>, vis: Visibility, mut sig: Signature, body: Group) -> Self {
        let states = crate::state::take(&mut sig);
        // The `Context` comes first, or right after a state in first place.
        let context_at = usize::from(states.first().is_some_and(|s| s.index == 0));
        let mut has_context = false;
        let mut params = Vec::new();
        let mut misplaced_contexts = Vec::new();
        for (index, arg) in sig.inputs.iter().enumerate() {
            let FnArg::Typed(arg) = arg else {
                continue; // `self`: rule 11
            };
            if states.iter().any(|s| s.index == index) {
                continue;
            }
            match &*arg.ty {
                Type::Reference(r) if is_context(&r.elem) => {
                    misplaced_contexts.push(MisplacedContext::ByReference(r.and_token.span));
                    continue;
                }
                ty if is_context(ty) && index == context_at => {
                    has_context = true;
                    continue;
                }
                ty if is_context(ty) => {
                    misplaced_contexts.push(MisplacedContext::NotFirst(Box::new(ty.clone())));
                    continue;
                }
                _ => {}
            }
            params.push(Param::new(index, arg, &sig.ident));
        }
        Handler {
            attrs,
            vis,
            sig,
            body,
            has_context,
            params,
            misplaced_contexts,
            states,
        }
    }

    /// The state parameter, when it is the one `#[state]`, first, by
    /// shared reference (rule 15): what the wrapper can pass.
    pub fn state(&self) -> Option<&crate::state::StateParam> {
        match self.states.as_slice() {
            [state] if state.valid() => Some(state),
            _ => None,
        }
    }

    /// The index in `params` of the parameter the function declares as `name`.
    pub fn param_named(&self, name: &Ident) -> Option<usize> {
        self.params
            .iter()
            .position(|p| p.declared.as_ref() == Some(name))
    }

    /// The identifier the `Context` parameter is bound to.
    pub fn context_ident(&self) -> Option<&Ident> {
        if !self.has_context {
            return None;
        }
        let at = usize::from(self.states.first().is_some_and(|s| s.index == 0));
        match self.sig.inputs.iter().nth(at)? {
            FnArg::Typed(arg) => match &*arg.pat {
                Pat::Ident(p) => Some(&p.ident),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        }
    }

    /// The attributes named `name` (`doc`, `cfg`, `deprecated`).
    pub fn attrs_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Attribute> {
        self.attrs.iter().filter(move |a| a.path().is_ident(name))
    }
}

impl Param {
    fn new(index: usize, arg: &syn::PatType, function: &Ident) -> Self {
        let declared = match &*arg.pat {
            Pat::Ident(p) => Some(p.ident.clone()),
            _ => None,
        };
        let name = match (&*arg.pat, &declared) {
            // `call` can reuse the name unless it would shadow the function it calls.
            (Pat::Ident(p), Some(ident)) if p.subpat.is_none() && ident != function => {
                ident.clone()
            }
            _ => Ident::new(&format!("__herta_arg{index}"), arg.pat.span()),
        };
        Param {
            name,
            declared,
            ty: (*arg.ty).clone(),
        }
    }
}

/// A type written as herta's `Context`: `Context`, `herta::Context` or
/// `::herta::Context`, without generic arguments. Any other path ending in
/// `Context` (`my::Context`, `opentelemetry::Context`, `std::task::Context<'_>`)
/// is an ordinary parameter: taking another crate's `Context` for herta's
/// would report a misplaced `Context` and drop it from `call`, so every
/// call site would show a second error.
pub(crate) fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => {
            let segments = &p.path.segments;
            let context = |s: &syn::PathSegment| s.ident == "Context" && s.arguments.is_none();
            p.qself.is_none()
                && match segments.len() {
                    1 => p.path.leading_colon.is_none() && context(&segments[0]),
                    2 => {
                        segments[0].ident == "herta"
                            && segments[0].arguments.is_none()
                            && context(&segments[1])
                    }
                    _ => false,
                }
        }
        Type::Group(g) => is_context(&g.elem),
        Type::Paren(p) => is_context(&p.elem),
        _ => false,
    }
}

/// Whether `ty` can be a `Result` (aliases such as `io::Result<T>` included;
/// rustc checks the rest): a path, except a few well-known non-`Result` types.
pub(crate) fn may_be_result(ty: &Type) -> bool {
    const NOT_RESULTS: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64", "String", "Vec", "VecDeque", "Option", "Box", "Rc",
        "Arc", "Cow", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "Duration",
    ];
    match ty {
        Type::Path(p) => {
            p.qself.is_some()
                || p.path
                    .segments
                    .last()
                    .is_some_and(|s| !NOT_RESULTS.contains(&s.ident.to_string().as_str()))
        }
        Type::Group(g) => may_be_result(&g.elem),
        Type::Paren(p) => may_be_result(&p.elem),
        Type::Macro(_) | Type::Verbatim(_) => true,
        _ => false,
    }
}

/// The span of an `impl Trait` anywhere in `ty`.
pub(crate) fn impl_trait(ty: &Type) -> Option<Span> {
    find_ident(ty.to_token_stream(), "impl")
}

/// The span of `Self` anywhere in the signature's parameters or return
/// type: a function that names `Self` is an associated function.
pub(crate) fn mentions_self(sig: &Signature) -> Option<Span> {
    let inputs = &sig.inputs;
    let output = &sig.output;
    find_ident(quote!(#inputs #output), "Self")
}

fn find_ident(tokens: TokenStream, name: &str) -> Option<Span> {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(i) if i == name => return Some(i.span()),
            proc_macro2::TokenTree::Group(g) => {
                if let Some(span) = find_ident(g.stream(), name) {
                    return Some(span);
                }
            }
            _ => {}
        }
    }
    None
}
