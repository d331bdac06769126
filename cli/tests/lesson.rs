//! Lessons and derivations through the CLI (issue 42): `render --lesson` draws each step as
//! `render` draws the same settings, refuses what its steps do not read, and `explain --derive`
//! places every pass once.

mod common;

use common::{fails_with_hint, ok, ok_stderr};

#[test]
fn each_lesson_step_is_the_figure_render_draws_for_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let said = ok_stderr(d, &["render", "--lesson", "zero-bubble", "-o", "step.svg"]);
    assert!(said.contains("step 2: ZB-H1 lets W wait"), "{said}");
    // The steps' own settings, drawn the plain way.
    let plain = [("1f1b", "4", "8"), ("zb-h1", "4", "8"), ("zb-h2", "4", "8"), ("zb-v", "4", "8")];
    for (i, (s, p, m)) in plain.iter().enumerate() {
        ok(d, &["render", "-s", s, "-p", p, "-m", m, "-o", "plain.svg"]);
        let lesson = std::fs::read(d.join(format!("step-{}.svg", i + 1))).unwrap();
        assert_eq!(lesson, std::fs::read(d.join("plain.svg")).unwrap(), "step {} is {s}", i + 1);
    }
    assert!(!d.join("step-5.svg").exists());
    // Again: the files it replaces are named.
    let again = ok_stderr(d, &["render", "--lesson", "zero-bubble", "-o", "step.svg"]);
    assert!(again.contains("note: replaced step-1.svg, step-2.svg, step-3.svg, step-4.svg"), "{again}");
}

#[test]
fn a_lesson_of_ones_own_draws_its_comparisons_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "Mine\nZB-H1 over 1F1B\nschedule=zb-h1&devices=4&microbatches=8&compare=1f1b";
    ok_stderr(d, &["render", "--lesson", text, "-o", "mine.svg"]);
    ok(d, &["render", "--compare", "zb-h1,1f1b", "-p", "4", "-m", "8", "-o", "plain.svg"]);
    assert_eq!(std::fs::read(d.join("mine-1.svg")).unwrap(), std::fs::read(d.join("plain.svg")).unwrap());
}

#[test]
fn a_lesson_refuses_what_its_steps_would_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lesson = ["render", "--lesson", "zero-bubble", "-o", "s.svg"];
    for (flag, value, named) in [("-p", "8", "--devices"), ("--f", "2", "--f"), ("--p2p", "blocking", "--p2p")] {
        let args: Vec<&str> = lesson.iter().copied().chain([flag, value]).collect();
        fails_with_hint(d, &args, &format!("{named} does not apply with --lesson"));
    }
    fails_with_hint(d, &["render", "--lesson", "zero-bubbel", "-o", "s.svg"], "no lesson is named `zero-bubbel`");
    fails_with_hint(d, &["render", "--lesson", "zero-bubble", "-o", "-"], "-o - is not a file name");
    fails_with_hint(d, &["render", "--lesson", "zero-bubble", "-o", "s.json"], "does not end in .svg");
    // Sixth and seventh hostile passes: -o /dev/full wrote /dev/full-1.svg … beside the device.
    #[cfg(unix)]
    {
        fails_with_hint(
            d,
            &["render", "--lesson", "zero-bubble", "-o", "/dev/null"],
            "-o /dev/null is not a file name",
        );
        assert!(!std::path::Path::new("/dev/null-1.svg").exists(), "nothing written beside /dev/null");
    }
    let typo = "T\ncap\ns=zb-h1&p=8";
    fails_with_hint(
        d,
        &["render", "--lesson", typo, "-o", "s.svg"],
        "step 1 of the lesson: s=zb-h1: no such key; did you mean schedule?",
    );
    let bad = "T\ncap\nschedule=1f1b&f=nan";
    let e = fails_with_hint(d, &["render", "--lesson", bad, "-o", "s.svg"], "step 1 of the lesson: f=nan: expected");
    assert!(!e.contains("ignored"), "an error, not an ignored value: {e}");
    fails_with_hint(d, &["render", "--lesson", "T\ncap", "-o", "s.svg"], "has 1 line after its title");
    // Seventh hostile pass: a key given twice drew the last value without a word, and a value
    // without a key was asked "did you mean v?".
    let twice = "T\ncap\nschedule=1f1b&devices=4&devices=8";
    fails_with_hint(d, &["render", "--lesson", twice, "-o", "s.svg"], "step 1 of the lesson: devices is given twice");
    let keyless = "T\ncap\n=1f1b";
    let e = fails_with_hint(d, &["render", "--lesson", keyless, "-o", "s.svg"], "=1f1b: a value without a key");
    assert!(!e.contains("did you mean"), "{e}");
    // A key typed with spaces around it was asked "did you mean v?", not schedule.
    let spaced = "T\ncap\n s = 1f1b & p = 4 ";
    let e = fails_with_hint(d, &["render", "--lesson", spaced, "-o", "s.svg"], "no such key; did you mean schedule?");
    assert!(!e.contains("did you mean v?"), "{e}");
    assert!(!d.join("s-1.svg").exists(), "nothing written");
}

#[test]
fn a_derivation_places_every_pass_once_with_the_runs_own_times() {
    let dir = std::env::temp_dir();
    for family in ["gpipe", "1f1b", "zb-h1", "zb-v", "interleaved-1f1b", "dualpipe-v"] {
        let text = ok(&dir, &["explain", "-s", family, "-p", "4", "-m", "8", "--derive", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let placed: u64 = v["derive"].as_array().unwrap().iter().map(|s| s["passes"].as_u64().unwrap()).sum();
        let sim: serde_json::Value =
            serde_json::from_str(&ok(&dir, &["simulate", "-s", family, "-p", "4", "-m", "8", "--json"])).unwrap();
        assert_eq!(placed, sim["passes"].as_u64().unwrap(), "{family}");
    }
    // GPipe's first backward waits for every forward, not for the first chain.
    let gpipe = ok(&dir, &["explain", "-s", "gpipe", "-p", "4", "-m", "8", "--derive"]);
    assert!(gpipe.contains("starts at 11, though microbatch 0's forward left the last stage at 4"), "{gpipe}");
    // With a model, times carry their unit.
    let model = ok(&dir, &["explain", "-s", "1f1b", "--model", "llama-3.2-1b", "-p", "4", "-m", "8", "--derive"]);
    assert!(model.contains(" ms)") || model.contains(" µs)"), "{model}");
}

/// Eighth hostile pass: `render --lesson mine.txt` took the file's name for a lesson's name
/// ("no lesson is named `mine.txt`"). A file gives the lesson's text; an empty one says so.
#[test]
fn a_lesson_file_gives_the_lessons_text() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "Mine\nZB-H1 over 1F1B\nschedule=zb-h1&devices=4&microbatches=8&compare=1f1b\n";
    std::fs::write(d.join("mine.txt"), text).unwrap();
    ok_stderr(d, &["render", "--lesson", text, "-o", "typed.svg"]);
    ok_stderr(d, &["render", "--lesson", "mine.txt", "-o", "read.svg"]);
    assert_eq!(std::fs::read(d.join("read-1.svg")).unwrap(), std::fs::read(d.join("typed-1.svg")).unwrap());
    // A step's devices out of range got only the catch-all "`bubblescope help` lists the commands".
    std::fs::write(d.join("big.txt"), "T\ncap\nschedule=1f1b&devices=1000000\n").unwrap();
    let e = fails_with_hint(d, &["render", "--lesson", "big.txt", "-o", "b.svg"], "devices must be between 1 and 1024");
    assert!(e.contains("hint: devices is the number of pipeline ranks") && !e.contains("`bubblescope help`"), "{e}");
    std::fs::write(d.join("empty.txt"), "\n").unwrap();
    fails_with_hint(d, &["render", "--lesson", "empty.txt", "-o", "e.svg"], "empty.txt is empty: it holds no lesson");
}
