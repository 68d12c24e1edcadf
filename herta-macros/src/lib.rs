//! Procedural macros for [herta](https://docs.rs/herta). Use them through the
//! `herta` crate, which re-exports them as `herta::operation`,
//! `herta::resources!` and `herta::Classify`; everything they generate refers
//! to `::herta::...`.
//!
//! The crate is laid out like `thiserror-impl` (`ast → valid → expand`):
//! one typed model, read by `parse`, checked by `rules` and generated from
//! by `expand`, each module importing only from the layers below it.
//!
//! * Helpers: `syntax` (integer literals, paths and types as written),
//!   `diag` (the one shape of an error, and the list that collects them)
//!   and `vocab` (the words of a contract from `herta-contract`, and "did
//!   you mean").
//! * The model: `model` (the attribute's keys and values, typed and
//!   spanned: effects, outcomes and admission modes as herta-contract's
//!   enums), `handler` (the function, its body kept as raw tokens) and
//!   `state` (its `#[state]` parameter); `best_effort` reads the model
//!   leniently, with harmless values where a rule failed, so the wrapper
//!   is always generated.
//! * `parse` reads the attribute once into the model and reports shape
//!   errors.
//! * `rules` applies the contract rules (numbered as in the documentation
//!   of [`operation`] below), one function per rule, accumulating every
//!   error with the span of the offending token.
//! * `expand` runs `parse` and `rules`, then generates the wrapper type
//!   with `quote`, reading only the model (through `best_effort`).
//!
//! `resources` and `classify` implement the other two macros, on the same
//! helpers.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod best_effort;
mod breakers;
mod classify;
mod diag;
mod expand;
mod handler;
mod model;
mod parse;
mod resources;
mod rules;
mod state;
mod syntax;
mod vocab;

use proc_macro::TokenStream;

// The examples of the three macros are on their re-exports in `herta`
// (`herta/src/lib.rs`), where they run as doctests: this crate cannot depend
// on `herta`. rustdoc shows the re-export's docs first, then these; the
// `cfg_attr(doc, ...)` summaries appear only on this crate's own pages
// (`cfg(doc)` is not set when `herta` is documented or tested).
#[cfg_attr(
    doc,
    doc = "Declares the execution contract of an `async fn` and generates its wrapper type.\n\n\
           Use it as `herta::operation`: its documentation there adds examples (run as \
           doctests) and the page of contract rules.\n"
)]
/// # Keys
///
/// | key | value | default |
/// |---|---|---|
/// | `effect` | `Pure`, `Idempotent` or `NonIdempotent` (or `herta::Effect::Pure`, ...) | **required** |
/// | `resources(...)` | `"name" = units` (checked at `bind`) or `CONSTANT = units` (a `herta::Resource`; a typo or units above its capacity are compile errors). A call made inside a handler that queues for more units than the capacity minus what its calling chain holds fails at once with `Error::WouldDeadlock` | none |
/// | `admission` | `Wait` or `Reject` | `Wait` |
/// | `retry(on = ..., max = n)` | `on`: one outcome or a list; `max`: every attempt, the first included (2 to 100; up to 10 000 with `backoff`); without `backoff`, attempts follow at once, each passing through the scheduler | no retry |
/// | `retry(..., backoff(base = "10ms", cap = "1s", jitter = Full))` | `base` and `cap` with the `timeout` parser, `base` at most `cap`; `jitter` `Full` (default), `Equal` or `None`: a delay of `min(cap, base · 2^(n-1))` before attempt `n + 1`, jittered, at least `base` after a `Throttled` attempt, and at least an error's `retry_after` hint (a hint above `cap` ends the call); budgets are given back during the sleep | no delay |
/// | `timeout` | a whole number and `ms`, `s`, `m` or `h`, from 1 ms to 1 hour | none |
/// | `serialize_by` | a parameter; `serialize_by(param, scope = "space")` shares the key space across operations; `show_key = true` lets errors and traces show the key's value (by default they name the parameter only). A call made inside a handler that queues for a key its calling chain holds (the same key in the same space) fails at once with `Error::WouldDeadlock` | none |
/// | `name` | the operation name in errors and stats | the function's name |
/// | `wrapper` | the wrapper type's name | the function's name in UpperCamelCase |
/// | `max_wait` | a duration like `timeout`; only with `admission = Wait`: the longest a call waits for its key and budgets together, from admission; then `Error::Throttled` naming what it waited for | no limit |
/// | `deadline` | a duration like `timeout`: the whole call (waiting and every attempt) from admission; then `Error::DeadlineExceeded`. A `herta::deadline` scope around the call also applies, the earliest wins; the handler runs in a scope of the call's deadline, so calls it makes inherit it | none |
/// | `breaker` | one circuit breaker: `PAYMENTS` (a `herta::Breaker` from `herta::breakers!`) or `"payments"` (checked at `bind`, with a did-you-mean). Its attempts count in the breaker; while it is open, calls are refused with `Error::Throttled` (`Busy::Breaker`) before they queue, and so is a retry about to start. See the guide's breakers page | none |
///
/// A call made from inside a handler (a nested call) that could never be
/// granted because its own calling chain holds what it needs — the same
/// key in the same key space, or more units of a budget than its capacity
/// minus what the chain holds — fails at once with `Error::WouldDeadlock`
/// instead of hanging; one that can be granted once others release waits
/// as any call. See the guide's execution model, "Nested calls".
///
/// # What it generates
///
/// The function is kept exactly as written. Next to it, with the same
/// visibility and `cfg`, comes a wrapper type (`replace_catalogue` →
/// `ReplaceCatalogue`) documented with the function's docs and the contract.
/// It is `Clone` (cheaply), `Send`, `Sync` and `Debug`, and has:
///
/// - `NAME: &'static str` and `CONTRACT: herta::Contract`;
/// - `bind(&herta::Runtime) -> Result<Self, herta::BindError>` (with a
///   state, `bind_with`: see [State](#state));
/// - `async fn call(&self, <the parameters>) -> Result<T, herta::Error<E>>`,
///   where the function returns `Result<T, E>` (or an alias such as
///   `io::Result<T>`). A first parameter of type `herta::Context` is passed
///   by the runtime and is not a parameter of `call`;
/// - an implementation of `herta::Operation` when every parameter of `call`
///   is owned (no borrowed parameter) and there is no state, with `Args`
///   the tuple of them.
///
/// # State
///
/// A first parameter marked `#[state]`, by shared reference (`#[state]
/// ledger: &Ledger`), is the operation's state: the wrapper has
/// `bind_with(&herta::Runtime, impl Into<Arc<Ledger>>)` instead of `bind`,
/// keeps the state in an `Arc` (shared by its clones) and lends `&Ledger` to
/// every attempt of every call; the state is never cloned and need not be
/// `Clone`, only `Send + Sync + 'static`. As for any operation, `call`'s
/// future must be `Send` (a guard held across an `.await` is an error at
/// the attribute). A `Context` comes right after it;
/// `call` takes the parameters after those. The attribute is removed from
/// the function, which stays a plain `async fn(&Ledger, ...)`.
///
/// Why a parameter and not `#[herta::operations] impl Ledger { async fn
/// update(&self, ...) }`: the function stays free (one wrapper per
/// operation, `bind` and `call` as without state, unit-testable with a plain
/// `&Ledger`); the state can be any type (a foreign `PgPool`, a `dyn
/// Trait` fake), where an inherent `impl` needs a local type; and two
/// operations can share one state by binding the same `Arc`. See the guide
/// page `herta::guide::state`.
///
/// A `serialize_by` parameter keys calls by a clone of its value (a `&str`,
/// `&[T]` or `&Path` parameter by its owned form: `String`, `Vec<T>`,
/// `PathBuf`); the key type must be `Clone + Hash + Eq + Send + Sync +
/// 'static`. With `retry`, every attempt gets a clone of each parameter, so
/// the parameters must be `Clone`.
///
/// # Compile errors
///
/// Unsafe or meaningless contracts are compile errors on the offending token,
/// each stating the rule and a `help:` line with the fix; all of them are
/// reported at once, and the wrapper type is generated anyway, so code using
/// it shows no further errors:
///
/// 1. `effect` missing;
/// 2. an unknown effect, outcome, admission mode or key (with "did you mean");
/// 3. `NonIdempotent` with `retry(on = Uncertain)`;
/// 4. retrying `Success` or `Permanent`, or `Throttled` without `backoff`;
/// 5. `retry(max = 0)`, `retry(max = 1)`, `max` above 100 without `backoff`
///    (10 000 with it), `on` missing or empty; and a
///    `retry` whose error type is not `Classify` (every failure would be
///    Permanent, so it could never retry), unless it retries a `timeout`
///    (`on` lists `Transient` and the effect is Pure or Idempotent);
/// 6. resource units 0, negative, or above a constant resource's capacity;
/// 7. a resource named twice;
/// 8. `serialize_by` naming no parameter, or a key type that is not
///    `Clone + Hash + Eq + Send + Sync + 'static`;
/// 9. `retry` with a parameter that is not `Clone`;
/// 10. a `timeout`, `max_wait` or `deadline` that does not parse, is zero
///     or exceeds one hour (a longer one is almost always a unit slip);
/// 11. not an `async fn` (also `fn … -> impl Future`), no `Result` return
///     type, type or const parameters, `impl Trait` parameters, `self` or
///     `Self` (a function in an `impl` block), `unsafe fn`, a `Context` that
///     is not the first parameter, is borrowed or repeated, a key written
///     twice, or a wrapper name another item of the module already has;
/// 13. a `backoff(...)` without `base` or `cap`, a delay that does not
///     parse, is zero or exceeds an hour, `base` above `cap`, or an unknown
///     jitter mode;
/// 14. `max_wait` with `admission = Reject` (a `Reject` call never waits);
/// 15. a `#[state]` parameter that is not first, a second one, `#[state]`
///     with arguments, a state by value, `&mut` or `&'static`, a state type
///     that borrows or is not `Send + Sync + 'static`, `serialize_by` naming
///     the state, and `bind` called on an operation with state (its error
///     says to use `bind_with`);
/// 16. (`#[herta::contract]` only, below) the item is not a unit struct
///     without generics;
/// 17. a `max_wait` or `timeout` not shorter than the `deadline` (the
///     deadline ends waits and attempts first, so it would never apply).
///
/// A `Context` parameter is recognised by its type as written: `Context`,
/// `herta::Context` or `::herta::Context`. Any other path (`my::Context`,
/// `opentelemetry::Context`, a re-export such as `crate::prelude::Context`)
/// and a renamed import (`use herta::Context as Ctx`) are taken as ordinary
/// parameters of `call`. An associated function that names neither `self`
/// nor `Self` cannot be told from a free one, and gets rustc's errors about
/// items in an `impl` block.
///
/// Rules 3 and 4 read the effect × outcome table of `herta-contract`, the
/// same table the runtime checks before every retry.
#[proc_macro_attribute]
pub fn operation(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::operation(args.into(), item.into()).into()
}

#[cfg_attr(
    doc,
    doc = "Declares an execution contract without a handler, on a unit struct.\n\n\
           Use it as `herta::contract`: its documentation there adds an example (run as a \
           doctest); `herta::tower::ContractLayer` runs a `tower::Service` under it.\n"
)]
/// `#[herta::contract(...)] pub struct CallUpstream;` takes the keys of
/// `#[herta::operation]` (table above) except `wrapper`, with the same
/// compile-time rules: an unsafe retry (rule 3), a bad `max`, units,
/// durations, backoff or `max_wait` are errors on the offending token.
///
/// What differs, with no function to read:
///
/// - `serialize_by = customer` (or `serialize_by(customer, scope = "s",
///   show_key = true)`) *names* the key, in errors and traces; the layer's
///   key function (`ContractLayer::bind_keyed`) computes it from each
///   request. A keyed contract bound with `ContractLayer::bind`, or an
///   unkeyed one with `bind_keyed`, is a compile error at the call;
/// - rule 9 (`Clone` parameters of a retried operation) becomes the
///   layer's bound: with `retry`, the service's requests must be `Clone`
///   (a compile error naming the request type otherwise);
/// - rule 5's "a retry needs a `Classify` error" becomes
///   the layer's bound: the inner service's error must implement
///   `herta::Classify`, or the layer is given `classify_error`;
/// - rule 16: the item must be a unit struct (`struct CallUpstream;`)
///   without generics.
///
/// # What it generates
///
/// The struct as written, documented with its contract, with
/// `NAME: &'static str` (`name = "..."`, else the struct's name) and
/// `CONTRACT: herta::Contract`, and an implementation of
/// `herta::DeclaredContract`.
#[proc_macro_attribute]
pub fn contract(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::contract(args.into(), item.into()).into()
}

#[cfg_attr(
    doc,
    doc = "Declares named budgets as `herta::Resource` constants.\n\n\
           Use it as `herta::resources!`: its documentation there adds an example, run as a \
           doctest.\n"
)]
/// Each entry is `attributes visibility IDENT: "name" = capacity;` (the last
/// `;` is optional), or `IDENT: "name" = capacity, queue = limit;` to let
/// at most `limit` calls wait for it (`Resource::with_queue_limit`; a `Wait`
/// call past it is throttled at once). The capacity and the limit are `u32`
/// constant expressions. A **rate budget** is `IDENT: "name" = count per
/// "period", burst = n;` (`Resource::rate`: at most `count` units per
/// period, `burst` at once, default the count; the period `"100ms"`, `"1s"`,
/// `"1m"`, `"24h"`; `queue = limit` as for budgets). Compile errors: a
/// capacity, count, burst or queue of 0 (also for constant expressions), an
/// unparsable or zero period, a burst on a concurrency budget, an empty
/// name, and a name or identifier declared twice.
///
/// Contracts can then name a resource by its constant, `resources(WORKER =
/// 1)`, so a typo is a rustc error and units above the capacity a compile
/// error.
#[proc_macro]
pub fn resources(input: TokenStream) -> TokenStream {
    resources::expand(input.into()).into()
}

#[cfg_attr(
    doc,
    doc = "Declares circuit breakers as `herta::Breaker` constants.\n\n\
           Use it as `herta::breakers!`: its documentation there adds an example, run as a \
           doctest.\n"
)]
/// Each entry is `attributes visibility IDENT: "name" = breaker(options);`
/// (the last `;` is optional). Options, all optional (the defaults of
/// `Breaker::new`): `failure_rate` (percent, 1–100), `min_calls` (at least
/// 1), `window` (a duration, at least `"10ms"`: 10 buckets of 1 ms; or an
/// integer, a count window of the last N attempts, 1–100 000 and at least
/// `min_calls`), `open_for` (a duration), `probes` (1–65 535), `slow_call`
/// (a duration) and `slow_rate` (percent, with `slow_call`). Compile
/// errors, each on the offending token: an unknown option (with the
/// closest one), a value out of its range (`window = 0` among them), a
/// count window smaller than `min_calls`, `slow_rate` without
/// `slow_call`, an empty name, and a name or identifier declared twice.
///
/// Contracts then name a breaker by its constant, `breaker = PAYMENTS`.
#[proc_macro]
pub fn breakers(input: TokenStream) -> TokenStream {
    breakers::expand(input.into()).into()
}

#[cfg_attr(
    doc,
    doc = "Implements `herta::Classify` from `#[outcome(...)]` attributes.\n\n\
           Use it as `herta::Classify`: its documentation there adds an example, run as a \
           doctest.\n"
)]
/// A variant without `#[outcome(...)]` takes the type's `#[outcome(...)]`,
/// or else is **`Permanent`**: herta never retries what nobody classified.
/// The outcomes are `Transient`, `Uncertain`, `Permanent` and `Throttled`;
/// an unknown name (with "did you mean"), `Success`, a repeated
/// `#[outcome]` or one on a field is a compile error.
///
/// `#[retry_after]` on one field of a variant (or of the struct), of type
/// `Duration` or `Option<Duration>`, implements `Classify::retry_after`: the
/// failing service's hint of how long to wait before the next attempt.
#[proc_macro_derive(Classify, attributes(outcome, retry_after))]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::derive(input.into()).into()
}

#[cfg(test)]
mod tests;
