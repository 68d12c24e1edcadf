//! Reading `#[herta::operation(...)]` and the function it is on into a
//! loosely typed model that keeps every span.
//!
//! Only the *shape* of the input is checked here (`effect = Word`, a list
//! where a list belongs, integer units); what the words mean is the business
//! of [`validate`](crate::validate), which applies the contract rules.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt as _;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Ident, Lit, LitInt, LitStr, Meta, Token, UnOp};

use crate::vocab::error;

/// Every key of the attribute, in documentation order.
pub(crate) const KEYS: &[&str] = &[
    "effect",
    "resources",
    "admission",
    "retry",
    "timeout",
    "serialize_by",
    "name",
    "wrapper",
];
/// The keys of `retry(...)`.
pub(crate) const RETRY_KEYS: &[&str] = &["on", "max"];
/// The keys of `serialize_by(...)` after the parameter.
pub(crate) const SERIALIZE_KEYS: &[&str] = &["scope"];

/// The attribute as written.
#[derive(Default)]
pub(crate) struct Attr {
    pub effect: Option<Ident>,
    pub admission: Option<Ident>,
    pub resources: Vec<ResourceEntry>,
    pub retry: Option<Retry>,
    pub timeout: Option<LitStr>,
    pub serialize_by: Option<SerializeBy>,
    pub name: Option<LitStr>,
    pub wrapper: Option<Ident>,
    /// Keys nobody knows (rule 2), wherever they appeared.
    pub unknown_keys: Vec<UnknownKey>,
    /// The second (third, ...) occurrence of a key (rule 11).
    pub duplicate_keys: Vec<DuplicateKey>,
    /// The arguments did not parse at all (already reported): rules about
    /// what is missing stay quiet.
    pub unreadable: bool,
    /// Every known key written, as `key` or `retry.key`, even when its value
    /// was unreadable: rules about missing keys stay quiet for them.
    pub written: Vec<String>,
}

/// A key that is not part of the contract syntax.
pub(crate) struct UnknownKey {
    pub name: String,
    pub span: Span,
    /// Where it was written: `#[herta::operation(...)]`, `retry(...)`, ...
    pub within: &'static str,
    pub known: &'static [&'static str],
}

/// A key written a second time.
pub(crate) struct DuplicateKey {
    pub ident: Ident,
    pub within: &'static str,
}

/// One entry of `resources(...)`.
pub(crate) struct ResourceEntry {
    pub key: ResourceKey,
    pub units: Units,
}

/// A resource named by string (checked at `bind`) or by path to a constant
/// declared with `herta::resources!` (checked by rustc).
#[derive(Clone)]
pub(crate) enum ResourceKey {
    Name(LitStr),
    Path(syn::Path),
}

impl ResourceKey {
    pub fn span(&self) -> Span {
        match self {
            ResourceKey::Name(lit) => lit.span(),
            ResourceKey::Path(path) => path.span(),
        }
    }

    /// As written, for inside a code span: `"worker"` or `DB_WRITE`.
    pub fn source(&self) -> String {
        match self {
            ResourceKey::Name(lit) => format!("{:?}", lit.value()),
            ResourceKey::Path(path) => path_text(path),
        }
    }

    /// For prose: `"worker"`, or `DB_WRITE` in backticks.
    pub fn display(&self) -> String {
        match self {
            ResourceKey::Name(lit) => format!("{:?}", lit.value()),
            ResourceKey::Path(path) => format!("`{}`", path_text(path)),
        }
    }

    /// The same resource written twice (rule 7, as far as the macro can see).
    pub fn same_as(&self, other: &ResourceKey) -> bool {
        match (self, other) {
            (ResourceKey::Name(a), ResourceKey::Name(b)) => a.value() == b.value(),
            (ResourceKey::Path(a), ResourceKey::Path(b)) => path_text(a) == path_text(b),
            _ => false,
        }
    }
}

/// Units as written; range checks are rule 6, in `validate`.
pub(crate) struct Units {
    pub value: UnitsValue,
    pub span: Span,
}

pub(crate) enum UnitsValue {
    /// A non-negative integer literal (may still be 0 or exceed `u32`).
    Count(u128),
    /// `-n`.
    Negative,
}

/// `retry(on = ..., max = ...)`.
pub(crate) struct Retry {
    /// The `retry` keyword, for errors about what is missing.
    pub keyword: Ident,
    pub on: Option<OnList>,
    pub max: Option<LitInt>,
}

/// `on = Transient` or `on = [Transient, Uncertain]`.
pub(crate) struct OnList {
    pub outcomes: Vec<Ident>,
    /// The brackets of a list form, for "empty list" errors.
    pub brackets: Option<Span>,
}

/// `serialize_by = brand` or `serialize_by(brand, scope = "catalogue")`.
pub(crate) struct SerializeBy {
    pub param: Ident,
    pub scope: Option<LitStr>,
}

/// Reads the attribute's arguments, reporting shape errors to `errors`.
pub(crate) fn attr(args: TokenStream, errors: &mut Accumulator) -> Attr {
    let mut attr = Attr::default();
    let items = match NestedMeta::parse_meta_list(args) {
        Ok(items) => items,
        Err(e) => {
            errors.push(error(
                e.span(),
                e,
                "write the contract as comma-separated `key = value` items, e.g. `effect = Idempotent, resources(\"worker\" = 1)`",
            ));
            attr.unreadable = true;
            return attr;
        }
    };
    let mut seen: Vec<String> = Vec::new();
    for item in items {
        let Some(meta) = meta_item(
            item,
            "`#[herta::operation(...)]`",
            "effect = Idempotent",
            errors,
        ) else {
            continue;
        };
        let Some(key) = key_of(
            &meta,
            "`#[herta::operation(...)]`",
            KEYS,
            &mut seen,
            &mut attr,
        ) else {
            continue;
        };
        match key.to_string().as_str() {
            "effect" => attr.effect = errors.handle(word(&meta, "effect", "Idempotent")),
            "admission" => attr.admission = errors.handle(word(&meta, "admission", "Wait")),
            "resources" => {
                attr.resources = errors.handle(resources(&meta)).unwrap_or_default();
            }
            "retry" => attr.retry = retry(&meta, &key, errors, &mut attr),
            "timeout" => attr.timeout = errors.handle(timeout(&meta)),
            "serialize_by" => attr.serialize_by = serialize_by(&meta, errors, &mut attr),
            "name" => attr.name = errors.handle(string(&meta, "name", "\"render_page\"")),
            "wrapper" => attr.wrapper = errors.handle(type_name(&meta)),
            _ => unreachable!("every key of KEYS is handled"),
        }
    }
    attr
}

/// A nested item must be `key = value` or `key(...)`, not a bare literal.
fn meta_item(
    item: NestedMeta,
    within: &str,
    example: &str,
    errors: &mut Accumulator,
) -> Option<Meta> {
    match item {
        NestedMeta::Meta(meta) => Some(meta),
        NestedMeta::Lit(lit) => {
            errors.push(error(
                lit.span(),
                format_args!("expected `key = value` in {within}, found a literal"),
                format_args!("write the contract as keys and values, e.g. `{example}`"),
            ));
            None
        }
    }
}

/// The key of one item; records unknown and duplicate keys and returns
/// `None` for them, so their values are not looked at (no cascade).
fn key_of(
    meta: &Meta,
    within: &'static str,
    known: &'static [&'static str],
    seen: &mut Vec<String>,
    attr: &mut Attr,
) -> Option<Ident> {
    let path = meta.path();
    let Some(ident) = path.get_ident() else {
        attr.unknown_keys.push(UnknownKey {
            name: path_text(path),
            span: path.span(),
            within,
            known,
        });
        return None;
    };
    let name = ident.to_string();
    if known.contains(&name.as_str()) {
        attr.written.push(match within {
            "`retry(...)`" => format!("retry.{name}"),
            _ => name.clone(),
        });
    }
    if !known.contains(&name.as_str()) {
        attr.unknown_keys.push(UnknownKey {
            name,
            span: ident.span(),
            within,
            known,
        });
        return None;
    }
    if seen.contains(&name) {
        attr.duplicate_keys.push(DuplicateKey {
            ident: ident.clone(),
            within,
        });
        return None;
    }
    seen.push(name);
    Some(ident.clone())
}

/// The value of `key = value`; anything else is a shape error showing `example`.
fn value_of<'a>(meta: &'a Meta, key: &str, example: &str) -> darling::Result<&'a Expr> {
    match meta {
        Meta::NameValue(nv) => Ok(&nv.value),
        Meta::Path(path) => Err(error(
            path.span(),
            format_args!("`{key}` needs a value"),
            format_args!("write `{key} = {example}`"),
        )),
        Meta::List(list) => Err(error(
            list.path.span(),
            format_args!("`{key}` takes a value with `=`, not a list"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}

/// `key = Word` (also `Effect::Word` / `herta::Effect::Word`): the word, unresolved.
fn word(meta: &Meta, key: &str, example: &str) -> darling::Result<Ident> {
    let value = value_of(meta, key, example)?;
    match value {
        Expr::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            if last.arguments.is_empty() {
                return Ok(last.ident.clone());
            }
            Err(error(
                value.span(),
                format_args!("`{key}` takes a plain name"),
                format_args!("write `{key} = {example}`"),
            ))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            let shown = if s.value().is_empty() {
                example.to_owned()
            } else {
                s.value()
            };
            Err(error(
                s.span(),
                format_args!("`{key}` takes a name, not a string"),
                format_args!("remove the quotes: `{key} = {shown}`"),
            ))
        }
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a name"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}

/// `wrapper = RenderPage`: an identifier, not a path.
fn type_name(meta: &Meta) -> darling::Result<Ident> {
    match value_of(meta, "wrapper", "RenderPage")? {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            Ok(p.path.get_ident().cloned().expect("checked"))
        }
        other => Err(error(
            other.span(),
            "`wrapper` takes the name of the type to generate",
            "write `wrapper = RenderPage`; it is declared next to the function",
        )),
    }
}

/// `key = "text"`.
fn string(meta: &Meta, key: &str, example: &str) -> darling::Result<LitStr> {
    match value_of(meta, key, example)? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a string"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}

/// `timeout = "2s"`; the text is checked by rule 10.
fn timeout(meta: &Meta) -> darling::Result<LitStr> {
    match value_of(meta, "timeout", "\"2s\"")? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Err(error(
            i.span(),
            "`timeout` needs a unit: a bare number could mean milliseconds or seconds",
            format_args!("write `timeout = \"{}ms\"` or `timeout = \"{}s\"`", i, i),
        )),
        other => Err(error(
            other.span(),
            "`timeout` takes a string with a unit",
            "write `timeout = \"250ms\"`, `\"2s\"` or `\"1m\"`",
        )),
    }
}

/// `resources("worker" = 1, DB_WRITE = 3)`.
fn resources(meta: &Meta) -> darling::Result<Vec<ResourceEntry>> {
    let list = match meta {
        Meta::List(list) => list,
        other => {
            return Err(error(
                other.path().span(),
                "`resources` takes a list of resources and units",
                "write `resources(\"worker\" = 1)` or `resources(WORKER = 1, DB_WRITE = 2)`",
            ))
        }
    };
    let entries = Punctuated::<ResourceEntry, Token![,]>::parse_terminated
        .parse2(list.tokens.clone())
        .map_err(|e| {
            if e.to_string().contains("\nhelp: ") {
                e.into()
            } else {
                error(e.span(), &e, "write `resources(\"worker\" = 1, DB_WRITE = 2)`: resources and their units, separated by commas")
            }
        })?;
    Ok(entries.into_iter().collect())
}

impl syn::parse::Parse for ResourceEntry {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key = if input.peek(LitStr) {
            ResourceKey::Name(input.parse()?)
        } else if input.peek(Ident::peek_any) || input.peek(Token![::]) {
            ResourceKey::Path(input.call(syn::Path::parse_mod_style)?)
        } else {
            return Err(input.error(
                "expected a resource: a name such as `\"worker\"` or a constant such as `WORKER`\n\
                 help: write `resources(\"worker\" = 1)` or `resources(WORKER = 1)`",
            ));
        };
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!(
                    "resource {} needs the number of units one call holds\n\
                     help: write `{} = 1`",
                    key.display(),
                    key.source()
                ),
            ));
        }
        input.parse::<Token![=]>()?;
        let expr: Expr = input.parse()?;
        let units = units(&expr).map_err(|()| {
            syn::Error::new(
                expr.span(),
                "resource units must be an integer literal\n\
                 help: write the units as a number, e.g. `= 2`",
            )
        })?;
        Ok(ResourceEntry { key, units })
    }
}

fn units(expr: &Expr) -> Result<Units, ()> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Ok(Units {
            value: UnitsValue::Count(i.base10_parse().map_err(|_| ())?),
            span: i.span(),
        }),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(minus),
            expr,
            ..
        }) if matches!(
            &**expr,
            Expr::Lit(ExprLit {
                lit: Lit::Int(_),
                ..
            })
        ) =>
        {
            Ok(Units {
                value: UnitsValue::Negative,
                span: minus.span,
            })
        }
        Expr::Paren(p) => units(&p.expr),
        Expr::Group(g) => units(&g.expr),
        _ => Err(()),
    }
}

/// The items of `key(...)`; a syntax error gets `help`.
fn nested(list: &syn::MetaList, help: &str) -> darling::Result<Vec<NestedMeta>> {
    NestedMeta::parse_meta_list(list.tokens.clone()).map_err(|e| error(e.span(), &e, help))
}

/// `retry(on = ..., max = ...)`.
fn retry(meta: &Meta, keyword: &Ident, errors: &mut Accumulator, attr: &mut Attr) -> Option<Retry> {
    const WITHIN: &str = "`retry(...)`";
    let Meta::List(list) = meta else {
        errors.push(error(
            keyword.span(),
            "`retry` takes a list: the outcomes to retry and the most attempts",
            "write `retry(on = Transient, max = 3)`",
        ));
        return None;
    };
    let items = errors.handle(nested(list, "write `retry(on = Transient, max = 3)`"))?;
    let mut retry = Retry {
        keyword: keyword.clone(),
        on: None,
        max: None,
    };
    let mut seen = Vec::new();
    for item in items {
        let Some(meta) = meta_item(item, WITHIN, "on = Transient", errors) else {
            continue;
        };
        let Some(key) = key_of(&meta, WITHIN, RETRY_KEYS, &mut seen, attr) else {
            continue;
        };
        if key == "on" {
            retry.on = errors.handle(on_list(&meta));
        } else {
            retry.max = errors.handle(max(&meta));
        }
    }
    Some(retry)
}

fn on_list(meta: &Meta) -> darling::Result<OnList> {
    let value = value_of(meta, "on", "Transient")?;
    let (items, brackets): (Vec<&Expr>, _) = match value {
        Expr::Array(array) => (
            array.elems.iter().collect(),
            Some(array.bracket_token.span.join()),
        ),
        single => (vec![single], None),
    };
    let mut errors = darling::Error::accumulator();
    let mut outcomes = Vec::new();
    for item in items {
        match item {
            Expr::Path(p)
                if p.qself.is_none()
                    && p.path
                        .segments
                        .last()
                        .is_some_and(|s| s.arguments.is_empty()) =>
            {
                outcomes.push(p.path.segments.last().expect("checked").ident.clone());
            }
            other => errors.push(error(
                other.span(),
                "`on` lists outcomes by name",
                "write `on = Transient` or `on = [Transient, Uncertain]`",
            )),
        }
    }
    errors.finish_with(OnList { outcomes, brackets })
}

fn max(meta: &Meta) -> darling::Result<LitInt> {
    match value_of(meta, "max", "3")? {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Ok(i.clone()),
        other => Err(error(
            other.span(),
            "`max` takes an integer: the most attempts, the first one included",
            "write `max = 3`",
        )),
    }
}

/// `serialize_by = brand` or `serialize_by(brand, scope = "catalogue")`.
fn serialize_by(meta: &Meta, errors: &mut Accumulator, attr: &mut Attr) -> Option<SerializeBy> {
    const WITHIN: &str = "`serialize_by(...)`";
    const HELP: &str =
        "write `serialize_by = brand` or `serialize_by(brand, scope = \"catalogue\")`";
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none() => {
                Some(SerializeBy {
                    param: p.path.get_ident().cloned().expect("checked"),
                    scope: None,
                })
            }
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                errors.push(error(
                    s.span(),
                    "`serialize_by` takes a parameter name, not a string",
                    format_args!("remove the quotes: `serialize_by = {}`", s.value()),
                ));
                None
            }
            other => {
                errors.push(error(
                    other.span(),
                    "`serialize_by` takes the name of one parameter",
                    HELP,
                ));
                None
            }
        },
        Meta::Path(path) => {
            errors.push(error(
                path.span(),
                "`serialize_by` needs the parameter to serialize by",
                HELP,
            ));
            None
        }
        Meta::List(list) => {
            let items = errors.handle(nested(list, HELP))?;
            let mut param: Option<Ident> = None;
            let mut scope = None;
            let mut seen = Vec::new();
            for item in items {
                let Some(meta) = meta_item(item, WITHIN, "brand", errors) else {
                    continue;
                };
                match &meta {
                    Meta::Path(p) if p.get_ident().is_some() && param.is_none() => {
                        param = p.get_ident().cloned();
                    }
                    Meta::Path(p) if p.get_ident().is_some() => errors.push(error(
                        p.span(),
                        "`serialize_by` takes one parameter: calls are serialized by one key",
                        "keep one parameter; to key by several values, pass them as one tuple or struct parameter",
                    )),
                    _ => {
                        if key_of(&meta, WITHIN, SERIALIZE_KEYS, &mut seen, attr).is_some() {
                            scope = errors.handle(string(&meta, "scope", "\"catalogue\""));
                        }
                    }
                }
            }
            match param {
                Some(param) => Some(SerializeBy { param, scope }),
                None => {
                    errors.push(error(
                        list.path.span(),
                        "`serialize_by(...)` needs the parameter to serialize by, first",
                        HELP,
                    ));
                    None
                }
            }
        }
    }
}

/// A path as written, without spaces: `crate::DB_WRITE`.
pub(crate) fn path_text(path: &syn::Path) -> String {
    let mut text = String::new();
    if path.leading_colon.is_some() {
        text.push_str("::");
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    text.push_str(&segments.join("::"));
    text
}

/// Tokens as a person writes them: `Vec<u8>`, not `Vec < u8 >`.
pub(crate) fn pretty(tokens: &impl quote::ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            if matches!(prev, '<' | '&' | ':' | '(' | '[' | '\'')
                || matches!(next, '<' | '>' | ',' | ':' | ')' | ']')
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The span of the whole attribute, for the only error with no better token.
pub(crate) fn attribute_span() -> Span {
    Span::call_site()
}
