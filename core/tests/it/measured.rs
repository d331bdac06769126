//! Measured runs, on traces PyTorch wrote (`tests/fixtures/traces/`, made by
//! `tools/pytorch-check.sh trace`): the orders its runtime ran, the step and compute an
//! independent reader found (`summary.json`, the tool's Python), exact replays, golden fitted
//! costs, and every kind of bad input.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use bubblescope::measured::{assemble, read_rank, MeasuredRun, RankTrace, TraceError};
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces")
}

/// Every fixture run with pipeline labels, by name.
fn runs() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .expect("the trace fixtures")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("summary.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 6, "the fixtures are there: {names:?}");
    names
}

fn rank_files(name: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures().join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pt.trace.json.gz"))
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> RankTrace {
    read_rank(&path.display().to_string(), std::fs::File::open(path).unwrap()).unwrap()
}

fn load(name: &str) -> MeasuredRun {
    assemble(rank_files(name).iter().map(|p| read(p)).collect(), None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A rank's trace as JSON, decompressed.
fn trace_json(path: &Path) -> Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn from_json(name: &str, trace: &Value) -> Result<RankTrace, TraceError> {
    read_rank(name, serde_json::to_vec(trace).unwrap().as_slice())
}

#[test]
fn every_fixture_reads_back_the_orders_pytorchs_runtime_ran() {
    for name in runs() {
        let run = load(&name);
        let truth = json_of(&fixtures().join(&name).join("run.json"));
        let orders: Vec<String> = run.devices.iter().map(|d| d.order.join(",")).collect();
        let expected: Vec<String> = serde_json::from_value(truth["executed_compute_orders"].clone()).unwrap();
        assert_eq!(orders, expected, "{name}");
        assert_eq!(run.schedule.microbatches, truth["microbatches"].as_u64().unwrap() as u32, "{name}");
        assert_eq!(run.schedule.placement.stages(), truth["stages"].as_u64().unwrap() as u32, "{name}");
        let stage_to_rank: Vec<u32> = serde_json::from_value(truth["stage_to_rank"].clone()).unwrap();
        assert_eq!(run.schedule.placement.stage_devices(), stage_to_rank.as_slice(), "{name}");
        assert_eq!(run.step, Some(2), "{name}: the last profiled step");
    }
}

/// The step time and each pass's work agree with an independent reading of the same files
/// (the Python tool's `summarize --json`, stored beside each fixture).
#[test]
fn step_time_and_work_agree_with_an_independent_reading() {
    for name in runs() {
        let run = load(&name);
        let summary = json_of(&fixtures().join(&name).join("summary.json"));
        let step = summary["step_time"].as_f64().unwrap();
        assert!((run.step_time - step).abs() < 1e-3, "{name}: step {} against {step}", run.step_time);
        let (mut same, mut total) = (0, 0);
        for (rank, ops) in summary["ranks"].as_array().unwrap().iter().zip(&run.ops) {
            let passes = rank["passes"].as_array().unwrap();
            assert_eq!(passes.len(), ops.len(), "{name}: one pass per action");
            for (p, o) in passes.iter().zip(ops) {
                total += 1;
                // The Python reading counts work from the first operator; this one also never
                // before the input arrived (a buffer allocated before the wait is no work).
                if (p["busy"].as_f64().unwrap() - o.duration()).abs() < 1.0 {
                    same += 1;
                }
            }
            let compute = rank["compute"].as_f64().unwrap();
            let ours: f64 = ops.iter().map(|o| o.duration()).sum();
            assert!((ours - compute).abs() <= 0.02 * compute, "{name}: compute {ours} against {compute}");
        }
        assert!(same * 10 >= total * 9, "{name}: {same} of {total} passes agree to a µs");
    }
}

/// Replayed through the simulator at its own measured times, a run reproduces its step and
/// every pass's work exactly (up to rounding).
#[test]
fn the_replay_at_measured_times_reproduces_every_pass() {
    for name in runs() {
        let run = load(&name);
        let replay = run.replay_measured().unwrap();
        assert!((replay.step_time - run.step_time).abs() < 1e-6, "{name}: {} vs {}", replay.step_time, run.step_time);
        for (device, ops) in run.ops.iter().enumerate() {
            for (timed, measured) in replay.timeline.devices[device].ops.iter().zip(ops) {
                assert!((timed.start - measured.work_start).abs() < 1e-6, "{name}: {timed:?} vs {measured:?}");
                assert!((timed.end - measured.end).abs() < 1e-6, "{name}: {timed:?} vs {measured:?}");
            }
        }
    }
}

/// Each device's split adds up to its span, every part ≥ 0.
#[test]
fn each_devices_time_splits_into_parts_that_add_up() {
    for name in runs() {
        let run = load(&name);
        for d in &run.devices {
            let parts = [d.compute, d.communication, d.wait, d.overhead];
            assert!(parts.iter().all(|&p| p >= 0.0), "{name}: {d:?}");
            let sum: f64 = parts.iter().sum();
            assert!((sum - (d.end - d.start)).abs() < 1e-6 * d.end.max(1.0), "{name}: {d:?}");
        }
    }
}

/// The numbers a user re-plans with, pinned: `UPDATE_GOLDEN=1` rewrites them after a
/// deliberate change (look at the diff).
#[test]
fn fitted_costs_and_splits_are_golden() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/measured");
    std::fs::create_dir_all(&dir).unwrap();
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let list = |v: &[f64]| v.iter().map(|&x| round(x)).collect::<Vec<f64>>();
    for name in runs() {
        let run = load(&name);
        let fitted = run.fitted();
        let replay = run.replay_fitted().unwrap();
        let (stages, microbatches, passes) = run.sizes();
        let value = json!({
            "stages": stages,
            "microbatches": microbatches,
            "passes": passes,
            "step_time": round(run.step_time),
            "fitted": {
                "f": list(&fitted.f), "b": list(&fitted.b), "w": list(&fitted.w),
                "comm": round(fitted.comm), "overhead": round(fitted.overhead),
            },
            "replay": { "step_time": round(replay.step_time), "error": round(replay.error) },
            "per_device": run.devices.iter().map(|d| json!({
                "compute": round(d.compute), "communication": round(d.communication),
                "wait": round(d.wait), "overhead": round(d.overhead),
            })).collect::<Vec<_>>(),
        });
        let text = format!("{:#}\n", sorted(value));
        let path = dir.join(format!("{name}.json"));
        if std::env::var_os("UPDATE_GOLDEN").is_some() || !path.exists() {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{name}: UPDATE_GOLDEN=1 accepts a deliberate change"
        );
    }
}

/// `value` with every object's keys in order, whatever serde_json's features (the CLI's
/// tests turn on `preserve_order`).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Fitted costs put into the simulator give this run's orders a step close to the measured
/// one; the error is reported, and bounded here for the runs where compute dominates.
#[test]
fn the_replay_at_fitted_costs_lands_near_the_measured_step() {
    for name in runs() {
        let run = load(&name);
        let replay = run.replay_fitted().unwrap();
        assert!(replay.error.abs() < 0.1, "{name}: {:+.1}%", 100.0 * replay.error);
    }
}

/// Clocks of different hosts: a rank shifted by a second is aligned back so that no pass
/// ends before an input it took from another rank.
#[test]
fn a_rank_with_a_skewed_clock_is_aligned() {
    let name = "interleaved-1f1b";
    let files = rank_files(name);
    let original = load(name);
    let mut rank1 = trace_json(&files[1]);
    // Clocks disagree across hosts only (ranks of one host share a clock).
    rank1["host_name"] = json!("another-host");
    for e in rank1["traceEvents"].as_array_mut().unwrap() {
        if let Some(ts) = e.get("ts").and_then(Value::as_f64) {
            e["ts"] = json!(ts + 1_000_000.0);
        }
    }
    let run = assemble(vec![read(&files[0]), from_json("rank1 shifted", &rank1).unwrap()], None).unwrap();
    assert!(run.notes.iter().any(|n| n.contains("clocks disagree")), "{:?}", run.notes);
    assert!(run.offsets.iter().any(|&o| (o.abs() - 1_000_000.0).abs() < 100_000.0), "{:?}", run.offsets);
    // Aligned to within a pass: the step is the original's, give or take the smallest slack.
    assert!(
        (run.step_time - original.step_time).abs() < 0.1 * original.step_time,
        "{} vs {}",
        run.step_time,
        original.step_time
    );
    assert_eq!(
        run.devices.iter().map(|d| &d.order).collect::<Vec<_>>(),
        original.devices.iter().map(|d| &d.order).collect::<Vec<_>>()
    );
}

fn error_of(result: Result<MeasuredRun, TraceError>) -> String {
    let e = result.expect_err("an error");
    let text = e.to_string();
    assert!(text.lines().any(|l| l.trim_start().starts_with("hint: ")), "a hint: {text}");
    text
}

#[test]
fn bad_traces_are_refused_naming_the_file_and_rank() {
    let files = rank_files("interleaved-zb");
    // Not JSON; JSON that is no trace; a file cut off.
    for (bytes, says) in [
        (b"hello".to_vec(), "not a profiler trace"),
        (br#"{"schemaVersion": 1}"#.to_vec(), "no `traceEvents`"),
        (std::fs::read(&files[0]).unwrap()[..20_000].to_vec(), "cut off"),
        (serde_json::to_vec(&trace_json(&files[0])).unwrap()[..50_000].to_vec(), "cut off"),
    ] {
        let e = read_rank("broken.json", bytes.as_slice()).unwrap_err().to_string();
        assert!(e.starts_with("broken.json: ") && e.contains(says), "{e}");
        assert!(e.contains("hint: "), "{e}");
    }
    // No pipeline labels: Schedule1F1B in torch 2.15.
    let unlabelled = rank_files("1f1b-unlabelled");
    let e = error_of(assemble(unlabelled.iter().map(|p| read(p)).collect(), None));
    assert!(e.contains("(rank 0): the trace has no pipeline labels") && e.contains("Schedule1F1B"), "{e}");
    // A rank missing, a rank twice.
    let e = error_of(assemble(vec![read(&files[0]), read(&files[0])], None));
    assert!(e.contains("rank 0 is also in"), "{e}");
    let mut alone = trace_json(&files[1]);
    alone["distributedInfo"]["world_size"] = json!(3);
    let e = error_of(assemble(vec![read(&files[0]), from_json("r1", &alone).unwrap()], None));
    assert!(e.contains("different runs"), "{e}");
    // Traces of two different runs.
    let zbv = rank_files("zbv");
    let e = error_of(assemble(vec![read(&files[0]), read(&zbv[1])], None));
    assert!(e.contains("different runs") || e.contains("do not form one pipeline"), "{e}");
    // A step asked for that is not there.
    let e = error_of(assemble(files.iter().map(|p| read(p)).collect(), Some(7)));
    assert!(e.contains("no profiler step 7") && e.contains("its steps are 1, 2"), "{e}");
}

#[test]
fn a_missing_rank_is_named() {
    let files = rank_files("interleaved-zb");
    let e = error_of(assemble(vec![read(&files[1])], None));
    assert!(e.contains("rank 0 of the run's 2 is missing"), "{e}");
}

/// A rank whose step lost its last passes (the profiler stopped early) is refused, naming
/// the stage and microbatch that is short.
#[test]
fn a_step_cut_off_on_one_rank_is_refused() {
    let files = rank_files("interleaved-zb");
    let mut rank1 = trace_json(&files[1]);
    let events = rank1["traceEvents"].as_array_mut().unwrap();
    let last = events
        .iter()
        .filter(|e| {
            e["name"].as_str().is_some_and(|n| {
                let action = n.trim_start_matches("PP:").trim_start_matches(|c: char| c.is_ascii_digit());
                n.starts_with("PP:") && action.starts_with('W') && action[1..].bytes().all(|b| b.is_ascii_digit())
            })
        })
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    events.retain(|e| e["ts"].as_f64() != Some(last));
    let e = error_of(assemble(vec![read(&files[0]), from_json("rank1 cut", &rank1).unwrap()], None));
    assert!(e.contains("rank1 cut (rank 1): profiler step 2 is cut off"), "{e}");
}

#[test]
fn a_trace_past_the_cap_is_refused_while_streaming() {
    let files = rank_files("zbv");
    let trace = trace_json(&files[0]);
    let text = serde_json::to_vec(&trace).unwrap();
    let e = bubblescope::measured::read_rank_capped("big.json", text.as_slice(), 10_000).unwrap_err().to_string();
    assert!(e.contains("big.json: it holds more than"), "{e}");
}

/// A measured run's idle gaps carry the runtime's own overhead (each pass's lead) inside their
/// schedule part, and the Gantt chart tints it apart with its own legend entry; a plan has none.
#[test]
fn runtime_overhead_is_its_own_tint_in_a_measured_runs_gaps() {
    use bubblescope::render::{figure_svg, FigureItem, FigureOptions, Theme};
    for name in runs() {
        let run = load(&name);
        let analysis = run.analysis().unwrap();
        let params = run.params();
        let causes = bubblescope::gaps::causes(&analysis, &params.costs).unwrap();
        let mut overhead = 0.0;
        for g in causes.gaps() {
            assert!(g.overhead >= 0.0 && g.overhead <= g.parts.schedule + 1e-9, "{name}: {g:?}");
            overhead += g.overhead;
        }
        assert!(overhead > 0.0, "{name}: a real runtime spends time between passes");
        let item = FigureItem { label: &name, analysis: &analysis, causes: Some(&causes) };
        let svg = figure_svg(&[item], &FigureOptions { causes: true, width: 1400.0, ..FigureOptions::default() });
        let tint = Theme::light().overhead.hex();
        assert!(svg.to_lowercase().contains(&tint), "{name}: no overhead tint");
        assert!(svg.contains("runtime overhead"), "{name}: no legend entry");
    }
    let plan = bubblescope::run("1f1b", &bubblescope::ScheduleParams::new(4, 8)).unwrap();
    let causes = bubblescope::gaps::causes(&plan, &bubblescope::Costs::default()).unwrap();
    assert!(causes.gaps().all(|g| g.overhead == 0.0));
}
