//! Rules on bounded waiting and the deadline: `max_wait` and
//! `deadline` are durations like `timeout` (rule 10), and `max_wait` bounds
//! a wait, so it needs `admission = Wait` (rule 14); both it and `timeout`
//! must end before the `deadline` can (rule 17).

use herta_contract::Admission;

use super::values::{duration_error, DurationWords};
use crate::diag::error;
use crate::model::{Attr, Timeout};

/// Rule 10, for `max_wait` and `deadline`: a positive duration of at most
/// an hour.
pub(super) fn rule_10_durations(attr: &Attr) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    if let Some(max_wait) = &attr.max_wait {
        errors.extend(duration(
            max_wait,
            "max_wait",
            "would refuse every call that has to wait at all; use `admission = Reject` for that",
        ));
    }
    if let Some(deadline) = &attr.deadline {
        errors.extend(duration(
            deadline,
            "deadline",
            "would fail every call before it starts",
        ));
    }
    errors
}

/// One duration key's value; `zero` says what a zero would do.
fn duration(value: &Timeout, key: &str, zero: &str) -> Option<syn::Error> {
    duration_error(
        value,
        key,
        &DurationWords {
            example: "100ms",
            zero,
            zero_help: &format!(
                "use a positive duration such as `\"100ms\"`, or remove `{key}` for no limit"
            ),
            limit_of: "",
            or_remove: &format!(", or remove `{key}` for no limit"),
        },
    )
}

/// Rule 14: `max_wait` bounds how long a `Wait` call queues; a `Reject`
/// call never queues.
pub(super) fn rule_14_max_wait_needs_wait(attr: &Attr) -> Vec<syn::Error> {
    let (Some(max_wait), Some(admission)) = (&attr.max_wait, &attr.admission) else {
        return Vec::new();
    };
    if admission.value != Some(Admission::Reject) {
        return Vec::new();
    }
    vec![error(
        max_wait.lit.span(),
        "`max_wait` bounds how long a call waits for its key and budgets, but `admission = Reject` never waits",
        "remove `max_wait`, or use `admission = Wait` (the default) to wait at most that long",
    )]
}

/// Rule 17: a `max_wait` or a `timeout` that is not shorter than the
/// contract's `deadline` can never apply: the deadline runs from admission
/// and bounds the waits and every attempt, so it always ends them first.
pub(super) fn rule_17_limits_within_deadline(attr: &Attr) -> Vec<syn::Error> {
    let Some(Timeout {
        lit: deadline_lit,
        millis: Ok(deadline),
    }) = &attr.deadline
    else {
        return Vec::new();
    };
    let deadline_text = deadline_lit.value();
    let limits = [
        (
            &attr.max_wait,
            "max_wait",
            "waiting for the key and budgets",
        ),
        (&attr.timeout, "timeout", "each attempt"),
    ];
    limits
        .into_iter()
        .filter_map(|(limit, key, what)| match limit {
            Some(Timeout {
                lit,
                millis: Ok(millis),
            }) if millis >= deadline => Some(error(
                lit.span(),
                format_args!(
                    "`{key} = {:?}` is not shorter than `deadline = {deadline_text:?}`: the deadline ends {what} first, so `{key}` would never apply",
                    lit.value()
                ),
                format_args!(
                    "make `{key}` shorter than the deadline, or remove it and let the deadline bound {what}"
                ),
            )),
            _ => None,
        })
        .collect()
}
