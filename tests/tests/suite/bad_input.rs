//! Bad input never panics the runtime (RELIABILITY.md §5): a walk over every
//! public constructor and `bind` with every invalid input the public API can
//! express. Each input runs under `catch_unwind`, so a panic fails the test
//! naming the input, and each must come back as the documented error.
//!
//! What the public API lets a program construct at run time:
//!
//! * `Runtime::builder().resource(..).build()` → [`ConfigError`];
//! * `Resource::new(name, capacity)` (a `const fn`: any name, any capacity;
//!   its invalid values are refused by `build`);
//! * `Wrapper::bind(&runtime)` → [`BindError`]; the contract itself is a
//!   compile-time constant, and everything invalid in it that the macro can
//!   see (0 or negative units, unsafe retries, bad timeouts, a resource named
//!   twice by the same token, …) is a compile error covered by `ui-tests/`;
//!   what `bind` can still meet is walked here: unknown names (string or
//!   constant, a constant with an empty name, misspelt, other case,
//!   non-ASCII, the second of two), units above this runtime's capacity
//!   (string, `u32::MAX`, the second of two, or a constant declared larger
//!   than the runtime's resource of that name), and a shared scope keyed by
//!   two types (in both orders);
//! * `Failure::new(outcome, e)` with every outcome, `Success` included;
//! * calls, `bind`, `close` and `shutdown` in any order after shutdown;
//! * keys whose `Debug` is long, multi-byte, or absent.
//!
//! `BindError::ZeroUnits` and `BindError::DuplicateResource` cannot be
//! reached from the public API: 0 units, a blank name, and one resource
//! named twice (even through two constants, or a constant and a string, of
//! the same name) are compile errors; the runtime keeps the checks for the
//! hidden contract constructor.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::panic_message;
use herta::{BindError, Busy, ConfigError, Error, Failure, Outcome, Resource, Runtime};

/// Runs `f`, failing the test with `what` if it panics.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => panic!("{what}: panicked: {}", panic_message(&*p)),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn build(resources: &[Resource]) -> Result<Runtime, ConfigError> {
    resources
        .iter()
        .fold(Runtime::builder(), |b, r| b.resource(*r))
        .build()
}

#[test]
fn every_invalid_runtime_declaration_is_a_config_error() {
    let zero = |name: &str| ConfigError::ZeroCapacity {
        resource: name.into(),
    };
    let twice = |name: &str| ConfigError::DuplicateResource {
        resource: name.into(),
    };
    let cases: Vec<(&str, Vec<Resource>, ConfigError)> = vec![
        ("no resource", vec![], ConfigError::NoResources),
        (
            "empty name",
            vec![Resource::new("", 1)],
            ConfigError::EmptyName,
        ),
        (
            "empty name and capacity 0",
            vec![Resource::new("", 0)],
            ConfigError::EmptyName,
        ),
        ("capacity 0", vec![Resource::new("w", 0)], zero("w")),
        (
            "the same name twice",
            vec![Resource::new("w", 1), Resource::new("w", 1)],
            twice("w"),
        ),
        (
            "the same name twice, other capacities",
            vec![Resource::new("w", 1), Resource::new("w", 7)],
            twice("w"),
        ),
        (
            "twice, and capacity 0",
            vec![Resource::new("w", 0), Resource::new("w", 0)],
            zero("w"),
        ),
        (
            "an empty name after a good one",
            vec![Resource::new("a", 1), Resource::new("", 1)],
            ConfigError::EmptyName,
        ),
        (
            "capacity 0 after a good one",
            vec![Resource::new("a", 1), Resource::new("b", 0)],
            zero("b"),
        ),
        (
            "a duplicate far from its twin",
            vec![
                Resource::new("a", 1),
                Resource::new("b", 2),
                Resource::new("c", 3),
                Resource::new("a", 4),
            ],
            twice("a"),
        ),
    ];
    for (what, resources, expected) in cases {
        let got = no_panic(what, || build(&resources));
        assert_eq!(got.as_ref().err(), Some(&expected), "{what}");
        let err = got.unwrap_err();
        assert!(!err.to_string().is_empty(), "{what}: a message");
        let _: &(dyn std::error::Error + Send + Sync + 'static) = &err;
    }
    // A builder is a value: building it twice refuses twice, the same way.
    let builder = Runtime::builder().resource(Resource::new("w", 0));
    assert_eq!(builder.clone().build().unwrap_err(), zero("w"));
    assert_eq!(builder.build().unwrap_err(), zero("w"));
}

#[test]
fn odd_but_valid_runtime_declarations_build() {
    let long = leak("r".repeat(1 << 20));
    let many: Vec<Resource> = (0..1000)
        .map(|i| Resource::new(leak(format!("r{i}")), 1 + i))
        .collect();
    let cases: Vec<(&str, Vec<Resource>)> = vec![
        ("capacity u32::MAX", vec![Resource::new("w", u32::MAX)]),
        ("a blank name", vec![Resource::new(" ", 1)]),
        ("a non-ASCII name", vec![Resource::new("wörker-🦀", 1)]),
        ("a 1 MiB name", vec![Resource::new(long, 1)]),
        (
            "names differing only in case",
            vec![Resource::new("w", 1), Resource::new("W", 1)],
        ),
        ("a thousand resources", many),
    ];
    for (what, resources) in cases {
        let rt =
            no_panic(what, || build(&resources)).unwrap_or_else(|e| panic!("{what}: refused: {e}"));
        let stats = no_panic(what, || rt.stats());
        assert_eq!(stats.resources.len(), resources.len(), "{what}");
        let _ = no_panic(what, || (format!("{stats}"), format!("{rt:?}")));
    }
}

// Contracts that `bind` must refuse. Each compiles (the macro cannot see the
// runtime); `bind` meets the problem.

const BIG_WORKER: Resource = Resource::new("worker", 100);
const GHOST: Resource = Resource::new("ghost", 1);
const NAMELESS: Resource = Resource::new("", 1);

macro_rules! bad_op {
    ($fn:ident, $($contract:tt)*) => {
        #[herta::operation($($contract)*)]
        async fn $fn() -> Result<(), Failure<String>> {
            Ok(())
        }
    };
}

bad_op!(typo, effect = Pure, resources("wroker" = 1));
bad_op!(other_case, effect = Pure, resources("WORKER" = 1));
bad_op!(non_ascii, effect = Pure, resources("wörker" = 1));
bad_op!(unrelated, effect = Pure, resources("zzz-unrelated" = 1));
bad_op!(ghost, effect = Pure, resources(GHOST = 1));
bad_op!(nameless, effect = Pure, resources(NAMELESS = 1));
bad_op!(
    second_unknown,
    effect = Pure,
    resources("worker" = 1, "db-wirte" = 1)
);
bad_op!(greedy, effect = Pure, resources("worker" = 5));
bad_op!(greediest, effect = Pure, resources("worker" = 4294967295));
bad_op!(greedy_constant, effect = Pure, resources(BIG_WORKER = 50));
bad_op!(
    second_greedy,
    effect = Pure,
    resources("worker" = 1, "db-write" = 3)
);

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

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("worker", 4))
        .resource(Resource::new("db-write", 2))
        .build()
        .unwrap()
}

fn unknown(operation: &'static str, resource: &'static str) -> impl Fn(&BindError) -> bool {
    move |e| {
        matches!(e, BindError::UnknownResource { operation: o, resource: r, .. }
                    if *o == operation && *r == resource)
    }
}

fn above(operation: &'static str, units: u32, capacity: u32) -> impl Fn(&BindError) -> bool {
    move |e| {
        matches!(e, BindError::UnitsAboveCapacity { operation: o, units: u, capacity: c, .. }
                    if *o == operation && *u == units && *c == capacity)
    }
}

#[test]
fn every_bind_error_the_public_api_can_reach() {
    type Bind = fn(&Runtime) -> Result<(), BindError>;
    type Check = Box<dyn Fn(&BindError) -> bool>;
    let cases: Vec<(&str, Bind, Check)> = vec![
        (
            "misspelt name",
            |rt| Typo::bind(rt).map(drop),
            Box::new(
                |e| matches!(e, BindError::UnknownResource { suggestion: Some(s), .. } if s == "worker"),
            ),
        ),
        (
            "name in other case",
            |rt| OtherCase::bind(rt).map(drop),
            Box::new(unknown("other_case", "WORKER")),
        ),
        (
            "non-ASCII near miss",
            |rt| NonAscii::bind(rt).map(drop),
            Box::new(unknown("non_ascii", "wörker")),
        ),
        (
            "unrelated name",
            |rt| Unrelated::bind(rt).map(drop),
            Box::new(|e| {
                matches!(
                    e,
                    BindError::UnknownResource {
                        suggestion: None,
                        ..
                    }
                )
            }),
        ),
        (
            "undeclared constant",
            |rt| Ghost::bind(rt).map(drop),
            Box::new(unknown("ghost", "ghost")),
        ),
        (
            "constant with an empty name",
            |rt| Nameless::bind(rt).map(drop),
            Box::new(unknown("nameless", "")),
        ),
        (
            "second resource unknown",
            |rt| SecondUnknown::bind(rt).map(drop),
            Box::new(
                |e| matches!(e, BindError::UnknownResource { resource: "db-wirte", suggestion: Some(s), .. } if s == "db-write"),
            ),
        ),
        (
            "units above capacity",
            |rt| Greedy::bind(rt).map(drop),
            Box::new(above("greedy", 5, 4)),
        ),
        (
            "u32::MAX units",
            |rt| Greediest::bind(rt).map(drop),
            Box::new(above("greediest", u32::MAX, 4)),
        ),
        (
            "constant larger than the runtime's",
            |rt| GreedyConstant::bind(rt).map(drop),
            Box::new(above("greedy_constant", 50, 4)),
        ),
        (
            "second resource too small",
            |rt| SecondGreedy::bind(rt).map(drop),
            Box::new(above("second_greedy", 3, 2)),
        ),
    ];
    for (what, bind, check) in &cases {
        let rt = runtime();
        let err = no_panic(what, || bind(&rt)).expect_err(what);
        assert!(check(&err), "{what}: {err:?}");
        let message = err.to_string();
        assert!(!message.is_empty(), "{what}");
        // The runtime is untouched and still serves.
        assert!(common::all_free(&rt), "{what}");
        let _: &(dyn std::error::Error + Send + Sync + 'static) = &err;
    }

    // A shared scope keyed by two types, in both orders.
    let rt = runtime();
    ByNumber::bind(&rt).unwrap();
    let err = no_panic("scope u64 then String", || ByText::bind(&rt)).unwrap_err();
    assert!(
        matches!(&err, BindError::ScopeKeyMismatch { operation: "by_text", scope, .. } if scope == "accounts"),
        "{err:?}"
    );
    let rt = runtime();
    ByText::bind(&rt).unwrap();
    let err = no_panic("scope String then u64", || ByNumber::bind(&rt)).unwrap_err();
    assert!(
        matches!(
            err,
            BindError::ScopeKeyMismatch {
                operation: "by_number",
                ..
            }
        ),
        "{err:?}"
    );
    // Binding the same operation again, or to another runtime, is fine.
    ByText::bind(&rt).unwrap();
    ByText::bind(&runtime()).unwrap();
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), retry(on = Transient, max = 3))]
async fn claims_success(
    attempt_log: std::sync::Arc<std::sync::atomic::AtomicU32>,
) -> Result<(), Failure<String>> {
    attempt_log.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Err(Failure::new(
        Outcome::Success,
        "an error that claims success".into(),
    ))
}

#[test]
fn failures_of_every_outcome_are_built_and_success_is_never_an_error() {
    for outcome in [
        Outcome::Success,
        Outcome::Transient,
        Outcome::Uncertain,
        Outcome::Permanent,
        Outcome::Throttled,
    ] {
        let f = no_panic("Failure::new", || Failure::new(outcome, "e"));
        let expected = if outcome == Outcome::Success {
            Outcome::Permanent
        } else {
            outcome
        };
        assert_eq!(f.outcome(), expected);
        let _ = no_panic("Failure display", || format!("{f:?} {}", f.error()));
    }
}

#[tokio::test(start_paused = true)]
async fn an_error_claiming_success_is_permanent_and_not_retried() {
    let rt = runtime();
    let op = ClaimsSuccess::bind(&rt).unwrap();
    let log = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let err = op.call(log.clone()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Failed {
                outcome: Outcome::Permanent,
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(log.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[herta::operation(effect = Idempotent, resources("worker" = 1))]
async fn unkeyed() -> Result<(), Failure<String>> {
    Ok(())
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), serialize_by = key)]
async fn keyed_wait(key: String) -> Result<(), Failure<String>> {
    let _ = key;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("worker" = 1), serialize_by = key,
                   admission = Reject)]
async fn keyed_reject(key: String) -> Result<(), Failure<String>> {
    let _ = key;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn anything_after_shutdown_is_stopping_not_a_panic() {
    let rt = runtime();
    let before = Unkeyed::bind(&rt).unwrap();
    let unkeyed = before.clone();
    let keyed_wait = KeyedWait::bind(&rt).unwrap();
    let keyed_reject = KeyedReject::bind(&rt).unwrap();
    rt.shutdown().await;
    // Binding after shutdown is refused: every call would be.
    assert!(matches!(
        Unkeyed::bind(&rt),
        Err(herta::BindError::RuntimeClosed { .. })
    ));
    assert!(KeyedWait::bind(&rt).is_err());
    for (what, result) in [
        ("bound before", before.call().await.err()),
        ("a clone", unkeyed.call().await.err()),
        ("keyed, Wait", keyed_wait.call("k".into()).await.err()),
        ("keyed, Reject", keyed_reject.call("k".into()).await.err()),
    ] {
        assert!(
            matches!(result, Some(Error::Stopping { .. })),
            "{what}: {result:?}"
        );
    }
    // Closing and shutting down again are no-ops.
    rt.close();
    rt.shutdown().await;
    rt.close();
    let s = rt.stats();
    assert_eq!(
        (s.admitted, s.refused_stopping, s.in_flight),
        (0, 4, 0),
        "{s}"
    );
    assert!(common::all_free(&rt));
}

/// A key type without `Debug`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Opaque(u32);

#[herta::operation(effect = NonIdempotent, resources("worker" = 1),
                   serialize_by(key, show_key = true), admission = Reject)]
async fn hold_text(
    key: String,
    gate: std::sync::Arc<tokio::sync::Notify>,
) -> Result<(), Failure<String>> {
    let _ = key;
    gate.notified().await;
    Ok(())
}

#[herta::operation(effect = NonIdempotent, resources("worker" = 1),
                   serialize_by(key, show_key = true), admission = Reject)]
async fn hold_opaque(
    key: Opaque,
    gate: std::sync::Arc<tokio::sync::Notify>,
) -> Result<(), Failure<String>> {
    let _ = key;
    gate.notified().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn busy_keys_are_described_whatever_their_debug() {
    let rt = runtime();
    let text = HoldText::bind(&rt).unwrap();
    let opaque = HoldOpaque::bind(&rt).unwrap();
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    // Multi-byte characters straddle the 64-character cut.
    for key in [
        "é".repeat(100),
        "🦀".repeat(40),
        "k".repeat(10_000),
        String::new(),
    ] {
        let holder = tokio::spawn({
            let (op, key, gate) = (text.clone(), key.clone(), gate.clone());
            async move { op.call(key, gate).await }
        });
        common::until(|| rt.stats().keys == 1).await;
        let err = text.call(key.clone(), gate.clone()).await.unwrap_err();
        let Error::Throttled {
            busy: Busy::Key {
                value: Some(shown), ..
            },
            ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert!(shown.len() <= 64, "shown key is cut: {} bytes", shown.len());
        assert!(!err.to_string().is_empty());
        gate.notify_one();
        common::within(holder).await.unwrap().unwrap();
    }
    let holder = tokio::spawn({
        let (op, gate) = (opaque.clone(), gate.clone());
        async move { op.call(Opaque(1), gate).await }
    });
    common::until(|| rt.stats().keys == 1).await;
    let err = opaque.call(Opaque(1), gate.clone()).await.unwrap_err();
    assert!(
        matches!(&err, Error::Throttled { busy: Busy::Key { value: Some(key), .. }, .. } if key.contains("Opaque")),
        "{err:?}"
    );
    gate.notify_one();
    common::within(holder).await.unwrap().unwrap();
    assert!(common::all_free(&rt));
}

/// A key whose `Hash` changes every time it is hashed: a logic error in the
/// key type, like one in a `HashMap` key.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FickleKey(u32);

static FICKLE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::hash::Hash for FickleKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        FICKLE
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .hash(state);
        self.0.hash(state);
    }
}

#[herta::operation(effect = Idempotent, resources("worker" = 1), serialize_by = key)]
async fn fickle(key: FickleKey) -> Result<u32, Failure<String>> {
    Ok(key.0)
}

/// `std`'s `HashMap` confines such a logic error to the map that saw it;
/// herta's key table is shared by every caller of the key space, so it
/// must not turn the error into panics for other callers (nor leak).
#[tokio::test]
async fn a_key_with_an_inconsistent_hash_does_not_panic_the_runtime() {
    use futures_util::FutureExt;
    let rt = runtime();
    let op = Fickle::bind(&rt).unwrap();
    for i in 0..10_000u32 {
        let result = std::panic::AssertUnwindSafe(op.call(FickleKey(i)))
            .catch_unwind()
            .await;
        match result {
            Ok(Ok(v)) => assert_eq!(v, i),
            Ok(Err(e)) => panic!("call {i}: {e}"),
            Err(p) => panic!("call {i} panicked in the runtime: {}", panic_message(&*p)),
        }
    }
    assert!(common::all_free(&rt), "{}", rt.stats());
}
