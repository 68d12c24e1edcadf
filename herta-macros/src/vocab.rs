//! The words a contract is written in, "did you mean" suggestions, and the
//! one shape every error message has: the rule in one sentence, then a
//! `help:` line with the fix.

use std::fmt::Display;

use herta_contract::{Admission, Effect, Outcome};
use proc_macro2::Span;

/// A compile error at `span`: `rule`, then `help: <help>` on its own line.
pub(crate) fn error(span: Span, rule: impl Display, help: impl Display) -> darling::Error {
    syn::Error::new(span, format!("{rule}\nhelp: {help}")).into()
}

/// A compile error on all of `tokens` (from their first token to their last,
/// as `syn::Error::new_spanned` does), such as a whole type.
pub(crate) fn error_spanned(
    tokens: &impl quote::ToTokens,
    rule: impl Display,
    help: impl Display,
) -> darling::Error {
    syn::Error::new_spanned(tokens, format!("{rule}\nhelp: {help}")).into()
}

/// The closest candidate to `word`, if one is close enough to be a typo.
pub(crate) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .iter()
        .filter_map(|&c| {
            let candidate = c.to_lowercase();
            let score = strsim::jaro_winkler(&word, &candidate);
            // Short words: one edit away is a typo whatever the score.
            let close = score >= 0.8
                || (candidate.len() >= 3 && strsim::damerau_levenshtein(&word, &candidate) <= 1);
            close.then_some((c, score))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

/// `` `a`, `b` and `c` `` (with `joiner` = "and") or `` `a`, `b` or `c` ``.
pub(crate) fn list(items: &[&str], joiner: &str) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("`{i}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {joiner} {last}", rest.join(", ")),
    }
}

/// The vocabulary one word of a contract is checked against.
#[derive(Clone, Copy)]
pub(crate) struct Vocabulary {
    /// What a word of this vocabulary is ("effect").
    pub kind: &'static str,
    /// Its plural, for "the effects are ...".
    pub plural: &'static str,
    /// Every valid word.
    pub words: &'static [&'static str],
}

pub(crate) const EFFECTS: Vocabulary = Vocabulary {
    kind: "an effect",
    plural: "effects",
    words: &["Pure", "Idempotent", "NonIdempotent"],
};

pub(crate) const OUTCOMES: Vocabulary = Vocabulary {
    kind: "an outcome",
    plural: "outcomes",
    words: &[
        "Success",
        "Transient",
        "Uncertain",
        "Permanent",
        "Throttled",
    ],
};

pub(crate) const ADMISSIONS: Vocabulary = Vocabulary {
    kind: "an admission mode",
    plural: "admission modes",
    words: &["Wait", "Reject"],
};

/// Rule 2: `word` is not in `vocabulary`.
pub(crate) fn unknown_word(span: Span, word: &str, vocabulary: Vocabulary) -> darling::Error {
    let rule = format!(
        "`{word}` is not {}; the {} are {}",
        vocabulary.kind,
        vocabulary.plural,
        list(vocabulary.words, "and")
    );
    match did_you_mean(word, vocabulary.words) {
        Some(close) => error(span, rule, format_args!("did you mean `{close}`?")),
        None => error(
            span,
            rule,
            format_args!("write one of {}", list(vocabulary.words, "or")),
        ),
    }
}

// The vocabularies above are spelled out for `const` use; a test keeps them
// identical to herta-contract's, the single source of truth, and words are
// resolved by herta-contract itself.
pub(crate) fn effect(word: &str) -> Option<Effect> {
    Effect::from_name(word)
}

pub(crate) fn outcome(word: &str) -> Option<Outcome> {
    Outcome::from_name(word)
}

pub(crate) fn admission(word: &str) -> Option<Admission> {
    Admission::from_name(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_match_the_contract_crate() {
        let effects: Vec<_> = Effect::ALL.iter().map(|e| e.name()).collect();
        let outcomes: Vec<_> = Outcome::ALL.iter().map(|o| o.name()).collect();
        let admissions: Vec<_> = Admission::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(EFFECTS.words, &effects[..]);
        assert_eq!(OUTCOMES.words, &outcomes[..]);
        assert_eq!(ADMISSIONS.words, &admissions[..]);
    }

    #[test]
    fn suggestions_catch_typos_and_case() {
        assert_eq!(
            did_you_mean("Idempotnet", EFFECTS.words),
            Some("Idempotent")
        );
        assert_eq!(
            did_you_mean("idempotent", EFFECTS.words),
            Some("Idempotent")
        );
        assert_eq!(did_you_mean("Transeint", OUTCOMES.words), Some("Transient"));
        assert_eq!(did_you_mean("Rejected", ADMISSIONS.words), Some("Reject"));
        assert_eq!(did_you_mean("banana", EFFECTS.words), None);
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(list(&["a"], "or"), "`a`");
        assert_eq!(list(&["a", "b"], "or"), "`a` or `b`");
        assert_eq!(list(&["a", "b", "c"], "and"), "`a`, `b` and `c`");
    }
}
