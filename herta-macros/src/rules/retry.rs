//! Rules 3, 4 and 5: what `retry(...)` may retry, and that it can retry;
//! and rule 13, `backoff(...)`'s delays.

use herta_contract::{retry_verdict, Effect, Outcome, RetryVerdict};

use super::values::{duration_error, DurationWords};
use crate::diag::{error, list};
use crate::model::{Attr, Key, OnList};

/// The most attempts a contract without `backoff` may declare (rule 5):
/// attempts that follow each other at once cannot usefully be more, and a
/// larger number is a retry storm waiting to happen.
pub(crate) const MAX_ATTEMPTS: u128 = 100;

/// The most attempts a contract with `backoff` may declare (rule 5).
pub(crate) const MAX_ATTEMPTS_WITH_BACKOFF: u128 = 10_000;

/// Rule 3: a `NonIdempotent` operation never retries `Uncertain` failures.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime.
pub(super) fn rule_3_no_uncertain_retry_of_non_idempotent(attr: &Attr) -> Vec<syn::Error> {
    forbidden_retries(attr, |outcome| outcome == Outcome::Uncertain)
}

/// Rule 4: `Success` and `Permanent` are never retried, and `Throttled`
/// only with `backoff(...)`.
///
/// Decided by [`retry_verdict`], the one table shared with the runtime
/// (which forbids `Throttled` without a delay).
pub(super) fn rule_4_never_retried_outcomes(attr: &Attr) -> Vec<syn::Error> {
    let backoff = attr.backoff().is_some();
    forbidden_retries(attr, |outcome| {
        outcome != Outcome::Uncertain && !(outcome == Outcome::Throttled && backoff)
    })
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
            let rule = if outcome == Outcome::Throttled {
                "`Throttled` is retried only after a delay: retrying it at once only adds load to what refused it".to_owned()
            } else if never {
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
            "add `backoff(base = \"100ms\", cap = \"10s\")` to `retry(...)`, or remove `Throttled` from `on` ({retryable}); to wait for herta's own budgets instead of failing fast, use `admission = Wait`"
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
            n if retry.backoff.is_none() && n > MAX_ATTEMPTS => errors.push(error(
                max.span,
                format_args!("`retry(max = {n})` without `backoff` allows at most {MAX_ATTEMPTS} attempts: attempts without a delay only hammer what is failing"),
                "use a small number such as `max = 3`, or add `backoff(base = \"10ms\", cap = \"1s\")` to space the attempts out",
            )),
            n if n > MAX_ATTEMPTS_WITH_BACKOFF => errors.push(error(
                max.span,
                format_args!("`retry(max = {n})` allows more than the {MAX_ATTEMPTS_WITH_BACKOFF} attempts herta allows a call"),
                format_args!("use at most `max = {MAX_ATTEMPTS_WITH_BACKOFF}`; to keep trying for longer, retry in the caller"),
            )),
            _ => {}
        },
    }
    errors
}

/// Rule 13: `backoff(...)` has a `base` and a `cap`, each a positive
/// duration of at most an hour, and `base` is not above `cap`.
pub(super) fn rule_13_backoff(attr: &Attr) -> Vec<syn::Error> {
    let Some(backoff) = attr.backoff() else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    for (key, value) in [(Key::Base, &backoff.base), (Key::Cap, &backoff.cap)] {
        let name = key.name();
        match value {
            None if !attr.keys.mentioned(key) => errors.push(error(
                backoff.keyword.span(),
                format_args!("`backoff(...)` must say its `{name}`"),
                "write `backoff(base = \"10ms\", cap = \"1s\")`: `base` is the first delay, `cap` the longest",
            )),
            None => {}
            Some(value) => errors.extend(duration_error(
                value,
                name,
                &DurationWords {
                    example: "10ms",
                    zero: "is no delay: a backoff's delays must be above zero",
                    zero_help: "use a positive delay such as `\"10ms\"`, or remove `backoff(...)`",
                    limit_of: " a backoff delay",
                    or_remove: "",
                },
            )),
        }
    }
    if let (Some(base), Some(cap)) = (&backoff.base, &backoff.cap) {
        if let (Ok(b), Ok(c)) = (base.millis, cap.millis) {
            if b > c {
                errors.push(error(
                    base.lit.span(),
                    format_args!(
                        "`base = {:?}` is above `cap = {:?}`: the first delay cannot be longer than the longest",
                        base.lit.value(),
                        cap.lit.value()
                    ),
                    "lower `base` or raise `cap`; `base = cap` gives a constant delay",
                ));
            }
        }
    }
    errors
}
