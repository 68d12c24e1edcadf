//! Construction-time checks: `Runtime::builder().build()` and `bind`.

use herta::{BindError, ConfigError, Failure, Resource, Runtime};

#[test]
fn invalid_runtime_declarations_are_errors_not_panics() {
    let cases: Vec<(Vec<Resource>, ConfigError)> = vec![
        (vec![], ConfigError::NoResources),
        (vec![Resource::new("", 1)], ConfigError::EmptyName),
        (
            vec![Resource::new("worker", 0)],
            ConfigError::ZeroCapacity {
                resource: "worker".into(),
            },
        ),
        (
            vec![Resource::new("worker", 1), Resource::new("worker", 2)],
            ConfigError::DuplicateResource {
                resource: "worker".into(),
            },
        ),
    ];
    for (resources, expected) in cases {
        let builder = resources
            .into_iter()
            .fold(Runtime::builder(), |b, r| b.resource(r));
        assert_eq!(builder.build().unwrap_err(), expected);
    }
}

#[test]
fn config_errors_explain_themselves() {
    let err = Runtime::builder().build().unwrap_err();
    assert!(err.to_string().contains("at least one resource"), "{err}");
}

#[herta::operation(effect = Pure, resources("wroker" = 1))]
async fn typo() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("worker" = 5))]
async fn greedy() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("unrelated" = 1))]
async fn elsewhere() -> Result<(), Failure<String>> {
    Ok(())
}

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(Resource::new("db-write", 2))
        .build()
        .unwrap()
}

/// A rate budget whose name is close to a declared one, named by a
/// constant the builder lacks.
const UP_RATE: Resource = Resource::new("worker-rate", 1);

#[herta::operation(effect = Pure, resources(UP_RATE = 1))]
async fn undeclared_constant() -> Result<(), Failure<String>> {
    Ok(())
}

#[test]
fn bind_tells_to_add_an_undeclared_constant_instead_of_a_near_miss() {
    // "worker-rate" is close to the declared "worker", but a constant is not a
    // typo: the fix is to add it to the builder.
    let err = UndeclaredConstant::bind(&runtime()).unwrap_err();
    assert_eq!(
        err,
        BindError::UnknownResource {
            operation: "undeclared_constant",
            resource: "worker-rate",
            constant: Some("UP_RATE"),
            suggestion: None,
        }
    );
    assert_eq!(
        err.to_string(),
        "operation `undeclared_constant` uses resource `worker-rate` (the constant `UP_RATE`), \
         which this runtime does not declare; add `.resource(UP_RATE)` to the builder"
    );
}

#[test]
fn bind_names_the_operation_and_suggests_the_near_miss() {
    let err = Typo::bind(&runtime()).unwrap_err();
    assert_eq!(
        err,
        BindError::UnknownResource {
            operation: "typo",
            resource: "wroker",
            constant: None,
            suggestion: Some("worker".into()),
        }
    );
    assert_eq!(
        err.to_string(),
        "operation `typo` uses resource `wroker`, which this runtime does not declare; \
         did you mean `worker`?"
    );
    let err = Elsewhere::bind(&runtime()).unwrap_err();
    assert!(
        matches!(
            err,
            BindError::UnknownResource {
                suggestion: None,
                ..
            }
        ),
        "{err:?}"
    );
    // With nothing close, the fix is to declare it.
    assert!(
        err.to_string()
            .ends_with("; declare it with `Runtime::builder().resource(..)`"),
        "{err}"
    );
}

#[test]
fn bind_refuses_units_above_capacity() {
    let err = Greedy::bind(&runtime()).unwrap_err();
    assert_eq!(
        err,
        BindError::UnitsAboveCapacity {
            operation: "greedy",
            resource: "worker",
            units: 5,
            capacity: 4,
        }
    );
    assert!(err
        .to_string()
        .contains("needs 5 units of resource `worker`"));
}

#[herta::operation(effect = Pure, resources("worker" = 1), serialize_by(id, scope = "accounts"))]
async fn by_number(id: u64) -> Result<(), Failure<String>> {
    let _ = id;
    Ok(())
}

#[herta::operation(effect = Pure, resources("worker" = 1), serialize_by(id, scope = "accounts"))]
async fn by_text(id: String) -> Result<(), Failure<String>> {
    let _ = id;
    Ok(())
}

#[test]
fn a_shared_scope_needs_one_key_type() {
    let rt = runtime();
    ByNumber::bind(&rt).unwrap();
    let err = ByText::bind(&rt).unwrap_err();
    assert!(
        matches!(
            err,
            BindError::ScopeKeyMismatch {
                operation: "by_text",
                existing: "u64",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn bind_after_shutdown_is_refused_with_a_clear_error() {
    let rt = Runtime::builder()
        .resource(Resource::new("unrelated", 1))
        .build()
        .unwrap();
    let before = Elsewhere::bind(&rt);
    assert!(before.is_ok(), "an open runtime binds");
    rt.shutdown().await;
    let err = Elsewhere::bind(&rt).unwrap_err();
    assert!(
        matches!(
            err,
            BindError::RuntimeClosed {
                operation: "elsewhere"
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "operation `elsewhere` cannot be bound: the runtime is closed (shut down)"
    );
    // A clone of the runtime handle is the same runtime: closed too.
    assert!(Elsewhere::bind(&rt.clone()).is_err());
}
