//! The crate reads top down: no module of `src/` imports (directly or
//! through a chain) a module that imports it back.
//!
//! The edges are the `crate::<module>` paths each `src/<module>.rs` names in
//! code (`use crate::file::Setting`, `use crate::{a, b}`, an inline
//! `crate::global::pin`); comments, doc comments and their links do not
//! count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The code of one line: without a `//` comment (outside a string literal)
/// and empty for a comment line.
fn code(line: &str) -> &str {
    let mut in_string = false;
    let mut escaped = false;
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            return &line[..i];
        }
    }
    line
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident(s: &str) -> &str {
    let end = s.bytes().position(|b| !is_ident(b)).unwrap_or(s.len());
    &s[..end]
}

/// The first segments of the `crate::` paths in `source`, `use crate::{a, b::c}` giving `a` and `b`.
fn crate_paths(source: &str) -> BTreeSet<String> {
    let code: String = source.lines().map(code).collect::<Vec<_>>().join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].bytes().next_back();
        let after = rest[at + "crate::".len()..].trim_start();
        rest = &rest[at + "crate::".len()..];
        // `$crate::` (a macro's) and `my_crate::` are not this crate's paths
        if before.is_some_and(|b| is_ident(b) || b == b'$') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            // the group's top-level items
            let mut depth = 0;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        out.insert(ident(&group[i..]).to_owned());
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(after).to_owned());
        }
    }
    out
}

/// Module name to the modules it names, among `sources` (name, text).
fn graph<'a>(sources: impl IntoIterator<Item = (&'a str, &'a str)>) -> Graph {
    let sources: Vec<_> = sources.into_iter().collect();
    let modules: BTreeSet<&str> = sources.iter().map(|(m, _)| *m).collect();
    sources
        .iter()
        .map(|(m, text)| {
            let uses = crate_paths(text)
                .into_iter()
                .filter(|u| u != m && modules.contains(u.as_str()))
                .collect();
            ((*m).to_owned(), uses)
        })
        .collect()
}

/// A path from `from` to `to` along the graph's edges, if there is one.
fn path(g: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(m) = queue.pop_front() {
        for next in g.get(m).into_iter().flatten() {
            if next == to {
                let mut p = vec![to.to_owned(), m.to_owned()];
                let mut at = m;
                while at != from {
                    at = came_from[at];
                    p.push(at.to_owned());
                }
                p.reverse();
                return Some(p);
            }
            if next != from && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, m);
                queue.push_back(next);
            }
        }
    }
    None
}

/// Every import circle, one per module on one (`a -> b -> a`), each once.
fn cycles(g: &Graph) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for m in g.keys() {
        if let Some(p) = path(g, m, m) {
            let mut members: Vec<_> = p[1..].to_vec();
            members.sort();
            if seen.insert(members) {
                out.push(p.join(" -> "));
            }
        }
    }
    out
}

fn sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_else(|| panic!("{}", p.display()))
                .to_owned();
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{e}"));
            (name, text)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let sources = sources();
    let g = graph(sources.iter().map(|(m, t)| (m.as_str(), t.as_str())));
    // the graph is read: the root names the modules it re-exports from
    assert!(g.len() > 10, "{g:?}");
    assert!(
        g["lib"].contains("init") && g["lib"].contains("global"),
        "{g:?}"
    );
    let cycles = cycles(&g);
    assert!(
        cycles.is_empty(),
        "import circles among resil-config's modules:\n  {}\nthe graph: {g:#?}",
        cycles.join("\n  ")
    );
}

#[test]
fn a_circle_through_any_kind_of_path_is_found() {
    let g = graph([
        ("a", "use crate::b::X;\n"),
        ("b", "fn f() { crate::c::g() }\n"),
        ("c", "use crate::{d, e::Y};\n"),
        ("d", "pub(crate) use crate::a;\n"),
        (
            "e",
            "//! [`a`](crate::a)\n/// crate::a\nfn f() {} // crate::a\n",
        ),
    ]);
    assert_eq!(cycles(&g), ["a -> b -> c -> d -> a"]);
    assert!(g["e"].is_empty(), "{g:?}");
    assert_eq!(
        cycles(&graph([("a", "use crate::b;"), ("b", "use crate::a;")])),
        ["a -> b -> a"]
    );
}

#[test]
fn comments_strings_and_macros_are_not_paths() {
    let text =
        "let s = \"// not a comment\"; crate::x::f(); // crate::y\n$crate::z!(); my_crate::w();\n";
    assert_eq!(crate_paths(text), BTreeSet::from(["x".to_owned()]));
}
