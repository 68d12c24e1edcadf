//! The resolved contract: what [`expand`](crate::expand) generates from.
//!
//! [`resolve`] reads the attribute leniently: whatever is invalid falls back
//! to a harmless value (the rules in [`validate`](crate::validate) have
//! reported it), so the wrapper type is always generated.

use herta_contract::{retry_verdict, Admission, Effect, Outcome};
use proc_macro2::Span;
use quote::format_ident;
use syn::ext::IdentExt as _;
use syn::{FnArg, GenericParam, Ident, ReturnType};

use crate::handler::{self, Handler};
use crate::parse::{Attr, ResourceKey, UnitsValue};
use crate::vocab;

/// The longest per-attempt timeout a contract may declare (rule 10).
///
/// A per-attempt timeout above an hour is almost always a unit slip
/// (`"90m"` meant as seconds) and is never what an in-process retry budget
/// wants; an operation that truly runs longer declares no timeout.
pub(crate) const MAX_TIMEOUT_MS: u64 = 60 * 60 * 1000;

/// The resolved contract: what `expand` generates from. Invalid parts fall
/// back to harmless values; the errors were reported already.
pub(crate) struct Contract {
    pub name: String,
    pub wrapper: Ident,
    pub effect: Effect,
    pub admission: Admission,
    pub resources: Vec<Resource>,
    pub retry: Option<RetryPolicy>,
    pub timeout: Option<Timeout>,
    pub key: Option<Key>,
    /// The function is an `async fn` that `call` can invoke as written.
    /// When `false`, `expand` generates stubs that only keep the wrapper's
    /// signatures.
    pub callable: bool,
    /// The function's return type can be a `Result` (rustc checks that it
    /// is, through `HandlerOutput`); `false` when it certainly is not.
    pub returns_result: bool,
    /// The function is a method (`self`): no wrapper type can be generated
    /// inside an `impl` block, so only the function is emitted.
    pub is_method: bool,
}

pub(crate) struct Resource {
    pub key: ResourceKey,
    pub units: u32,
    pub units_span: Span,
}

pub(crate) struct RetryPolicy {
    pub on: Vec<Outcome>,
    pub max: u32,
}

pub(crate) struct Timeout {
    pub millis: u64,
    pub text: String,
}

pub(crate) struct Key {
    /// Index into `Handler::params`.
    pub param: usize,
    pub scope: Option<String>,
}

/// The best-effort contract; invalid parts fall back without errors.
pub(crate) fn resolve(attr: &Attr, handler: &Handler) -> Contract {
    let sig = &handler.item.sig;
    let fn_name = sig.ident.unraw().to_string();
    let retry = attr.retry.as_ref().map(|retry| {
        let effect = attr
            .effect
            .as_ref()
            .and_then(|w| vocab::effect(&w.to_string()));
        let mut on: Vec<Outcome> = Vec::new();
        for word in retry.on.iter().flat_map(|on| &on.outcomes) {
            if let Some(outcome) = vocab::outcome(&word.to_string()) {
                let allowed = effect.is_some_and(|e| retry_verdict(e, outcome).is_allowed());
                if allowed && !on.contains(&outcome) {
                    on.push(outcome);
                }
            }
        }
        let max = retry
            .max
            .as_ref()
            .and_then(|m| m.base10_parse::<u32>().ok())
            .unwrap_or(1)
            .max(1);
        RetryPolicy { on, max }
    });
    Contract {
        name: attr
            .name
            .as_ref()
            .map(|n| n.value())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| fn_name.clone()),
        wrapper: attr
            .wrapper
            .clone()
            .unwrap_or_else(|| format_ident!("{}", upper_camel(&fn_name), span = sig.ident.span())),
        effect: attr
            .effect
            .as_ref()
            .and_then(|w| vocab::effect(&w.to_string()))
            .unwrap_or(Effect::NonIdempotent),
        admission: attr
            .admission
            .as_ref()
            .and_then(|w| vocab::admission(&w.to_string()))
            .unwrap_or_default(),
        resources: attr
            .resources
            .iter()
            .enumerate()
            .filter(|(i, e)| !attr.resources[..*i].iter().any(|p| p.key.same_as(&e.key)))
            .map(|(_, e)| Resource {
                key: e.key.clone(),
                units: match e.units.value {
                    UnitsValue::Count(n) => u32::try_from(n).unwrap_or(u32::MAX).max(1),
                    UnitsValue::Negative => 1,
                },
                units_span: e.units.span,
            })
            .collect(),
        retry,
        timeout: attr.timeout.as_ref().and_then(|lit| {
            let text = lit.value();
            parse_timeout(&text)
                .ok()
                .map(|millis| Timeout { millis, text })
        }),
        key: attr.serialize_by.as_ref().and_then(|by| {
            handler::key_param(handler, &by.param).map(|param| Key {
                param,
                scope: by
                    .scope
                    .as_ref()
                    .map(|s| s.value())
                    .filter(|s| !s.trim().is_empty()),
            })
        }),
        returns_result: matches!(&sig.output, ReturnType::Type(_, ty) if handler::may_be_result(ty)),
        callable: sig.asyncness.is_some()
            && sig.unsafety.is_none()
            && matches!(&sig.output, ReturnType::Type(_, ty) if handler::may_be_result(ty))
            && !sig
                .generics
                .params
                .iter()
                .any(|p| !matches!(p, GenericParam::Lifetime(_)))
            && sig.receiver().is_none()
            && crate::validate::context_position(handler).is_empty()
            && !sig
                .inputs
                .iter()
                .any(|a| matches!(a, FnArg::Typed(t) if handler::impl_trait(&t.ty).is_some())),
        is_method: sig.receiver().is_some(),
    }
}

/// Why a timeout string was refused (rule 10).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TimeoutError {
    Unparsable,
    Zero,
    TooLong,
}

/// `"250ms"`, `"2s"`, `"1m"`, `"1h"` → milliseconds.
pub(crate) fn parse_timeout(text: &str) -> Result<u64, TimeoutError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    if number.is_empty() {
        return Err(TimeoutError::Unparsable);
    }
    let scale: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(TimeoutError::Unparsable),
    };
    let millis = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or(TimeoutError::TooLong)?;
    match millis {
        0 => Err(TimeoutError::Zero),
        m if m > MAX_TIMEOUT_MS => Err(TimeoutError::TooLong),
        m => Ok(m),
    }
}

/// `replace_catalogue` → `ReplaceCatalogue`.
pub(crate) fn upper_camel(snake: &str) -> String {
    let camel: String = snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().expect("non-empty").to_uppercase();
            first.chain(chars).collect::<String>()
        })
        .collect();
    if camel.is_empty() || camel.starts_with(|c: char| c.is_ascii_digit()) {
        format!("Op{camel}")
    } else {
        camel
    }
}
