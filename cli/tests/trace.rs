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
    // A run is read from files: `-` is refused naming standard input, and a missing file's
    // hint does not offer standard input (before: "`-` reads standard input").
    for args in [&["trace", "-"][..], &["simulate", "-s", "1f1b", "--costs-from", "-"][..]] {
        let e = fails_with_hint(dir.path(), args, "-: a profiled run is read from its trace files, not standard input");
        assert!(e.contains("hint: give the folder torch.profiler wrote"), "{e}");
    }
    let e = fails_with_hint(dir.path(), &["trace", "missing.json"], "cannot read missing.json: no such file");
    assert!(!e.contains("standard input"), "{e}");
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

/// A copy of fixture `name` in `dir`, so a test may try to overwrite its files.
fn copied(name: &str, dir: &std::path::Path) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let from = entry.unwrap().path();
        std::fs::copy(&from, to.join(from.file_name().unwrap())).unwrap();
    }
    to
}

/// Every file a folder input reads is an input: no command writes over it, whichever flag
/// names the folder (`convert IN`, `--from`, `--costs-from`, `--calibrate`).
#[test]
fn no_output_overwrites_a_trace_a_folder_input_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = copied("interleaved-zb", d);
    let run = run.to_str().unwrap();
    let ranks = ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"];
    let before: Vec<Vec<u8>> = ranks.iter().map(|r| std::fs::read(format!("{run}/{r}")).unwrap()).collect();
    let model = ["--model", "zb-1.5b", "--gpu", "a100-80gb", "--layout", "Et*6|t*6|t*6|t*6L"];
    for rank in ranks {
        let out = format!("{run}/{rank}");
        let json = ["--to-format", "json"];
        let cases: Vec<Vec<&str>> = vec![
            [&["convert", run, &out][..], &json].concat(),
            [&["simulate", "--from", run, "--export", &out][..], &json].concat(),
            [&["simulate", "-s", "zb-v", "-p", "2", "-m", "4", "--costs-from", run, "--export", &out][..], &json]
                .concat(),
            [&["plan", "-p", "2", "--mem-limit", "1e9", "--costs-from", run, "--export", &out][..], &json].concat(),
            [&["simulate", "-s", "1f1b", "-p", "4", "--calibrate", run, "--export", &out][..], &model, &json].concat(),
        ];
        for args in cases {
            let e = fails_with_hint(d, &args, "would destroy");
            assert!(e.contains(rank), "{args:?}: {e}");
        }
    }
    let after: Vec<Vec<u8>> = ranks.iter().map(|r| std::fs::read(format!("{run}/{r}")).unwrap()).collect();
    assert!(before == after, "a trace was overwritten");
    ok(d, &["trace", run]);
    // A file in the folder that no trace reading takes may be written.
    ok(d, &["simulate", "--from", run, "--export", &format!("{run}/orders.csv")]);
}

/// Every fixture run with pipeline labels, by name.
fn labelled_runs() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("summary.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The replay `trace` prints at the fitted costs is what `simulate` gives for the same orders
/// at `--costs-from` the same run, on every fixture; a run with overlapped F&B pairs fits
/// their time and says it.
#[test]
fn the_replay_at_fitted_costs_is_simulate_at_those_costs_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in labelled_runs() {
        let run = fixture(&name);
        let trace: Value = serde_json::from_str(&ok(d, &["trace", &run, "--json"])).unwrap();
        let replay = trace["replay"]["step_time"].as_f64().unwrap();
        ok(d, &["convert", &run, "orders.csv", "--to-format", "pytorch-csv"]);
        let sim: Value =
            serde_json::from_str(&ok(d, &["simulate", "--from", "orders.csv", "--costs-from", &run, "--json"]))
                .unwrap();
        let makespan = sim["makespan"].as_f64().unwrap();
        assert!((makespan - replay).abs() <= 1e-9 * replay, "{name}: simulate {makespan} vs trace's replay {replay}");
        let pairs =
            trace["per_device"].as_array().unwrap().iter().any(|dev| {
                dev["order"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains("OVERLAP_F_B"))
            });
        let overlap = &trace["fitted"]["overlap"];
        assert_eq!(overlap.as_f64().is_some_and(|o| o > 0.0), pairs, "{name}: fitted overlap {overlap}");
    }
    let text = ok(d, &["trace", &fixture("dualpipev")]);
    assert!(text.contains("overlapped F&B pair"), "{text}");
}

/// `interleaved-zb-m8` with three passes of device 0 held up mid-work for three times their
/// time (every rank paused, as when other processes take the cores), written to `dir`.
fn disturbed(dir: &std::path::Path) {
    use std::io::Read as _;
    let mut ranks: Vec<Value> = (0..2)
        .map(|r| {
            let path = PathBuf::from(fixture("interleaved-zb-m8")).join(format!("rank{r}.pt.trace.json.gz"));
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    let span = |rank: &Value, label: &str| {
        let events = rank["traceEvents"].as_array().unwrap();
        let from = events.iter().find(|e| e["name"] == "ProfilerStep#2").unwrap()["ts"].as_f64().unwrap();
        let e =
            events.iter().find(|e| e["name"] == format!("PP:{label}") && e["ts"].as_f64().unwrap() >= from).unwrap();
        (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
    };
    let mut at: Vec<(f64, f64)> = ["0F1", "2F5", "0W3"].iter().map(|l| span(&ranks[0], l)).collect();
    at.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ts, dur) in at {
        let (at, by) = (ts + 0.6 * dur, 3.0 * dur);
        for rank in &mut ranks {
            for e in rank["traceEvents"].as_array_mut().unwrap() {
                let Some(t) = e.get("ts").and_then(Value::as_f64) else { continue };
                if t >= at {
                    e["ts"] = serde_json::json!(t + by);
                } else if let Some(d) = e.get("dur").and_then(Value::as_f64).filter(|d| t + d > at) {
                    e["dur"] = serde_json::json!(d + by);
                }
            }
        }
    }
    for (r, rank) in ranks.iter().enumerate() {
        std::fs::write(dir.join(format!("rank{r}.pt.trace.json")), serde_json::to_vec(rank).unwrap()).unwrap();
    }
}

/// Issue 43 item 4: a disturbed run shows as disturbed in `trace` (text and JSON) and in
/// `--costs-from`: the spread, the passes far from their median and by how much, and a note
/// on why the replay misses by more than 15%.
#[test]
fn a_disturbed_run_names_its_outliers_and_the_likely_cause() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    disturbed(&run);
    let run = run.display().to_string();
    let text = ok(dir.path(), &["trace", &run]);
    assert!(text.contains("(µs, median ± spread;"), "{text}");
    assert!(text.contains("ran far from their stage's median"), "{text}");
    for held in ["0F1", "2F5", "0W3"] {
        let line = text
            .lines()
            .find(|l| l.starts_with("  device 0 ") && l.contains(&format!(" {held} ")))
            .unwrap_or_else(|| panic!("{held} listed:\n{text}"));
        assert!(line.contains("× the median"), "{line}");
    }
    assert!(text.contains("below the measured step, more than 15%: likely contention"), "{text}");
    let out: Value = serde_json::from_str(&ok(dir.path(), &["trace", &run, "--json"])).unwrap();
    let outliers = out["fitted"]["outliers"].as_array().unwrap();
    let held = outliers.iter().find(|o| o["action"] == "0W3").expect("0W3 in fitted.outliers");
    for key in ["device", "stage", "kind", "time", "work", "median", "ratio"] {
        assert!(!held[key].is_null(), "{key}: {held}");
    }
    assert!(held["ratio"].as_f64().unwrap() > 2.0, "{held}");
    assert_eq!(out["fitted"]["spread"]["f"].as_array().unwrap().len(), 4);
    assert!(out["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("likely contention")));
    // A quiet run has no such note.
    let quiet: Value =
        serde_json::from_str(&ok(dir.path(), &["trace", &fixture("interleaved-zb-m8"), "--json"])).unwrap();
    assert!(!quiet["notes"].to_string().contains("more than 15%"), "{}", quiet["notes"]);
    // --costs-from says so on standard error and carries the fit in its JSON.
    let args = ["simulate", "-s", "zb-h1", "-p", "2", "-m", "8", "--costs-from", &run, "--json"];
    let said = common::bubblescope(dir.path(), &args);
    assert!(said.status.success());
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(stderr.contains("ran far from their stage's median") && stderr.contains("likely contention"), "{stderr}");
    let json: Value = serde_json::from_slice(&said.stdout).unwrap();
    assert!(json["fitted"]["outliers"].as_array().unwrap().iter().any(|o| o["action"] == "2F5"), "{}", json["fitted"]);
}

/// Issue 43, second pass, item 1: a run's costs are its measured times, so `convert DIR OUT`
/// refuses every flag that would write other costs beside them (before, the JSON held the
/// flags' costs next to the measured times), as `simulate --from DIR` does; and nothing is
/// written.
#[test]
fn convert_refuses_cost_flags_on_a_measured_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = fixture("gpipe");
    for (flags, names) in [
        (&["--model", "zb-1.5b"][..], "the model's flags"),
        (&["--f", "5"][..], "--f"),
        (&["--comm", "2"][..], "--comm"),
        (&["--overlap", "3"][..], "--overlap"),
        (&["--p2p", "blocking"][..], "--p2p"),
        (&["--mem-f", "2"][..], "--mem-f"),
        (&["--costs-from", &run][..], "--costs-from"),
    ] {
        for out in ["run.json", "run.csv"] {
            let args = common::join(&["convert", &run, out], flags);
            let e = fails_with_hint(d, &args, "is a measured run: its times are measured, so cost flags do not apply");
            assert!(e.contains(names) && e.contains("--costs-from DIR"), "{args:?}: {e}");
            assert!(!d.join(out).exists(), "{args:?} wrote {out}");
        }
    }
    // Without them the run converts, its JSON reading back to the measured step; that JSON
    // keeps its times, so cost flags are refused on it too.
    ok(d, &["convert", &run, "run.json"]);
    fails_with_hint(d, &["convert", "run.json", "again.json", "--f", "5"], "is a measured run");
    assert!(!d.join("again.json").exists());
    let trace: Value = serde_json::from_str(&ok(d, &["trace", &run, "--json"])).unwrap();
    let back: Value = serde_json::from_str(&ok(d, &["simulate", "--from", "run.json", "--json"])).unwrap();
    let (step, makespan) = (trace["step_time"].as_f64().unwrap(), back["makespan"].as_f64().unwrap());
    assert!((step - makespan).abs() <= 1e-9 * step, "{step} vs {makespan}");
}

/// Item 2 and item 6: every flag `convert DIR` and `simulate --from DIR` take is used or
/// refused, never ignored: the schedule-file flags on traces, `--mem-limit` in `convert`
/// (which checks no memory, whatever it reads), `--overlap` on a measured run.
#[test]
fn flags_a_measured_run_cannot_use_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = fixture("gpipe");
    for (flag, value) in [("--merge-bw", None), ("--dialect", Some("legacy")), ("--from-format", Some("json"))] {
        let mut args = vec!["convert", run.as_str(), "out.csv", flag];
        args.extend(value);
        let e = fails_with_hint(d, &args, "holds profiler traces");
        assert!(e.contains(flag) && e.contains("--to-dialect"), "{args:?}: {e}");
    }
    let e = fails_with_hint(d, &["convert", &run, "out.json", "--mem-limit", "3"], "--mem-limit does not apply");
    assert!(e.contains("simulate --from IN --mem-limit"), "{e}");
    ok(d, &["simulate", "-s", "1f1b", "--export", "plain.csv"]);
    fails_with_hint(d, &["convert", "plain.csv", "out.json", "--mem-limit", "3"], "--mem-limit does not apply");
    let e = fails_with_hint(d, &["simulate", "--from", &run, "--overlap", "1"], "cost flags do not apply");
    assert!(e.contains("--overlap given"), "{e}");
    fails_with_hint(d, &["render", "--from", &run, "--overlap", "1", "-o", "run.svg"], "cost flags do not apply");
    assert!(!d.join("out.json").exists() && !d.join("out.csv").exists() && !d.join("run.svg").exists());
}

/// Minor item: `convert` writes over no file the run's folder holds: its traces, and the
/// metadata beside them (`run.json`, `summary.json`), not only the traces it reads.
#[test]
fn convert_writes_over_no_file_of_the_runs_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = copied("gpipe", d);
    for name in ["run.json", "summary.json"] {
        let path = run.join(name);
        let before = std::fs::read(&path).unwrap();
        let e =
            fails_with_hint(d, &["convert", run.to_str().unwrap(), path.to_str().unwrap()], "would destroy the run");
        assert!(e.contains(&format!("is the file {name} that the input folder")), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} was overwritten");
    }
    ok(d, &["convert", run.to_str().unwrap(), run.join("orders.json").to_str().unwrap()]);
}

/// Item 3 through the binary: a damaged `ProfilerStep#2` is named, with its event, when the
/// step is asked for (before, it was dropped and `--step 2` said there is no step 2).
#[test]
fn a_damaged_profiler_step_is_named_when_asked_for() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for r in 0..2 {
        let path = PathBuf::from(fixture("interleaved-zb")).join(format!("rank{r}.pt.trace.json.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        let mut trace: Value = serde_json::from_str(&text).unwrap();
        if r == 0 {
            let events = trace["traceEvents"].as_array_mut().unwrap();
            let step = events.iter_mut().find(|e| e["name"] == "ProfilerStep#2").unwrap();
            step["dur"] = serde_json::json!(1e300);
        }
        std::fs::write(run.join(format!("rank{r}.pt.trace.json")), serde_json::to_vec(&trace).unwrap()).unwrap();
    }
    let run = run.display().to_string();
    let e = fails_with_hint(
        dir.path(),
        &["trace", &run, "--step", "2"],
        "the profiler step `ProfilerStep#2` lasts dur 1e300",
    );
    assert!(e.contains("rank0.pt.trace.json: event ") && !e.contains("no profiler step 2"), "{e}");
}

/// `zbv` with one event of rank 0's profiler step 2 (`PP:3F0`) damaged by `damage`, written
/// to `dir/name`; returns the folder and the event's original ts and dur.
fn damaged_zbv(dir: &std::path::Path, name: &str, damage: impl Fn(&mut Value)) -> (String, f64, f64) {
    use std::io::Read as _;
    let run = dir.join(name);
    std::fs::create_dir(&run).unwrap();
    let mut original = (0.0, 0.0);
    for r in 0..2 {
        let path = PathBuf::from(fixture("zbv")).join(format!("rank{r}.pt.trace.json.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        let mut trace: Value = serde_json::from_str(&text).unwrap();
        if r == 0 {
            let events = trace["traceEvents"].as_array_mut().unwrap();
            let step = events.iter().find(|e| e["name"] == "ProfilerStep#2").unwrap();
            let from = step["ts"].as_f64().unwrap();
            let event = events.iter_mut().find(|e| e["name"] == "PP:3F0" && e["ts"].as_f64().unwrap() >= from).unwrap();
            original = (event["ts"].as_f64().unwrap(), event["dur"].as_f64().unwrap());
            damage(event);
        }
        std::fs::write(run.join(format!("rank{r}.pt.trace.json")), serde_json::to_vec(&trace).unwrap()).unwrap();
    }
    (run.display().to_string(), original.0, original.1)
}

/// Found by the fourth hostile pass: a damaged pipeline span in the step read got "stage N
/// runs microbatch M with 0 forward…", naming no event; a forward cut to 12 µs was read
/// without a word. Now the damaged event is named with its ts, and a pass whose work is far
/// from its stage's is listed among the outliers.
#[test]
fn a_damaged_span_in_the_step_is_named_with_its_ts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ts = |v: f64| bubblescope::units::format_number(v, 3);
    let (run, at, _) = damaged_zbv(d, "stage", |e| e["name"] = "PP:7F0".into());
    fails_with_hint(
        d,
        &["trace", &run],
        &format!(
            "the event `PP:7F0` at ts {} names stage 7, but profiler step 2's other passes run stages 0 to 3",
            ts(at)
        ),
    );
    let (run, at, _) = damaged_zbv(d, "microbatch", |e| e["name"] = "PP:0F9".into());
    fails_with_hint(d, &["trace", &run], &format!("the event `PP:0F9` at ts {} names microbatch 9, but", ts(at)));
    let (run, at, _) = damaged_zbv(d, "renamed", |e| e["name"] = "PP:0F0".into());
    let e = fails_with_hint(d, &["trace", &run], "`PP:0F0` runs 2 times in profiler step 2, at ts ");
    assert!(e.contains(&format!("and ts {} (rank 0)", ts(at))) && e.contains("one of the events is misnamed"), "{e}");
    let (run, at, dur) = damaged_zbv(d, "longer", |e| e["dur"] = (e["dur"].as_f64().unwrap() * 10.0).into());
    let e = fails_with_hint(
        d,
        &["trace", &run],
        &format!("the event `PP:3F0` at ts {} lasts dur {} µs, so it holds the next pass", ts(at), ts(10.0 * dur)),
    );
    assert!(e.contains("its dur is damaged"), "{e}");
    let (run, _, _) = damaged_zbv(d, "moved", |e| e["ts"] = 0.into());
    fails_with_hint(d, &["trace", &run], "the event `PP:3F0` at ts 0 lies outside profiler step 2 (ts ");
    // Every message names an event, never only the counts.
    for name in ["stage", "microbatch", "renamed", "longer", "moved"] {
        let e = fails(d, &["trace", &d.join(name).display().to_string()]);
        assert!(!e.contains("with 0 forward"), "{name}: {e}");
    }
    // A forward cut to 12 µs reads, and is listed as an outlier by its work.
    let (run, _, _) = damaged_zbv(d, "cut", |e| e["dur"] = 12.into());
    let text = ok(d, &["trace", &run]);
    let line = text.lines().find(|l| l.starts_with("  device 0 3F0 ")).unwrap_or_else(|| panic!("3F0 listed:\n{text}"));
    assert!(line.contains("× the median work "), "{line}");
    let out: Value = serde_json::from_str(&ok(d, &["trace", &run, "--json"])).unwrap();
    let cut = out["fitted"]["outliers"].as_array().unwrap().iter().find(|o| o["action"] == "3F0").expect("3F0 listed");
    assert!(cut["work_ratio"].as_f64().unwrap() < 0.01 && cut["ratio"] == cut["work_ratio"], "{cut}");
}

/// A pass of no work among passes of none (0 / 0) is no outlier, and no ratio prints as
/// `inf×` or reads back as null: csv-zb-v-handcrafted's step 1 has such an I.
#[test]
fn a_zero_work_median_gives_no_infinite_ratio() {
    let d = &std::env::temp_dir();
    let mut runs: Vec<(String, Vec<&str>)> = labelled_runs().into_iter().map(|n| (fixture(&n), vec![])).collect();
    runs.push((fixture("csv-zb-v-handcrafted"), vec!["--step=1"]));
    for (run, extra) in &runs {
        let args: Vec<&str> = [&["trace", run.as_str()][..], extra].concat();
        let text = ok(d, &args);
        assert!(!text.contains("inf×") && !text.contains("inf "), "{run}: {text}");
        let v: Value = serde_json::from_str(&ok(d, &[&args[..], &["--json"]].concat())).unwrap();
        for o in v["fitted"]["outliers"].as_array().unwrap() {
            assert!(o["ratio"].is_number() && o["work_ratio"].is_number(), "{run}: {o}");
        }
    }
    let text = ok(d, &["trace", &fixture("csv-zb-v-handcrafted"), "--step=1"]);
    assert!(text.contains("0I1") && text.contains("(work 0 µs)"), "{text}");
}

/// Found by the fourth hostile pass: a span whose dur runs past the profiler step's end was
/// "outside profiler step" or "cut off or mixed", and a span moved early in the step gave a
/// deadlock naming no rank or ts. Each now names the event, its rank and its ts.
#[test]
fn a_span_past_the_steps_end_or_moved_in_it_is_named_with_its_ts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ts = |v: f64| bubblescope::units::format_number(v, 3);
    let (run, at, dur) = damaged_zbv(d, "past", |e| e["dur"] = (e["dur"].as_f64().unwrap() * 100.0).into());
    let e = fails_with_hint(
        d,
        &["trace", &run],
        &format!(
            "(rank 0): the event `PP:3F0` at ts {} lasts dur {} µs, past the end of profiler step 2 at ts ",
            ts(at),
            ts(100.0 * dur)
        ),
    );
    assert!(e.contains("its dur (or its ts) is damaged") && !e.contains("cut off or mixed"), "{e}");
    let (run, at, _) = damaged_zbv(d, "early", |e| e["ts"] = (e["ts"].as_f64().unwrap() - 30_000.0).into());
    let e = fails_with_hint(
        d,
        &["trace", &run],
        &format!(
            "(rank 0): the executed orders do not form one pipeline schedule at the event `PP:3F0` (ts {})",
            ts(at - 30_000.0)
        ),
    );
    assert!(e.contains("deadlock"), "{e}");
}

/// Hostile pass 5, item 23: a file whose durations carry float noise (84.628 × 1e-9 written as
/// 8.462800000000001e-8) is named without it.
#[test]
fn a_tiny_duration_is_named_without_the_files_float_noise() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    for r in 0..2 {
        let path = PathBuf::from(fixture("interleaved-zb")).join(format!("rank{r}.pt.trace.json.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        let mut rank: Value = serde_json::from_str(&text).unwrap();
        for e in rank["traceEvents"].as_array_mut().unwrap() {
            if let Some(d) = e.get("dur").and_then(Value::as_f64) {
                e["dur"] = serde_json::json!(d * 1e-9);
            }
        }
        std::fs::write(dir.path().join(format!("rank{r}.pt.trace.json")), serde_json::to_vec(&rank).unwrap()).unwrap();
    }
    let e = fails_with_hint(dir.path(), &["trace", "."], "lasts dur 8.4628e-8, expected a duration");
    assert!(!e.contains("00000000"), "{e}");
}

/// Eighth hostile pass: rank 0's first pipeline span given dur 1e12 (the largest read) holds
/// every pass after it, and the run was said to have "no pipeline labels" with a hint about
/// Schedule1F1B. The span is named, with its ts and dur, as a pass holding another is.
#[test]
fn a_span_that_holds_every_pass_is_named_not_taken_for_no_labels() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("long");
    std::fs::create_dir(&run).unwrap();
    for r in 0..2 {
        let path = PathBuf::from(fixture("interleaved-zb")).join(format!("rank{r}.pt.trace.json.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
        let mut trace: Value = serde_json::from_str(&text).unwrap();
        if r == 0 {
            let events = trace["traceEvents"].as_array_mut().unwrap();
            let first = events.iter_mut().find(|e| e["name"].as_str().is_some_and(|n| n.starts_with("PP:"))).unwrap();
            first["dur"] = 1e12.into();
        }
        std::fs::write(run.join(format!("rank{r}.pt.trace.json")), serde_json::to_vec(&trace).unwrap()).unwrap();
    }
    let run = run.display().to_string();
    for args in [&["trace", &run][..], &["simulate", "-s", "1f1b", "-p", "2", "-m", "4", "--costs-from", &run]] {
        let e = fails_with_hint(d, args, "lasts dur 1000000000000 µs, so it holds every pass after it, from `PP:");
        assert!(!e.contains("no pipeline labels") && e.contains("its dur is damaged"), "{e}");
    }
}

/// Eighth hostile pass: costs fitted to a run of 2 stages, asked for on 4 devices, got "the
/// cost lists have 2 pieces … give one number per device", of lists the user never gave.
#[test]
fn costs_from_a_run_on_a_device_count_its_stages_do_not_split_over_says_so() {
    let d = &std::env::temp_dir();
    let run = fixture("gpipe");
    for args in [
        &["simulate", "-s", "1f1b", "-p", "4", "-m", "4", "--costs-from", &run][..],
        &["sweep", "--schedules", "1f1b,zb-h1", "-p", "4", "-m", "8", "--costs-from", &run],
    ] {
        let e = fails_with_hint(d, args, "the run fits costs for its 2 stages, which do not split over 4 devices");
        assert!(e.contains("--devices 1 or 2") && !e.contains("one number per device"), "{e}");
    }
}
