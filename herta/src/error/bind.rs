//! [`BindError`]: why a contract could not be bound to a runtime.

/// Why `Operation::bind` refused to bind a contract to a runtime.
///
/// `bind` runs the checks the compiler could not: resources named by string,
/// units against this runtime's capacities, and shared key spaces.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The contract names a resource this runtime does not declare.
    ///
    /// Named by a constant (`resources(UP_RATE = 1)`), the fix is to add the
    /// constant to the builder: a constant cannot be a typo, so there is no
    /// suggestion. Named by a string, `suggestion` is the closest declared
    /// name, if one is close.
    #[error(
        "operation `{operation}` uses resource `{resource}`{}, which this runtime does not declare; {}",
        constant.map_or_else(String::new, |c| format!(" (the constant `{c}`)")),
        fix("resource", *constant, suggestion.as_deref())
    )]
    UnknownResource {
        /// The operation's name.
        operation: &'static str,
        /// The name it used.
        resource: &'static str,
        /// The constant that named it, as written, if a constant did.
        constant: Option<&'static str>,
        /// The closest declared name, if one is close (only for a name
        /// written as a string).
        suggestion: Option<String>,
    },
    /// The contract names a circuit breaker this runtime does not declare.
    ///
    /// As for [`BindError::UnknownResource`]: named by a constant, the fix
    /// is to add it to the builder; named by a string, `suggestion` is the
    /// closest declared name, if one is close.
    #[error(
        "operation `{operation}` uses breaker `{breaker}`{}, which this runtime does not declare; {}",
        constant.map_or_else(String::new, |c| format!(" (the constant `{c}`)")),
        fix("breaker", *constant, suggestion.as_deref())
    )]
    UnknownBreaker {
        /// The operation's name.
        operation: &'static str,
        /// The name it used.
        breaker: &'static str,
        /// The constant that named it, as written, if a constant did.
        constant: Option<&'static str>,
        /// The closest declared name, if one is close (only for a name
        /// written as a string).
        suggestion: Option<String>,
    },
    /// The contract asks for more units than the resource's capacity, so no
    /// call could ever be admitted.
    #[error(
        "operation `{operation}` needs {units} units of resource `{resource}`, \
         but its capacity in this runtime is {capacity}"
    )]
    UnitsAboveCapacity {
        /// The operation's name.
        operation: &'static str,
        /// The resource's name.
        resource: &'static str,
        /// Units one call asks for.
        units: u32,
        /// The resource's capacity in this runtime when it was bound (it
        /// may have been changed by `Runtime::set_capacity`).
        capacity: u32,
    },
    /// The contract names the same resource twice.
    #[error("operation `{operation}` names resource `{resource}` twice; name it once with the total units")]
    DuplicateResource {
        /// The operation's name.
        operation: &'static str,
        /// The repeated name.
        resource: &'static str,
    },
    /// The contract asks for 0 units of a resource.
    #[error("operation `{operation}` asks for 0 units of resource `{resource}`; use at least 1")]
    ZeroUnits {
        /// The operation's name.
        operation: &'static str,
        /// The resource's name.
        resource: &'static str,
    },
    /// Operations sharing a key scope serialize by different key types.
    #[error(
        "operation `{operation}` serializes by `{key_type}` in scope `{scope}`, \
         but that scope is already keyed by `{existing}`; a scope needs one key type"
    )]
    ScopeKeyMismatch {
        /// The operation's name.
        operation: &'static str,
        /// The shared scope.
        scope: String,
        /// This operation's key type.
        key_type: &'static str,
        /// The key type the scope was first bound with.
        existing: &'static str,
    },
    /// The runtime is closed (`close` or `shutdown` was called): every call
    /// would return `Error::Stopping`, so binding is refused up front.
    #[error("operation `{operation}` cannot be bound: the runtime is closed (shut down)")]
    RuntimeClosed {
        /// The operation's name.
        operation: &'static str,
    },
}

/// The fix an unknown resource or breaker's message states: add the
/// constant to the builder, take the near miss, or declare the name.
fn fix(kind: &str, constant: Option<&str>, suggestion: Option<&str>) -> String {
    match (constant, suggestion) {
        (Some(c), _) => format!("add `.{kind}({c})` to the builder"),
        (None, Some(s)) => format!("did you mean `{s}`?"),
        (None, None) => format!("declare it with `Runtime::builder().{kind}(..)`"),
    }
}
