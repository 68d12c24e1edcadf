//! The contract's words as lists, for the macros' messages and "did you mean"
//! suggestions, and the one rule for choosing a suggestion.

use crate::{Admission, Effect, Outcome};

/// Every effect name, in declaration order (`Effect::ALL`, named).
pub const EFFECT_NAMES: [&str; Effect::ALL.len()] = {
    let mut names = [""; Effect::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Effect::ALL[i].name();
        i += 1;
    }
    names
};

/// Every outcome name, in declaration order (`Outcome::ALL`, named).
pub const OUTCOME_NAMES: [&str; Outcome::ALL.len()] = {
    let mut names = [""; Outcome::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Outcome::ALL[i].name();
        i += 1;
    }
    names
};

/// Every admission mode name, in declaration order (`Admission::ALL`, named).
pub const ADMISSION_NAMES: [&str; Admission::ALL.len()] = {
    let mut names = [""; Admission::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Admission::ALL[i].name();
        i += 1;
    }
    names
};

/// The candidate closest to `word`, if it is close enough to be a typo of it:
/// the one "did you mean" rule of herta, for the macros' compile errors and
/// the runtime's bind errors alike.
///
/// Case is ignored; a candidate is close when its Jaro-Winkler similarity is
/// at least 0.8, or when it is one edit (a transposition included) away and
/// at least 3 characters long. Among close candidates the most similar wins
/// (the first of equals).
///
/// ```
/// use herta_contract::closest;
///
/// assert_eq!(closest("Idempotnet", ["Pure", "Idempotent"]), Some("Idempotent"));
/// assert_eq!(closest("worker", ["wroker", "db"]), Some("wroker"));
/// assert_eq!(closest("banana", ["Pure", "Idempotent"]), None);
/// ```
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    let mut best: Option<(&'a str, f64)> = None;
    for candidate in candidates {
        let lower = candidate.to_lowercase();
        let score = strsim::jaro_winkler(&word, &lower);
        // Short words: one edit away is a typo whatever the score.
        let close =
            score >= 0.8 || (lower.len() >= 3 && strsim::damerau_levenshtein(&word, &lower) <= 1);
        if close && best.is_none_or(|(_, b)| score > b) {
            best = Some((candidate, score));
        }
    }
    best.map(|(candidate, _)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_all() {
        assert_eq!(EFFECT_NAMES, ["Pure", "Idempotent", "NonIdempotent"]);
        assert_eq!(
            OUTCOME_NAMES,
            [
                "Success",
                "Transient",
                "Uncertain",
                "Permanent",
                "Throttled"
            ]
        );
        assert_eq!(ADMISSION_NAMES, ["Wait", "Reject"]);
    }

    #[test]
    fn closest_catches_typos_and_case() {
        assert_eq!(closest("Idempotnet", EFFECT_NAMES), Some("Idempotent"));
        assert_eq!(closest("idempotent", EFFECT_NAMES), Some("Idempotent"));
        assert_eq!(closest("Transeint", OUTCOME_NAMES), Some("Transient"));
        assert_eq!(closest("Rejected", ADMISSION_NAMES), Some("Reject"));
        assert_eq!(closest("banana", EFFECT_NAMES), None);
        assert_eq!(closest("db", ["dv"]), None, "short words need the score");
    }
}
