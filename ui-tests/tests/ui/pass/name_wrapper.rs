//! `name` renames the operation (errors, stats, `NAME`), `wrapper` renames
//! the generated type; either, both or neither.
use herta::{Failure, Operation, Runtime};

type Io<T> = Result<T, Failure<std::io::Error>>;

#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn render_page() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), name = "pages.render")]
async fn named() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), wrapper = PageRenderer)]
async fn wrapped() -> Io<()> {
    Ok(())
}

#[herta::operation(effect = Pure, resources("cpu" = 1), name = "pages.both", wrapper = Both)]
async fn both() -> Io<()> {
    Ok(())
}

/// A raw identifier keeps its text without `r#`.
#[herta::operation(effect = Pure, resources("cpu" = 1))]
async fn r#match() -> Io<()> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(RenderPage::NAME, "render_page");
    assert_eq!(Named::NAME, "pages.render");
    assert_eq!(Named::CONTRACT.operation(), "pages.render");
    assert_eq!(PageRenderer::NAME, "wrapped");
    assert_eq!(Both::NAME, "pages.both");
    assert_eq!(<Both as Operation>::NAME, "pages.both");
    assert_eq!(Match::NAME, "match");

    let rt = Runtime::builder()
        .resource(herta::Resource::new("cpu", 1))
        .build()
        .unwrap();
    let op: PageRenderer = PageRenderer::bind(&rt).unwrap();
    op.call().await.unwrap();
    assert_eq!(format!("{:?}", Both::bind(&rt).unwrap()), "Both { operation: \"pages.both\", .. }");
    Match::bind(&rt).unwrap().call().await.unwrap();
}
