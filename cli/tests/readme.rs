//! The README's and the guides' CLI examples, run: each ```sh block holding one `bubblescope …`
//! command and followed by a ```text block must print exactly that text on standard output,
//! run from the repository root. A line `…` alone in the text stands for any lines (an
//! excerpt); every other line must match in full and in order (trailing spaces aside, which
//! Markdown does not show). Every relative link in the README, ARCHITECTURE.md and docs/
//! resolves, headings included.

mod common;

use std::path::{Path, PathBuf};

/// The files whose examples are checked, from the repository root.
const FILES: &[&str] = &["README.md", "docs/cli.md", "docs/optimality.md", "docs/formats.md", "docs/measured-runs.md"];

/// The line that stands for any lines in an expected output.
const ELISION: &str = "…";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// One example: where it is, the command's words after `bubblescope`, the expected output.
struct Example {
    place: String,
    args: Vec<String>,
    expected: String,
}

/// The fenced blocks of a Markdown text: (language, first line number, body).
fn blocks(text: &str) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match &mut open {
            None => {
                if let Some(lang) = line.strip_prefix("```") {
                    open = Some((lang.trim().to_string(), i + 1, String::new()));
                }
            }
            Some((_, _, body)) => {
                if line == "```" {
                    out.push(open.take().expect("an open block"));
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "a code block is never closed");
    out
}

/// The words of a shell command line: spaces split, single and double quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "an unclosed quote in {line:?}");
    if in_word {
        out.push(word);
    }
    out
}

/// Every example of a file: a ```sh block of one `bubblescope` line, then a ```text block.
fn examples(file: &str) -> Vec<Example> {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let blocks = blocks(&text);
    let mut out = Vec::new();
    for pair in blocks.windows(2) {
        let (lang, line, body) = &pair[0];
        let (next_lang, _, expected) = &pair[1];
        let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
        if lang != "sh" || next_lang != "text" || lines.len() != 1 {
            continue;
        }
        let args = words(lines[0]);
        if args.first().map(String::as_str) != Some("bubblescope") {
            continue;
        }
        out.push(Example { place: format!("{file}:{line}"), args: args[1..].to_vec(), expected: expected.clone() });
    }
    out
}

/// Whether `actual` is `expected`, where a line `…` in `expected` stands for any lines.
fn matches(expected: &str, actual: &str) -> bool {
    let expected: Vec<&str> = expected.lines().map(str::trim_end).collect();
    let actual: Vec<&str> = actual.lines().map(str::trim_end).collect();
    let segments: Vec<&[&str]> = expected.split(|l| *l == ELISION).collect();
    if segments.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (segments[0], segments[segments.len() - 1]);
    if actual.len() < first.len() + last.len() || !actual.starts_with(first) || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for segment in &segments[1..segments.len() - 1] {
        match (0..=rest.len().saturating_sub(segment.len())).find(|&i| rest[i..].starts_with(segment)) {
            Some(i) if rest.len() >= segment.len() => rest = &rest[i + segment.len()..],
            _ => return false,
        }
    }
    true
}

#[test]
fn the_readme_has_five_examples_with_their_output() {
    let found = examples("README.md");
    assert!(found.len() >= 5, "README.md has {} CLI examples with output, not 5", found.len());
}

#[test]
fn every_example_prints_what_the_docs_show() {
    let mut failures = Vec::new();
    let mut count = 0;
    for file in FILES {
        for example in examples(file) {
            count += 1;
            let args: Vec<&str> = example.args.iter().map(String::as_str).collect();
            let out = common::bubblescope(&root(), &args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                failures.push(format!(
                    "{}: bubblescope {} failed with {:?}\n{}",
                    example.place,
                    example.args.join(" "),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            } else if !matches(&example.expected, &stdout) {
                failures.push(format!(
                    "{}: bubblescope {} printed\n{stdout}\nwhere the docs show\n{}",
                    example.place,
                    example.args.join(" "),
                    example.expected
                ));
            }
        }
    }
    assert!(count > 0, "no examples found");
    assert!(failures.is_empty(), "{} of {count} examples are stale:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn the_matcher_reads_elisions() {
    assert!(matches("a\nb\n", "a\nb\n"));
    assert!(!matches("a\nb\n", "a\nb\nc\n"));
    assert!(matches("a\n…\nd\n", "a\nb\nc\nd\n"));
    assert!(matches("a\n…\nd\n", "a\nd\n"));
    assert!(matches("a\n…\nc\n…\ne\n", "a\nb\nc\nd\ne\n"));
    assert!(!matches("a\n…\nx\n…\ne\n", "a\nb\nc\nd\ne\n"));
    assert!(!matches("a\n…\na\n", "a\n"));
    assert!(matches("a  \nb\n", "a\nb   \n"));
    assert_eq!(words("costs --layout 'Et*3|t*4' -p 8"), ["costs", "--layout", "Et*3|t*4", "-p", "8"]);
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A Markdown text without its fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let root = root();
    let mut files = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = prose(&std::fs::read_to_string(root.join(file)).expect("a doc"));
        let dir = Path::new(file).parent().expect("a folder").to_path_buf();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
            let linked = if path.is_empty() { PathBuf::from(file) } else { dir.join(path) };
            // `docs/../ARCHITECTURE.md` → `ARCHITECTURE.md`, for the pending list and messages.
            let mut normal = PathBuf::new();
            for part in linked.components() {
                match part {
                    std::path::Component::ParentDir => {
                        normal.pop();
                    }
                    std::path::Component::CurDir => {}
                    other => normal.push(other),
                }
            }
            let shown = normal.to_string_lossy().replace('\\', "/");
            if !root.join(&normal).exists() {
                broken.push(format!("{file}: {target}: no such file"));
                continue;
            }
            if !fragment.is_empty() && shown.ends_with(".md") {
                let linked_text = prose(&std::fs::read_to_string(root.join(&normal)).expect("a doc"));
                let anchors: Vec<String> = linked_text
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(|l| anchor(l.trim_start_matches('#')))
                    .collect();
                if !anchors.iter().any(|a| a == fragment) {
                    broken.push(format!("{file}: {target}: no heading makes #{fragment}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
