//! The compile-time contract rules (numbered as in the documentation of
//! `#[herta::operation]`), one function per rule, each reading the
//! [model](crate::model) and returning its errors, spanned on the
//! offending token and worded as the rule in one sentence plus a `help:`
//! line. [`check`] runs them all, so every violation in one
//! attribute is reported together, in source order.
//!
//! Rule 9 (retry needs `Clone` parameters), the type half of rule 8 (a key
//! must be `Clone + Hash + Eq + Send + Sync + 'static`) and the capacity half
//! of rule 6 (units above a constant resource's capacity) need types or
//! constant values, so [`expand`](crate::expand) leaves them to rustc, with
//! the offending token's span and the rule's message (traits with
//! `#[diagnostic::on_unimplemented]`). Rule 12 is in
//! [`classify`](crate::classify).

mod contract;
mod function;
mod keys_and_words;
mod resources;
mod retry;
mod state;
mod values;
mod waiting;

use crate::diag::Errors;
use crate::model::{Attr, ContractItem, Operation};

/// Applies every rule to `op`, pushing the errors to `errors`.
pub(crate) fn check(op: &Operation, errors: &mut Errors) {
    let (attr, handler) = (&op.attr, &op.handler);
    attribute_rules_before_item(attr, errors);
    errors.extend(values::rule_8_serialize_by_parameter(attr, handler));
    errors.extend(values::rule_10_timeout(attr));
    errors.extend(function::rule_11_handler_shape(handler));
    errors.extend(function::rule_11_context_first(handler));
    errors.extend(state::rule_15_state(&handler.states, &handler.sig.ident));
    attribute_rules_after_item(attr, errors);
}

/// Applies the rules of a contract without a handler, in the same order:
/// those of the attribute, and rule 16 (a unit struct). The rules about a
/// handler have no function to read: a contract's `serialize_by` names its
/// key (only rule 8's empty-scope half applies), and rule 9 (`Clone`
/// arguments) becomes the layer's bound on requests (`herta::tower`).
pub(crate) fn check_contract(contract: &ContractItem, errors: &mut Errors) {
    let attr = &contract.attr;
    attribute_rules_before_item(attr, errors);
    errors.extend(values::rule_8_scope_not_empty(attr));
    errors.extend(values::rule_10_timeout(attr));
    errors.extend(contract::rule_16_unit_struct(&contract.item));
    attribute_rules_after_item(attr, errors);
}

/// The rules of the attribute alone checked before the item's: rules 1
/// to 7. (The errors are emitted in source order whatever the order the
/// rules run in: `diag::Errors`.)
fn attribute_rules_before_item(attr: &Attr, errors: &mut Errors) {
    errors.extend(keys_and_words::rule_1_effect_required(attr));
    errors.extend(keys_and_words::rule_2_unknown_words(attr));
    errors.extend(retry::rule_3_no_uncertain_retry_of_non_idempotent(attr));
    errors.extend(retry::rule_4_never_retried_outcomes(attr));
    errors.extend(retry::rule_5_retry_attempts(attr));
    errors.extend(resources::rule_6_units(attr));
    errors.extend(resources::rule_7_resource_once(attr));
}

/// The rules of the attribute alone checked after the item's: duplicate
/// keys, the name, backoff, the durations, `max_wait` and the deadline.
fn attribute_rules_after_item(attr: &Attr, errors: &mut Errors) {
    errors.extend(keys_and_words::rule_11_duplicate_keys(attr));
    errors.extend(values::name_not_empty(attr));
    errors.extend(retry::rule_13_backoff(attr));
    errors.extend(waiting::rule_10_durations(attr));
    errors.extend(waiting::rule_14_max_wait_needs_wait(attr));
    errors.extend(waiting::rule_17_limits_within_deadline(attr));
}
