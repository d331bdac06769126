//! Measured runs in the CLI: `trace`, and a trace folder wherever a schedule file goes
//! (`simulate/render --from`, `convert`, `--costs-from`), on traces PyTorch wrote.

mod common;

use common::{fails, fails_with_hint, ok};

use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces").join(name).display().to_string()
}

#[test]
fn trace_json_has_every_field_the_issue_names() {
    let dir = tempfile::tempdir().unwrap();
    let out: Value = serde_json::from_str(&ok(dir.path(), &["trace", &fixture("interleaved-zb"), "--json"])).unwrap();
    for key in ["devices", "stages", "microbatches", "passes", "step_time", "per_device", "fitted", "replay"] {
        assert!(!out[key].is_null(), "{key}: {out:#}");
    }
    assert_eq!(
        (out["devices"].as_u64(), out["stages"].as_u64(), out["microbatches"].as_u64()),
        (Some(2), Some(4), Some(4))
    );
    assert_eq!(out["passes"].as_u64(), Some(48), "F, I and W of 4 stages × 4 microbatches");
    for d in out["per_device"].as_array().unwrap() {
        for key in ["device", "start", "end", "compute", "communication", "wait", "overhead", "order"] {
            assert!(!d[key].is_null(), "{key}");
        }
    }
    for key in ["f", "b", "w"] {
        assert_eq!(out["fitted"][key].as_array().unwrap().len(), 4, "{key}: one per stage");
    }
    assert!(out["fitted"]["comm"].as_f64().unwrap() >= 0.0);
    assert_eq!(out["fitted"]["backward"], "split");
    assert!(out["replay"]["error"].as_f64().unwrap().abs() < 1.0);
    // GPipe runs full backwards only, and says so.
    let gpipe: Value = serde_json::from_str(&ok(dir.path(), &["trace", &fixture("gpipe"), "--json"])).unwrap();
    assert_eq!(gpipe["fitted"]["backward"], "full");
    assert!(gpipe["fitted"]["w"].as_array().unwrap().iter().all(|w| w.as_f64() == Some(0.0)));
    assert!(gpipe["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("full backwards only")));
}

#[test]
fn a_measured_run_converts_to_json_that_reads_back_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("zbv");
    ok(dir.path(), &["convert", &run, "run.json"]);
    ok(dir.path(), &["convert", "run.json", "again.json"]);
    let first = std::fs::read_to_string(dir.path().join("run.json")).unwrap();
    assert_eq!(first, std::fs::read_to_string(dir.path().join("again.json")).unwrap(), "JSON round trip");
    assert!(first.contains("\"times\""));
    let numbers = |from: &str| {
        let mut v: Value = serde_json::from_str(&ok(dir.path(), &["simulate", "--from", from, "--json"])).unwrap();
        v.as_object_mut().unwrap().remove("schedule");
        v
    };
    assert_eq!(numbers(&run), numbers("run.json"), "the file holds the measured times");
    // The executed orders as PyTorch CSV read back as the same orders.
    ok(dir.path(), &["convert", &run, "orders.csv", "--to-format", "pytorch-csv"]);
    let csv = std::fs::read_to_string(dir.path().join("orders.csv")).unwrap();
    let truth: Value = serde_json::from_str(&std::fs::read_to_string(format!("{run}/run.json")).unwrap()).unwrap();
    let expected: Vec<String> = serde_json::from_value(truth["executed_compute_orders"].clone()).unwrap();
    assert_eq!(csv.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn simulate_and_render_read_a_trace_folder_on_its_measured_time_axis() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("interleaved-1f1b");
    let trace: Value = serde_json::from_str(&ok(dir.path(), &["trace", &run, "--json"])).unwrap();
    let sim: Value = serde_json::from_str(&ok(dir.path(), &["simulate", "--from", &run, "--json"])).unwrap();
    let step = trace["step_time"].as_f64().unwrap();
    // The stats count from the first pass's work; the step from its span (a few µs earlier).
    let makespan = sim["makespan"].as_f64().unwrap();
    assert!(makespan <= step && makespan > step - 1000.0, "{makespan} vs {step}");
    ok(dir.path(), &["render", "--from", &run, "-o", "run.svg"]);
    let svg = std::fs::read_to_string(dir.path().join("run.svg")).unwrap();
    assert!(svg.contains("measured run") && svg.contains(" ms"), "labelled and in ms");
    // Cost flags do not apply to measured times.
    fails_with_hint(dir.path(), &["simulate", "--from", &run, "--f", "2"], "measured run");
}

#[test]
fn any_family_runs_at_a_measured_runs_costs() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("interleaved-zb");
    let fitted: Value = serde_json::from_str(&ok(dir.path(), &["trace", &run, "--json"])).unwrap();
    let sim: Value = serde_json::from_str(&ok(
        dir.path(),
        &["simulate", "-s", "zb-v", "--devices", "2", "--microbatches", "4", "--costs-from", &run, "--json"],
    ))
    .unwrap();
    // ZB-V's four stages are the measured run's four: the same per-stage costs.
    let f: Vec<f64> = serde_json::from_value(fitted["fitted"]["f"].clone()).unwrap();
    let total: f64 = f.iter().sum();
    let costs = &sim["costs"];
    assert!((costs["f"].as_f64().unwrap() * 2.0 - total).abs() < 1e-6 * total, "{costs:#} vs {f:?}");
    let e = fails(dir.path(), &["simulate", "-s", "zb-v", "--costs-from", &run, "--f", "3"]);
    assert!(e.contains("cannot be combined with --costs-from"), "{e}");
}

#[test]
fn bad_trace_input_names_the_file_and_gives_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.json"), "{\"traceEvents\": [").unwrap();
    let e = fails(dir.path(), &["trace", "x.json"]);
    assert!(e.starts_with("error: x.json: ") && e.contains("cut off") && e.contains("hint:"), "{e}");
    assert_eq!(e.matches("error:").count(), 1, "{e}");
    let e = fails(dir.path(), &["trace", &fixture("1f1b-unlabelled")]);
    assert!(e.contains("no pipeline labels") && e.contains("_load_csv"), "{e}");
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    fails_with_hint(dir.path(), &["trace", "empty"], "holds no trace files");
    fails_with_hint(dir.path(), &["trace", "missing-folder"], "missing-folder");
}

/// `--calibrate RUN` fits the model to the run's middle stage, the runtime's overhead taken
/// off: exactly what giving those times by hand does, read independently from `trace --json`.
#[test]
fn calibrate_takes_a_profiled_run_as_its_middle_stages_times() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("zbv");
    let v: Value = serde_json::from_str(&ok(dir.path(), &["trace", &run, "--json"])).unwrap();
    let fitted = &v["fitted"];
    let stages = v["stages"].as_u64().unwrap() as usize;
    assert_eq!(stages, 4);
    // Stages 1 and 2 hold neither embedding nor head; the upper median of the two is 2.
    let overhead = fitted["overhead"].as_f64().unwrap();
    let times: Vec<String> =
        ["f", "b", "w"].iter().map(|k| (fitted[k][2].as_f64().unwrap() - overhead).to_string()).collect();
    // 24 layers cut into the run's 4 stages: 6 on stage 2; micro-batch 1 makes these CPU times
    // reachable for neither, so both forms must refuse alike, naming the same pass.
    let model = ["costs", "--model", "zb-1.5b", "--gpu", "a100-80gb", "-p", "4", "--layout", "Et*6|t*6|t*6|t*6L"];
    let times = times.join(",");
    let by_hand: Vec<&str> = model.iter().copied().chain(["--calibrate", times.as_str()]).collect();
    let from_run: Vec<&str> = model.iter().copied().chain(["--calibrate", run.as_str()]).collect();
    let a = fails(dir.path(), &by_hand);
    let b = fails(dir.path(), &from_run);
    let error = |e: &str| e.lines().skip_while(|l| !l.starts_with("error:")).collect::<Vec<_>>().join("\n");
    assert_eq!(error(&a), error(&b));
    assert!(b.contains("note: calibrating to the run's stage 2 (6 layers)"), "{b}");
    // A run with full backwards only measures no W.
    let gpipe = fixture("gpipe");
    fails_with_hint(
        dir.path(),
        &["costs", "--model", "zb-1.5b", "-p", "4", "--calibrate", &gpipe],
        "full backwards only",
    );
}
