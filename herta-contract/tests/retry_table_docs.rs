//! The docs' effect × outcome tables are the one table in `herta-contract`,
//! rendered: this test renders [`RETRY_TABLE`] and checks every copy.
//!
//! After changing the table, rewrite every copy with
//! `HERTA_BLESS=1 cargo test -p herta-contract --test retry_table_docs`
//! and read the diff.

use std::path::{Path, PathBuf};

use herta_contract::{RetryVerdict, RETRY_TABLE};

/// The header line that starts every copy of the table.
const HEADER: &str = "| outcome \\ effect | Pure | Idempotent | NonIdempotent |";

/// Every file holding a copy, relative to the workspace root, with the prefix
/// its lines carry (`/// ` for a doc comment).
const COPIES: &[(&str, &str)] = &[
    ("README.md", ""),
    ("herta/docs/contract-rules.md", ""),
    ("herta/docs/failure-semantics.md", ""),
    ("herta-contract/src/lib.rs", "/// "),
];

/// The table as markdown, one line per row, without a line prefix.
fn render() -> Vec<String> {
    let mut lines = vec![HEADER.to_owned(), "|---|---|---|---|".to_owned()];
    for (outcome, row) in RETRY_TABLE {
        let cells: Vec<&str> = row
            .iter()
            .map(|(_, verdict)| match verdict {
                RetryVerdict::Allowed => "retry",
                RetryVerdict::Forbidden(_) => "compile error",
            })
            .collect();
        lines.push(format!("| {outcome} | {} |", cells.join(" | ")));
    }
    lines
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("herta-contract sits in the workspace root")
        .to_owned()
}

/// `text` with the table after `prefix + HEADER` replaced by `table`, or an
/// error saying what is wrong with the copy.
fn with_table(text: &str, prefix: &str, table: &[String]) -> Result<String, String> {
    let header = format!("{prefix}{HEADER}");
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == header).collect();
    let [start] = starts[..] else {
        return Err(format!(
            "expected one table header line, found {}",
            starts.len()
        ));
    };
    let end = (start..lines.len())
        .find(|&i| !lines[i].starts_with(&format!("{prefix}|")))
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
    out.extend(table.iter().map(|l| format!("{prefix}{l}")));
    out.extend(lines[end..].iter().map(|l| l.to_string()));
    let mut out = out.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

#[test]
fn every_copy_of_the_retry_table_is_the_table() {
    let table = render();
    let bless = std::env::var_os("HERTA_BLESS").is_some();
    let mut stale = Vec::new();
    for (file, prefix) in COPIES {
        let path = workspace_root().join(file);
        let text = std::fs::read_to_string(&path).expect("a copy of the table");
        let expected = with_table(&text, prefix, &table).unwrap_or_else(|e| panic!("{file}: {e}"));
        if expected != text {
            if bless {
                std::fs::write(&path, expected).expect("rewrite the copy");
            } else {
                stale.push(*file);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "the retry table in {stale:?} differs from herta_contract::RETRY_TABLE; \
         rewrite with `HERTA_BLESS=1 cargo test -p herta-contract --test retry_table_docs`"
    );
}

#[test]
fn a_copy_is_found_and_replaced_whole() {
    let table = vec![HEADER.to_owned(), "|---|".to_owned()];
    let text = format!("before\n{HEADER}\n| old |\n| rows |\nafter\n");
    assert_eq!(
        with_table(&text, "", &table).unwrap(),
        format!("before\n{HEADER}\n|---|\nafter\n")
    );
    assert!(with_table("no table\n", "", &table).is_err());
}
