//! `herta::Error` is a `std::error::Error` whatever the handler's error
//! type, so `?` works in `anyhow` and `Box<dyn Error>` programs, and
//! `source()` keeps the handler's chain.

use std::error::Error as _;

use anyhow::Context as _;
use herta::{Resource, Runtime};

fn runtime() -> Runtime {
    Runtime::builder()
        .resource(Resource::new("io", 1))
        .build()
        .unwrap()
}

#[herta::operation(effect = Idempotent, resources("io" = 1))]
async fn load(path: String) -> anyhow::Result<String> {
    std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))
}

#[herta::operation(effect = Idempotent, resources("io" = 1))]
async fn boxed(path: String) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    Ok(std::fs::read_to_string(path)?)
}

#[derive(Debug, thiserror::Error)]
#[error("config unreadable")]
struct ConfigError(#[source] std::io::Error);

#[herta::operation(effect = Idempotent, resources("io" = 1))]
async fn typed(path: String) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(ConfigError)
}

const MISSING: &str = "/nonexistent/herta/config.toml";

/// A function of an `anyhow` program: `?` on the call just works.
async fn app(rt: &Runtime) -> anyhow::Result<String> {
    let text = Load::bind(rt)?.call(MISSING.to_owned()).await?;
    Ok(text)
}

#[tokio::test]
async fn question_mark_works_in_an_anyhow_program_and_keeps_the_chain() {
    let rt = runtime();
    let err = app(&rt).await.unwrap_err();
    let chain: Vec<String> = err.chain().map(|e| e.to_string()).collect();
    assert!(chain[0].starts_with("operation `load` failed"), "{chain:?}");
    assert_eq!(chain[1], format!("reading {MISSING}"), "{chain:?}");
    assert!(
        err.chain()
            .any(|e| e.downcast_ref::<std::io::Error>().is_some()),
        "the io::Error is in the chain: {chain:?}"
    );
}

#[tokio::test]
async fn a_boxed_error_handler_works_with_question_mark_and_keeps_its_source() {
    async fn app(rt: &Runtime) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Boxed::bind(rt)?.call(MISSING.to_owned()).await?)
    }
    let rt = runtime();
    let err = app(&rt).await.unwrap_err();
    let source = err.source().expect("the handler's error is the source");
    assert!(
        source.downcast_ref::<std::io::Error>().is_some(),
        "{source:?}"
    );
}

#[tokio::test]
async fn a_std_error_handler_is_the_source_as_before() {
    let rt = runtime();
    let err = Typed::bind(&rt)
        .unwrap()
        .call(MISSING.to_owned())
        .await
        .unwrap_err();
    let source = err.source().expect("source");
    assert_eq!(source.to_string(), "config unreadable");
    assert!(
        source.source().is_some(),
        "and its own source, the io::Error"
    );
}

#[tokio::test]
async fn debug_shows_the_fields_a_user_reads_and_nothing_internal() {
    let rt = runtime();
    let err = Typed::bind(&rt)
        .unwrap()
        .call(MISSING.to_owned())
        .await
        .unwrap_err();
    let debug = format!("{err:?}");
    assert!(
        debug.starts_with("Failed { operation: \"typed\""),
        "{debug}"
    );
    assert!(debug.contains("attempts: 1"), "{debug}");
    assert!(debug.contains("source: "), "{debug}");
    assert!(
        !debug.contains("chain") && !debug.contains("SourceOf"),
        "{debug}"
    );
}
