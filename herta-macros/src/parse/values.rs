//! The values of the attribute's keys.

use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Meta};

use crate::model::ResourceKey;

use super::durations::duration;
use super::items::{self, value_of};
use crate::diag::{error, error_spanned, Errors};
use crate::model::{
    BackoffSpec, JitterWord, Key, Keys, Max, OnList, Retry, SerializeBy, Within, Word,
};
use crate::syntax::{int_literal, IntLiteral};
use crate::vocab::Vocabulary;

/// `key = Word` (or `herta::Effect::Word`): a word of the vocabulary `V`.
pub(super) fn word<V: Vocabulary>(meta: &Meta, key: &str, example: &str) -> syn::Result<Word<V>> {
    let value = value_of(meta, key, example)?;
    match value {
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
        other => vocabulary_word(other, key, example),
    }
}

/// A word as a path: `Pure`, `herta::Effect::Pure` or `::herta::Effect::Pure`.
fn vocabulary_word<V: Vocabulary>(value: &Expr, key: &str, example: &str) -> syn::Result<Word<V>> {
    let Expr::Path(p) = value else {
        return Err(error(
            value.span(),
            format_args!("`{key}` takes a name"),
            format_args!("write `{key} = {example}`"),
        ));
    };
    let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    let plain = segments.iter().all(|s| s.arguments.is_none()) && p.qself.is_none();
    let last = &segments.last().expect("a path has a segment").ident;
    let prefix_ok = match segments.len() {
        1 => p.path.leading_colon.is_none(),
        3 => segments[0].ident == "herta" && segments[1].ident == V::TYPE,
        _ => false,
    };
    if plain && prefix_ok {
        return Ok(Word {
            ident: last.clone(),
            value: V::from_name(&last.to_string()),
        });
    }
    let fix = if V::from_name(&last.to_string()).is_some() {
        last.to_string()
    } else {
        example.to_owned()
    };
    Err(error_spanned(
        &p.path,
        format_args!(
            "`{key}` takes {} by name, such as `{fix}` or `herta::{}::{fix}`; `{}` is not one",
            V::KIND,
            V::TYPE,
            crate::syntax::pretty(&p.path),
        ),
        format_args!("write `{key} = {fix}`"),
    ))
}

/// `wrapper = RenderPage`: an identifier, not a path.
pub(super) fn type_name(meta: &Meta) -> syn::Result<Ident> {
    match value_of(meta, "wrapper", "RenderPage")? {
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            Ok(p.path.get_ident().cloned().expect("checked"))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if syn::parse_str::<Ident>(&s.value()).is_ok() => Err(error(
            s.span(),
            "`wrapper` takes the name of the type to generate, not a string",
            format_args!(
                "remove the quotes: `wrapper = {}`; it is declared next to the function",
                s.value()
            ),
        )),
        other => {
            let shown = match other {
                Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            };
            Err(error(
                other.span(),
                "`wrapper` takes the name of the type to generate",
                format_args!(
                    "write `wrapper = {}`; it is declared next to the function",
                    shown.as_deref().unwrap_or("RenderPage")
                ),
            ))
        }
    }
}

/// `key = "text"`.
pub(super) fn string(meta: &Meta, key: &str, example: &str) -> syn::Result<LitStr> {
    match value_of(meta, key, example)? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        Expr::Path(p) if p.path.get_ident().is_some() => Err(error(
            p.span(),
            format_args!("`{key}` takes a string"),
            format_args!("write `{key} = \"{}\"`", crate::syntax::path_text(&p.path)),
        )),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes a string"),
            format_args!("write `{key} = {example}`"),
        )),
    }
}

/// `breaker = PAYMENTS` (a constant made by `herta::breakers!`) or
/// `breaker = "payments"` (checked at bind): exactly one breaker.
pub(super) fn breaker(meta: &Meta) -> syn::Result<ResourceKey> {
    match value_of(meta, "breaker", "PAYMENTS")? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(ResourceKey::Name(s.clone())),
        Expr::Path(p) if p.qself.is_none() => Ok(ResourceKey::Path(p.path.clone())),
        Expr::Array(a) if a.elems.len() > 1 => Err(error(
            a.elems[1].span(),
            "a contract names at most one breaker: its attempts count in one breaker",
            "keep one breaker per dependency: `breaker = PAYMENTS`, or split the operation in two",
        )),
        Expr::Tuple(t) if t.elems.len() > 1 => Err(error(
            t.elems[1].span(),
            "a contract names at most one breaker: its attempts count in one breaker",
            "keep one breaker per dependency: `breaker = PAYMENTS`, or split the operation in two",
        )),
        other => Err(error(
            other.span(),
            "`breaker` takes one breaker: a constant declared with `herta::breakers!` or its name as a string",
            "write `breaker = PAYMENTS` or `breaker = \"payments\"`",
        )),
    }
}

/// `show_key = true`: a `bool` literal.
fn boolean(meta: &Meta, key: &str) -> syn::Result<syn::LitBool> {
    match value_of(meta, key, "true")? {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.clone()),
        other => Err(error(
            other.span(),
            format_args!("`{key}` takes `true` or `false`"),
            format_args!("write `{key} = true`"),
        )),
    }
}

/// `retry(on = ..., max = ...)`.
pub(super) fn retry(
    meta: &Meta,
    keyword: &Ident,
    errors: &mut Errors,
    keys: &mut Keys,
) -> Option<Retry> {
    const HELP: &str = "write `retry(on = Transient, max = 3)`";
    let Meta::List(list) = meta else {
        errors.push(error(
            keyword.span(),
            "`retry` takes a list: the outcomes to retry and the most attempts",
            HELP,
        ));
        return None;
    };
    let items = items::list(list.tokens.clone(), errors, HELP)?;
    let mut retry = Retry {
        keyword: keyword.clone(),
        on: None,
        max: None,
        backoff: None,
    };
    let mut seen = Vec::new();
    for item in items {
        let Some(meta) = items::meta(item, Within::Retry, "on = Transient", errors) else {
            continue;
        };
        match items::key(&meta, Within::Retry, &mut seen, keys) {
            Some((Key::On, _)) => retry.on = errors.handle(on_list(&meta)),
            Some((Key::Backoff, ident)) => retry.backoff = backoff(&meta, &ident, errors, keys),
            Some((_, _)) => retry.max = errors.handle(max(&meta)),
            None => {}
        }
    }
    Some(retry)
}

/// `backoff(base = "10ms", cap = "1s", jitter = Full)`.
fn backoff(
    meta: &Meta,
    keyword: &Ident,
    errors: &mut Errors,
    keys: &mut Keys,
) -> Option<BackoffSpec> {
    const HELP: &str = "write `backoff(base = \"10ms\", cap = \"1s\")`, optionally with `jitter = Full`, `Equal` or `None`";
    let Meta::List(list) = meta else {
        errors.push(error(
            keyword.span(),
            "`backoff` takes a list: the first delay, the longest delay and the jitter",
            HELP,
        ));
        return None;
    };
    let items = items::list(list.tokens.clone(), errors, HELP)?;
    let mut spec = BackoffSpec {
        keyword: keyword.clone(),
        base: None,
        cap: None,
        jitter: None,
    };
    let mut seen = Vec::new();
    for item in items {
        let Some(meta) = items::meta(item, Within::Backoff, "base = \"10ms\"", errors) else {
            continue;
        };
        match items::key(&meta, Within::Backoff, &mut seen, keys) {
            Some((Key::Base, _)) => spec.base = errors.handle(duration(&meta, "base", "10ms")),
            Some((Key::Cap, _)) => spec.cap = errors.handle(duration(&meta, "cap", "1s")),
            Some((_, _)) => {
                spec.jitter = errors.handle(word::<JitterWord>(&meta, "jitter", "Full"));
            }
            None => {}
        }
    }
    Some(spec)
}

fn on_list(meta: &Meta) -> syn::Result<OnList> {
    let value = value_of(meta, "on", "Transient")?;
    let (items, brackets): (Vec<&Expr>, _) = match value {
        Expr::Array(array) => (
            array.elems.iter().collect(),
            Some(array.bracket_token.span.join()),
        ),
        // `on = Transient | Uncertain`: several outcomes are a list.
        Expr::Binary(syn::ExprBinary {
            op: syn::BinOp::BitOr(bar),
            ..
        }) => {
            let mut leaves = Vec::new();
            bar_leaves(value, &mut leaves);
            return Err(crate::diag::error(
                bar.span,
                "`on` lists several outcomes in brackets, not with `|`",
                format_args!("write `on = [{}]`", leaves.join(", ")),
            ));
        }
        // `on = (Transient, Uncertain)`: a tuple habit.
        Expr::Tuple(tuple) if tuple.elems.len() > 1 => {
            let leaves: Vec<String> = tuple
                .elems
                .iter()
                .map(|e| quote::ToTokens::to_token_stream(e).to_string())
                .collect();
            return Err(crate::diag::error(
                tuple.paren_token.span.join(),
                "`on` lists several outcomes in brackets, not in parentheses",
                format_args!("write `on = [{}]`", leaves.join(", ")),
            ));
        }
        single => (vec![single], None),
    };
    let mut error: Option<syn::Error> = None;
    let mut outcomes = Vec::new();
    for item in items {
        match vocabulary_word(item, "on", "Transient") {
            Ok(word) => outcomes.push(word),
            Err(e) => match &mut error {
                Some(first) => first.combine(e),
                None => error = Some(e),
            },
        }
    }
    error.map_or(Ok(OnList { outcomes, brackets }), Err)
}

/// The operands of `A | B | C`, as written.
fn bar_leaves(expr: &Expr, leaves: &mut Vec<String>) {
    match expr {
        Expr::Binary(syn::ExprBinary {
            left,
            op: syn::BinOp::BitOr(_),
            right,
            ..
        }) => {
            bar_leaves(left, leaves);
            bar_leaves(right, leaves);
        }
        other => leaves.push(quote::ToTokens::to_token_stream(other).to_string()),
    }
}

fn max(meta: &Meta) -> syn::Result<Max> {
    let value = value_of(meta, "max", "3")?;
    match (value, int_literal(value)) {
        (
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }),
            Some(IntLiteral::Value(n)),
        ) => Ok(Max {
            value: n,
            span: i.span(),
        }),
        (other, Some(IntLiteral::Negative)) => Err(error(
            other.span(),
            "`max` cannot be negative: it is the most attempts, the first one included",
            "write a count of 2 or more, e.g. `max = 3`",
        )),
        (other, _) => Err(error(
            other.span(),
            "`max` takes an integer: the most attempts, the first one included",
            "write `max = 3`",
        )),
    }
}

/// `serialize_by = brand` or `serialize_by(brand, scope = "catalogue")`.
pub(super) fn serialize_by(
    meta: &Meta,
    errors: &mut Errors,
    keys: &mut Keys,
) -> Option<SerializeBy> {
    const HELP: &str =
        "write `serialize_by = brand` or `serialize_by(brand, scope = \"catalogue\")`";
    match meta {
        Meta::NameValue(nv) => errors.handle(serialize_by_value(&nv.value, HELP)),
        Meta::Path(path) => {
            errors.push(error(
                path.span(),
                "`serialize_by` needs the parameter to serialize by",
                HELP,
            ));
            None
        }
        Meta::List(list) => {
            let items = items::list(list.tokens.clone(), errors, HELP)?;
            let mut param: Option<Ident> = None;
            let mut scope = None;
            let mut show_key = None;
            let mut seen = Vec::new();
            for item in items {
                let Some(meta) = items::meta(item, Within::SerializeBy, "brand", errors) else {
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
                        match items::key(&meta, Within::SerializeBy, &mut seen, keys) {
                            Some((Key::Show, _)) => {
                                show_key = errors.handle(boolean(&meta, "show_key"));
                            }
                            Some(_) => {
                                scope = errors.handle(string(&meta, "scope", "\"catalogue\""));
                            }
                            None => {}
                        }
                    }
                }
            }
            if param.is_none() {
                errors.push(error(
                    list.path.span(),
                    "`serialize_by(...)` needs the parameter to serialize by, first",
                    HELP,
                ));
            }
            Some(SerializeBy {
                param: param?,
                scope,
                show_key,
            })
        }
    }
}

/// `serialize_by = brand`.
fn serialize_by_value(value: &Expr, help: &str) -> syn::Result<SerializeBy> {
    match value {
        Expr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none() => Ok(SerializeBy {
            param: p.path.get_ident().cloned().expect("checked"),
            scope: None,
            show_key: None,
        }),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Err(error(
            s.span(),
            "`serialize_by` takes a parameter name, not a string",
            format_args!("remove the quotes: `serialize_by = {}`", s.value()),
        )),
        other => Err(error(
            other.span(),
            "`serialize_by` takes the name of one parameter",
            help,
        )),
    }
}
