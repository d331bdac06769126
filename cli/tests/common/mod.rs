//! Helpers shared by the binary's integration tests: run it, expect success or exit status 2.
// Each test crate uses some of these helpers.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// A small custom model (8 layers, hidden 1024): quick to plan, and too few layers for 16
/// devices.
pub const SMALL_MODEL: [&str; 12] =
    ["--layers", "8", "--hidden", "1024", "--heads", "16", "--seq", "1024", "--vocab", "32000", "--micro-batch", "1"];

/// Runs the binary with `args` in `dir` and returns its output.
pub fn bubblescope(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bubblescope")).args(args).current_dir(dir).output().expect("the binary runs")
}

/// Runs and expects success; on failure shows everything.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = bubblescope(dir, args);
    assert!(
        out.status.success(),
        "bubblescope {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs and expects success; returns what it said on standard error (its notes and warnings).
pub fn ok_stderr(dir: &Path, args: &[&str]) -> String {
    let out = bubblescope(dir, args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Runs and expects exit status 2; returns stderr.
pub fn fails(dir: &Path, args: &[&str]) -> String {
    let out = bubblescope(dir, args);
    assert_eq!(out.status.code(), Some(2), "bubblescope {args:?}: stdout {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).expect("utf-8 errors")
}

/// [`fails`], with an error that says `says` and gives a hint.
pub fn fails_with_hint(dir: &Path, args: &[&str], says: &str) -> String {
    let e = fails(dir, args);
    assert!(e.contains(says) && e.contains("\n  hint: "), "{args:?}: {e}");
    e
}

/// `base` then `extra`.
pub fn join<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// The command an `--export` note gives for reading the file back (`… with: bubblescope
/// ARGS`, at the end of `said`), run in `dir` with `--json`.
pub fn read_back(dir: &Path, said: &str) -> serde_json::Value {
    let command = said.split("with: bubblescope ").nth(1).map(str::trim).unwrap_or_else(|| panic!("{said}"));
    let again: Vec<&str> = command.split_whitespace().chain(["--json"]).collect();
    serde_json::from_str(&ok(dir, &again)).unwrap()
}

/// [`ok`] in a fresh scratch directory, for commands that read and write no files.
pub fn ok_in_scratch(args: &[&str]) -> String {
    ok(tempfile::tempdir().expect("a scratch directory").path(), args)
}

/// [`fails`] in a fresh scratch directory, for commands that read and write no files.
pub fn fails_in_scratch(args: &[&str]) -> String {
    fails(tempfile::tempdir().expect("a scratch directory").path(), args)
}
