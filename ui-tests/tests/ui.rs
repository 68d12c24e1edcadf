//! Compile-fail and compile-pass cases for herta's macros.
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p herta-ui-tests`,
//! then read every changed `.stderr` as a user would before committing it.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
