//! The structural rules of the house (issue 26), read from the repository's
//! own files, so they stay true once they hold:
//!
//! 1. no import circle among the files of `herta/src` (`tower/` and every
//!    other folder included) or `herta-macros/src` (see [`circles`]);
//! 2. no file of `herta/src` but `lib.rs` names `crate::__private`, in code
//!    or in comments (doc links included), as `grep` would find it;
//! 3. no `macro_rules!` in the code of `herta/src/call/`;
//! 4. no function over 90 lines in the library crates, test code left out
//!    (see [`long_fns`]);
//! 5. no "DESIGN §" or "design §" (any case) in `herta/src` or
//!    `herta-macros/src`, comments included;
//! 6. `BENCHMARKS.md` and `RELIABILITY.md` at most 300 lines each.
//!
//! The rules over the repository are ignored until the redesign lands; run
//! them with `cargo test -p herta-tests --test suite house:: -- --ignored`.
//! The checkers' own tests (tiny sources in memory) always run.

mod circles;
mod long_fns;
mod source;

use std::path::{Path, PathBuf};

use source::SourceFile;

/// The workspace root: the parent of this package's folder.
fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The `.rs` files under `dir` (relative to the workspace root), read as code.
fn crate_files(dir: &str) -> Vec<SourceFile> {
    source::parse_crate(&source::read_dir(&root().join(dir)))
}

/// Every line of the `.rs` files under `dir` that `matches`, as `dir/file:line: text`.
fn lines_matching(dir: &str, skip: &[&str], matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in source::read_dir(&root().join(dir)) {
        if skip.contains(&rel.as_str()) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if matches(line) {
                found.push(format!("{dir}/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

/// Fails with the rule, the fix and every finding, if there is one.
fn assert_none(findings: &[String], rule: &str, fix: &str) {
    assert!(
        findings.is_empty(),
        "rule (issue 26): {rule}\nfix: {fix}\n{} finding(s):\n  {}\n",
        findings.len(),
        findings.join("\n  ")
    );
}

#[test]
fn no_import_circles() {
    let mut findings = Vec::new();
    for dir in ["herta/src", "herta-macros/src"] {
        for circle in circles::circles(&crate_files(dir), &format!("{dir}/")) {
            findings.push(format!(
                "circle of {} files: {}",
                circle.files.len(),
                circle.files.join(", ")
            ));
            findings.extend(circle.cycles.iter().map(|c| format!("    {c}")));
        }
    }
    assert_none(
        &findings,
        "no import circle among the files of herta/src or herta-macros/src; \
         each `file:line` below names the next file of its cycle",
        "move the item to the module it belongs to, so that the names go one way \
         (leaves -> sinks -> core -> events -> runtime -> call -> facades); a child \
         must not reach `super::` into a parent that names it: move what both need \
         into the child or a leaf",
    );
}

#[test]
fn private_is_named_only_by_lib() {
    let findings = lines_matching("herta/src", &["lib.rs"], |l| l.contains("crate::__private"));
    assert_none(
        &findings,
        "`crate::__private` is named only by herta/src/lib.rs (comments and doc links included)",
        "the runtime's items live in their home module (error, operation, contract, tower) \
         and `__private` re-exports them for generated code; import them from there",
    );
}

#[test]
fn no_macro_rules_in_call() {
    let mut findings = Vec::new();
    for file in crate_files("herta/src/call") {
        let t = &file.tokens;
        let defs = t
            .windows(2)
            .filter(|w| w[0].text == "macro_rules" && w[1].text == "!");
        findings.extend(
            defs.map(|w| format!("herta/src/call/{}:{}: macro_rules!", file.rel, w[0].line)),
        );
    }
    assert_none(
        &findings,
        "no `macro_rules!` in herta/src/call/: the call is plain functions",
        "write the stages as functions of one generic pipeline",
    );
}

#[test]
fn no_function_over_90_lines() {
    let mut findings = Vec::new();
    for dir in ["herta/src", "herta-macros/src", "herta-contract/src"] {
        for file in crate_files(dir) {
            for f in long_fns::long_fns(&file, 90) {
                findings.push(format!(
                    "{dir}/{}:{}: fn {} is {} lines",
                    file.rel, f.line, f.name, f.lines
                ));
            }
        }
    }
    assert_none(
        &findings,
        "no function over 90 lines (from `fn` to its closing brace) in the library crates; \
         test modules, tests.rs and loom_tests.rs left out",
        "split the function by what it does",
    );
}

#[test]
fn no_references_to_design_sections() {
    let mut findings = Vec::new();
    for dir in ["herta/src", "herta-macros/src"] {
        findings.extend(lines_matching(dir, &[], |l| {
            l.to_lowercase().contains("design §")
        }));
    }
    assert_none(
        &findings,
        "no \"DESIGN §\" or \"design §\" in herta/src or herta-macros/src: the design \
         document is not in the repository",
        "say the rule itself in the comment, or point at a doc in the repository \
         (herta/docs/...)",
    );
}

#[test]
fn reports_are_at_most_300_lines() {
    let mut findings = Vec::new();
    for report in ["BENCHMARKS.md", "RELIABILITY.md"] {
        let text = std::fs::read_to_string(root().join(report)).expect("report reads");
        let lines = text.lines().count();
        if lines > 300 {
            findings.push(format!("{report}:{lines}: {lines} lines"));
        }
    }
    assert_none(
        &findings,
        "BENCHMARKS.md and RELIABILITY.md are current reports of at most 300 lines each",
        "keep what is measured, the current figures in one table, how to reproduce and \
         the plot; history stays in git",
    );
}
