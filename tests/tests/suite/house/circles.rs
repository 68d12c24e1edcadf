//! The file-level import graph of one crate, and its circles.
//!
//! File A depends on file B when A's code (test modules and test-only files
//! left out) names B's module: a `crate::b::...` path or use tree, a
//! `super::...` or `self::...` path that lands in B, or, in a parent module
//! file, a path that starts with one of its children (`child::X`,
//! `use child`). So a parent that uses a child while the child reaches
//! `super::` into it is a circle. A path names the longest module prefix
//! that is a file (`crate::call::admit::Admission` names `call/admit.rs`).
//! An item of the crate root is no edge: `lib.rs` declares every module, so
//! every file would sit in one circle with it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::source::{Scope, SourceFile, Token};

/// Files that import one another, round.
#[derive(Debug)]
pub struct Circle {
    /// The files, sorted.
    pub files: Vec<String>,
    /// Shortest cycles that together pass through every file, each as
    /// `a.rs:3 -> b.rs:7 -> a.rs`: the line of `a.rs` that names `b.rs`, then
    /// the line of `b.rs` that names `a.rs`.
    pub cycles: Vec<String>,
}

/// For each file, the files it names and the line of the first mention.
type Edges = Vec<BTreeMap<usize, usize>>;

/// The circles among `files` (one crate); `prefix` goes before each file
/// name in the result (`herta/src/`).
pub fn circles(files: &[SourceFile], prefix: &str) -> Vec<Circle> {
    let index: BTreeMap<&[String], usize> = files
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.test_only)
        .map(|(i, f)| (f.module.as_slice(), i))
        .collect();
    let edges: Edges = files
        .iter()
        .map(|f| {
            if f.test_only {
                BTreeMap::new()
            } else {
                edges_of(f, &index)
            }
        })
        .collect();
    let name = |i: usize| format!("{prefix}{}", files[i].rel);
    let mut components = strongly_connected(&edges);
    components.retain(|c| c.len() > 1);
    components.iter_mut().for_each(|c| c.sort());
    components.sort();
    components
        .iter()
        .map(|c| Circle {
            files: c.iter().map(|&i| name(i)).collect(),
            cycles: covering_cycles(c, &edges)
                .iter()
                .map(|cycle| {
                    let hops = cycle.iter().zip(cycle.iter().cycle().skip(1));
                    let hops = hops.map(|(&a, b)| format!("{}:{} -> ", name(a), edges[a][b]));
                    format!("{}{}", hops.collect::<String>(), name(cycle[0]))
                })
                .collect(),
        })
        .collect()
}

/// The files `file` names, each with the line of its first mention.
fn edges_of(file: &SourceFile, index: &BTreeMap<&[String], usize>) -> BTreeMap<usize, usize> {
    let own = index.get(file.module.as_slice()).copied();
    let mut out = BTreeMap::new();
    let t = &file.tokens;
    for k in 0..t.len() {
        let scope = &file.scopes[file.scope_of[k]];
        if scope.test || !starts_path(t, k) {
            continue;
        }
        let Some((base, start)) = path_base(t, k, scope, &file.module) else {
            continue;
        };
        for leaf in use_tree(t, start) {
            let full = [base.as_slice(), &leaf].concat();
            let target = (1..=full.len())
                .rev()
                .find_map(|n| index.get(&full[..n]).copied());
            if let Some(to) = target.filter(|&to| Some(to) != own) {
                out.entry(to).or_insert(t[k].line);
            }
        }
    }
    out
}

/// Whether `t[k]` is the first segment of a path (not `x::t[k]`, `x.t[k]`, `'t[k]`).
fn starts_path(t: &[Token], k: usize) -> bool {
    let after = k.checked_sub(1).map(|p| t[p].text.as_str());
    t[k].is_ident() && !matches!(after, Some("::" | "." | "'"))
}

/// Where the path at `t[k]` is anchored, and the index its use tree starts
/// at: `crate::` at the root, `super::` and `self::` from `scope`, and a
/// path `child::...` or `use child` from the file's own module.
fn path_base(
    t: &[Token],
    k: usize,
    scope: &Scope,
    module: &[String],
) -> Option<(Vec<String>, usize)> {
    let is = |i: usize, text: &str| t.get(i).is_some_and(|x| x.text == text);
    if !is(k + 1, "::") {
        let after_use = k > 0 && is(k - 1, "use");
        return after_use.then(|| (module.to_vec(), k));
    }
    match t[k].text.as_str() {
        "crate" => Some((Vec::new(), k + 2)),
        "self" => Some((scope.path.clone(), k + 2)),
        "super" => {
            let mut ups = 1;
            while is(k + 2 * ups, "super") && is(k + 2 * ups + 1, "::") {
                ups += 1;
            }
            let keep = scope.path.len().checked_sub(ups)?;
            Some((scope.path[..keep].to_vec(), k + 2 * ups))
        }
        _ => Some((module.to_vec(), k)),
    }
}

/// The paths a use tree (or a plain path) at `t[k]` names:
/// `a::{b, c::d as e, self, f::*}` -> `a::b`, `a::c::d`, `a`, `a::f`.
fn use_tree(t: &[Token], k: usize) -> Vec<Vec<String>> {
    let mut leaves = Vec::new();
    subtree(t, k, &mut Vec::new(), &mut leaves);
    leaves
}

/// Parses the tree at `t[k]` under `prefix` into `leaves`; returns the
/// index after it.
fn subtree(
    t: &[Token],
    mut k: usize,
    prefix: &mut Vec<String>,
    leaves: &mut Vec<Vec<String>>,
) -> usize {
    let depth = prefix.len();
    let is = |i: usize, text: &str| t.get(i).is_some_and(|x| x.text == text);
    // Whether the tree names anything: `super::#path` in generated code does not.
    let mut named = false;
    while let Some(token) = t.get(k) {
        if token.text == "{" {
            k += 1;
            while t.get(k).is_some_and(|x| x.text != "}") {
                let next = subtree(t, k, prefix, leaves);
                k = if is(next, ",") { next + 1 } else { next };
                if k == next && !is(k, "}") {
                    break;
                }
            }
            prefix.truncate(depth);
            return k + 1;
        }
        named |= token.text == "*" || token.is_ident();
        if token.text == "*" {
            k += 1;
        } else if token.is_ident() {
            if token.text != "self" {
                prefix.push(token.text.clone());
            }
            k += if is(k + 1, "as") { 3 } else { 1 };
            if is(k, "::") {
                k += 1;
                continue;
            }
        }
        break;
    }
    if named {
        leaves.push(prefix.clone());
    }
    prefix.truncate(depth);
    k
}

/// Tarjan's strongly connected components of the graph.
fn strongly_connected(edges: &Edges) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        edges: &'a Edges,
        order: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        found: Vec<Vec<usize>>,
        visited: usize,
    }
    fn visit(w: &mut Walk, v: usize) {
        (w.order[v], w.low[v]) = (Some(w.visited), w.visited);
        w.visited += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &next in w.edges[v].keys() {
            match w.order[next] {
                None => {
                    visit(w, next);
                    w.low[v] = w.low[v].min(w.low[next]);
                }
                Some(o) if w.on_stack[next] => w.low[v] = w.low[v].min(o),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.order[v] {
            let at = w
                .stack
                .iter()
                .rposition(|&x| x == v)
                .expect("v is on the stack");
            let component: Vec<usize> = w.stack.drain(at..).collect();
            component.iter().for_each(|&x| w.on_stack[x] = false);
            w.found.push(component);
        }
    }
    let n = edges.len();
    let mut walk = Walk {
        edges,
        order: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        found: Vec::new(),
        visited: 0,
    };
    for v in 0..n {
        if walk.order[v].is_none() {
            visit(&mut walk, v);
        }
    }
    walk.found
}

/// Shortest cycles through the component's files, until every file is on one.
fn covering_cycles(component: &[usize], edges: &Edges) -> Vec<Vec<usize>> {
    let members: BTreeSet<usize> = component.iter().copied().collect();
    let mut covered = BTreeSet::new();
    let mut out = Vec::new();
    for &start in &members {
        if covered.contains(&start) {
            continue;
        }
        let cycle = shortest_cycle(start, &members, edges);
        covered.extend(cycle.iter().copied());
        out.push(cycle);
    }
    out
}

/// The shortest cycle from `start` back to it within `members` (breadth
/// first), as the files in order, `start` first.
fn shortest_cycle(start: usize, members: &BTreeSet<usize>, edges: &Edges) -> Vec<usize> {
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &next in edges[v].keys() {
            if next == start {
                let mut path = vec![v];
                while let Some(&p) = parent.get(path.last().expect("not empty")) {
                    path.push(p);
                }
                path.reverse();
                return path;
            }
            if members.contains(&next) && !parent.contains_key(&next) {
                parent.insert(next, v);
                queue.push_back(next);
            }
        }
    }
    unreachable!("every file of a strongly connected component is on a cycle")
}

#[cfg(test)]
mod tests {
    use super::super::source::parse_crate;
    use super::*;

    fn circles_of(files: &[(&str, &str)]) -> Vec<Circle> {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(r, s)| (r.to_string(), s.to_string()))
            .collect();
        circles(&parse_crate(&files), "src/")
    }

    #[test]
    fn two_files_naming_each_other_are_a_circle() {
        let found = circles_of(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "b.rs",
                "pub struct B;\n\nfn f() -> crate::a::A { todo!() }\n",
            ),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].files, ["src/a.rs", "src/b.rs"]);
        assert_eq!(found[0].cycles, ["src/a.rs:1 -> src/b.rs:3 -> src/a.rs"]);
    }

    #[test]
    fn a_parent_naming_a_child_that_reaches_super_is_a_circle() {
        let parent = "mod child;\npub use child::Thing;\npub struct Shared;\n";
        let child = "use super::{Shared};\npub struct Thing(Shared);\n";
        let found = circles_of(&[
            ("lib.rs", "mod a;\n"),
            ("a/mod.rs", parent),
            ("a/child.rs", child),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].cycles,
            ["src/a/child.rs:1 -> src/a/mod.rs:2 -> src/a/child.rs"]
        );
        // The same child next to a parent that only declares it: no circle.
        let found = circles_of(&[
            ("lib.rs", "mod a;\n"),
            ("a.rs", "mod child;\npub struct Shared;\n"),
            ("a/child.rs", child),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_longer_circle_is_printed_as_a_path() {
        let found = circles_of(&[
            ("lib.rs", ""),
            ("a.rs", "use crate::b;\n"),
            ("b.rs", "\nuse crate::c::X;\n"),
            ("c.rs", "pub struct X;\n\n\nuse crate::a as _;\n"),
        ]);
        assert_eq!(
            found[0].cycles,
            ["src/a.rs:1 -> src/b.rs:2 -> src/c.rs:4 -> src/a.rs"]
        );
    }

    #[test]
    fn use_trees_name_every_leaf() {
        let leaves = |code: &str| -> Vec<String> {
            let t = super::super::source::tokens(code);
            use_tree(&t, 0).iter().map(|l| l.join("::")).collect()
        };
        assert_eq!(
            leaves("{a::{X, b::Y as Z}, c::*, self}"),
            ["a::X", "a::b::Y", "c", ""]
        );
        assert_eq!(leaves("a::f::<T>()"), ["a::f"]);
        assert!(leaves("#path").is_empty());
    }

    #[test]
    fn comments_strings_tests_generated_paths_and_the_root_are_no_edges() {
        let a = "// crate::b\n/* crate::b */\nconst S: &str = \"crate::b\";\n\
                 #[cfg(test)]\nmod tests {\n    use crate::b;\n}\nuse crate::Root;\n\
                 fn f() { quote!(pub(in super::#path)) }\n";
        let found = circles_of(&[
            ("lib.rs", "pub struct Root;\npub use a::A;\n"),
            ("a.rs", a),
            ("b.rs", "use crate::a;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn super_resolves_from_inline_modules_and_chains() {
        // `super::` in an inline module is the file itself; `super::super::`
        // in `x/y/z.rs` is `x`.
        let z = "use super::super::Top;\n";
        let x = "mod y;\npub struct Top;\nfn f() -> y::z::Z { todo!() }\n";
        let y = "pub mod z;\nmod imp {\n    use super::Local;\n}\npub struct Local;\n";
        let found = circles_of(&[
            ("lib.rs", "mod x;\n"),
            ("x.rs", x),
            ("x/y.rs", y),
            ("x/y/z.rs", z),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].files, ["src/x.rs", "src/x/y/z.rs"]);
    }
}
