//! Rules 3, 4 and 5: what `retry(...)` may retry, and that it can retry.

use herta_contract::{retry_verdict, Effect, Outcome, RetryVerdict};

use crate::diag::{error, list};
use crate::model::{Attr, Key, OnList};

/// Rule 3: a `NonIdempotent` operation never retries `Uncertain` failures.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime.
pub(super) fn rule_3_no_uncertain_retry_of_non_idempotent(attr: &Attr) -> Vec<syn::Error> {
    forbidden_retries(attr, |outcome| outcome == Outcome::Uncertain)
}

/// Rule 4: `Throttled`, `Success` and `Permanent` are never retried.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime.
pub(super) fn rule_4_never_retried_outcomes(attr: &Attr) -> Vec<syn::Error> {
    forbidden_retries(attr, |outcome| outcome != Outcome::Uncertain)
}

fn forbidden_retries(attr: &Attr, applies: impl Fn(Outcome) -> bool) -> Vec<syn::Error> {
    // Without a known effect the table cannot be read; rules 1 and 2 report that.
    let Some(effect) = attr.effect_value() else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for word in attr.retry_outcomes() {
        let Some(outcome) = word.value.filter(|&o| applies(o)) else {
            continue;
        };
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
            errors.push(error(word.ident.span(), rule, retry_fix(effect, outcome)));
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
pub(super) fn rule_5_retry_attempts(attr: &Attr) -> Vec<syn::Error> {
    let Some(retry) = &attr.retry else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    // A key written with an unreadable value, or misspelt, is reported already.
    match &retry.on {
        None if !attr.keys.mentioned(Key::On) => errors.push(error(
            retry.keyword.span(),
            "`retry(...)` must say which outcomes to retry",
            "add `on = Transient` (or `on = [Transient, Uncertain]`)",
        )),
        Some(OnList {
            outcomes,
            brackets: Some(brackets),
        }) if outcomes.is_empty() => errors.push(error(
            *brackets,
            "`retry(on = [])` lists no outcome, so nothing would ever be retried",
            "list the outcomes to retry, e.g. `on = [Transient]`, or remove `retry(...)`",
        )),
        Some(on) => {
            for (i, word) in on.outcomes.iter().enumerate() {
                if on.outcomes[..i].iter().any(|w| w.ident == word.ident) {
                    errors.push(error(
                        word.ident.span(),
                        format_args!("`{}` is listed twice in `retry(on = ...)`", word.ident),
                        "remove the second one",
                    ));
                }
            }
        }
        None => {}
    }
    match &retry.max {
        None if !attr.keys.mentioned(Key::Max) => errors.push(error(
            retry.keyword.span(),
            "`retry(...)` must say how many attempts a call may make",
            "add `max = 3`: `max` counts every attempt, the first one included",
        )),
        None => {}
        Some(max) => match max.value {
            0 => errors.push(error(
                max.span,
                "`retry(max = 0)` allows no attempt at all: `max` counts every attempt, the first one included",
                "use `max = 2` or more to retry, or remove `retry(...)`",
            )),
            1 => errors.push(error(
                max.span,
                "`retry(max = 1)` can never retry: `max` counts every attempt, the first one included",
                "use `max = 2` or more to retry, or remove `retry(...)`",
            )),
            n if n > u128::from(u32::MAX) => errors.push(error(
                max.span,
                "`retry(max = ...)` must be a whole number of attempts that fits in a `u32`",
                "use a small number such as `max = 3`",
            )),
            _ => {}
        },
    }
    errors
}
