//! The length limits `ARCHITECTURE.md` sets for the prose, enforced: the README (≤ 1,500
//! words, the quick start within its first 300), `ARCHITECTURE.md` (≤ 1,500) and every
//! module doc of core, CLI and app (≤ 300 words; depth goes in `docs/`).

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// The `//!` lines of a source file, without the marker.
fn module_doc(source: &str) -> String {
    source.lines().filter_map(|l| l.trim_start().strip_prefix("//!")).collect::<Vec<_>>().join("\n")
}

/// Every `.rs` file under `dir`, test files aside.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if path.is_dir() {
            sources(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

#[test]
fn readme_is_short_and_starts_with_the_quick_start() {
    let readme = read(&workspace().join("README.md"));
    let n = words(&readme);
    assert!(n <= 1500, "README.md has {n} words, more than 1,500: move depth to docs/");
    let quick = readme.find("```sh").expect("a quick start command");
    let before = words(&readme[..quick]);
    assert!(before <= 300, "the README's first command comes after {before} words, not within 300");
}

#[test]
fn architecture_is_short() {
    let n = words(&read(&workspace().join("ARCHITECTURE.md")));
    assert!(n <= 1500, "ARCHITECTURE.md has {n} words, more than 1,500");
}

#[test]
fn module_docs_are_at_most_300_words() {
    let root = workspace();
    let mut files = Vec::new();
    for krate in ["core", "cli", "app"] {
        sources(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 100, "read {} source files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = words(&module_doc(&read(f)));
            (n > 300).then(|| format!("{} ({n} words)", f.strip_prefix(&root).unwrap_or(f).display()))
        })
        .collect();
    assert!(long.is_empty(), "module docs over 300 words (move the depth to docs/): {long:?}");
}
