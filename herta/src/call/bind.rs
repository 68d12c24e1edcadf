//! Bind-time checks: what the compiler could not check about a contract,
//! checked once against the runtime it is bound to (resources named by
//! string, units against this runtime's capacities, shared key spaces).

use std::hash::Hash;
use std::sync::Arc;

use super::table_key::TableKey;
use crate::arbiter::{Arbiter, Need, Needs};
use crate::breaker::circuit::Circuit;
use crate::contract::Contract;
use crate::error::BindError;
use crate::keys::KeyTable;
use crate::resource::Resource;
use crate::runtime::Runtime;

/// Refuses to bind to a closed runtime: every call would be refused.
///
/// # Errors
///
/// [`BindError::RuntimeClosed`] once `close` or `shutdown` was called.
pub(super) fn open(runtime: &Runtime, contract: &Contract) -> Result<(), BindError> {
    if runtime.is_closed() {
        return Err(BindError::RuntimeClosed {
            operation: contract.operation(),
        });
    }
    Ok(())
}

/// The arbiter needs of `contract` on `runtime`, interned by its arbiter
/// (which sorts them by budget index) and registered there, so that no
/// budget shrinks below them (`Runtime::set_capacity`).
///
/// # Errors
///
/// [`BindError`] for an unknown resource (with the closest declared name),
/// 0 units, units above the capacity now, or a resource named twice.
pub(super) fn needs(runtime: &Runtime, contract: &Contract) -> Result<Needs, BindError> {
    let arbiter = &runtime.inner.arbiter;
    let declared = &runtime.inner.resources;
    let needs = (0..contract.resources().len())
        .map(|i| need(declared, arbiter, contract, i))
        .collect::<Result<Vec<Need>, BindError>>()?;
    // Checked again under the arbiter's lock: a resize may have come
    // between.
    arbiter
        .bind(contract.operation(), needs)
        .map_err(|above| BindError::UnitsAboveCapacity {
            operation: contract.operation(),
            resource: declared[above.resource].name(),
            units: above.units,
            capacity: above.capacity,
        })
}

/// The need of the `i`-th resource `contract` uses, checked (its units
/// against the budget's capacity now).
fn need(
    declared: &[Resource],
    arbiter: &Arbiter,
    contract: &Contract,
    i: usize,
) -> Result<Need, BindError> {
    let operation = contract.operation();
    let used = &contract.resources()[i];
    let resource = used.resource();
    if contract.resources()[..i]
        .iter()
        .any(|u| u.resource() == resource)
    {
        return Err(BindError::DuplicateResource {
            operation,
            resource,
        });
    }
    let Some(index) = declared.iter().position(|r| r.name() == resource) else {
        return Err(BindError::UnknownResource {
            operation,
            resource,
            constant: used.constant(),
            suggestion: match used.constant() {
                Some(_) => None,
                None => herta_contract::closest(resource, declared.iter().map(Resource::name))
                    .map(str::to_owned),
            },
        });
    };
    let capacity = arbiter.capacity(index);
    if used.units() == 0 {
        return Err(BindError::ZeroUnits {
            operation,
            resource,
        });
    }
    if used.units() > capacity {
        return Err(BindError::UnitsAboveCapacity {
            operation,
            resource,
            units: used.units(),
            capacity,
        });
    }
    Ok(Need {
        resource: index,
        units: used.units(),
    })
}

/// The key table of `contract`'s key space (its own, or its shared scope),
/// if it serializes by a key.
///
/// # Errors
///
/// [`BindError::ScopeKeyMismatch`] when a shared scope is already keyed by
/// another type.
pub(super) fn key_table<K>(
    runtime: &Runtime,
    contract: &Contract,
) -> Result<Option<Arc<KeyTable<TableKey<K>>>>, BindError>
where
    K: Clone + Hash + Eq + Send + Sync + 'static,
{
    let Some(spec) = contract.serialize_by() else {
        return Ok(None);
    };
    let operation = contract.operation();
    let space = match spec.scope() {
        Some(scope) => format!("scope:{scope}"),
        None => format!("operation:{operation}"),
    };
    let key_type = std::any::type_name::<K>();
    runtime
        .key_table::<TableKey<K>>(space, key_type)
        .map(Some)
        .map_err(|existing| BindError::ScopeKeyMismatch {
            operation,
            scope: spec.scope().unwrap_or(operation).to_owned(),
            key_type,
            existing,
        })
}

/// The state, in `runtime`, of the breaker `contract` names (if it names
/// one); an unknown name is refused with the closest declared name.
pub(super) fn breaker(
    runtime: &Runtime,
    contract: &Contract,
) -> Result<Option<Arc<Circuit>>, BindError> {
    let Some(name) = contract.breaker() else {
        return Ok(None);
    };
    match runtime.circuit(name) {
        Some(circuit) => Ok(Some(circuit)),
        None => Err(BindError::UnknownBreaker {
            operation: contract.operation(),
            breaker: name,
            constant: contract.breaker_constant(),
            suggestion: match contract.breaker_constant() {
                Some(_) => None,
                None => herta_contract::closest(
                    name,
                    runtime.inner.breakers.iter().map(|c| c.breaker.name()),
                )
                .map(str::to_owned),
            },
        }),
    }
}
