//! Rules about which keys and words are written: 1, 2 and the duplicate
//! half of 11.

use herta_contract::{Admission, Effect, Outcome};

use crate::diag::{did_you_mean, error, list};
use crate::model::{Attr, Key, Word};
use crate::vocab::{unknown_word, Vocabulary};

/// Rule 1: `effect` is required; herta never guesses whether repeating is safe.
pub(super) fn rule_1_effect_required(attr: &Attr) -> Vec<syn::Error> {
    // A misspelt or duplicate `effect` is reported by rules 2 and 11 instead.
    if attr.keys.mentioned(Key::Effect) {
        return Vec::new();
    }
    vec![error(
        crate::syntax::attribute_span(),
        "an operation must declare its `effect`: herta never guesses whether repeating it is safe",
        "add `effect = Pure`, `effect = Idempotent` or `effect = NonIdempotent`, whichever says what running the operation twice does",
    )]
}

/// Rule 2: unknown attribute keys, effects, outcomes and admission modes.
pub(super) fn rule_2_unknown_words(attr: &Attr) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    for key in &attr.keys.unknown {
        let known = key.within.names();
        let rule = format!(
            "`{}` is not a key of {}; the keys are {}",
            key.name,
            key.within.shown(),
            list(&known, "and")
        );
        errors.push(
            match (
                key.within.synonym(&key.name),
                did_you_mean(&key.name, &known),
            ) {
                (Some((synonym, note)), _) => error(
                    key.span,
                    rule,
                    format_args!("did you mean `{}`? {note}", synonym.name()),
                ),
                (None, Some(close)) => {
                    error(key.span, rule, format_args!("did you mean `{close}`?"))
                }
                (None, None) => error(key.span, rule, "remove it, or use one of the keys above"),
            },
        );
    }
    errors.extend(attr.effect.iter().filter_map(unknown::<Effect>));
    errors.extend(attr.admission.iter().filter_map(unknown::<Admission>));
    errors.extend(attr.retry_outcomes().filter_map(unknown::<Outcome>));
    errors.extend(
        attr.backoff()
            .and_then(|b| b.jitter.as_ref())
            .and_then(unknown::<crate::model::JitterWord>),
    );
    errors
}

fn unknown<V: Vocabulary>(word: &Word<V>) -> Option<syn::Error> {
    word.value
        .is_none()
        .then(|| unknown_word::<V>(word.ident.span(), &word.ident.to_string()))
}

/// Rule 11: each key appears once.
pub(super) fn rule_11_duplicate_keys(attr: &Attr) -> Vec<syn::Error> {
    attr.keys
        .duplicates
        .iter()
        .map(|key| {
            error(
                key.ident.span(),
                format_args!(
                    "`{}` is given twice in {}; each key appears once",
                    key.ident,
                    key.within.shown()
                ),
                "remove one of them",
            )
        })
        .collect()
}
