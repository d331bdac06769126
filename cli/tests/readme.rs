//! The README's and every guide's CLI examples, run as a newcomer would run them: every
//! `bubblescope …` line of a ```sh block runs, in order, from a scratch folder per block whose
//! `tests/` is the repository's (so fixture paths resolve, and files a guide writes land in
//! the scratch folder, where the guide's later commands read them). Each must succeed. A block
//! followed by a ```text block must print exactly that text on standard output (the
//! commands' outputs in order, for a block of several). A line `…` alone in the text stands
//! for any lines (an excerpt); every other line must match in full and in order (trailing
//! spaces aside, which Markdown does not show). Lines of other programs (`cargo`, `tools/…`)
//! are not run. Every relative link in the README, ARCHITECTURE.md and docs/ resolves,
//! headings included.

mod common;

use std::path::{Path, PathBuf};

/// The files whose examples are checked, from the repository root: the README and every guide.
fn files() -> Vec<String> {
    let mut out = vec!["README.md".to_string()];
    let mut guides: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    guides.sort();
    out.extend(guides);
    out
}

/// The line that stands for any lines in an expected output.
const ELISION: &str = "…";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// One example: where it is, each command's words after `bubblescope`, the expected output
/// when the guide shows one.
struct Example {
    place: String,
    commands: Vec<Vec<String>>,
    expected: Option<String>,
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

/// Every example of a file: a ```sh block with `bubblescope` lines, and the ```text block
/// after it if there is one.
fn examples(file: &str) -> Vec<Example> {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let blocks = blocks(&text);
    let mut out = Vec::new();
    for (i, (lang, line, body)) in blocks.iter().enumerate() {
        if lang != "sh" {
            continue;
        }
        let commands: Vec<Vec<String>> = body
            .lines()
            .map(|l| l.split(" #").next().unwrap_or(l))
            .filter(|l| l.trim_start().starts_with("bubblescope "))
            .map(|l| words(l)[1..].to_vec())
            .collect();
        if commands.is_empty() {
            continue;
        }
        let expected = match blocks.get(i + 1) {
            Some((next, _, expected)) if next == "text" && follows(&text, *line, body) => Some(expected.clone()),
            _ => None,
        };
        out.push(Example { place: format!("{file}:{line}"), commands, expected });
    }
    out
}

/// Whether the block after the ```sh block at `line` (holding `body`) follows it directly, with
/// only blank lines between: a ```text block further on shows something else.
fn follows(text: &str, line: usize, body: &str) -> bool {
    let after = line + body.lines().count() + 1;
    text.lines().skip(after).find(|l| !l.trim().is_empty()).is_some_and(|l| l.starts_with("```text"))
}

/// A scratch folder whose `tests` is the repository's.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a scratch folder");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root().join("tests"), dir.path().join("tests")).expect("a link to tests/");
    #[cfg(not(unix))]
    std::os::windows::fs::symlink_dir(root().join("tests"), dir.path().join("tests")).expect("a link to tests/");
    dir
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
    let found = examples("README.md").iter().filter(|e| e.expected.is_some()).count();
    assert!(found >= 5, "README.md has {found} CLI examples with output, not 5");
}

/// What is wrong with one example, run in its own scratch folder (none when it is right), and
/// how many commands it ran.
fn check(example: &Example) -> (Vec<String>, usize) {
    let dir = scratch();
    let mut failures = Vec::new();
    let mut printed = String::new();
    for command in &example.commands {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let out = common::bubblescope(dir.path(), &args);
        if !out.status.success() {
            failures.push(format!(
                "{}: bubblescope {} failed with {:?}\n{}",
                example.place,
                command.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        printed.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    if let Some(expected) = &example.expected {
        if !matches(expected, &printed) {
            let shown: Vec<String> = example.commands.iter().map(|c| format!("bubblescope {}", c.join(" "))).collect();
            failures.push(format!(
                "{}: {} printed\n{printed}\nwhere the docs show\n{expected}",
                example.place,
                shown.join("; ")
            ));
        }
    }
    (failures, example.commands.len())
}

#[test]
fn every_example_prints_what_the_docs_show() {
    // Each block runs in its own scratch folder (a guide's later block reads only what its own
    // commands wrote), so blocks run side by side: the plan examples take a while.
    let all: Vec<Example> = files().iter().flat_map(|f| examples(f)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let results: Vec<(Vec<String>, usize)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(example) = all.get(i) else { break };
                        done.push((i, check(example)));
                    }
                    done
                })
            })
            .collect();
        let mut done: Vec<(usize, (Vec<String>, usize))> =
            workers.into_iter().flat_map(|w| w.join().expect("a worker")).collect();
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r).collect()
    });
    let count: usize = results.iter().map(|(_, n)| n).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|(f, _)| f).collect();
    assert!(count > 0, "no examples found");
    assert!(failures.is_empty(), "{} of {count} commands are stale:\n\n{}", failures.len(), failures.join("\n\n"));
}

/// Issue 43 item 16: the README says what its words mean before its first example, and what
/// `--mem-limit` counts in each command, and its 80 GiB example says what its peak leaves out.
#[test]
fn the_readme_explains_its_concepts_before_its_first_example() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("the README");
    let concepts = text.find("\n## Concepts\n").expect("a Concepts part");
    let first = text.find("```sh\nbubblescope ").expect("an example");
    assert!(concepts < first, "Concepts comes before the first example");
    let part = &text[concepts..text[concepts + 1..].find("\n## ").map_or(text.len(), |e| e + concepts + 1)];
    for term in [
        "**P**",
        "**M**",
        "**F**",
        "**B**",
        "**W**",
        "PyTorch's `B` is our BW",
        "**hop**",
        "**mem-f**",
        "**mem-w**",
        "**stage**",
        "**chunks**",
        "**share**",
        "**cost**",
        "**makespan**",
        "**ideal**",
        "`(cost − ideal) / cost`",
        "`(cost − busiest work) / cost`",
        "`--microbatches`",
        "`--micro-batch`",
    ] {
        assert!(part.contains(term), "Concepts names {term}");
    }
    let limit = part.lines().find(|l| l.contains("`--mem-limit`")).expect("what --mem-limit counts");
    for said in ["activations only", "`simulate`", "`sweep`", "playground", "`plan`", "weights", "optimizer state"] {
        assert!(limit.contains(said), "{said} in: {limit}");
    }
    assert!(text.contains("The 79.45 GiB peak is activations only: weights, gradients and optimizer state come on top"));
}

/// The guides a newcomer runs first have CLI examples the test above finds and runs (a change to
/// how it reads blocks that found none would pass unnoticed).
#[test]
fn the_guides_examples_are_found() {
    let found: Vec<String> = files().iter().filter(|f| !examples(f).is_empty()).cloned().collect();
    for file in ["README.md", "docs/cli.md", "docs/pytorch.md", "docs/memory-trade.md", "docs/measured-runs.md"] {
        assert!(found.iter().any(|f| f == file), "{file} has no CLI examples: {found:?}");
    }
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
