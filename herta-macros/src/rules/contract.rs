//! Rule 16: what `#[herta::contract]` goes on — a unit struct without
//! generics (the struct only stands for the contract; no value of it is
//! ever needed, and a generic contract would be one contract per type).

use syn::spanned::Spanned;
use syn::{Fields, ItemStruct};

use crate::diag::{error, error_spanned};

/// Rule 16: a contract is declared on a unit struct without generics.
pub(super) fn rule_16_unit_struct(item: &ItemStruct) -> Vec<syn::Error> {
    let name = &item.ident;
    let mut errors = Vec::new();
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        errors.push(error_spanned(
            &item.generics,
            format_args!("a contract cannot be generic: `{name}` stands for one contract, bound once to a runtime"),
            format_args!("remove the generics: `struct {name};`"),
        ));
    }
    if !matches!(item.fields, Fields::Unit) {
        errors.push(error(
            item.fields.span(),
            format_args!("a contract is a unit struct, but `{name}` has fields: nothing reads them, the contract is the attribute"),
            format_args!("declare it as `struct {name};`, and keep the data in the requests of the service it wraps"),
        ));
    }
    errors
}
