//! The words a contract is written in: effects, outcomes and admission
//! modes, as herta-contract names them (its `*_NAMES` lists are the only
//! lists of them), with the prose the messages need.

use herta_contract::{Admission, Effect, Outcome, ADMISSION_NAMES, EFFECT_NAMES, OUTCOME_NAMES};
use proc_macro2::Span;

use crate::diag::{did_you_mean, error, list};

/// One vocabulary of herta-contract: its words and how to talk about them.
pub(crate) trait Vocabulary: Copy + 'static {
    /// What a word of it is ("an effect").
    const KIND: &'static str;
    /// Its plural, for "the effects are ...".
    const PLURAL: &'static str;
    /// The type re-exported by `herta` (`Effect`), for `herta::Effect::Pure`.
    const TYPE: &'static str;
    /// Every valid word, in herta-contract's order.
    const NAMES: &'static [&'static str];
    /// The word named `name`, exactly.
    fn from_name(name: &str) -> Option<Self>;
}

impl Vocabulary for Effect {
    const KIND: &'static str = "an effect";
    const PLURAL: &'static str = "effects";
    const TYPE: &'static str = "Effect";
    const NAMES: &'static [&'static str] = &EFFECT_NAMES;
    fn from_name(name: &str) -> Option<Self> {
        Effect::from_name(name)
    }
}

impl Vocabulary for Outcome {
    const KIND: &'static str = "an outcome";
    const PLURAL: &'static str = "outcomes";
    const TYPE: &'static str = "Outcome";
    const NAMES: &'static [&'static str] = &OUTCOME_NAMES;
    fn from_name(name: &str) -> Option<Self> {
        Outcome::from_name(name)
    }
}

impl Vocabulary for Admission {
    const KIND: &'static str = "an admission mode";
    const PLURAL: &'static str = "admission modes";
    const TYPE: &'static str = "Admission";
    const NAMES: &'static [&'static str] = &ADMISSION_NAMES;
    fn from_name(name: &str) -> Option<Self> {
        Admission::from_name(name)
    }
}

/// Rule 2: `word` is not in the vocabulary `V`.
pub(crate) fn unknown_word<V: Vocabulary>(span: Span, word: &str) -> syn::Error {
    let rule = format!(
        "`{word}` is not {}; the {} are {}",
        V::KIND,
        V::PLURAL,
        list(V::NAMES, "and")
    );
    match did_you_mean(word, V::NAMES) {
        Some(close) => error(span, rule, format_args!("did you mean `{close}`?")),
        None => error(
            span,
            rule,
            format_args!("write one of {}", list(V::NAMES, "or")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_and_case() {
        assert_eq!(
            did_you_mean("Idempotnet", Effect::NAMES),
            Some("Idempotent")
        );
        assert_eq!(
            did_you_mean("idempotent", Effect::NAMES),
            Some("Idempotent")
        );
        assert_eq!(did_you_mean("Transeint", Outcome::NAMES), Some("Transient"));
        assert_eq!(did_you_mean("Rejected", Admission::NAMES), Some("Reject"));
        assert_eq!(did_you_mean("banana", Effect::NAMES), None);
    }

    #[test]
    fn lists_read_as_prose() {
        assert_eq!(list(&["a"], "or"), "`a`");
        assert_eq!(list(&["a", "b"], "or"), "`a` or `b`");
        assert_eq!(list(&["a", "b", "c"], "and"), "`a`, `b` and `c`");
    }
}
