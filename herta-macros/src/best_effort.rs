//! The model read leniently, for [`expand`](crate::expand): whatever is
//! invalid falls back to a harmless value (the rules have reported it), so
//! the wrapper type is always generated and code using it shows no further
//! errors.

use herta_contract::{retry_verdict, Admission, Effect, Outcome};
use proc_macro2::Span;
use quote::format_ident;
use syn::ext::IdentExt as _;
use syn::{FnArg, GenericParam, Ident, ReturnType};

use crate::handler;
use crate::model::{Attr, JitterWord, Operation, ResourceKey};
use crate::syntax::{float_type, IntLiteral};

/// A resource the contract holds.
#[derive(Clone)]
pub(crate) struct Resource<'a> {
    pub key: &'a ResourceKey,
    pub units: u32,
    /// The span of the units as written, for rustc's capacity check.
    pub units_span: Span,
}

/// The retry policy.
#[derive(Clone)]
pub(crate) struct RetryPolicy {
    pub on: Vec<Outcome>,
    pub max: u32,
    pub backoff: Option<BackoffPolicy>,
}

/// The backoff, with valid delays.
#[derive(Clone)]
pub(crate) struct BackoffPolicy {
    pub base_ms: u64,
    pub cap_ms: u64,
    pub jitter: JitterWord,
    /// As written, for the documentation.
    pub base: String,
    pub cap: String,
}

/// The serialization key.
pub(crate) struct KeyUse {
    /// Index into `Handler::params`.
    pub param: usize,
    pub scope: Option<String>,
    /// `show_key = true`.
    pub show_key: bool,
}

impl Operation {
    /// The operation's name: `name = "..."` or the function's.
    pub fn name(&self) -> String {
        self.attr
            .name
            .as_ref()
            .map(|n| n.value())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| self.function_name())
    }

    /// The function's name, without `r#`.
    pub fn function_name(&self) -> String {
        self.handler.sig.ident.unraw().to_string()
    }

    /// The wrapper type's name: `wrapper = ...` or the function's in UpperCamelCase.
    pub fn wrapper(&self) -> Ident {
        self.attr.wrapper.clone().unwrap_or_else(|| {
            let span = self.handler.sig.ident.span();
            format_ident!("{}", upper_camel(&self.function_name()), span = span)
        })
    }

    /// The resources, each once, with valid units.
    pub fn resources(&self) -> Vec<Resource<'_>> {
        self.attr.resources()
    }

    /// The retry policy, with only the outcomes the table allows.
    pub fn retry(&self) -> Option<RetryPolicy> {
        self.attr.retry()
    }

    /// The timeout in milliseconds and as written.
    pub fn timeout(&self) -> Option<(u64, String)> {
        self.attr.timeout()
    }

    /// The `serialize_by` key, when it names a parameter whose type may be
    /// one (not a float: rule 8).
    pub fn key(&self) -> Option<KeyUse> {
        let by = self.attr.serialize_by.as_ref()?;
        let param = self.handler.param_named(&by.param)?;
        if float_type(&self.handler.params[param].ty).is_some() {
            // Rule 8 refused the float already: no `bind` bound to repeat it.
            return None;
        }
        Some(KeyUse {
            param,
            scope: by
                .scope
                .as_ref()
                .map(|s| s.value())
                .filter(|s| !s.trim().is_empty()),
            show_key: by.show_key.as_ref().is_some_and(|b| b.value),
        })
    }

    /// The function's return type can be a `Result` (rustc checks that it
    /// is, through `HandlerOutput`); `false` when it certainly is not.
    pub fn returns_result(&self) -> bool {
        matches!(&self.handler.sig.output, ReturnType::Type(_, ty) if handler::may_be_result(ty))
    }

    /// The function is an `async fn` that `call` can invoke as written.
    /// When `false`, `expand` generates stubs that keep the wrapper's
    /// signatures only.
    pub fn callable(&self) -> bool {
        let sig = &self.handler.sig;
        sig.asyncness.is_some()
            && !matches!(sig.safety, syn::Safety::Unsafe(_))
            && self.returns_result()
            && sig
                .generics
                .params
                .iter()
                .all(|p| matches!(p, GenericParam::Lifetime(_)))
            && self.handler.misplaced_contexts.is_empty()
            && (self.handler.states.is_empty() || self.handler.state().is_some())
            && !self.in_impl()
            && !sig
                .inputs
                .iter()
                .any(|a| matches!(a, FnArg::Typed(t) if handler::impl_trait(&t.ty).is_some()))
    }

    /// The function is a method or names `Self`: it is inside an `impl`
    /// block, where no wrapper type can be declared, so only the function
    /// is emitted.
    pub fn in_impl(&self) -> bool {
        self.handler.sig.receiver().is_some() || handler::mentions_self(&self.handler.sig).is_some()
    }
}

/// The readings that need only the attribute (shared by `#[herta::operation]`
/// and `#[herta::contract]`).
impl Attr {
    pub fn effect(&self) -> Effect {
        self.effect_value().unwrap_or(Effect::NonIdempotent)
    }

    pub fn admission(&self) -> Admission {
        self.admission
            .as_ref()
            .and_then(|w| w.value)
            .unwrap_or_default()
    }

    /// The resources, each once, with valid units.
    pub fn resources(&self) -> Vec<Resource<'_>> {
        let entries = &self.resources;
        entries
            .iter()
            .enumerate()
            .filter(|(i, e)| !entries[..*i].iter().any(|p| p.key.same_as(&e.key)))
            .map(|(_, e)| Resource {
                key: &e.key,
                units: match e.units.value {
                    // Out of range (rule 6 reported it): 1, so that rustc's capacity
                    // check does not add an error about a number never written.
                    IntLiteral::Value(n) => u32::try_from(n).map_or(1, |n| n.max(1)),
                    IntLiteral::Negative => 1,
                },
                units_span: e.units.span,
            })
            .collect()
    }

    /// The retry policy, with only the outcomes the table allows.
    pub fn retry(&self) -> Option<RetryPolicy> {
        let retry = self.retry.as_ref()?;
        let effect = self.effect_value();
        let backoff = self.backoff_policy();
        let mut on: Vec<Outcome> = Vec::new();
        for outcome in self.retry_outcomes().filter_map(|w| w.value) {
            let allowed = effect.is_some_and(|e| {
                retry_verdict(e, outcome).is_allowed()
                    || (outcome == Outcome::Throttled && backoff.is_some())
            });
            if allowed && !on.contains(&outcome) {
                on.push(outcome);
            }
        }
        let max = retry
            .max
            .as_ref()
            .and_then(|m| u32::try_from(m.value).ok())
            .unwrap_or(1)
            .max(1);
        Some(RetryPolicy { on, max, backoff })
    }

    /// The backoff, when its delays are valid (base at most cap).
    fn backoff_policy(&self) -> Option<BackoffPolicy> {
        let spec = self.backoff()?;
        let (base, cap) = (spec.base.as_ref()?, spec.cap.as_ref()?);
        let (base_ms, cap_ms) = (base.millis.ok()?, cap.millis.ok()?);
        (base_ms <= cap_ms).then(|| BackoffPolicy {
            base_ms,
            cap_ms,
            jitter: spec
                .jitter
                .as_ref()
                .and_then(|w| w.value)
                .unwrap_or(JitterWord::Full),
            base: base.lit.value(),
            cap: cap.lit.value(),
        })
    }

    /// The timeout in milliseconds and as written.
    pub fn timeout(&self) -> Option<(u64, String)> {
        let timeout = self.timeout.as_ref()?;
        Some((timeout.millis.ok()?, timeout.lit.value()))
    }

    /// `max_wait` in milliseconds and as written, when it is valid.
    pub fn max_wait(&self) -> Option<(u64, String)> {
        let max_wait = self.max_wait.as_ref()?;
        if self.admission() == Admission::Reject {
            return None;
        }
        Some((max_wait.millis.ok()?, max_wait.lit.value()))
    }

    /// `deadline` in milliseconds and as written, when it is valid.
    pub fn deadline(&self) -> Option<(u64, String)> {
        let deadline = self.deadline.as_ref()?;
        Some((deadline.millis.ok()?, deadline.lit.value()))
    }

    /// The name: `name = "..."`, or `default`.
    pub fn name_or(&self, default: impl FnOnce() -> String) -> String {
        self.name
            .as_ref()
            .map(|n| n.value())
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(default)
    }

    /// The `serialize_by` key space and `show_key`, as a contract keys by them.
    pub fn key_space(&self) -> Option<(Option<String>, bool)> {
        let by = self.serialize_by.as_ref()?;
        Some((
            by.scope
                .as_ref()
                .map(|s| s.value())
                .filter(|s| !s.trim().is_empty()),
            by.show_key.as_ref().is_some_and(|b| b.value),
        ))
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
