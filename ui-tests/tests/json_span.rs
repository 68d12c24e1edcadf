//! What editors read: the primary span of an error in rustc's JSON output
//! (`cargo check --message-format=json`, as rust-analyzer runs it), for
//! errors whose human-readable rendering could hide a span elsewhere.
//!
//! The fixtures are examples behind the `json-fixtures` feature, so that
//! no other build compiles them.

use std::path::Path;
use std::process::Command;

/// `resources(R = 5)` where `R` has capacity 2: the primary span is the
/// `5`, and the message names the capacity.
#[test]
fn units_above_capacity_are_spanned_on_the_units() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(env!("CARGO"))
        .args([
            "check",
            "--quiet",
            "--message-format=json",
            "--features=json-fixtures",
            "--example=units_above_capacity",
        ])
        .env(
            "CARGO_TARGET_DIR",
            manifest.join("../target/tests/json-span"),
        )
        .current_dir(manifest)
        .output()
        .expect("cargo runs");
    assert!(!output.status.success(), "the fixture must not compile");
    let errors: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-message")
        .map(|m| m["message"].clone())
        .filter(|m| m["level"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "one error: {errors:#?}");
    let error = &errors[0];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("`R = 5` asks for more units than `R` grants at once: its capacity (a rate budget's burst) is 2"),
        "{message}"
    );
    let primary: Vec<&serde_json::Value> = error["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["is_primary"] == true)
        .collect();
    assert_eq!(primary.len(), 1, "{primary:#?}");
    let span = primary[0];
    let file = span["file_name"].as_str().unwrap();
    assert!(
        file.ends_with("tests/json/units_above_capacity.rs"),
        "{file}"
    );
    assert_eq!(span["line_start"], 9);
    assert_eq!(span["line_end"], 9);
    let line = "#[herta::operation(effect = Idempotent, resources(R = 5))]";
    let column = line.find('5').unwrap() + 1;
    assert_eq!(span["column_start"], column);
    assert_eq!(span["column_end"], column + 1);
    assert!(
        span["expansion"].is_null(),
        "a span in the user's file, not in a macro: {span:#?}"
    );
}
