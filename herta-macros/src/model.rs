//! The contract model: `#[herta::operation(...)]` and the function it is on,
//! read once by [`parse`](crate::parse) into typed, spanned values. The
//! rules ([`rules`](crate::rules)) check it; [`expand`](crate::expand)
//! generates from it, through the best-effort readings of
//! [`best_effort`](crate::best_effort).
//!
//! Adding a key: a field here (and its [`Key`]), its reading in `parse`,
//! its rule in `rules`, and its use in `expand`.

use herta_contract::{Admission, Effect, Outcome};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Ident, LitStr};

use crate::handler::Handler;
use crate::syntax::{path_text, IntLiteral};
use crate::vocab::Vocabulary;

/// An operation: its contract and its function.
pub(crate) struct Operation {
    pub attr: Attr,
    pub handler: Handler,
}

/// A contract without a handler: `#[herta::contract(...)]` and the unit
/// struct it is on.
pub(crate) struct ContractItem {
    pub attr: Attr,
    pub item: syn::ItemStruct,
}

/// Every key of the contract syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Effect,
    Resources,
    Admission,
    Retry,
    Timeout,
    SerializeBy,
    Name,
    Wrapper,
    /// `retry(on = ...)`.
    On,
    /// `retry(max = ...)`.
    Max,
    /// `serialize_by(param, scope = ...)`.
    Scope,
    /// `serialize_by(param, show_key = true)`.
    Show,
    /// `retry(..., backoff(...))`.
    Backoff,
    /// `backoff(base = ...)`.
    Base,
    /// `backoff(cap = ...)`.
    Cap,
    /// `backoff(jitter = ...)`.
    Jitter,
    MaxWait,
    Deadline,
    Breaker,
}

impl Key {
    pub fn name(self) -> &'static str {
        match self {
            Key::Effect => "effect",
            Key::Resources => "resources",
            Key::Admission => "admission",
            Key::Retry => "retry",
            Key::Timeout => "timeout",
            Key::SerializeBy => "serialize_by",
            Key::Name => "name",
            Key::Wrapper => "wrapper",
            Key::On => "on",
            Key::Max => "max",
            Key::Scope => "scope",
            Key::Show => "show_key",
            Key::Backoff => "backoff",
            Key::Base => "base",
            Key::Cap => "cap",
            Key::Jitter => "jitter",
            Key::MaxWait => "max_wait",
            Key::Deadline => "deadline",
            Key::Breaker => "breaker",
        }
    }
}

/// Where keys are written: the attribute itself or one of its lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Within {
    Operation,
    /// `#[herta::contract(...)]`: the keys of an operation but `wrapper`.
    Contract,
    Retry,
    SerializeBy,
    Backoff,
}

impl Within {
    /// The keys valid here, in documentation order.
    pub fn keys(self) -> &'static [Key] {
        match self {
            Within::Operation => &[
                Key::Effect,
                Key::Resources,
                Key::Admission,
                Key::Retry,
                Key::Timeout,
                Key::SerializeBy,
                Key::Name,
                Key::Wrapper,
                Key::MaxWait,
                Key::Deadline,
                Key::Breaker,
            ],
            Within::Contract => &[
                Key::Effect,
                Key::Resources,
                Key::Admission,
                Key::Retry,
                Key::Timeout,
                Key::SerializeBy,
                Key::Name,
                Key::MaxWait,
                Key::Deadline,
                Key::Breaker,
            ],
            Within::Retry => &[Key::On, Key::Max, Key::Backoff],
            Within::SerializeBy => &[Key::Scope, Key::Show],
            Within::Backoff => &[Key::Base, Key::Cap, Key::Jitter],
        }
    }

    /// Their names.
    pub fn names(self) -> Vec<&'static str> {
        self.keys().iter().map(|k| k.name()).collect()
    }

    /// The key that another library's name for it means here, with what
    /// to know about herta's (`retry(attempts = 3)` is `max`, which counts
    /// every attempt); checked before "did you mean", so that `max_retries`
    /// (close enough to `max` to be taken for a typo) gets the note too.
    pub fn synonym(self, name: &str) -> Option<(Key, &'static str)> {
        const MAX: &str =
            "it counts every attempt, the first included (`max = 3`: up to 2 retries)";
        match (self, name) {
            (
                Within::Retry,
                "attempts" | "max_attempts" | "retries" | "max_retries" | "times" | "count"
                | "limit",
            ) => Some((Key::Max, MAX)),
            _ => None,
        }
    }

    /// How messages name the place: `` `retry(...)` ``.
    pub fn shown(self) -> &'static str {
        match self {
            Within::Operation => "`#[herta::operation(...)]`",
            Within::Contract => "`#[herta::contract(...)]`",
            Within::Retry => "`retry(...)`",
            Within::SerializeBy => "`serialize_by(...)`",
            Within::Backoff => "`backoff(...)`",
        }
    }
}

/// A word of a vocabulary as written: `value` is `None` for a word the
/// vocabulary lacks (rule 2).
pub(crate) struct Word<V> {
    pub ident: Ident,
    pub value: Option<V>,
}

/// The attribute.
#[derive(Default)]
pub(crate) struct Attr {
    pub effect: Option<Word<Effect>>,
    pub admission: Option<Word<Admission>>,
    pub resources: Vec<ResourceEntry>,
    pub retry: Option<Retry>,
    pub timeout: Option<Timeout>,
    pub serialize_by: Option<SerializeBy>,
    pub name: Option<LitStr>,
    pub wrapper: Option<Ident>,
    pub keys: Keys,
    /// `max_wait = "100ms"` (a duration, read like `timeout`).
    pub max_wait: Option<Timeout>,
    /// `deadline = "5s"` (a duration, read like `timeout`).
    pub deadline: Option<Timeout>,
    /// `breaker = PAYMENTS` or `breaker = "payments"`.
    pub breaker: Option<ResourceKey>,
}

/// Which keys were written, and how.
#[derive(Default)]
pub(crate) struct Keys {
    /// Every known key written, even when its value was unreadable.
    pub written: Vec<Key>,
    /// Keys nobody knows (rule 2), wherever they appeared.
    pub unknown: Vec<UnknownKey>,
    /// The second (third, ...) occurrence of a key (rule 11).
    pub duplicates: Vec<DuplicateKey>,
    /// The arguments did not parse at all (already reported).
    pub unreadable: bool,
}

impl Keys {
    /// `key` was written, or misspelt: rules about a missing `key` stay
    /// quiet, as another error is about it already.
    pub fn mentioned(&self, key: Key) -> bool {
        self.unreadable
            || self.written.contains(&key)
            || self.unknown.iter().any(|k| k.closest == Some(key))
    }
}

/// A key that is not part of the contract syntax.
pub(crate) struct UnknownKey {
    pub name: String,
    pub span: Span,
    pub within: Within,
    /// The known key it is probably a typo of.
    pub closest: Option<Key>,
}

/// A key written a second time.
pub(crate) struct DuplicateKey {
    pub ident: Ident,
    pub within: Within,
}

/// One entry of `resources(...)`.
pub(crate) struct ResourceEntry {
    pub key: ResourceKey,
    pub units: Units,
}

/// A resource named by string (checked at `bind`) or by path to a constant
/// declared with `herta::resources!` (checked by rustc).
#[derive(Clone)]
pub(crate) enum ResourceKey {
    Name(LitStr),
    Path(syn::Path),
}

impl ResourceKey {
    pub fn span(&self) -> Span {
        match self {
            ResourceKey::Name(lit) => lit.span(),
            ResourceKey::Path(path) => path.span(),
        }
    }

    /// As written, for inside a code span: `"worker"` or `DB_WRITE`.
    pub fn source(&self) -> String {
        match self {
            ResourceKey::Name(lit) => format!("{:?}", lit.value()),
            ResourceKey::Path(path) => path_text(path),
        }
    }

    /// For prose: `"worker"`, or `DB_WRITE` in backticks.
    pub fn display(&self) -> String {
        match self {
            ResourceKey::Name(lit) => format!("{:?}", lit.value()),
            ResourceKey::Path(path) => format!("`{}`", path_text(path)),
        }
    }

    /// The same resource written twice (rule 7, as far as the macro can see).
    pub fn same_as(&self, other: &ResourceKey) -> bool {
        match (self, other) {
            (ResourceKey::Name(a), ResourceKey::Name(b)) => a.value() == b.value(),
            (ResourceKey::Path(a), ResourceKey::Path(b)) => path_text(a) == path_text(b),
            _ => false,
        }
    }
}

/// Units as written; range checks are rule 6.
pub(crate) struct Units {
    pub value: IntLiteral,
    /// All of its tokens (`-1`), for errors that cover them.
    pub tokens: TokenStream,
    /// Its first token's span.
    pub span: Span,
}

/// `retry(on = ..., max = ...)`.
pub(crate) struct Retry {
    /// The `retry` keyword, for errors about what is missing.
    pub keyword: Ident,
    pub on: Option<OnList>,
    pub max: Option<Max>,
    pub backoff: Option<BackoffSpec>,
}

/// `backoff(base = "10ms", cap = "1s", jitter = Full)`.
pub(crate) struct BackoffSpec {
    /// The `backoff` keyword, for errors about what is missing.
    pub keyword: Ident,
    pub base: Option<Timeout>,
    pub cap: Option<Timeout>,
    pub jitter: Option<Word<JitterWord>>,
}

/// A jitter mode as the macro knows it (`herta::Jitter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JitterWord {
    Full,
    Equal,
    None,
}

impl JitterWord {
    pub const NAMES: [&'static str; 3] = ["Full", "Equal", "None"];

    pub fn name(self) -> &'static str {
        match self {
            JitterWord::Full => "Full",
            JitterWord::Equal => "Equal",
            JitterWord::None => "None",
        }
    }
}

/// The jitter modes are a vocabulary of the macro's own, read and
/// suggested like herta-contract's.
impl Vocabulary for JitterWord {
    const KIND: &'static str = "a jitter mode";
    const PLURAL: &'static str = "jitter modes";
    const TYPE: &'static str = "Jitter";
    const NAMES: &'static [&'static str] = &JitterWord::NAMES;
    fn from_name(name: &str) -> Option<Self> {
        [JitterWord::Full, JitterWord::Equal, JitterWord::None]
            .into_iter()
            .find(|j| j.name() == name)
    }
}

/// `on = Transient` or `on = [Transient, Uncertain]`.
pub(crate) struct OnList {
    pub outcomes: Vec<Word<Outcome>>,
    /// The brackets of a list form, for "empty list" errors.
    pub brackets: Option<Span>,
}

/// `max = 3`.
pub(crate) struct Max {
    pub value: u128,
    pub span: Span,
}

/// `timeout = "2s"` (and the other durations: `max_wait`, `deadline`).
pub(crate) struct Timeout {
    pub lit: LitStr,
    pub millis: Result<u64, TimeoutError>,
}

/// Why a timeout string was refused (rule 10).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum TimeoutError {
    Unparsable,
    Zero,
    TooLong,
}

/// `serialize_by = brand` or `serialize_by(brand, scope = "catalogue",
/// show_key = true)`.
pub(crate) struct SerializeBy {
    pub param: Ident,
    pub scope: Option<LitStr>,
    /// `show_key = true`: errors and traces may show the key's value.
    pub show_key: Option<syn::LitBool>,
}

impl Attr {
    /// The effect, when it is a known word.
    pub fn effect_value(&self) -> Option<Effect> {
        self.effect.as_ref().and_then(|w| w.value)
    }

    /// `retry(..., backoff(...))`, as written.
    pub fn backoff(&self) -> Option<&BackoffSpec> {
        self.retry.as_ref().and_then(|r| r.backoff.as_ref())
    }

    /// Every word of `retry(on = ...)`, as written.
    pub fn retry_outcomes(&self) -> impl Iterator<Item = &Word<Outcome>> {
        self.retry
            .iter()
            .flat_map(|r| r.on.iter())
            .flat_map(|on| &on.outcomes)
    }
}
