//! Rust source read as code: comments and the contents of string and
//! character literals blanked out (line breaks kept, so line numbers stay
//! right), split into tokens, with the inline modules each token sits in
//! and which of them, and which `mod name;` files, are test code
//! (`#[cfg(test)]`, `#[cfg(all(test, ...))]`).

use std::path::Path;

/// One token of code: an identifier or number, `::`, or one other
/// character, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub text: String,
    pub line: usize,
}

impl Token {
    /// Whether the token is an identifier or keyword (`crate`, `fn`...).
    pub fn is_ident(&self) -> bool {
        self.text
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    }
}

/// A module body: the file's own scope (`path` = the file's module path)
/// or an inline `mod name { ... }` inside it.
#[derive(Debug)]
pub struct Scope {
    pub path: Vec<String>,
    pub test: bool,
}

/// One source file of a crate, relative to the crate's `src` folder.
pub struct SourceFile {
    /// `call/admit.rs`.
    pub rel: String,
    /// `["call", "admit"]`; empty for `lib.rs`.
    pub module: Vec<String>,
    pub tokens: Vec<Token>,
    /// For each token, its index in `scopes` (0: the file's own scope).
    pub scope_of: Vec<usize>,
    pub scopes: Vec<Scope>,
    /// `mod name;` declarations under a test `cfg`.
    pub test_children: Vec<String>,
    /// Whole file is test code: `tests.rs`, `loom_tests.rs`, or declared
    /// under a test `cfg` by its parent (see [`parse_crate`]).
    pub test_only: bool,
}

/// `src` with every comment and every string, raw string and character
/// literal replaced by spaces; line breaks stay where they were.
pub fn code_only(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < chars.len() {
        match skipped_len(&chars, i) {
            Some(len) => {
                for &c in &chars[i..i + len] {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                }
                i += len;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// The length of the comment or literal that starts at `chars[i]`, if one does.
fn skipped_len(chars: &[char], i: usize) -> Option<usize> {
    let rest = &chars[i..];
    let starts_word = i == 0 || !is_ident_char(chars[i - 1]);
    match rest {
        ['/', '/', ..] => Some(rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())),
        ['/', '*', ..] => Some(block_comment_len(rest)),
        ['"', ..] => Some(quoted_len(rest)),
        ['\'', ..] => char_literal_len(rest),
        ['r' | 'b' | 'c', ..] if starts_word => raw_string_len(rest),
        _ => None,
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `/* ... */`, nested ones included.
fn block_comment_len(rest: &[char]) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i < rest.len() {
        match (rest[i], rest.get(i + 1)) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
            _ => i += 1,
        }
        if depth == 0 {
            return i;
        }
    }
    rest.len()
}

/// `"..."` with backslash escapes.
fn quoted_len(rest: &[char]) -> usize {
    let mut i = 1;
    while i < rest.len() {
        match rest[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    rest.len()
}

/// `'x'` or `'\n'`, `'\u{7f}'`; `None` for a lifetime or label (`'a`).
fn char_literal_len(rest: &[char]) -> Option<usize> {
    if rest.get(1) == Some(&'\\') {
        let close = rest.iter().skip(3).position(|&c| c == '\'')?;
        return Some(close + 4);
    }
    (rest.get(2) == Some(&'\'')).then_some(3)
}

/// `r"..."`, `r#"..."#`, `br"..."`, `cr#"..."#`.
fn raw_string_len(rest: &[char]) -> Option<usize> {
    let r = usize::from(rest[0] != 'r');
    if rest.get(r) != Some(&'r') {
        return None;
    }
    let hashes = rest[r + 1..].iter().take_while(|&&c| c == '#').count();
    let open = r + 1 + hashes;
    if rest.get(open) != Some(&'"') {
        return None;
    }
    let mut i = open + 1;
    while i < rest.len() {
        let closes = rest[i] == '"'
            && rest[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes;
        if closes {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(rest.len())
}

/// The tokens of code (output of [`code_only`]).
pub fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let len = if is_ident_char(chars[i]) {
                chars[i..].iter().take_while(|&&c| is_ident_char(c)).count()
            } else if chars[i] == ':' && chars.get(i + 1) == Some(&':') {
                2
            } else {
                1
            };
            if !chars[i].is_whitespace() {
                let text = chars[i..i + len].iter().collect();
                out.push(Token { text, line: n + 1 });
            }
            i += len;
        }
    }
    out
}

/// Reads one file: `rel` is its path under the crate's `src` folder.
pub fn parse_file(rel: &str, src: &str) -> SourceFile {
    let tokens = tokens(&code_only(src));
    let module = module_of(rel);
    let (scope_of, scopes, test_children) = module_scopes(&tokens, &module);
    let file_name = rel.rsplit('/').next().unwrap_or(rel);
    SourceFile {
        rel: rel.to_owned(),
        module,
        tokens,
        scope_of,
        scopes,
        test_children,
        test_only: matches!(file_name, "tests.rs" | "loom_tests.rs"),
    }
}

/// Reads a crate's files (`(path under src, text)`) and marks as test code
/// every file whose parent declares it under a test `cfg`, and the files
/// below those.
pub fn parse_crate(files: &[(String, String)]) -> Vec<SourceFile> {
    let mut parsed: Vec<SourceFile> = files
        .iter()
        .map(|(rel, src)| parse_file(rel, src))
        .collect();
    parsed.sort_by_key(|f| f.module.len());
    for i in 0..parsed.len() {
        let Some((name, parent)) = parsed[i].module.split_last() else {
            continue;
        };
        let parent = parsed[..i].iter().find(|p| p.module == parent);
        if parent.is_some_and(|p| p.test_only || p.test_children.contains(name)) {
            parsed[i].test_only = true;
        }
    }
    parsed.sort_by(|a, b| a.rel.cmp(&b.rel));
    parsed
}

/// Every `.rs` file under `dir`, as `(path under dir, text)`, sorted.
pub fn read_dir(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).expect("under dir");
                let rel = rel.to_string_lossy().replace('\\', "/");
                let text = std::fs::read_to_string(&path).expect("source file reads");
                out.push((rel, text));
            }
        }
    }
    out.sort();
    out
}

/// `call/admit.rs` -> `call::admit`; `call/mod.rs` -> `call`; `lib.rs` -> root.
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// For each token its scope, the scopes, and the `mod name;` children
/// declared under a test `cfg`.
fn module_scopes(tokens: &[Token], module: &[String]) -> (Vec<usize>, Vec<Scope>, Vec<String>) {
    let mut scopes = vec![Scope {
        path: module.to_vec(),
        test: false,
    }];
    let (mut scope_of, mut test_children) = (Vec::with_capacity(tokens.len()), Vec::new());
    // Open inline modules: (scope, brace depth inside it).
    let mut open: Vec<(usize, usize)> = Vec::new();
    let (mut depth, mut test_attr, mut opening) = (0, false, None);
    for (k, token) in tokens.iter().enumerate() {
        let current = open.last().map_or(0, |&(s, _)| s);
        scope_of.push(current);
        match token.text.as_str() {
            "#" => test_attr |= attribute_is_test(tokens, k),
            "mod" if tokens.get(k + 1).is_some_and(Token::is_ident) => {
                let name = tokens[k + 1].text.clone();
                let test = test_attr || scopes[current].test;
                match tokens.get(k + 2).map(|t| t.text.as_str()) {
                    Some("{") => {
                        let path = [scopes[current].path.clone(), vec![name]].concat();
                        scopes.push(Scope { path, test });
                        opening = Some(scopes.len() - 1);
                    }
                    Some(";") if test => test_children.push(name),
                    _ => {}
                }
            }
            "{" => {
                depth += 1;
                if let Some(s) = opening.take() {
                    open.push((s, depth));
                }
            }
            "}" => {
                if open.last().is_some_and(|&(_, d)| d == depth) {
                    open.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        if matches!(token.text.as_str(), ";" | "{" | "}") {
            test_attr = false;
        }
    }
    (scope_of, scopes, test_children)
}

/// Whether the attribute starting at `tokens[k]` (`#`) is `#[cfg(test)]`
/// or `#[cfg(all(..., test, ...))]`: the item under it is test code.
fn attribute_is_test(tokens: &[Token], k: usize) -> bool {
    let text: String = tokens[k..]
        .iter()
        .take(64)
        .map(|t| t.text.as_str())
        .collect();
    let Some(body) = text.strip_prefix("#[cfg(") else {
        return false;
    };
    let mut depth = 0;
    let mut pred = String::new();
    for c in body.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => break,
            ')' => depth -= 1,
            _ => {}
        }
        pred.push(c);
    }
    if pred == "test" {
        return true;
    }
    let Some(args) = pred.strip_prefix("all(").and_then(|a| a.strip_suffix(')')) else {
        return false;
    };
    top_level_args(args).contains(&"test")
}

/// `a,not(b),c` -> `a`, `not(b)`, `c`.
fn top_level_args(args: &str) -> Vec<&str> {
    let mut depth = 0;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, c) in args.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&args[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_only_blanks_comments_and_literals_and_keeps_lines() {
        let src = "a // b {\n/* c /* { */ } */ d\n\"e { \\\" }\" r#\"f \" {\"# '{' '\\'' 'g\n";
        let code = code_only(src);
        assert_eq!(code.lines().count(), src.lines().count());
        let words: Vec<String> = tokens(&code).into_iter().map(|t| t.text).collect();
        assert_eq!(words, ["a", "d", "'", "g"]);
    }

    #[test]
    fn tokens_keep_paths_and_lines() {
        let got: Vec<(String, usize)> = tokens("use crate::a;\n  b::c")
            .into_iter()
            .map(|t| (t.text, t.line))
            .collect();
        let want = [
            ("use", 1),
            ("crate", 1),
            ("::", 1),
            ("a", 1),
            (";", 1),
            ("b", 2),
            ("::", 2),
            ("c", 2),
        ];
        assert_eq!(got, want.map(|(t, l)| (t.to_owned(), l)));
    }

    #[test]
    fn test_modules_and_test_files_are_marked() {
        let lib = "#[cfg(all(test, not(loom)))]\nmod fairness;\n#[cfg(not(test))]\nmod real;\n\
                   #[cfg(test)]\nmod tests {\n    fn t() {}\n}\nfn after() {}\n";
        let files = [
            ("lib.rs", lib),
            ("fairness.rs", ""),
            ("fairness/deep.rs", ""),
            ("real.rs", ""),
            ("x/tests.rs", ""),
        ];
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(r, s)| (r.to_string(), s.to_string()))
            .collect();
        let parsed = parse_crate(&files);
        let test_only: Vec<&str> = parsed
            .iter()
            .filter(|f| f.test_only)
            .map(|f| f.rel.as_str())
            .collect();
        assert_eq!(test_only, ["fairness.rs", "fairness/deep.rs", "x/tests.rs"]);
        let lib = parsed.iter().find(|f| f.rel == "lib.rs").expect("lib.rs");
        let in_test = |name: &str| {
            let k = lib
                .tokens
                .iter()
                .position(|t| t.text == name)
                .expect("token");
            lib.scopes[lib.scope_of[k]].test
        };
        assert!(in_test("t"));
        assert!(!in_test("after"));
    }
}
