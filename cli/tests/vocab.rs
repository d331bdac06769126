//! The vocabulary-parallel families from the command line: their bad input (issue 40), each an
//! `error:` with a `hint:`, and their schedules through JSON and PyTorch CSV.

mod common;

use common::{fails_with_hint, ok};

#[test]
fn vocabulary_families_refuse_bad_input_with_hints() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&[&str], &str); 10] = [
        (
            &["simulate", "-s", "vocab-2", "-p", "4", "-m", "8"],
            "error: vocab-2 splits the output layer by vocabulary, but these costs have no vocabulary layer",
        ),
        (
            &["simulate", "-s", "vocab-1", "-p", "4", "-m", "5", "--s", "0.5"],
            "error: vocab-1 needs at least 6 microbatches on 4 devices, found 5",
        ),
        (
            &["simulate", "-s", "vocab-2", "-p", "4", "-m", "8", "--s", "0.5", "--b", "0.2", "--w", "0.2"],
            "error: vocab-2 assumes a stage's backward takes at least its forward, found b + w = 0.4 < f = 1",
        ),
        (
            &["simulate", "-s", "interlaced-vocab", "-p", "3", "-m", "8", "--s", "0.5"],
            "error: interlaced-vocab needs an even number of devices, found 3",
        ),
        (
            &["simulate", "-s", "interlaced-vocab", "-p", "4", "-m", "6", "--s", "0.5"],
            "error: interlaced-vocab needs at least 7 microbatches on 4 devices, found 6",
        ),
        (&["simulate", "-s", "vocab-2", "-p", "4", "-m", "8", "--s", "-1"], "error: s must not be negative, found -1"),
        (
            &["simulate", "-s", "v-half-vocab", "-p", "4", "-m", "8"],
            "error: v-half-vocab splits the output layer by vocabulary, but these costs have no vocabulary layer",
        ),
        (
            &["simulate", "-s", "v-half-vocab", "-p", "3", "-m", "9", "--s", "1"],
            "error: v-half-vocab cannot run on 3 devices and 9 microbatches: at the authors' vocabulary times, device 0 runs F(stage 0, mb 2) before IF(shard 0, mb 2)",
        ),
        (
            &["simulate", "-s", "v-half-vocab", "-p", "4", "-m", "1", "--s", "1"],
            "error: v-half-vocab cannot run on 4 devices and 1 microbatch: at the authors' vocabulary times, device 0 runs B(stage 7, mb 0) before S(shard 0, mb 0)",
        ),
        // Per-device costs: the stage that breaks it, with its own values, not the means.
        (
            &["simulate", "-s", "vocab-1", "-p", "4", "-m", "8", "--s", "1", "--f", "3,4,5,6", "--b", "2", "--w", "0"],
            "error: vocab-1 assumes a stage's backward takes at least its forward, found stage 0's b + w = 2 < f = 3",
        ),
    ];
    for (args, start) in cases {
        let e = fails_with_hint(d, args, start);
        assert!(e.starts_with(start), "{args:?}: {e}");
    }
    // PyTorch has no action for a vocabulary shard's pass: the export says so.
    let e = fails_with_hint(
        d,
        &["simulate", "-s", "vocab-2", "-p", "2", "-m", "3", "--s", "0.5", "--export", "v.csv"],
        "error: PyTorch CSV has no action for a vocabulary shard's pass",
    );
    assert!(e.contains("--to-format json"), "{e}");
}

#[test]
fn a_vocabulary_schedule_reads_back_from_json_with_the_same_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["simulate", "-s", "vocab-1", "-p", "4", "-m", "8", "--s", "0.5", "--t", "1", "--comm", "0.1"];
    let direct = ok(d, &[&args[..], &["--json"]].concat());
    ok(d, &[&args[..], &["--export", "v.json"]].concat());
    let text = std::fs::read_to_string(d.join("v.json")).unwrap();
    assert!(text.contains("\"vocab\": {\"barriers\":2,\"side_stream\":true}") && text.contains("\"0S0\""), "{text}");
    let back = ok(d, &["simulate", "--from", "v.json", "--json"]);
    let field = |s: &str, key: &str| {
        let v: serde_json::Value = serde_json::from_str(s).unwrap();
        v[key].clone()
    };
    for key in ["cost", "bubble_rate", "peak_memory"] {
        assert_eq!(field(&direct, key), field(&back, key), "{key}");
    }
    assert_eq!(field(&direct, "peak_memory"), serde_json::json!(6.0));
}

#[test]
fn v_half_vocab_runs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(
        dir.path(),
        &["simulate", "-s", "v-half-vocab", "-p", "4", "-m", "16", "--s", "0.5", "--t", "1", "--comm", "0.1"],
    );
    assert!(out.starts_with("V-Half (vocabulary) · 4 devices · 16 microbatches"), "{out}");
    assert!(out.contains("cost         79.6") && out.contains("peak memory  4 "), "{out}");
}

#[test]
fn vocabulary_costs_on_a_family_without_a_vocabulary_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let says =
        "1f1b does not split the output layer by vocabulary, so s and t (its shards' times) would change nothing";
    for args in [
        &["simulate", "-s", "1f1b", "--s", "2"][..],
        &["simulate", "-s", "1f1b", "--t", "2"][..],
        &["explain", "-s", "1f1b", "--s", "2"][..],
        &["render", "-s", "1f1b", "--s", "2", "-o", "x.svg"][..],
    ] {
        let e = fails_with_hint(d, args, says);
        assert!(e.contains("hint: remove --s and --t, or pick a vocabulary-parallel family"), "{args:?}: {e}");
    }
    // A comparison with a family that reads them takes them.
    ok(d, &["render", "--compare", "1f1b,vocab-1", "--s", "0.5", "-o", "x.svg"]);
}

/// Fifth hostile pass: the hints of v-half-vocab's refusals fit the case, and a default T
/// above the cap is blamed on S, the number given.
#[test]
fn v_half_vocab_refusals_hint_what_helps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = fails_with_hint(d, &["simulate", "-s", "v-half-vocab", "--s", "1", "-p", "1", "-m", "8"], "error:");
    assert!(e.contains("hint: use --devices 2") && !e.contains("--devices 0"), "{e}");
    let e = fails_with_hint(
        d,
        &["simulate", "-s", "v-half-vocab", "--s", "1", "-p", "4", "-m", "8", "--f", "0.1"],
        "error:",
    );
    assert!(!e.contains("use more microbatches") && e.contains("equal F, B and W"), "{e}");
    let e = fails_with_hint(d, &["simulate", "-s", "v-half-vocab", "--s", "1e12"], "error:");
    assert!(e.contains("s must be at most 5e11 while t is left to its default"), "{e}");
}
