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

/// A measured run analysed as `simulate --from DIR` analyses it reproduces the measured step
/// exactly: each device starts at its first pass's start (its wait before that pass kept),
/// ends at its last pass's end, and the makespan is the step. So does the JSON the run
/// converts to, read back.
#[test]
fn the_analysis_of_a_run_is_its_measured_step_on_every_fixture() {
    use bubblescope::formats::{self, Format, ImportOptions};
    for name in runs() {
        let run = load(&name);
        let check = |a: &bubblescope::Analysis, what: &str| {
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1.0);
            assert!(close(a.stats.makespan, run.step_time), "{name} {what}: {} vs {}", a.stats.makespan, run.step_time);
            let mut cost = 0.0f64;
            for (s, d) in a.stats.per_device.iter().zip(&run.devices) {
                assert!(close(s.start, d.start) && close(s.end, d.end), "{name} {what}: {s:?} vs {d:?}");
                assert!(close(s.span, d.end - d.start), "{name} {what}: {s:?} vs {d:?}");
                cost = cost.max(d.end - d.start);
            }
            assert!(close(a.stats.cost, cost), "{name} {what}: cost {} vs {cost}", a.stats.cost);
        };
        check(&run.analysis().unwrap(), "trace");
        let costs = run.fitted().costs(run.schedule.devices());
        let text = formats::export_json_timed(&run.schedule, Some(&costs), Some(&run.op_times()));
        let back = formats::import(&text, Format::Json, &ImportOptions::default());
        let times = back.times.expect("the times read back");
        let again = bubblescope::analyze_timed(back.schedule.unwrap(), &back.costs.unwrap(), &times).unwrap();
        check(&again, "JSON");
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
        let item = FigureItem { label: &name, analysis: &analysis, causes: Some(&causes), step: None };
        let svg = figure_svg(&[item], &FigureOptions { causes: true, width: 1400.0, ..FigureOptions::default() });
        let tint = Theme::light().overhead.hex();
        assert!(svg.to_lowercase().contains(&tint), "{name}: no overhead tint");
        assert!(svg.contains("runtime overhead"), "{name}: no legend entry");
    }
    let plan = bubblescope::run("1f1b", &bubblescope::ScheduleParams::new(4, 8)).unwrap();
    let causes = bubblescope::gaps::causes(&plan, &bubblescope::Costs::default()).unwrap();
    assert!(causes.gaps().all(|g| g.overhead == 0.0));
}

/// A pipeline span the reader cannot use is named, with what is wrong with it, whatever is
/// wrong: its time, its label or its phase (before, each of these got another diagnosis: a
/// step cut off, clocks that cannot be aligned, no pipeline labels).
#[test]
fn a_malformed_pipeline_span_is_named() {
    let files = rank_files("interleaved-zb");
    let trace = trace_json(&files[0]);
    let events = trace["traceEvents"].as_array().unwrap();
    let at = events.iter().position(|e| e["name"] == "PP:0F1" && e["ph"] == "X").expect("a PP:0F1 span");
    for (field, value, says) in [
        ("dur", json!(-5), "dur"),
        ("dur", json!(0), "dur"),
        ("dur", json!("soon"), "dur"),
        ("dur", Value::Null, "dur"),
        ("dur", json!(1e300), "dur"),
        ("ts", json!(-1e300), "ts"),
        ("ts", json!("early"), "ts"),
        ("ts", Value::Null, "ts"),
        ("name", json!("PP:"), "no action"),
        ("ph", json!("B"), "ph"),
    ] {
        let mut broken = trace.clone();
        let event = &mut broken["traceEvents"][at];
        if value.is_null() {
            event.as_object_mut().unwrap().remove(field);
        } else {
            event[field] = value.clone();
        }
        let result = from_json("rank0.json", &broken).and_then(|r0| assemble(vec![r0, read(&files[1])], None));
        let e = error_of(result);
        let label = if field == "name" { "`PP:`" } else { "`PP:0F1`" };
        assert!(e.starts_with("rank0.json") && e.contains(label) && e.contains(says), "{field}={value}: {e}");
    }
}

/// A damaged `ProfilerStep#N` is named with its event, as a damaged pipeline span is, not
/// dropped (which made `--step 2` say there is no step 2, or read another step); its duration
/// is capped as a span's is. A subnormal span duration and a `PP:` label with only a space are
/// named too.
#[test]
fn a_damaged_profiler_step_or_span_is_named_not_dropped() {
    let files = rank_files("interleaved-zb");
    let trace = trace_json(&files[0]);
    let events = trace["traceEvents"].as_array().unwrap();
    let step = events.iter().position(|e| e["name"] == "ProfilerStep#2").expect("a ProfilerStep#2");
    for (field, value, says) in [
        ("dur", json!(1e300), "lasts dur 1e300"),
        ("dur", json!(-3), "lasts dur -3"),
        ("dur", json!(0), "lasts dur 0"),
        ("dur", json!("long"), "no dur"),
        ("ts", json!("early"), "no ts"),
        ("ts", json!(-1e300), "starts at ts"),
    ] {
        let mut broken = trace.clone();
        broken["traceEvents"][step][field] = value.clone();
        let e = from_json("rank0.json", &broken).expect_err("a damaged step is refused").to_string();
        assert!(
            e.starts_with(&format!(
                "rank0.json: event {} of traceEvents, the profiler step `ProfilerStep#2`",
                step + 1
            )) && e.contains(says)
                && e.contains("hint: "),
            "{field}={value}: {e}"
        );
    }
    let span = events.iter().position(|e| e["name"] == "PP:0F1" && e["ph"] == "X").expect("a PP:0F1 span");
    let mut broken = trace.clone();
    broken["traceEvents"][span]["dur"] = json!(5e-324);
    let e = from_json("rank0.json", &broken).unwrap_err().to_string();
    assert!(e.contains("`PP:0F1` lasts dur 5e-324, expected a duration from 1e-6"), "{e}");
    let mut broken = trace.clone();
    broken["traceEvents"][span]["name"] = json!("PP: ");
    let e = from_json("rank0.json", &broken).unwrap_err().to_string();
    assert!(e.contains("the pipeline span `PP: ` has no action after `PP:`"), "{e}");
}

/// A `distributedInfo.rank` or `world_size` that is there but no count is named with its
/// value, in the file that holds it: not called missing, and a world size of 0 does not blame
/// the other file.
#[test]
fn an_invalid_rank_or_world_size_is_named_with_its_value() {
    let files = rank_files("interleaved-zb");
    let trace = trace_json(&files[1]);
    for (key, value, shown) in [
        ("rank", json!(-1), "-1"),
        ("rank", json!(1e20), "1e20"),
        ("rank", json!(1.5), "1.5"),
        ("rank", json!("two"), "\"two\""),
        ("world_size", json!(0), "0"),
        ("world_size", json!(-2), "-2"),
    ] {
        let mut broken = trace.clone();
        broken["distributedInfo"][key] = value.clone();
        let result = from_json("rank1.json", &broken).and_then(|r1| assemble(vec![read(&files[0]), r1], None));
        let e = error_of(result);
        assert!(
            e.starts_with(&format!("rank1.json: its `distributedInfo.{key}` is {shown}, expected a whole number")),
            "{key}={value}: {e}"
        );
    }
    // Missing is still missing; a string of digits is still read.
    for written in [json!("1"), json!(1.0)] {
        let mut digits = trace.clone();
        digits["distributedInfo"]["rank"] = written.clone();
        let r1 = from_json("rank1.json", &digits).unwrap_or_else(|e| panic!("{written}: {e}"));
        assert!(assemble(vec![read(&files[0]), r1], None).is_ok(), "{written}");
    }
    let mut missing = trace.clone();
    missing["distributedInfo"].as_object_mut().unwrap().remove("rank");
    let e = error_of(assemble(vec![read(&files[0]), from_json("rank1.json", &missing).unwrap()], None));
    assert!(e.contains("rank1.json: it does not say which rank wrote it"), "{e}");
}

/// An empty trace file is called empty, not cut off.
#[test]
fn an_empty_trace_is_called_empty() {
    let gz = {
        use std::io::Write as _;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"").unwrap();
        enc.finish().unwrap()
    };
    for bytes in [Vec::new(), gz, b"  \n".to_vec()] {
        let e = read_rank("empty.json", bytes.as_slice()).unwrap_err().to_string();
        assert!(e.starts_with("empty.json: ") && e.contains("empty") && !e.contains("cut off"), "{e}");
        assert!(e.contains("hint: "), "{e}");
    }
}

/// Every rank's trace paused for `by` µs at absolute time `at`, as when other processes take
/// the machine's cores: events from `at` on start later, events running across it last longer.
fn stall(ranks: &mut [Value], at: f64, by: f64) {
    for rank in ranks {
        for e in rank["traceEvents"].as_array_mut().unwrap() {
            let (Some(ts), dur) = (e.get("ts").and_then(Value::as_f64), e.get("dur").and_then(Value::as_f64)) else {
                continue;
            };
            if ts >= at {
                e["ts"] = json!(ts + by);
            } else if let Some(d) = dur.filter(|d| ts + d > at) {
                e["dur"] = json!(d + by);
            }
        }
    }
}

/// The profiler-step-2 span of `label` in a rank's trace: (ts, dur).
fn span_of(rank: &Value, label: &str) -> (f64, f64) {
    let events = rank["traceEvents"].as_array().unwrap();
    let step = events.iter().find(|e| e["name"] == "ProfilerStep#2").unwrap();
    let from = step["ts"].as_f64().unwrap();
    let e = events
        .iter()
        .find(|e| e["name"] == format!("PP:{label}") && e["ts"].as_f64().unwrap() >= from)
        .unwrap_or_else(|| panic!("{label} in step 2"));
    (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap())
}

/// A disturbed run (issue 43 item 4): three passes of one fixture, each held up in the middle
/// of its work for three times its time. The fit stays at the quiet run's medians, names the held
/// passes with how far off they ran, and the replay's miss gets a note with a likely cause.
#[test]
fn a_disturbed_run_shows_its_outliers_and_why_the_replay_misses() {
    let name = "interleaved-zb-m8";
    let files = rank_files(name);
    let quiet = load(name);
    let mut ranks: Vec<Value> = files.iter().map(|f| trace_json(f)).collect();
    let held = ["0F1", "2F5", "0W3"];
    // Stall times first (each stall moves what follows), latest first so earlier ones hold.
    let mut at: Vec<(f64, f64)> = held.iter().map(|l| span_of(&ranks[0], l)).collect();
    at.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (ts, dur) in at {
        stall(&mut ranks, ts + 0.6 * dur, 3.0 * dur);
    }
    let traces: Vec<RankTrace> =
        ranks.iter().enumerate().map(|(r, t)| from_json(&format!("rank{r} held"), t).unwrap()).collect();
    let run = assemble(traces, None).unwrap();
    let fitted = run.fitted();
    let quiet_fit = quiet.fitted();
    // Medians: a held pass moves each stage's median by at most a step between neighbouring
    // samples, within twice the quiet run's spread (a mean would follow the held passes).
    let (spread, quiet_spread) = (&fitted.spread, &quiet_fit.spread);
    for (kind, a, b, s) in [
        ("f", &fitted.f, &quiet_fit.f, &quiet_spread.f),
        ("b", &fitted.b, &quiet_fit.b, &quiet_spread.b),
        ("w", &fitted.w, &quiet_fit.w, &quiet_spread.w),
    ] {
        for (stage, ((x, y), s)) in a.iter().zip(b).zip(s).enumerate() {
            assert!(
                (x - y).abs() <= 2.0 * s + 0.01 * y,
                "{kind} of stage {stage}: {x} where the quiet run fits {y} ± {s}"
            );
        }
    }
    // The held passes are named, at two to six times their median.
    for label in held {
        let o = fitted
            .outliers
            .iter()
            .find(|o| o.device == 0 && o.label == label)
            .unwrap_or_else(|| panic!("{label} is no outlier: {:#?}", fitted.outliers));
        assert!(o.ratio() > 2.0 && o.ratio() < 6.0, "{label}: {}×", o.ratio());
        assert!(o.work > 2.0 * o.median - o.work, "{label}: the excess is in its work");
    }
    assert!(fitted.outlier_note().unwrap().contains("ran far from their stage's median"));
    // The spread is reported per stage, and no quiet stage's exceeds its median.
    assert_eq!(spread.f.len(), 4);
    assert!(spread.f.iter().zip(&fitted.f).all(|(s, m)| *s >= 0.0 && s < m), "{spread:?}");
    // The replay misses by more than 15%, and a note says so with a likely cause.
    let replay = run.replay_fitted().unwrap();
    assert!(replay.error < -bubblescope::measured::MISS_NOTED, "{:+.1}%", replay.error * 100.0);
    assert_eq!(replay.notes.len(), 1, "{:?}", replay.notes);
    let note = &replay.notes[0];
    assert!(note.contains("below the measured step, more than 15%: likely "), "{note}");
    assert!(["contention", "a straggler", "waits outside the schedule"].iter().any(|c| note.contains(c)), "{note}");
    // The quiet run has no such note.
    assert!(quiet.replay_fitted().unwrap().notes.is_empty());
}

/// The outlier rule: far in scaled median absolute deviations and by a factor of 1.5.
#[test]
fn an_outlier_is_far_in_spread_and_in_ratio() {
    use bubblescope::measured::Outlier;
    assert!(Outlier::is_outlying(35.0, 10.0, 1.0));
    assert!(Outlier::is_outlying(6.0, 10.0, 0.5), "a pass at 0.6× its median");
    assert!(!Outlier::is_outlying(14.0, 10.0, 0.1), "1.4× is within the ratio");
    assert!(!Outlier::is_outlying(35.0, 10.0, 6.0), "within 3 scaled deviations of a wide stage");
    assert!(!Outlier::is_outlying(10.0, 10.0, 0.0));
}
