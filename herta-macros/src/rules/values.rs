//! Rules on single values: 8 (`serialize_by` names a parameter), 10
//! (`timeout`) and a non-empty `name`.

use syn::{Ident, Type};

use crate::diag::{did_you_mean, error, error_spanned, list};
use crate::handler::Handler;
use crate::model::{Attr, Timeout, TimeoutError};
use crate::syntax::float_type;

/// Rule 8 (name half): `serialize_by` names a parameter of the function.
pub(super) fn rule_8_serialize_by_parameter(attr: &Attr, handler: &Handler) -> Vec<syn::Error> {
    let Some(by) = &attr.serialize_by else {
        return Vec::new();
    };
    let mut errors = rule_8_scope_not_empty(attr);
    let function = &handler.sig.ident;
    if handler.context_ident() == Some(&by.param) {
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
    if handler
        .states
        .iter()
        .any(|s| s.declared.as_ref() == Some(&by.param))
    {
        errors.push(error(
            by.param.span(),
            format_args!(
                "`serialize_by` cannot use `{}`: it is the operation's state, bound once with `bind_with` and the same for every call, not an argument of the call",
                by.param
            ),
            "serialize by one of the call's parameters, e.g. the customer id",
        ));
        return errors;
    }
    if let Some(index) = handler.param_named(&by.param) {
        errors.extend(rule_8_float_key(&by.param, &handler.params[index].ty));
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
            format_args!(
                "serialize by one of those parameters, e.g. `serialize_by = {}`",
                names[0]
            ),
        ),
    });
    errors
}

/// Rule 8 (type half, where the type's name says it): an `f32` or `f64`
/// (or a reference to one) cannot be a key. Any other type is checked by
/// rustc at `bind`, whose message cannot tell a float from a type of the
/// user's (it would say "derive `Hash` for `f64`"). The wrapper is then
/// generated without the key (`best_effort`), so this is the one error.
fn rule_8_float_key(param: &Ident, ty: &Type) -> Option<syn::Error> {
    let (float, bits) = float_type(ty)?;
    Some(error_spanned(
        ty,
        format_args!(
            "`serialize_by = {param}` keys by an `{float}`, and a float cannot be a key: it is neither `Eq` nor `Hash` (`NaN != NaN`, and `0.0 == -0.0` with different bits)"
        ),
        format_args!(
            "serialize by a `String` or an integer id; to key by the number itself, take its bits as the key parameter (`{param}: {bits}`, from `{float}::to_bits`)"
        ),
    ))
}

/// Rule 8 (scope half): a `serialize_by` scope is not empty.
pub(super) fn rule_8_scope_not_empty(attr: &Attr) -> Vec<syn::Error> {
    let scope = attr.serialize_by.as_ref().and_then(|by| by.scope.as_ref());
    scope
        .filter(|scope| scope.value().trim().is_empty())
        .map(|scope| {
            error(
                scope.span(),
                "a `serialize_by` scope cannot be empty",
                "name the key space shared by the operations, e.g. `scope = \"catalogue\"`, or remove `scope`",
            )
        })
        .into_iter()
        .collect()
}

/// Rule 10: `timeout` is a positive duration of at most an hour.
pub(super) fn rule_10_timeout(attr: &Attr) -> Vec<syn::Error> {
    let Some(timeout) = &attr.timeout else {
        return Vec::new();
    };
    duration_error(
        timeout,
        "timeout",
        &DurationWords {
            example: "250ms",
            zero: "would time out every attempt before it starts",
            zero_help:
                "use a positive timeout such as `\"250ms\"`, or remove `timeout` for no limit",
            limit_of: " per attempt",
            or_remove: ", or remove `timeout` for no limit",
        },
    )
    .into_iter()
    .collect()
}

/// How one duration key words the errors of [`duration_error`].
pub(super) struct DurationWords<'a> {
    /// A valid value, for the help of an unparsable one (`"250ms"`).
    pub example: &'a str,
    /// What a zero would do, after "`key = "0s"` ".
    pub zero: &'a str,
    /// The fix for a zero.
    pub zero_help: &'a str,
    /// What the hour limits, after "the 1 hour herta allows" (`" per attempt"`).
    pub limit_of: &'a str,
    /// After "check the unit", for a value above the hour (`", or remove …"`).
    pub or_remove: &'a str,
}

/// Rule 10's error for a duration key (`timeout`, `max_wait`, `deadline`,
/// `backoff`'s `base` and `cap`): `None` for a positive duration of at most
/// an hour, else one error on the string literal.
pub(super) fn duration_error(
    value: &Timeout,
    key: &str,
    words: &DurationWords<'_>,
) -> Option<syn::Error> {
    let (span, text) = (value.lit.span(), value.lit.value());
    let (message, help) = match value.millis {
        Ok(_) => return None,
        Err(TimeoutError::Unparsable) => (
            format!("`{key} = {text:?}` is not a duration: write a whole number followed by `ms`, `s`, `m` or `h`, without a space"),
            format!("e.g. `{key} = \"{}\"`, `\"2s\"` or `\"1m\"`", words.example),
        ),
        Err(TimeoutError::Zero) => (
            format!("`{key} = {text:?}` {}", words.zero),
            words.zero_help.to_owned(),
        ),
        Err(TimeoutError::TooLong) => (
            format!("`{key} = {text:?}` is longer than the 1 hour herta allows{}; a longer one is most likely a unit slip", words.limit_of),
            format!("check the unit (`ms`, `s`, `m`, `h`){}", words.or_remove),
        ),
    };
    Some(error(span, message, help))
}

/// A `name` override names something.
pub(super) fn name_not_empty(attr: &Attr) -> Vec<syn::Error> {
    match &attr.name {
        Some(name) if name.value().trim().is_empty() => vec![error(
            name.span(),
            "an operation's `name` cannot be empty: it names the operation in errors and stats",
            "write a name such as `name = \"render_page\"`, or remove `name` to use the function's",
        )],
        _ => Vec::new(),
    }
}
