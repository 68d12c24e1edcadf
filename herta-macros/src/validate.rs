//! The compile-time contract rules (herta design §5), one function per rule.
//!
//! Every rule returns its errors, each spanned on the offending token and
//! worded as the rule in one sentence plus a `help:` line; [`contract`] runs
//! them all, so every violation in one attribute is reported together, and
//! resolves a best-effort [`Contract`] so the wrapper is generated anyway
//! (no cascade of "cannot find `Render`" errors).
//!
//! Rule 9 (retry needs `Clone` parameters), the type half of rule 8 (a key
//! must be `Clone + Hash + Eq + Send + Sync + 'static`) and the capacity half
//! of rule 6 (units above a constant resource's capacity) need types or
//! constant values, so [`expand`](crate::expand) leaves them to rustc, with
//! the offending token's span: a `<Retry as RetryArg<T>>::retry_arg` call
//! per parameter, `<SerializeBy as KeyBound<K>>::bind` in the wrapper's
//! `bind` (the only item that needs the key bounds), a `const` assertion per
//! constant resource. Each trait carries the rule's message
//! (`#[diagnostic::on_unimplemented]`). Rule 12 is in
//! [`classify`](crate::classify).

use herta_contract::{retry_verdict, Effect, Outcome, RetryVerdict};
use syn::{FnArg, GenericParam, Ident, ReturnType, Type};

use crate::contract::{parse_timeout, Contract, TimeoutError};
use crate::handler::{self as h, Handler};
use crate::parse::{Attr, OnList, ResourceEntry, ResourceKey, UnitsValue};
use crate::vocab::{self, did_you_mean, error, error_spanned, list, ADMISSIONS, EFFECTS, OUTCOMES};

/// Applies every rule, pushing errors to `errors`, and resolves the contract.
pub(crate) fn contract(
    attr: &Attr,
    handler: &Handler,
    errors: &mut darling::error::Accumulator,
) -> Contract {
    let rules = [
        rule_1_effect_required(attr),
        rule_2_unknown_words(attr),
        rule_3_no_uncertain_retry_of_non_idempotent(attr),
        rule_4_never_retried_outcomes(attr),
        rule_5_retry_attempts(attr),
        rule_6_units(attr),
        rule_7_resource_once(attr),
        rule_8_serialize_by_parameter(attr, handler),
        rule_10_timeout(attr),
        rule_11_handler_shape(handler),
        rule_11_duplicate_keys(attr),
        name_not_empty(attr),
    ];
    for error in rules.into_iter().flatten() {
        errors.push(error);
    }
    crate::contract::resolve(attr, handler)
}

/// Rule 1: `effect` is required; herta never guesses whether repeating is safe.
pub(crate) fn rule_1_effect_required(attr: &Attr) -> Vec<darling::Error> {
    // A misspelt or duplicate `effect` is reported by rules 2 and 11 instead.
    let mentioned = attr.unreadable
        || attr.written.iter().any(|k| k == "effect")
        || attr
            .unknown_keys
            .iter()
            .any(|k| did_you_mean(&k.name, &["effect"]).is_some());
    if mentioned {
        return Vec::new();
    }
    vec![error(
        crate::parse::attribute_span(),
        "an operation must declare its `effect`: herta never guesses whether repeating it is safe",
        "add `effect = Pure`, `effect = Idempotent` or `effect = NonIdempotent`, whichever says what running the operation twice does",
    )]
}

/// Rule 2: unknown attribute keys, effects, outcomes and admission modes.
pub(crate) fn rule_2_unknown_words(attr: &Attr) -> Vec<darling::Error> {
    let mut errors = Vec::new();
    for key in &attr.unknown_keys {
        let rule = format!(
            "`{}` is not a key of {}; the keys are {}",
            key.name,
            key.within,
            list(key.known, "and")
        );
        errors.push(match did_you_mean(&key.name, key.known) {
            Some(close) => error(key.span, rule, format_args!("did you mean `{close}`?")),
            None => error(key.span, rule, "remove it, or use one of the keys above"),
        });
    }
    if let Some(word) = &attr.effect {
        if vocab::effect(&word.to_string()).is_none() {
            errors.push(vocab::unknown_word(word.span(), &word.to_string(), EFFECTS));
        }
    }
    if let Some(word) = &attr.admission {
        if vocab::admission(&word.to_string()).is_none() {
            errors.push(vocab::unknown_word(
                word.span(),
                &word.to_string(),
                ADMISSIONS,
            ));
        }
    }
    for word in retry_outcome_words(attr) {
        if vocab::outcome(&word.to_string()).is_none() {
            errors.push(vocab::unknown_word(
                word.span(),
                &word.to_string(),
                OUTCOMES,
            ));
        }
    }
    errors
}

/// Rule 3: a `NonIdempotent` operation never retries `Uncertain` failures.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime.
pub(crate) fn rule_3_no_uncertain_retry_of_non_idempotent(attr: &Attr) -> Vec<darling::Error> {
    forbidden_retries(attr, |outcome| outcome == Outcome::Uncertain)
}

/// Rule 4: `Throttled`, `Success` and `Permanent` are never retried.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime.
pub(crate) fn rule_4_never_retried_outcomes(attr: &Attr) -> Vec<darling::Error> {
    forbidden_retries(attr, |outcome| outcome != Outcome::Uncertain)
}

fn forbidden_retries(attr: &Attr, applies: impl Fn(Outcome) -> bool) -> Vec<darling::Error> {
    // Without a known effect the table cannot be read; rules 1 and 2 report that.
    let Some(effect) = attr
        .effect
        .as_ref()
        .and_then(|w| vocab::effect(&w.to_string()))
    else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for word in retry_outcome_words(attr) {
        let Some(outcome) = vocab::outcome(&word.to_string()) else {
            continue;
        };
        if !applies(outcome) {
            continue;
        }
        if let RetryVerdict::Forbidden(reason) = retry_verdict(effect, outcome) {
            let never = Effect::ALL
                .iter()
                .all(|&e| !retry_verdict(e, outcome).is_allowed());
            let rule = if never {
                format!("`{outcome}` is never retried: {reason}")
            } else {
                format!(
                    "an operation with `effect = {effect}` must not retry `{outcome}`: {reason}"
                )
            };
            errors.push(error(word.span(), rule, retry_fix(effect, outcome)));
        }
    }
    errors
}

/// The fix for a forbidden (effect, outcome) pair.
fn retry_fix(effect: Effect, outcome: Outcome) -> String {
    let others = Outcome::ALL
        .into_iter()
        .filter(|&o| o != outcome && retry_verdict(effect, o).is_allowed())
        .map(Outcome::name)
        .collect::<Vec<_>>();
    let retryable = format!("{effect} operations may retry {}", list(&others, "and"));
    match outcome {
        Outcome::Uncertain => format!(
            "remove `Uncertain` from `on` ({retryable}); if running it twice is harmless, declare `effect = Idempotent`"
        ),
        Outcome::Throttled => format!(
            "remove `Throttled` from `on` ({retryable}); to wait for herta's budgets instead of failing fast, use `admission = Wait`"
        ),
        Outcome::Permanent => format!(
            "remove `Permanent` from `on` ({retryable}); if the failure can go away on its own, classify it as `Transient`"
        ),
        _ => format!("remove `{outcome}` from `on` ({retryable})"),
    }
}

/// Rule 5: `retry` must be able to retry: `on` lists outcomes, `max >= 2`.
pub(crate) fn rule_5_retry_attempts(attr: &Attr) -> Vec<darling::Error> {
    let Some(retry) = &attr.retry else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    // A key written with an unreadable value, or misspelt, is reported already.
    let named = |key: &str| {
        attr.written
            .iter()
            .any(|k| k.strip_prefix("retry.") == Some(key))
            || attr
                .unknown_keys
                .iter()
                .any(|k| k.within == "`retry(...)`" && did_you_mean(&k.name, &[key]).is_some())
    };
    match &retry.on {
        None if !named("on") => errors.push(error(
            retry.keyword.span(),
            "`retry(...)` must say which outcomes to retry",
            "add `on = Transient` (or `on = [Transient, Uncertain]`)",
        )),
        Some(OnList {
            outcomes,
            brackets: Some(brackets),
            ..
        }) if outcomes.is_empty() => {
            errors.push(error(
                *brackets,
                "`retry(on = [])` lists no outcome, so nothing would ever be retried",
                "list the outcomes to retry, e.g. `on = [Transient]`, or remove `retry(...)`",
            ));
        }
        Some(on) => {
            let mut seen: Vec<String> = Vec::new();
            for word in &on.outcomes {
                let name = word.to_string();
                if seen.contains(&name) {
                    errors.push(error(
                        word.span(),
                        format_args!("`{name}` is listed twice in `retry(on = ...)`"),
                        "remove the second one",
                    ));
                }
                seen.push(name);
            }
        }
        None => {}
    }
    match &retry.max {
        None if !named("max") => errors.push(error(
            retry.keyword.span(),
            "`retry(...)` must say how many attempts a call may make",
            "add `max = 3`: `max` counts every attempt, the first one included",
        )),
        None => {}
        Some(max) => match max.base10_parse::<u32>() {
            Ok(0) => errors.push(error(
                max.span(),
                "`retry(max = 0)` allows no attempt at all: `max` counts every attempt, the first one included",
                "use `max = 2` or more to retry, or remove `retry(...)`",
            )),
            Ok(1) => errors.push(error(
                max.span(),
                "`retry(max = 1)` can never retry: `max` counts every attempt, the first one included",
                "use `max = 2` or more to retry, or remove `retry(...)`",
            )),
            Ok(_) => {}
            Err(_) => errors.push(error(
                max.span(),
                "`retry(max = ...)` must be a whole number of attempts that fits in a `u32`",
                "use a small number such as `max = 3`",
            )),
        },
    }
    errors
}

/// Rule 6: units are at least 1 (the capacity half is a `const` assertion).
pub(crate) fn rule_6_units(attr: &Attr) -> Vec<darling::Error> {
    let mut errors = Vec::new();
    for ResourceEntry { key, units } in &attr.resources {
        if let ResourceKey::Name(name) = key {
            if name.value().trim().is_empty() {
                errors.push(error(
                    name.span(),
                    "a resource name cannot be empty",
                    "name a resource declared with `herta::resources!` or `Resource::new`, e.g. `\"worker\" = 1`",
                ));
            }
        }
        let (shown, source) = (key.display(), key.source());
        match units.value {
            UnitsValue::Count(0) => errors.push(error(
                units.span,
                format_args!("resource units must be at least 1: holding 0 units of {shown} would not limit anything"),
                format_args!("write `{source} = 1` or more, or remove {shown} from `resources(...)`"),
            )),
            UnitsValue::Negative => errors.push(error(
                units.span,
                format_args!("resource units cannot be negative: they count the units of {shown} one call holds"),
                format_args!("write `{source} = 1` or more"),
            )),
            UnitsValue::Count(n) if n > u128::from(u32::MAX) => errors.push(error(
                units.span,
                format_args!("{n} units of {shown} exceed what any resource can hold (a capacity is a `u32`)"),
                "use at most the resource's capacity",
            )),
            UnitsValue::Count(_) => {}
        }
    }
    errors
}

/// Rule 7: a resource is named once (spanned on the repeat).
pub(crate) fn rule_7_resource_once(attr: &Attr) -> Vec<darling::Error> {
    let mut errors = Vec::new();
    for (i, entry) in attr.resources.iter().enumerate() {
        if attr.resources[..i]
            .iter()
            .any(|e| e.key.same_as(&entry.key))
        {
            let shown = entry.key.display();
            errors.push(error(
                entry.key.span(),
                format_args!(
                    "{shown} is named twice in `resources(...)`; a call holds each resource once"
                ),
                "merge the two entries into one with the total units",
            ));
        }
    }
    errors
}

/// Rule 8 (name half): `serialize_by` names a parameter of the function.
pub(crate) fn rule_8_serialize_by_parameter(attr: &Attr, handler: &Handler) -> Vec<darling::Error> {
    let Some(by) = &attr.serialize_by else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if let Some(scope) = &by.scope {
        if scope.value().trim().is_empty() {
            errors.push(error(
                scope.span(),
                "a `serialize_by` scope cannot be empty",
                "name the key space shared by the operations, e.g. `scope = \"catalogue\"`, or remove `scope`",
            ));
        }
    }
    let function = &handler.item.sig.ident;
    if handler.has_context && h::context_ident(handler).is_some_and(|c| c == by.param) {
        errors.push(error(
            by.param.span(),
            format_args!(
                "`serialize_by` cannot use `{}`: it is the `Context`, not an argument of the call",
                by.param
            ),
            "serialize by one of the call's parameters",
        ));
        return errors;
    }
    if h::key_param(handler, &by.param).is_some() {
        return errors;
    }
    let names: Vec<String> = handler
        .params
        .iter()
        .filter_map(|p| p.declared.as_ref())
        .map(Ident::to_string)
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    if names.is_empty() {
        errors.push(error(
            by.param.span(),
            format_args!("`serialize_by = {}` names no parameter: `{function}` has no parameter to serialize by", by.param),
            "add the key as a parameter, or remove `serialize_by`",
        ));
        return errors;
    }
    let rule = format!(
        "`serialize_by = {}` names no parameter of `{function}`; its parameters are {}",
        by.param,
        list(&names, "and")
    );
    errors.push(match did_you_mean(&by.param.to_string(), &names) {
        Some(close) => error(
            by.param.span(),
            rule,
            format_args!("did you mean `{close}`?"),
        ),
        None => error(
            by.param.span(),
            rule,
            "serialize by one of those parameters",
        ),
    });
    errors
}

/// Rule 10: `timeout` is a positive duration of at most an hour.
pub(crate) fn rule_10_timeout(attr: &Attr) -> Vec<darling::Error> {
    let Some(lit) = &attr.timeout else {
        return Vec::new();
    };
    let text = lit.value();
    match parse_timeout(&text) {
        Ok(_) => Vec::new(),
        Err(TimeoutError::Unparsable) => vec![error(
            lit.span(),
            format_args!("`timeout = {text:?}` is not a duration: write a whole number followed by `ms`, `s`, `m` or `h`, without a space"),
            "e.g. `timeout = \"250ms\"`, `\"2s\"` or `\"1m\"`",
        )],
        Err(TimeoutError::Zero) => vec![error(
            lit.span(),
            format_args!("`timeout = {text:?}` would time out every attempt before it starts"),
            "use a positive timeout such as `\"250ms\"`, or remove `timeout` for no limit",
        )],
        Err(TimeoutError::TooLong) => vec![error(
            lit.span(),
            format_args!("`timeout = {text:?}` is longer than the 1 hour herta allows per attempt; a longer one is most likely a unit slip"),
            "check the unit (`ms`, `s`, `m`, `h`), or remove `timeout` for no limit",
        )],
    }
}

/// Rule 11: an `async fn` returning a value, with no type parameters, no `self`.
pub(crate) fn rule_11_handler_shape(handler: &Handler) -> Vec<darling::Error> {
    let sig = &handler.item.sig;
    let name = &sig.ident;
    let mut errors = Vec::new();
    if sig.asyncness.is_none() {
        errors.push(error(
            sig.fn_token.span,
            format_args!("an operation must be an `async fn`, and `{name}` is not async"),
            format_args!("write `async fn {name}(...)`"),
        ));
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.push(error(
            unsafety.span,
            "an operation cannot be an `unsafe fn`: its wrapper's `call` is safe to call",
            "make the function safe and keep the `unsafe` block inside it",
        ));
    }
    match &sig.output {
        ReturnType::Default => errors.push(error(
            sig.paren_token.span.close(),
            format_args!("an operation must return `Result<T, E>`, and `{name}` returns nothing"),
            "return `Result<(), E>`; the error tells herta what failed and whether to retry (see `herta::Classify`)",
        )),
        ReturnType::Type(_, ty) if !h::may_be_result(ty) => {
            let shown = crate::parse::pretty(ty);
            errors.push(error_spanned(
                ty,
                format_args!("an operation must return `Result<T, E>`, and `{name}` returns `{shown}`"),
                format_args!("return `Result<{shown}, E>`; the error tells herta what failed and whether to retry (see `herta::Classify`)"),
            ));
        }
        ReturnType::Type(..) => {}
    }
    for param in &sig.generics.params {
        let (span, what) = match param {
            GenericParam::Lifetime(_) => continue,
            GenericParam::Type(t) => (t.ident.span(), "type parameters"),
            GenericParam::Const(c) => (c.ident.span(), "const parameters"),
        };
        errors.push(error(
            span,
            format_args!("an operation cannot have {what}: its wrapper type is one concrete type"),
            "use concrete types, or a generic helper called from a concrete operation",
        ));
    }
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(receiver) => errors.push(error(
                receiver.self_token.span,
                format_args!("an operation cannot take `self`: `#[herta::operation]` generates a wrapper type next to `{name}`, which cannot be inside an `impl` block"),
                "make it a free `async fn` and pass the value as a parameter",
            )),
            FnArg::Typed(arg) => {
                if let Some(span) = h::impl_trait(&arg.ty) {
                    errors.push(error(
                        span,
                        "an operation cannot take `impl Trait` parameters: its wrapper type is one concrete type",
                        "use a concrete type, or a `Box<dyn Trait>`",
                    ));
                }
            }
        }
    }
    errors.extend(context_position(handler));
    errors
}

/// The `Context` is the first parameter, by value.
pub(crate) fn context_position(handler: &Handler) -> Vec<darling::Error> {
    let mut errors = Vec::new();
    for (index, arg) in handler.item.sig.inputs.iter().enumerate() {
        let FnArg::Typed(arg) = arg else { continue };
        match &*arg.ty {
            Type::Reference(r)
                if h::is_context(&r.elem) && is_herta_context_or_first(&r.elem, index) =>
            {
                errors.push(error(
                    r.and_token.span,
                    "an operation takes its `Context` by value, not by reference",
                    "remove the `&`: `Context` is `Copy`",
                ));
            }
            ty if index > 0 && h::is_herta_path(ty) => errors.push(error_spanned(
                ty,
                "the `Context` must be the first parameter of an operation",
                "move it first: `async fn op(ctx: herta::Context, ...)`",
            )),
            _ => {}
        }
    }
    errors
}

fn is_herta_context_or_first(ty: &Type, index: usize) -> bool {
    index == 0 || h::is_herta_path(ty)
}

/// Rule 11: each key appears once.
pub(crate) fn rule_11_duplicate_keys(attr: &Attr) -> Vec<darling::Error> {
    attr.duplicate_keys
        .iter()
        .map(|key| {
            error(
                key.ident.span(),
                format_args!(
                    "`{}` is given twice in {}; each key appears once",
                    key.ident, key.within
                ),
                "remove one of them",
            )
        })
        .collect()
}

/// A `name` override names something.
pub(crate) fn name_not_empty(attr: &Attr) -> Vec<darling::Error> {
    let mut errors = Vec::new();
    if let Some(name) = &attr.name {
        if name.value().trim().is_empty() {
            errors.push(error(
                name.span(),
                "an operation's `name` cannot be empty: it names the operation in errors and stats",
                "write a name such as `name = \"render_page\"`, or remove `name` to use the function's",
            ));
        }
    }
    errors
}

fn retry_outcome_words(attr: &Attr) -> impl Iterator<Item = &Ident> {
    attr.retry
        .iter()
        .flat_map(|r| r.on.iter())
        .flat_map(|on| &on.outcomes)
}
