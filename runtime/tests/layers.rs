//! The module layering of `weir-runtime`, checked from its sources.
//!
//! Each top-level module of `runtime/src` (a file or a folder) owns one idea and
//! may import only from itself and from the layers below it. [`LAYERS`] lists
//! them lowest first: the shared vocabulary at the bottom, the executor and the
//! configuration at the top. Imports that point only downward keep every folder
//! readable on its own (together with the folders below it, never above), keep
//! the module graph free of cycles, and make a change ripple one way only.
//!
//! `runtime_modules_import_only_from_layers_below` fails on a top-level module
//! missing from [`LAYERS`], on every path naming a module of a higher layer, and
//! on every import cycle between top-level modules (printed with an example
//! file:line per edge). `runtime_submodules_have_no_cycles` checks that inside
//! each top-level module the submodules form no cycle either: a parent's
//! `mod child;` or `pub use child::X` is an edge parent -> child, so a child
//! must not reach back into its parent with `use super::Y`. Test modules (any
//! module path with a `tests` component) are exempt from that second check.
//!
//! The sources are parsed here with std only: comments (doc comments too) and
//! string, byte-string, raw-string and char literals are stripped, then every
//! `crate::`, `$crate::`, `super::`, `self::` and child-module path, `use`
//! groups expanded, is resolved against the module it occurs in, inline
//! `mod x { }` blocks included. `src/lib.rs`, the crate root, is exempt: it only
//! declares modules and re-exports the public API; a `crate::Name` path through
//! such a re-export counts as a path to the module that defines `Name`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// The layers, lowest first. A module may import from its own layer and from the layers before it.
pub const LAYERS: &[&str] = &[
    "core",
    "metrics",
    "checkpoint",
    "state",
    "chain",
    "exchange",
    "build",
    "operators",
    "connectors",
    "api",
    "exec",
    "config",
    "testing",
];

/// Whether test modules obey the layers too (a test that needs a higher layer
/// then belongs to that layer's tests, or to `tests/`).
pub const TESTS_OBEY_LAYERS: bool = true;

/// A module path below the crate root: `["checkpoint", "restore"]`.
pub type ModPath = Vec<String>;
/// A token (identifier, `::` or one punctuation character) and its line.
pub type Token = (String, usize);

/// Splits Rust source into tokens, dropping whitespace, comments, literals and lifetimes.
pub fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let past_ident = |i: usize| (i..).find(|&k| !ident(at(k))).unwrap();
    // The index after a literal whose body starts at `i` and that ends with `close`.
    let past = |mut i: usize, close: &str, escapes: bool| {
        let close: Vec<char> = close.chars().collect();
        while i < c.len() && !c[i..].starts_with(&close) {
            i += 1 + (escapes && c[i] == '\\') as usize;
        }
        i + close.len()
    };
    let newlines: Vec<usize> = (0..c.len()).filter(|&k| c[k] == '\n').collect();
    let mut out = Vec::new();
    let mut push = |text: String, pos: usize| {
        out.push((text, newlines.partition_point(|&n| n < pos) + 1));
    };
    let mut i = 0;
    while i < c.len() {
        i = match (c[i], at(i + 1), at(i + 2)) {
            (ch, _, _) if ch.is_whitespace() => i + 1,
            ('/', '/', _) => (i..).find(|&k| at(k) == '\n' || k >= c.len()).unwrap(),
            ('/', '*', _) => past_comment(&c, i),
            ('"', _, _) => past(i + 1, "\"", true),
            ('\'', '\\', _) => past(i + 3, "'", false), // '\n', '\'', '\u{..}'
            ('\'', _, '\'') => i + 3,                   // 'x'
            ('\'', _, _) => past_ident(i + 1),          // a lifetime or label: 'a, 'static
            (':', ':', _) => {
                push("::".into(), i);
                i + 2
            }
            (ch, next, _) if ident(ch) || (ch == '$' && ident(next)) => {
                let end = past_ident(i + 1);
                let word: String = c[i..end].iter().collect();
                let hashes = (end..).take_while(|&k| at(k) == '#').count();
                match (word.as_str(), at(end), at(end + hashes)) {
                    ("r" | "br" | "cr", _, '"') => past(
                        end + hashes + 1,
                        &format!("\"{}", "#".repeat(hashes)),
                        false,
                    ),
                    ("r", '#', _) if hashes == 1 => {
                        let raw_end = past_ident(end + 1); // r#ident
                        push(c[end + 1..raw_end].iter().collect(), i);
                        raw_end
                    }
                    ("b" | "c", '"', _) => past(end + 1, "\"", true),
                    ("b", '\'', _) => past(end + 2 + (at(end + 1) == '\\') as usize, "'", false),
                    _ => {
                        push(word, i);
                        end
                    }
                }
            }
            (ch, _, _) => {
                push(ch.to_string(), i);
                i + 1
            }
        };
    }
    out
}

/// The index after the (possibly nested) block comment that starts at `i`.
fn past_comment(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        match (c[i], c.get(i + 1)) {
            ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
            ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
            _ => i += 1,
        }
        if depth == 0 {
            break;
        }
    }
    i
}

/// One path in the code, `use` groups expanded, with the module it occurs in.
#[derive(Debug, Clone, PartialEq)]
pub struct Ref {
    /// Line of the path's last segment.
    pub line: usize,
    /// The module the path occurs in, inline modules included.
    pub from: ModPath,
    /// The segments as written, leading `crate`/`$crate`/`super`/`self` included.
    pub path: Vec<String>,
    /// The `as` alias of a `use` leaf.
    pub alias: Option<String>,
    /// The path as text, for messages.
    pub text: String,
}

/// What one file references and declares.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Every path with a `::` (candidates: only some name modules of the crate).
    pub refs: Vec<Ref>,
    /// `mod x;` (false) and `mod x { .. }` (true) declarations: (line, module path, inline).
    pub mods: Vec<(usize, ModPath, bool)>,
}

fn word(t: &[Token], i: usize) -> &str {
    t.get(i).map_or("", |t| t.0.as_str())
}

fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$')
}

/// Parses the tokens of a file whose module is `module`.
pub fn parse(t: &[Token], module: &[String]) -> Parsed {
    let mut parsed = Parsed::default();
    let mut stack = vec![(module.to_vec(), 0)]; // (module, brace depth inside it)
    let (mut depth, mut i) = (0, 0);
    while i < t.len() {
        let cur = stack.last().unwrap().0.clone();
        let (s, next, prev) = (word(t, i), word(t, i + 1), word(t, i.wrapping_sub(1)));
        if s == "{" || s == "}" {
            depth = if s == "{" { depth + 1 } else { depth - 1 };
            if stack.len() > 1 && depth < stack.last().unwrap().1 {
                stack.pop();
            }
        } else if s == "mod" && is_name(next) && matches!(word(t, i + 2), "{" | ";") {
            let path = [&cur[..], &[next.to_string()]].concat();
            let inline = word(t, i + 2) == "{";
            parsed.mods.push((t[i].1, path.clone(), inline));
            if inline {
                depth += 1;
                stack.push((path, depth));
            }
            i += 2;
        } else if is_name(s)
            && next == "::"
            && prev != "::"
            && !(prev == "in" && word(t, i.wrapping_sub(2)) == "(")
        {
            // (`pub(in path)` is a visibility, not a reference)
            i = parse_tree(t, i, &cur, Vec::new(), &mut parsed.refs);
            continue;
        }
        i += 1;
    }
    parsed
}

/// Parses the path (tree) that starts at `i`, pushing one [`Ref`] per leaf; returns the index after it.
fn parse_tree(
    t: &[Token],
    mut i: usize,
    from: &ModPath,
    mut path: Vec<String>,
    out: &mut Vec<Ref>,
) -> usize {
    let mut line = t.get(i).map_or(0, |t| t.1);
    let mut glob;
    loop {
        let s = word(t, i);
        if s == "{" {
            i += 1;
            while i < t.len() && word(t, i) != "}" {
                let before = i;
                if word(t, i) != "," {
                    i = parse_tree(t, i, from, path.clone(), out);
                }
                i += (i == before) as usize;
            }
            return i + 1;
        }
        glob = s == "*";
        if !is_name(s) || s == "as" {
            i += glob as usize;
            break;
        }
        path.push(s.to_string());
        line = t[i].1;
        i += 1;
        if word(t, i) != "::" {
            break;
        }
        i += 1;
    }
    let alias = (word(t, i) == "as").then(|| word(t, i + 1).to_string());
    i += 2 * alias.is_some() as usize;
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    if !path.is_empty() {
        let text = path.join("::") + if glob { "::*" } else { "" };
        out.push(Ref {
            line,
            from: from.clone(),
            path,
            alias,
            text,
        });
    }
    i
}

/// The absolute path (below the crate root) a reference names, if it names something of the crate.
pub fn absolute(r: &Ref, known: &BTreeSet<ModPath>) -> Option<Vec<String>> {
    let p = &r.path;
    let mut base = r.from.clone();
    let rest = match p[0].as_str() {
        "crate" | "$crate" => {
            base.clear();
            &p[1..]
        }
        "self" | "super" => {
            let k = p
                .iter()
                .take_while(|s| *s == "self" || *s == "super")
                .count();
            for _ in p[..k].iter().filter(|s| *s == "super") {
                base.pop()?;
            }
            &p[k..]
        }
        // A child module of the current one, or a path of another crate, a type, an enum...
        first => known
            .contains(&[&base[..], &[first.to_string()]].concat())
            .then_some(&p[..])?,
    };
    Some([base, rest.to_vec()].concat())
}

/// The deepest existing module of an absolute path: `checkpoint::restore::X` -> `checkpoint::restore`.
pub fn deepest(abs: &[String], known: &BTreeSet<ModPath>) -> Option<ModPath> {
    (1..=abs.len())
        .rev()
        .map(|n| abs[..n].to_vec())
        .find(|m| known.contains(m))
}

fn is_test(m: &[String]) -> bool {
    m.iter().any(|s| s == "tests")
}

/// One parsed source file.
pub struct SrcFile {
    /// The path shown in messages: `src/checkpoint/mod.rs`.
    pub name: String,
    /// Its module path; empty for the crate root.
    pub module: ModPath,
    /// What it references and declares.
    pub parsed: Parsed,
}

/// Every file of a crate's `src`, the modules that exist and the root's re-exports.
pub struct Crate {
    /// The files, sorted by path.
    pub files: Vec<SrcFile>,
    /// Every module, from files and inline `mod x { }` blocks.
    pub known: BTreeSet<ModPath>,
    /// `pub use module::Name` of the crate root: `Name` -> its absolute path.
    pub reexports: BTreeMap<String, Vec<String>>,
}

impl Crate {
    /// Reads and parses every `.rs` file under `src`.
    pub fn scan(src: &Path) -> Crate {
        fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            let entries =
                std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
            entries.sort();
            for p in entries {
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    out.push(p);
                }
            }
        }
        let mut paths = Vec::new();
        walk(src, &mut paths);
        let (mut files, mut known) = (Vec::new(), BTreeSet::new());
        for p in paths {
            let rel = p.strip_prefix(src).unwrap();
            let mut module: ModPath = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into())
                .collect();
            if module.last().is_some_and(|m| m == "mod") || module == ["lib"] || module == ["main"]
            {
                module.pop();
            }
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let parsed = parse(&tokenize(&text), &module);
            known.extend(parsed.mods.iter().map(|m| m.1.clone()));
            known.extend(Some(module.clone()).filter(|m| !m.is_empty()));
            files.push(SrcFile {
                name: format!("src/{}", rel.display()),
                module,
                parsed,
            });
        }
        let reexports = (files.iter().filter(|f| f.module.is_empty()))
            .flat_map(|f| &f.parsed.refs)
            .filter_map(|r| {
                Some((
                    r.alias.clone().unwrap_or(r.path.last()?.clone()),
                    absolute(r, &known)?,
                ))
            })
            .collect();
        Crate {
            files,
            known,
            reexports,
        }
    }

    /// The module a reference resolves to, through the root's re-exports; `None` for the root or other crates.
    pub fn target(&self, r: &Ref) -> Option<ModPath> {
        let mut abs = absolute(r, &self.known)?;
        let first = abs
            .first()
            .filter(|f| !self.known.contains(&vec![f.to_string()]));
        if let Some(real) = first.and_then(|f| self.reexports.get(f)) {
            abs = [&real[..], &abs[1..]].concat();
        }
        deepest(&abs, &self.known)
    }

    /// Every reference outside the crate root to a module of the crate: (file, ref, module); tests last.
    pub fn resolved(&self) -> Vec<(&SrcFile, &Ref, ModPath)> {
        let mut out: Vec<_> = (self.files.iter().filter(|f| !f.module.is_empty()))
            .flat_map(|f| {
                f.parsed
                    .refs
                    .iter()
                    .filter_map(move |r| Some((f, r, self.target(r)?)))
            })
            .collect();
        out.sort_by_key(|(_, r, _)| is_test(&r.from));
        out
    }
}

/// Edges of a module graph: (from, to) -> an example (`file:line: path`).
pub type Edges = BTreeMap<(String, String), String>;

/// Breadth-first search: (the predecessor of every node reached, the nodes in order of distance).
fn bfs(edges: &Edges, from: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let (mut pred, mut order) = (BTreeMap::new(), Vec::new());
    let mut queue = VecDeque::from([from.to_string()]);
    while let Some(n) = queue.pop_front() {
        let out = edges
            .range((n.clone(), String::new())..)
            .take_while(|((a, _), _)| *a == n);
        for ((_, m), _) in out {
            if !pred.contains_key(m) {
                pred.insert(m.clone(), n.clone());
                order.push(m.clone());
                queue.push_back(m.clone());
            }
        }
    }
    (pred, order)
}

/// The strongly connected components of more than one node, each sorted.
pub fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.keys().flat_map(|(a, b)| [a, b]).collect();
    let (mut seen, mut out) = (BTreeSet::new(), Vec::new());
    for &n in &nodes {
        if seen.contains(n) {
            continue;
        }
        let fwd = bfs(edges, n).0;
        let scc: Vec<String> = (nodes.iter())
            .filter(|m| fwd.contains_key(**m) && bfs(edges, m).0.contains_key(n))
            .map(|m| m.to_string())
            .collect();
        seen.extend(scc.iter().cloned());
        if scc.len() > 1 {
            out.push(scc);
        }
    }
    out
}

/// A closed walk `a -> b -> .. -> a` through every node of a component, then an example per edge.
pub fn describe_cycle(edges: &Edges, scc: &[String]) -> String {
    let (start, mut walk) = (scc[0].clone(), vec![scc[0].clone()]);
    let mut left: BTreeSet<&String> = scc[1..].iter().collect();
    while walk.len() == 1 || walk.last() != Some(&start) {
        let cur = walk.last().unwrap().clone();
        let (pred, order) = bfs(edges, &cur);
        let goal = order
            .into_iter()
            .find(|m| left.contains(m))
            .unwrap_or(start.clone());
        let mut path = vec![goal];
        while pred[path.last().unwrap()] != cur {
            path.push(pred[path.last().unwrap()].clone());
        }
        left.retain(|m| !path.contains(m));
        walk.extend(path.into_iter().rev());
    }
    let mut s = format!("cycle: {}", walk.join(" -> "));
    let mut shown = BTreeSet::new();
    for w in walk.windows(2).filter(|w| shown.insert(w.to_vec())) {
        s += &format!(
            "\n    {} -> {}: {}",
            w[0],
            w[1],
            edges[&(w[0].clone(), w[1].clone())]
        );
    }
    s
}

fn verdict(title: &str, summary: String, problems: Vec<String>) -> Result<String, String> {
    if problems.is_empty() {
        Ok(format!("{title}: {summary}: ok"))
    } else {
        Err(format!("{title}: {summary}:\n{}", problems.join("\n")))
    }
}

/// Check A: every top-level module is in `layers` and imports only from its own layer or below.
pub fn check_layers(src: &Path, layers: &[&str]) -> Result<String, String> {
    let krate = Crate::scan(src);
    let rank = |m: &str| layers.iter().position(|l| *l == m);
    let tops: BTreeSet<&str> = krate.known.iter().map(|m| m[0].as_str()).collect();
    let unplaced = tops.iter().filter(|t| rank(t).is_none());
    let mut problems: Vec<String> = unplaced
        .map(|t| format!("module `{t}` is in no layer: place it in LAYERS"))
        .collect();
    let empty = layers.iter().filter(|l| !tops.contains(*l));
    problems
        .extend(empty.map(|l| format!("layer `{l}` has no module src/{l}.rs or src/{l}/mod.rs")));
    let (mut edges, mut upward) = (Edges::new(), Vec::new());
    for (f, r, to) in krate.resolved() {
        let (a, b) = (&f.module[0], &to[0]);
        if a == b || (is_test(&r.from) && !TESTS_OBEY_LAYERS) {
            continue;
        }
        let example = || format!("{}:{}: {}", f.name, r.line, r.text);
        edges.entry((a.clone(), b.clone())).or_insert_with(example);
        if rank(b).is_some_and(|rb| rank(a).is_some_and(|ra| rb > ra)) {
            let message = format!("{a} imports {} from layer {b}, which is above it", r.text);
            upward.push((f.name.clone(), r.line, message));
        }
    }
    upward.sort();
    problems.extend(upward.into_iter().map(|(f, l, m)| format!("{f}:{l}: {m}")));
    problems.extend(cycles(&edges).iter().map(|c| describe_cycle(&edges, c)));
    let summary = format!(
        "{} files, {} top-level modules, {} edges between them",
        krate.files.len(),
        tops.len(),
        edges.len()
    );
    verdict(&format!("layers of {}", src.display()), summary, problems)
}

/// Check B: inside each top-level module, the submodules (test modules aside) form no cycle.
pub fn check_submodule_cycles(src: &Path) -> Result<String, String> {
    let krate = Crate::scan(src);
    let mut edges = Edges::new();
    let mut add = |a: &[String], b: &[String], example: String| {
        if a != b && !a.is_empty() && a[0] == b[0] && !is_test(a) && !is_test(b) {
            edges.entry((a.join("::"), b.join("::"))).or_insert(example);
        }
    };
    for f in &krate.files {
        for (line, m, _) in &f.parsed.mods {
            add(
                &m[..m.len() - 1],
                m,
                format!("{}:{line}: mod {}", f.name, m[m.len() - 1]),
            );
        }
    }
    for (f, r, to) in krate.resolved() {
        add(&r.from, &to, format!("{}:{}: {}", f.name, r.line, r.text));
    }
    let problems = cycles(&edges)
        .iter()
        .map(|c| describe_cycle(&edges, c))
        .collect();
    let summary = format!(
        "{} files, {} edges between submodules",
        krate.files.len(),
        edges.len()
    );
    verdict(
        &format!("submodules of {}", src.display()),
        summary,
        problems,
    )
}

#[test]
fn runtime_modules_import_only_from_layers_below() {
    match check_layers(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        LAYERS,
    ) {
        Ok(summary) => println!("{summary}"),
        Err(problems) => panic!("{problems}"),
    }
}

#[test]
fn runtime_submodules_have_no_cycles() {
    match check_submodule_cycles(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))) {
        Ok(summary) => println!("{summary}"),
        Err(problems) => panic!("{problems}"),
    }
}

#[cfg(test)]
fn refs_of(src: &str, module: &str) -> Vec<String> {
    let module: ModPath = module.split("::").map(String::from).collect();
    let refs = parse(&tokenize(src), &module).refs.into_iter();
    refs.map(|r| format!("{}@{}:{}", r.text, r.from.join("::"), r.line))
        .collect()
}

#[test]
fn parser_ignores_comments_literals_and_lifetimes() {
    let src = r####"/// See [`crate::doc::Link`]; //! crate::inner_doc
/* outer /* nested crate::nested */ still comment crate::outer */
fn f<'a>(x: &'a str) -> &'static str { let _ = ('{', '\'', b'}', b'\'', "crate::s {", r#"crate::raw "{ "#);
    let _ = (br##"crate::braw"#"##, b"crate::bytes", '\u{7b}'); let r#type = 1; 'outer: loop { break 'outer; }
    crate::real::Y::new() }"####;
    assert_eq!(refs_of(src, "m"), ["crate::real::Y::new@m:5"]);
    let count = |s: &str| tokenize(src).iter().filter(|t| t.0 == s).count();
    assert_eq!((count("{"), count("}")), (2, 2));
    assert!(tokenize(src).contains(&("type".to_string(), 4)));
}

#[test]
fn parser_expands_use_groups_macros_and_inline_modules() {
    let src = "use crate::{a, b::{c, d as e}, f::{self, *}};\n\
               macro_rules! m { () => { $crate::g::H } }\n\
               mod inner { use super::super::z::W; }\n\
               mod decl;\n\
               #[cfg(test)]\n\
               mod tests { use super::*; fn t() { let _ = '}'; } }\n\
               use self::k;";
    let expected = [
        "crate::a@x::y:1",
        "crate::b::c@x::y:1",
        "crate::b::d@x::y:1",
        "crate::f@x::y:1",
        "crate::f::*@x::y:1",
        "$crate::g::H@x::y:2",
        "super::super::z::W@x::y::inner:3",
        "super::*@x::y::tests:6",
        "self::k@x::y:7",
    ];
    assert_eq!(refs_of(src, "x::y"), expected);
    let parsed = parse(&tokenize(src), &["x".into(), "y".into()]);
    assert_eq!(parsed.refs[2].alias.as_deref(), Some("e"));
    let mods: Vec<_> = parsed
        .mods
        .iter()
        .map(|(l, m, inline)| (*l, m.join("::"), *inline))
        .collect();
    let inner = (3, "x::y::inner".to_string(), true);
    let expected = [
        inner,
        (4, "x::y::decl".into(), false),
        (6, "x::y::tests".into(), true),
    ];
    assert_eq!(mods, expected);
}

#[test]
fn references_resolve_to_the_deepest_module() {
    let m = |s: &str| -> ModPath { s.split("::").map(String::from).collect() };
    let known = [
        "checkpoint",
        "checkpoint::restore",
        "x",
        "x::y",
        "x::y::inner",
        "x::z",
    ];
    let known: BTreeSet<ModPath> = known.map(m).into();
    let at = |from: &str, path: &str| {
        let r = Ref {
            line: 1,
            from: m(from),
            path: m(path),
            alias: None,
            text: path.into(),
        };
        Some(deepest(&absolute(&r, &known)?, &known)?.join("::"))
    };
    let restore = at("x", "crate::checkpoint::restore::RestoreScope");
    assert_eq!(restore.as_deref(), Some("checkpoint::restore"));
    let item = at("x", "$crate::checkpoint::TaskCheckpointing");
    assert_eq!(item.as_deref(), Some("checkpoint"));
    assert_eq!(
        at("x::y::inner", "super::super::z::W").as_deref(),
        Some("x::z")
    );
    assert_eq!(at("x::y", "super::Item").as_deref(), Some("x"));
    assert_eq!(at("x", "y::inner::f").as_deref(), Some("x::y::inner"));
    assert_eq!(at("x", "std::mem::take"), None);
    assert_eq!(at("x", "super::Root"), None);
}

#[test]
fn checks_report_upward_imports_and_cycles() {
    let dir = std::env::temp_dir().join(format!("layers-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("low")).unwrap();
    let files = [
        ("lib.rs", "pub mod low; pub mod high; pub use high::H;"),
        ("high.rs", "pub struct H; use crate::low::L;"),
        (
            "low/mod.rs",
            "mod sub; pub struct L; fn f() -> crate::H { todo!() }",
        ),
        ("low/sub.rs", "use super::L;"),
    ];
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let a = check_layers(&dir, &["low", "high"]).unwrap_err();
    assert!(a.contains("src/low/mod.rs:1: low imports crate::H from layer high, which is above it"));
    assert!(a.contains("cycle: high -> low -> high\n    high -> low: src/high.rs:1: crate::low::L"));
    let b = check_submodule_cycles(&dir).unwrap_err();
    assert!(
        b.contains("cycle: low -> low::sub -> low\n    low -> low::sub: src/low/mod.rs:1: mod sub")
    );
    let c = check_layers(&dir, &["high", "low", "core"]).unwrap_err();
    assert!(c.contains("layer `core` has no module src/core.rs or src/core/mod.rs"));
    assert!(
        c.contains("src/high.rs:1: high imports crate::low::L from layer low, which is above it")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
