//! Functions longer than a limit: from the line of `fn` to the line of the
//! body's closing brace, both counted. Test modules and test-only files
//! are left out; braces inside comments, strings and character literals do
//! not count.

use super::source::{SourceFile, Token};

/// A function over the limit.
#[derive(Debug, PartialEq, Eq)]
pub struct LongFn {
    pub name: String,
    /// The line of `fn`, 1-based.
    pub line: usize,
    pub lines: usize,
}

/// The functions of `file` longer than `limit` lines.
pub fn long_fns(file: &SourceFile, limit: usize) -> Vec<LongFn> {
    if file.test_only {
        return Vec::new();
    }
    let t = &file.tokens;
    let mut out = Vec::new();
    for k in 0..t.len() {
        if t[k].text != "fn" || file.scopes[file.scope_of[k]].test {
            continue;
        }
        let Some(name) = t.get(k + 1).filter(|n| n.is_ident()) else {
            continue;
        };
        let Some(close) = body_end(t, k + 2) else {
            continue;
        };
        let lines = t[close].line - t[k].line + 1;
        if lines > limit {
            let (name, line) = (name.text.clone(), t[k].line);
            out.push(LongFn { name, line, lines });
        }
    }
    out
}

/// The index of the `}` that closes the body of the function whose
/// signature goes on at `t[k]`; `None` for one without a body (`fn f();`).
fn body_end(t: &[Token], k: usize) -> Option<usize> {
    let mut nesting = 0_i32;
    for i in k..t.len() {
        match t[i].text.as_str() {
            "(" | "[" => nesting += 1,
            ")" | "]" => nesting -= 1,
            ";" if nesting == 0 => return None,
            "{" if nesting == 0 => return matching_brace(t, i),
            _ => {}
        }
    }
    None
}

/// The index of the `}` that closes the `{` at `t[open]`.
fn matching_brace(t: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0_i32;
    for (i, token) in t.iter().enumerate().skip(open) {
        match token.text.as_str() {
            "{" => depth += 1,
            "}" if depth == 1 => return Some(i),
            "}" => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::source::parse_file;
    use super::*;

    /// A function `name` of `lines` lines whose body holds `filler` lines.
    fn function(name: &str, lines: usize, filler: &str) -> String {
        let body: String = (0..lines - 2).map(|_| format!("    {filler}\n")).collect();
        format!("pub(crate) async fn {name}() -> [u8; 2] {{\n{body}}}\n")
    }

    fn long(rel: &str, src: &str) -> Vec<LongFn> {
        long_fns(&parse_file(rel, src), 90)
    }

    #[test]
    fn a_91_line_function_is_long_and_a_90_line_one_is_not() {
        let src = format!(
            "{}\n{}",
            function("short", 90, "let _ = 1;"),
            function("long", 91, "let _ = 1;")
        );
        let want = LongFn {
            name: "long".to_owned(),
            line: 92,
            lines: 91,
        };
        assert_eq!(long("a.rs", &src), [want]);
    }

    #[test]
    fn braces_in_strings_chars_and_comments_do_not_count() {
        let filler = r##"let _ = ("}", '}', r#"}"#); // }"##;
        let found = long("a.rs", &function("braces", 91, filler));
        assert_eq!(found.iter().map(|f| f.lines).collect::<Vec<_>>(), [91]);
        let opening = r#"let _ = "{"; /* { */"#;
        let src = format!("{}fn next() {{}}\n", function("short", 10, opening));
        assert!(long("a.rs", &src).is_empty());
    }

    #[test]
    fn test_code_and_declarations_are_left_out() {
        let long_one = function("long", 91, "let _ = 1;");
        let in_tests =
            format!("#[cfg(test)]\nmod tests {{\n{long_one}}}\ntrait T {{\n    fn f();\n}}\n");
        assert!(long("a.rs", &in_tests).is_empty());
        assert!(long("tests.rs", &long_one).is_empty());
        assert!(long("loom_tests.rs", &long_one).is_empty());
        assert_eq!(
            long("a.rs", &format!("mod inner {{\n{long_one}}}\n")).len(),
            1
        );
    }
}
