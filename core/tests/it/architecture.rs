//! The layers of `ARCHITECTURE.md`, enforced: the import graph of the source files (tests
//! aside) has no circle, and no core module imports a module of a higher layer.
//!
//! The graph is read from the sources: every `use` and every path (`crate::…`, `super::…`,
//! `self::…`, a child module's name, a name a `use` brought in) is an edge to the file that
//! defines what it names. `pub use` lines are re-exports, not dependencies: a path through one
//! is followed to the file the item comes from. Modules declared under `#[cfg(test)]` are
//! tests and left out, with their children.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules by layer, lowest first, as `ARCHITECTURE.md` lists them under `heading`:
/// each bullet `- **N `a`, `b`**: …` is layer N, its modules in backticks (`lib.rs` is the
/// crate root). A module may import its own layer and the layers below it.
fn layers(heading: &str) -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let at = doc.find(heading).unwrap_or_else(|| panic!("ARCHITECTURE.md has no {heading:?}"));
    let mut out = Vec::new();
    for line in doc[at..].lines().skip(1).skip_while(|l| l.trim().is_empty()) {
        let Some(rest) = line.strip_prefix("- **") else { break };
        let (head, _) = rest.split_once("**").expect("a bold layer name");
        let (number, names) = head.split_once(' ').expect("`N modules`");
        assert_eq!(number.parse::<usize>().ok(), Some(out.len()), "layers are numbered from 0 in order: {line}");
        let modules: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|m| if m == "lib.rs" { String::new() } else { m.to_string() })
            .collect();
        assert!(!modules.is_empty(), "a layer names its modules in backticks: {line}");
        out.push(modules);
    }
    assert!(out.len() > 3, "ARCHITECTURE.md lists the layers under {heading:?} ({} read)", out.len());
    out
}

/// A crate's module tree and its import graph.
struct Graph {
    /// Module path (`["render", "gantt"]`) → its file.
    files: BTreeMap<Vec<String>, PathBuf>,
    /// Module path → the module paths it imports.
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// `source` without comments, string and char literals, and `#[cfg(test)]` items.
fn strip(source: &str) -> String {
    let bytes: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < bytes.len() && !(bytes[i] == '*' && bytes[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_is_ident(&bytes, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while bytes.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if bytes.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= bytes.len() {
                    break;
                }
                if bytes[j] == '"' && (0..hashes).all(|k| bytes.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                if bytes[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next.is_some() && bytes.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < bytes.len() && bytes[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    remove_test_items(&out)
}

fn prev_is_ident(bytes: &[char], i: usize) -> bool {
    i > 0 && (bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_')
}

/// Removes every item under `#[cfg(test)]` (to its `;` or its closing brace).
fn remove_test_items(source: &str) -> String {
    let mut out = String::new();
    let mut rest = source;
    // `#[cfg(test)]`, and tests behind a feature too (`#[cfg(all(test, feature = "engine"))]`).
    let next = |text: &str| ["#[cfg(test)]", "#[cfg(all(test,"].iter().filter_map(|m| text.find(m)).min();
    while let Some(at) = next(rest) {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let semi = after.find(';');
        let brace = after.find('{');
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => s + 1,
            (_, Some(b)) => matching_brace(after, b) + 1,
            (Some(s), None) => s + 1,
            (None, None) => after.len(),
        };
        rest = &after[end.min(after.len())..];
    }
    out.push_str(rest);
    out
}

fn matching_brace(text: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    text.len() - 1
}

/// The module declarations of a raw source: `(name, #[path] if any, under #[cfg(test)])`.
fn module_declarations(source: &str) -> Vec<(String, Option<String>, bool)> {
    let mut out = Vec::new();
    let mut attrs: Vec<String> = Vec::new();
    for line in source.lines() {
        let t = line.trim();
        if t.starts_with("#[") {
            attrs.push(t.to_string());
            continue;
        }
        let decl =
            t.strip_prefix("pub(crate) mod ").or_else(|| t.strip_prefix("pub mod ")).or_else(|| t.strip_prefix("mod "));
        if let Some(name) = decl.and_then(|d| d.strip_suffix(';')) {
            let path = attrs.iter().find_map(|a| a.strip_prefix("#[path = \"").and_then(|p| p.strip_suffix("\"]")));
            let test = attrs.iter().any(|a| a == "#[cfg(test)]");
            out.push((name.to_string(), path.map(str::to_string), test));
        }
        if !t.is_empty() {
            attrs.clear();
        }
    }
    out
}

/// Every identifier path in `code` (`a::b::{c, d}` expanded), with whether it is a
/// re-export (`pub use`).
fn paths(code: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    // `use` statements, with their trees.
    let mut rest = code;
    let mut uses = String::new();
    while let Some(at) = find_word(rest, "use") {
        let before = rest[..at].trim_end();
        let public = before.ends_with("pub") || before.ends_with("pub(crate)") || before.ends_with("pub(super)");
        let after = &rest[at + 3..];
        let end = after.find(';').unwrap_or(after.len());
        for path in expand_tree(after[..end].trim()) {
            out.push((path, public));
        }
        uses.push_str(&rest[..at]);
        rest = &after[end.min(after.len())..];
    }
    uses.push_str(rest);
    // Paths anywhere else in the code.
    let chars: Vec<char> = uses.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if is_ident_start(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let mut segments = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                segments.push(chars[start..j].iter().collect::<String>());
                if chars.get(j) == Some(&':')
                    && chars.get(j + 1) == Some(&':')
                    && chars.get(j + 2).is_some_and(|c| is_ident_start(*c))
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if segments.len() > 1 {
                out.push((segments, false));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `a::{b, c::{d, e as f}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand_tree(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace() || *c == ' ').collect();
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> =
            tree[..open].split("::").filter(|s| !s.trim().is_empty()).map(|s| s.trim().to_string()).collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        parts
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .flat_map(expand_tree)
            .map(|tail| prefix.iter().cloned().chain(tail).collect())
            .collect()
    } else {
        let plain = tree.split(" as ").next().unwrap_or(tree);
        vec![plain.split("::").map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()]
    }
}

impl Graph {
    /// Reads the crate whose root file is `root` (`lib.rs`).
    fn read(root: &Path) -> Graph {
        let mut files = BTreeMap::new();
        collect(root, Vec::new(), &mut files);
        let sources: BTreeMap<Vec<String>, String> = files
            .iter()
            .map(|(m, f)| (m.clone(), strip(&std::fs::read_to_string(f).expect("a source file"))))
            .collect();
        // What each module re-exports: name → the module path it names.
        let mut reexports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
        let mut imports: BTreeMap<Vec<String>, Vec<(Vec<String>, bool)>> = BTreeMap::new();
        for (module, code) in &sources {
            let found = paths(code);
            for (path, public) in &found {
                if *public {
                    if let (Some(name), Some(absolute)) = (path.last(), absolute(module, path, &files)) {
                        reexports.insert((module.clone(), name.clone()), absolute);
                    }
                }
            }
            imports.insert(module.clone(), found);
        }
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (module, found) in &imports {
            // Names a private `use` brought in, for paths that start with them.
            let aliases: BTreeMap<String, Vec<String>> = found
                .iter()
                .filter(|(p, public)| !public && p.len() > 1)
                .filter_map(|(p, _)| Some((p.last()?.clone(), absolute(module, p, &files)?)))
                .collect();
            let targets = edges.entry(module.clone()).or_default();
            for (path, public) in found {
                if *public {
                    continue;
                }
                let full = match aliases.get(&path[0]) {
                    Some(base) if path.len() > 1 => base.iter().cloned().chain(path[1..].iter().cloned()).collect(),
                    _ => match absolute(module, path, &files) {
                        Some(p) => p,
                        None => continue,
                    },
                };
                if let Some(target) = resolve(&full, &files, &reexports) {
                    if target != *module {
                        targets.insert(target);
                    }
                }
            }
        }
        Graph { files, edges }
    }

    /// Every circle, as the module paths on it.
    fn circles(&self) -> Vec<Vec<String>> {
        // Tarjan's strongly connected components.
        struct State<'a> {
            graph: &'a Graph,
            index: BTreeMap<&'a Vec<String>, usize>,
            low: BTreeMap<&'a Vec<String>, usize>,
            stack: Vec<&'a Vec<String>>,
            on_stack: BTreeSet<&'a Vec<String>>,
            out: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            for w in s.graph.edges.get(v).into_iter().flatten() {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[w].min(s.low[v]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.index[w].min(s.low[v]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.join("/"));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.out.push(component);
                }
            }
        }
        let mut s = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in self.edges.keys() {
            if !s.index.contains_key(v) {
                visit(&mut s, v);
            }
        }
        s.out
    }

    /// Imports from a lower layer to a higher one, as `from -> to`.
    fn upward(&self, layers: &[Vec<String>]) -> Vec<String> {
        let layer = |m: &Vec<String>| {
            let top = m.first().map_or("", String::as_str);
            layers.iter().position(|modules| modules.iter().any(|x| x == top))
        };
        let mut out = Vec::new();
        for (from, targets) in &self.edges {
            for to in targets {
                match (layer(from), layer(to)) {
                    (Some(a), Some(b)) if b > a => out.push(format!("{} -> {}", name(from), name(to))),
                    (None, _) | (_, None) => {
                        out.push(format!("{} -> {}: a module in no layer", name(from), name(to)));
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "lib".to_string()
    } else {
        module.join("/")
    }
}

/// Follows the module declarations from `file` (the module `module`), tests aside.
fn collect(file: &Path, module: Vec<String>, files: &mut BTreeMap<Vec<String>, PathBuf>) {
    let source = std::fs::read_to_string(file).expect("a source file");
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = file.parent().expect("a folder");
    let children_dir = if matches!(stem, "lib" | "main" | "mod") { dir.to_path_buf() } else { dir.join(stem) };
    for (child, path, test) in module_declarations(&source) {
        if test {
            continue;
        }
        let child_file = match path {
            Some(p) => dir.join(p),
            None if children_dir.join(format!("{child}.rs")).exists() => children_dir.join(format!("{child}.rs")),
            None => children_dir.join(&child).join("mod.rs"),
        };
        let mut child_module = module.clone();
        child_module.push(child);
        collect(&child_file, child_module.clone(), files);
    }
    files.insert(module, file.to_path_buf());
}

/// `path` as written in `module`, made absolute (from the crate root), or `None` for paths
/// into other crates.
fn absolute(module: &[String], path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        child => {
            let mut candidate = module.to_vec();
            candidate.push(child.to_string());
            if !files.contains_key(&candidate) {
                return None;
            }
            (module.to_vec(), path)
        }
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file module that defines what `path` names: the longest module prefix, then through
/// that module's re-exports.
fn resolve(
    path: &[String],
    files: &BTreeMap<Vec<String>, PathBuf>,
    reexports: &BTreeMap<(Vec<String>, String), Vec<String>>,
) -> Option<Vec<String>> {
    let mut path = path.to_vec();
    for _ in 0..16 {
        let at = (0..=path.len()).rev().find(|&n| files.contains_key(&path[..n]))?;
        let module = path[..at].to_vec();
        let Some(name) = path.get(at) else { return Some(module) };
        match reexports.get(&(module.clone(), name.clone())) {
            Some(target) if *target != path => {
                path = target.iter().cloned().chain(path[at + 1..].iter().cloned()).collect();
            }
            _ => return Some(module),
        }
    }
    None
}

fn check(krate: &str, layers: &[Vec<String>]) {
    let graph = Graph::read(&workspace().join(krate).join("src/lib.rs"));
    assert!(graph.files.len() > 10, "{krate}: the module tree was read ({} files)", graph.files.len());
    let circles = graph.circles();
    assert!(
        circles.is_empty(),
        "{krate}: imports go in circles:\n{}",
        circles.iter().map(|c| c.join(" ↔ ")).collect::<Vec<_>>().join("\n")
    );
    let upward = graph.upward(layers);
    assert!(
        upward.is_empty(),
        "{krate}: imports run from a lower layer up (see ARCHITECTURE.md):\n{}",
        upward.join("\n")
    );
}

#[test]
fn core_has_layers_and_no_circles() {
    check("core", &layers("What each core layer may import"));
}

#[test]
fn app_has_layers_and_no_circles() {
    check("app", &layers("What each app layer may import"));
}

#[test]
fn cli_has_no_circles() {
    let graph = Graph::read(&workspace().join("cli/src/main.rs"));
    assert!(graph.circles().is_empty(), "cli: {:?}", graph.circles());
}

/// Core's modules name what they use by its module (`crate::params::Costs`), not through the
/// root's re-exports (`crate::Costs`), which exist for users of the crate: a path through the
/// root hides which layer an import reaches. Test code aside.
#[test]
fn core_names_items_by_their_module() {
    let root = workspace().join("core/src/lib.rs");
    let lib = std::fs::read_to_string(&root).expect("lib.rs");
    let mut reexported = BTreeSet::new();
    for line in lib.lines().filter_map(|l| l.trim().strip_prefix("pub use ")) {
        let items = line.trim_end_matches(';');
        let items = items.rsplit_once("::").map_or(items, |(_, last)| last);
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            let item = item.trim();
            let item = item.rsplit_once(" as ").map_or(item, |(_, alias)| alias);
            if !item.is_empty() {
                reexported.insert(item.to_string());
            }
        }
    }
    assert!(reexported.len() > 20, "lib.rs's re-exports were read: {reexported:?}");
    let graph = Graph::read(&root);
    // A root module named as a re-exported function (`stats`, `validate`) is a module path.
    for module in graph.files.keys().filter(|m| m.len() == 1) {
        reexported.remove(&module[0]);
    }
    let mut found = Vec::new();
    for (module, file) in graph.files.iter().filter(|(m, _)| !m.is_empty()) {
        let text = strip(&std::fs::read_to_string(file).expect("a source file"));
        for (at, _) in text.match_indices("crate::") {
            let after = &text[at + "crate::".len()..];
            let firsts: Vec<&str> = match after.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').map(|p| p.trim()).collect(),
                None => vec![after],
            };
            for path in firsts {
                let first: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if reexported.contains(&first) {
                    found.push(format!("{}: crate::{first}", name(module)));
                }
            }
        }
    }
    assert!(found.is_empty(), "core names items through the root's re-exports:\n{}", found.join("\n"));
}

/// The checker itself: a circle and an upward import are found.
#[test]
fn the_checker_finds_circles_and_upward_imports() {
    let dir = std::env::temp_dir().join(format!("bubblescope-arch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("m")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod low;\npub mod m;\n#[cfg(test)]\nmod tests;\n").unwrap();
    std::fs::write(
        dir.join("low.rs"),
        "// crate::m::b is a comment\nuse crate::m::B;\nconst S: &str = \"crate::m::a\";\n",
    )
    .unwrap();
    std::fs::write(dir.join("m/mod.rs"), "mod a;\nmod b;\npub use b::B;\npub use a::A;\n").unwrap();
    std::fs::write(dir.join("m/a.rs"), "pub struct A;\nfn f() -> super::B { super::B }\n").unwrap();
    std::fs::write(
        dir.join("m/b.rs"),
        "pub struct B;\nfn g() { let _ = crate::m::A; }\n#[cfg(test)]\nmod t { use crate::low; }\n#[cfg(all(test, feature = \"x\"))]\nmod u { use super::*; use crate::low; }\n",
    )
    .unwrap();
    let graph = Graph::read(&dir.join("lib.rs"));
    let _ = std::fs::remove_dir_all(&dir);
    let edges: Vec<String> = graph
        .edges
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |t| format!("{} -> {}", name(from), name(t))))
        .collect();
    assert_eq!(
        edges,
        ["low -> m/b", "m/a -> m/b", "m/b -> m/a"],
        "re-exports followed, comments, strings and tests ignored"
    );
    assert_eq!(graph.circles(), vec![vec!["m/a".to_string(), "m/b".to_string()]]);
    let layers: Vec<Vec<String>> = [["low"], ["m"], [""]].iter().map(|l| vec![l[0].to_string()]).collect();
    assert_eq!(graph.upward(&layers), ["low -> m/b"]);
}

/// Prints a crate's import graph: `cargo test -p bubblescope --test it print_graph -- --ignored
/// --nocapture` (`ARCH_CRATE=app` for the app).
#[test]
#[ignore = "prints the graph for a maintainer"]
fn print_graph() {
    let krate = std::env::var("ARCH_CRATE").unwrap_or_else(|_| "core".to_string());
    let root = if krate == "cli" { "src/main.rs" } else { "src/lib.rs" };
    let graph = Graph::read(&workspace().join(&krate).join(root));
    for (from, to) in &graph.edges {
        println!("{} -> {}", name(from), to.iter().map(|t| name(t)).collect::<Vec<_>>().join(" "));
    }
}
