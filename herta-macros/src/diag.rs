//! Compile errors: the one shape every message has (the rule in one
//! sentence, then a `help:` line with the fix), and the list that collects
//! them so that every violation is reported at once.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};

/// A compile error at `span`: `rule`, then `help: <help>` on its own line.
pub(crate) fn error(span: Span, rule: impl Display, help: impl Display) -> syn::Error {
    syn::Error::new(span, format!("{rule}\nhelp: {help}"))
}

/// A compile error on all of `tokens`, from their first token to their last
/// (`-1`, a whole type), as `syn::Error::new_spanned` does on stable.
pub(crate) fn error_spanned(
    tokens: &impl quote::ToTokens,
    rule: impl Display,
    help: impl Display,
) -> syn::Error {
    syn::Error::new_spanned(tokens, format!("{rule}\nhelp: {help}"))
}

/// Every error found so far, in order.
#[derive(Default)]
pub(crate) struct Errors(Vec<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        self.0.push(error);
    }

    pub fn extend(&mut self, errors: impl IntoIterator<Item = syn::Error>) {
        self.0.extend(errors);
    }

    /// The value, or `None` with its error recorded.
    pub fn handle<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// The messages, for tests.
    #[cfg(test)]
    pub fn messages(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    /// `compile_error!` invocations, each spanned on its token(s), in
    /// source order: by the line, then the column, of each error's first
    /// token, as a reader meets the mistakes (errors at one place keep the
    /// order they were found in). The rules run by topic, so the order they
    /// find errors in is not the attribute's.
    pub fn to_compile_errors(&self) -> TokenStream {
        let mut errors: Vec<&syn::Error> = self.0.iter().collect();
        errors.sort_by_key(|error| {
            let start = error.span().start();
            (start.line, start.column)
        });
        errors
            .into_iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}

/// The closest candidate to `word`, if one is close enough to be a typo
/// (herta-contract's rule, shared with the runtime).
pub(crate) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    herta_contract::closest(word, candidates.iter().copied())
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
