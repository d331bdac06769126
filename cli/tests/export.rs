//! `simulate --export`, `plan --export` and `convert` write through one path: every format by
//! extension or `--to-format`, a PyTorch version for the communication form, and a line saying
//! which PyTorch runtime loads the file.

mod common;

use common::{fails, fails_with_hint, join, ok, ok_stderr};

const DUMPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/pytorch-dumps/");

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn simulate_exports_every_format_convert_writes_and_says_what_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let family = ["simulate", "-s", "zb-v", "-p", "2", "-m", "4"];

    // The report is printed as without --export; the file is written beside it.
    assert_eq!(ok(d, &join(&family, &["--export", "zbv.csv"])), ok(d, &family));
    let said = ok_stderr(d, &join(&family, &["--export", "zbv.csv"]));
    assert_eq!(
        said.trim(),
        "wrote zbv.csv: a PyTorch schedule CSV (compute only), for _PipelineScheduleRuntime._load_csv(path, \
         format=\"compute_only\") in torch 2.14 or 2.15, which adds the communication; not for PipelineScheduleMulti, \
         which runs every rank in lock-step"
    );
    let said = ok_stderr(d, &join(&family, &["--export", "zbv-comms.csv", "--to-format", "pytorch-csv-comms"]));
    assert!(said.contains("format=\"compute_comms\") in torch 2.15, which runs it as written"), "{said}");
    ok_stderr(d, &join(&family, &["--export", "zbv-214.csv", "--to-format", "pytorch-csv-comms", "--torch", "2.14"]));
    ok_stderr(d, &join(&family, &["--export", "zbv.json"]));
    ok_stderr(d, &join(&family, &["--export", "zbv.trace.json", "--to-format", "perfetto"]));
    // The same bytes as converting the JSON, in every format.
    for (name, to, torch) in [
        ("zbv.csv", "pytorch-csv", &[][..]),
        ("zbv-comms.csv", "pytorch-csv-comms", &["--torch", "2.15"][..]),
        ("zbv-214.csv", "pytorch-csv-comms", &["--torch", "2.14"][..]),
    ] {
        ok(d, &join(&["convert", "zbv.json", "c.csv", "--to-format", to], torch));
        assert_eq!(read(d, name), read(d, "c.csv"), "{name}");
    }
    let comms = read(d, "zbv-comms.csv");
    assert!(comms.contains("WAIT_SEND_F") && comms.contains("WAIT_REDUCE_GRAD") && comms.contains("UNSHARD"));
    let old = read(d, "zbv-214.csv");
    assert!(!old.contains("WAIT_") && old.contains("REDUCE_GRAD"), "{old}");
    // Every export reads back as the same schedule, at the same cost.
    let cost = |args: &[&str]| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_str(&ok(d, args)).unwrap();
        v["cost"].clone()
    };
    let expected = cost(&join(&family, &["--json"]));
    for name in ["zbv.csv", "zbv-comms.csv", "zbv-214.csv", "zbv.json"] {
        assert_eq!(cost(&["simulate", "--from", name, "--json"]), expected, "{name}");
    }
    // `--from` a file, exported again.
    ok_stderr(d, &["simulate", "--from", "zbv.json", "--export", "again.csv"]);
    assert_eq!(read(d, "again.csv"), read(d, "zbv.csv"));
    // `-` writes the file alone to standard output.
    assert_eq!(ok(d, &join(&family, &["--export", "-", "--to-format", "pytorch-csv-comms"])), comms);
}

#[test]
fn export_flags_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&[&str], &str); 11] = [
        (&["simulate", "-s", "1f1b", "--export", "x.txt"], "cannot tell the output format of x.txt from its extension"),
        (
            &["simulate", "-s", "1f1b", "--export", "x.json", "--to-dialect", "legacy"],
            "--to-dialect applies to PyTorch CSV",
        ),
        (
            &["simulate", "-s", "1f1b", "--export", "x.json", "--to-dialect", "current"],
            "--to-dialect applies to PyTorch CSV",
        ),
        (&["convert", "s.csv", "y.json", "--to-dialect", "legacy"], "--to-dialect applies to PyTorch CSV"),
        (&["simulate", "-s", "1f1b", "--export", "x.csv", "--torch", "2.13"], "unknown PyTorch version `2.13`"),
        (&["simulate", "-s", "1f1b", "--export", "x.json", "--torch", "2.15"], "--torch applies to PyTorch CSV files"),
        // A compute-only CSV is the same for every PyTorch: --torch would change nothing.
        (
            &["simulate", "-s", "zb-v", "--export", "x.csv", "--torch", "2.14"],
            "--torch applies to PyTorch CSV files with communication (pytorch-csv-comms), but x.csv is written as",
        ),
        (&["convert", "s.csv", "y.csv", "--torch", "2.14"], "--torch applies to PyTorch CSV files with communication"),
        (
            &[
                "simulate",
                "-s",
                "1f1b",
                "--export",
                "x.csv",
                "--to-format",
                "pytorch-csv-comms",
                "--torch",
                "2.15",
                "--to-dialect",
                "legacy",
            ],
            "--torch 2.15 reads the current dialect",
        ),
        (&["simulate", "-s", "dualpipe", "--export", "x.csv"], "PyTorch CSV holds one pipeline"),
        (&["convert", "x.json", "y.csv", "--torch", "3"], "unknown PyTorch version `3`"),
    ];
    for (args, says) in cases {
        fails_with_hint(d, args, says);
    }
    // --to-format and --torch need --export.
    let err = fails(d, &["simulate", "-s", "1f1b", "--torch", "2.15"]);
    assert!(err.contains("--export"), "{err}");
    // The file read is not overwritten.
    ok(d, &["simulate", "-s", "1f1b", "--export", "s.csv"]);
    let err = fails(d, &["simulate", "--from", "s.csv", "--export", "s.csv"]);
    assert!(err.contains("writing it would destroy the schedule"), "{err}");
}

#[test]
fn help_says_which_runtime_loads_a_file() {
    for command in ["simulate", "convert", "plan"] {
        let help = common::ok_in_scratch(&[command, "--help"]);
        assert!(help.contains("_PipelineScheduleRuntime._load_csv"), "{command}: {help}");
        assert!(help.contains("--torch"), "{command}: {help}");
    }
}

#[test]
fn pytorchs_own_dumps_simulate() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "ScheduleDualPipeV-p4-v2-m8.compute_comms.csv",
        "torch-2.14.1/ScheduleInterleaved1F1B-p4-v3-m12.compute_comms.csv",
        "Schedule1F1B-p4-v1-m8.compute_only.csv",
        "ScheduleGPipe-p4-v1-m8.compute_only.csv",
    ] {
        let path = format!("{DUMPS}{file}");
        ok(dir.path(), &["simulate", "--from", &path, "--json"]);
    }
}

#[test]
fn plan_exports_by_extension_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = ["plan", "-p", "4", "--mem-limit", "5", "--static-memory", "0.5", "--json"];

    let said = ok_stderr(d, &join(&plan, &["--export", "plan.json"]));
    assert!(said.contains("wrote plan.json: a Bubblescope JSON schedule"), "{said}");
    let said =
        ok_stderr(d, &join(&plan, &["--export", "plan.csv", "--to-format", "pytorch-csv-comms", "--torch", "2.14"]));
    assert!(said.contains("format=\"compute_comms\") in torch 2.14"), "{said}");
    ok(d, &["convert", "plan.json", "again.csv", "--to-format", "pytorch-csv-comms", "--torch", "2.14"]);
    assert_eq!(read(d, "plan.csv"), read(d, "again.csv"));
}

#[test]
fn perfetto_memory_counters_have_no_float_noise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Full recompute keeps 2/34 of each forward: the running total returns to empty as
    // -2.2e-16 unless the export snaps it.
    let args = ["simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--recompute", "full"];
    ok_stderr(d, &join(&args, &["--export", "t.json", "--to-format", "perfetto"]));
    let trace: serde_json::Value = serde_json::from_str(&read(d, "t.json")).unwrap();
    let values: Vec<f64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| e["args"]["activation"].as_f64().unwrap())
        .collect();
    assert!(values.len() > 40, "{values:?}");
    assert!(values.iter().all(|v| *v == 0.0 || *v >= 1e-9), "{values:?}");
    assert!(values.contains(&0.0), "{values:?}");
}

/// A blocking run's JSON export carries the send mode and reads back to the same cost; convert
/// under --p2p blocking refuses an order that deadlocks, in every format (issue 43, pass 6,
/// item 2).
#[test]
fn the_send_mode_crosses_a_json_export_and_convert_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = ["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--comm", "0.5", "--json"];
    let cost = |args: &[&str]| -> f64 {
        let v: serde_json::Value = serde_json::from_str(&ok(d, args)).unwrap();
        v["cost"].as_f64().unwrap()
    };
    let blocking = cost(&join(&run, &["--p2p", "blocking", "--export", "b.json"]));
    assert_eq!(cost(&["simulate", "--from", "b.json", "--json"]), blocking);
    assert!(cost(&["simulate", "--from", "b.json", "--p2p", "async", "--json"]) < blocking, "--p2p still wins");
    ok(d, &join(&run, &["--export", "a.json"]));
    assert!(!read(d, "a.json").contains("p2p"), "an async export is as before");
    ok(d, &["convert", "b.json", "b2.json"]);
    assert!(read(d, "b2.json").contains(r#""p2p":"blocking""#));
    ok(d, &["simulate", "-s", "zb-v", "--export", "zv.json"]);
    for out in ["x.json", "x.csv"] {
        fails_with_hint(d, &["convert", "zv.json", out, "--p2p", "blocking"], "schedule deadlocks");
        assert!(!d.join(out).exists());
    }
}

/// A PyTorch CSV holds no send mode: an export of a `--p2p blocking` run says so (it read
/// back at 33 where the run cost 42.5), and a Bubblescope JSON export, which holds it, does
/// not.
#[test]
fn a_pytorch_export_of_blocking_sends_says_the_file_holds_no_send_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = ["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--comm", "0.5", "--p2p", "blocking"];
    for (file, format) in [("b.csv", "pytorch-csv"), ("bc.csv", "pytorch-csv-comms")] {
        let said = ok_stderr(d, &join(&run, &["--export", file, "--to-format", format]));
        assert!(said.contains("note: the PyTorch file holds no send mode"), "{format}: {said}");
    }
    let said = ok_stderr(d, &join(&run, &["--export", "b.json"]));
    assert!(!said.contains("send mode"), "{said}");
    let said = ok_stderr(d, &["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--comm", "0.5", "--export", "a.csv"]);
    assert!(!said.contains("send mode"), "{said}");
}

/// Eighth hostile pass: a Perfetto trace Bubblescope wrote, read back, was taken for a
/// PyTorch profile ("no pipeline labels", a hint about Schedule1F1B; with a cost flag "a
/// measured run"), and `plan --export … --to-format perfetto` printed a read-back command that
/// failed so.
#[test]
fn a_perfetto_export_is_named_as_such_when_read_back_and_plan_offers_no_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok_stderr(d, &["simulate", "-s", "zb-h1", "-p", "4", "-m", "8", "--export", "t.json", "--to-format", "perfetto"]);
    let says = "it is a Perfetto trace Bubblescope wrote";
    for args in [
        &["simulate", "--from", "t.json"][..],
        &["simulate", "--from", "t.json", "--f", "2"],
        &["trace", "t.json"],
        &["convert", "t.json", "t.csv"],
        &["render", "--from", "t.json", "-o", "t.svg"],
        &["simulate", "-s", "1f1b", "-p", "4", "--costs-from", "t.json"],
    ] {
        let e = fails_with_hint(d, args, says);
        assert!(!e.contains("Schedule1F1B") && !e.contains("measured run"), "{args:?}: {e}");
    }
    let said =
        ok_stderr(d, &["plan", "-p", "4", "--mem-limit", "4", "--export", "plan.out", "--to-format", "perfetto"]);
    assert!(!said.contains("read it back") && said.contains("not to read back"), "{said}");
}

/// Eighth hostile pass: a JSON schedule of the wrong shape (`slices: null`, `placement: 0`, a
/// missing `microbatches`, orders for 3 devices of 4, an array, not JSON at all) got only the
/// catch-all hint "`bubblescope help` lists the commands"; an empty file or standard input was
/// "not valid JSON: EOF …" or "cannot tell the format". Each now says what the shape is, or
/// that the file is empty.
#[test]
fn a_malformed_json_schedule_says_what_a_schedule_holds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok_stderr(d, &["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--export", "base.json"]);
    let base: serde_json::Value = serde_json::from_str(&read(d, "base.json")).unwrap();
    let mut cases: Vec<(&str, String)> = vec![("array", "[]".into()), ("broken", "{\"format\":".into())];
    let mut edit = |name: &'static str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = base.clone();
        f(&mut v);
        cases.push((name, v.to_string()));
    };
    edit("slices", &|v| v["slices"] = serde_json::Value::Null);
    edit("placement", &|v| v["placement"] = 0.into());
    edit("microbatches", &|v| {
        v.as_object_mut().unwrap().remove("microbatches");
    });
    edit("orders", &|v| {
        v["orders"].as_array_mut().unwrap().pop();
    });
    for (name, text) in &cases {
        let file = format!("{name}.json");
        std::fs::write(d.join(&file), text).unwrap();
        let e = fails_with_hint(d, &["simulate", "--from", &file], "error: ");
        assert!(e.contains("`simulate --export FILE.json` writes") && !e.contains("`bubblescope help`"), "{name}: {e}");
    }
    std::fs::write(d.join("empty.json"), "").unwrap();
    fails_with_hint(d, &["simulate", "--from", "empty.json"], "the file is empty: it holds no schedule");
    fails_with_hint(d, &["simulate", "--from", "/dev/null"], "`/dev/null` is empty: it holds no schedule");
}
