//! Reading `#[herta::operation(...)]` into the typed [model](crate::model),
//! once: keys become [`Key`]s, words become effects, outcomes and admission
//! modes (or unknown words, for rule 2), every value keeps its span.
//!
//! Only the *shape* of the input is reported here (`effect = Word`, a list
//! where a list belongs, integer units); what the values mean is the
//! business of the [rules](crate::rules).

mod durations;
mod items;
mod resource_list;
mod values;

use proc_macro2::TokenStream;

use crate::diag::{error, Errors};
use crate::handler::Handler;
use crate::model::{Attr, ContractItem, Key, Operation, Within};

pub(crate) use durations::parse_timeout;

/// Reads the attribute and the function; `None` when the item is not a
/// function with a body (reported).
pub(crate) fn operation(
    args: TokenStream,
    item: TokenStream,
    errors: &mut Errors,
) -> Option<Operation> {
    let attr = attr(args, Within::Operation, errors);
    let Ok(handler) = syn::parse2::<Handler>(item) else {
        errors.push(error(
            crate::syntax::attribute_span(),
            "`#[herta::operation]` goes on an `async fn` with a body",
            "put it on the function the operation runs: `#[herta::operation(effect = Idempotent)] async fn render(job: String) -> Result<String, E> { ... }`",
        ));
        return None;
    };
    Some(Operation { attr, handler })
}

/// Reads `#[herta::contract(...)]` and the item; `None` when the item is
/// not a struct (reported; its shape is checked by the rules).
pub(crate) fn contract(
    args: TokenStream,
    item: TokenStream,
    errors: &mut Errors,
) -> Option<ContractItem> {
    let attr = attr(args, Within::Contract, errors);
    let Ok(item) = syn::parse2::<syn::ItemStruct>(item) else {
        errors.push(error(
            crate::syntax::attribute_span(),
            "`#[herta::contract]` goes on a unit struct",
            "declare the contract's type: `#[herta::contract(effect = Idempotent)] pub struct CallUpstream;`",
        ));
        return None;
    };
    Some(ContractItem { attr, item })
}

/// Reads the attribute's arguments (of an operation or a contract:
/// `within`), reporting shape errors to `errors`.
pub(crate) fn attr(args: TokenStream, within: Within, errors: &mut Errors) -> Attr {
    let mut attr = Attr::default();
    let Some(items) = items::list(args, errors, "write the contract as comma-separated `key = value` items, e.g. `effect = Idempotent, resources(\"worker\" = 1)`") else {
        attr.keys.unreadable = true;
        return attr;
    };
    let mut seen = Vec::new();
    for item in items {
        let Some(meta) = items::meta(item, within, "effect = Idempotent", errors) else {
            continue;
        };
        let Some((key, ident)) = items::key(&meta, within, &mut seen, &mut attr.keys) else {
            continue;
        };
        match key {
            Key::Effect => attr.effect = errors.handle(values::word(&meta, "effect", "Idempotent")),
            Key::Admission => {
                attr.admission = errors.handle(values::word(&meta, "admission", "Wait"));
            }
            Key::Resources => {
                attr.resources = errors
                    .handle(resource_list::resources(&meta))
                    .unwrap_or_default();
            }
            Key::Retry => attr.retry = values::retry(&meta, &ident, errors, &mut attr.keys),
            Key::Timeout => {
                attr.timeout = errors.handle(durations::duration(&meta, "timeout", "2s"))
            }
            Key::SerializeBy => {
                attr.serialize_by = values::serialize_by(&meta, errors, &mut attr.keys);
            }
            Key::Name => {
                attr.name = errors.handle(values::string(&meta, "name", "\"render_page\""))
            }
            Key::Wrapper => attr.wrapper = errors.handle(values::type_name(&meta)),
            Key::On
            | Key::Max
            | Key::Scope
            | Key::Show
            | Key::Backoff
            | Key::Base
            | Key::Cap
            | Key::Jitter => {
                unreachable!("not keys of the attribute")
            }
            Key::MaxWait => {
                attr.max_wait = errors.handle(durations::duration(&meta, "max_wait", "100ms"));
            }
            Key::Deadline => {
                attr.deadline = errors.handle(durations::duration(&meta, "deadline", "5s"));
            }
            Key::Breaker => attr.breaker = errors.handle(values::breaker(&meta)),
        }
    }
    attr
}
