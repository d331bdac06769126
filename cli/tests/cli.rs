//! The `bubblescope` binary: exit codes, outputs and error texts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bubblescope::render::{figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions};
use bubblescope::{family, run, ScheduleParams};

/// Runs the binary with `args` in `dir` and returns its output.
fn bubblescope(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bubblescope")).args(args).current_dir(dir).output().expect("the binary runs")
}

/// Runs and expects success; on failure shows everything.
fn ok(dir: &Path, args: &[&str]) -> String {
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

/// Runs and expects exit status 2; returns stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let out = bubblescope(dir, args);
    assert_eq!(out.status.code(), Some(2), "bubblescope {args:?}: stdout {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).expect("utf-8 errors")
}

fn fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/pytorch");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} is missing; skipping the PyTorch fixture checks", dir.display());
        None
    }
}

#[test]
fn simulate_json_has_the_contract_fields_and_exact_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["simulate", "--schedule", "1f1b", "--devices", "4", "--microbatches", "8", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schedule"], "1f1b");
    assert_eq!(v["devices"], 4);
    assert_eq!(v["microbatches"], 8);
    assert_eq!(v["chunks"], 1);
    assert_eq!(v["cost"], 33.0);
    assert_eq!(v["makespan"], 33.0);
    assert_eq!(v["ideal"], 24.0);
    assert_eq!(v["bubble_rate"], 9.0 / 33.0);
    assert_eq!(v["peak_memory"], 4.0);
    let devices = v["per_device"].as_array().unwrap();
    assert_eq!(devices.len(), 4);
    let d0 = &devices[0];
    for key in ["device", "start", "end", "busy", "bubble_rate", "peak_memory"] {
        assert!(d0.get(key).is_some(), "per_device lacks {key}");
    }
    assert_eq!((d0["start"].as_f64(), d0["end"].as_f64(), d0["busy"].as_f64()), (Some(0.0), Some(33.0), Some(24.0)));
    // The keys come in the documented order.
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[..4], &["schedule", "devices", "microbatches", "chunks"]);
}

#[test]
fn simulate_table_is_readable() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["simulate", "-s", "zb-h1", "-p", "4", "-m", "8"]);
    assert!(out.starts_with("ZB-H1 · 4 devices · 8 microbatches\n"), "{out}");
    assert!(out.contains("cost         27 "), "{out}");
    assert!(out.contains("bubble rate  0.1111"), "{out}");
    assert!(out.contains("closed form  3            bubble (P−1)(F+B−W)"), "{out}");
}

#[test]
fn bad_input_exits_2_with_a_message_and_hints() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = fails(d, &["simulate", "--schedule", "dualpipe", "--devices", "5", "--microbatches", "20"]);
    assert!(e.starts_with("error: dualpipe needs an even number of devices, found 5"), "{e}");
    assert!(e.contains("\n  hint: "), "{e}");
    let e = fails(d, &["simulate", "--schedule", "1f1v"]);
    assert!(e.starts_with("error: unknown schedule `1f1v`\n  hint: did you mean `1f1b`?"), "{e}");
    let e = fails(d, &["simulate"]);
    assert!(e.starts_with("error: --schedule (or --from FILE) is required"), "{e}");
    let e = fails(d, &["simulate", "-s", "1f1b", "--f", "-1"]);
    assert_eq!(e.trim_end(), "error: f must not be negative, found -1");
    let e = fails(d, &["simulate", "-s", "1f1b", "--devices", "many"]);
    assert!(e.contains("invalid value 'many' for '--devices <P>'"), "{e}");
    let e = fails(d, &["simulate", "-s", "1f1b", "--chunks", "2"]);
    assert!(e.starts_with("error: 1f1b does not take --chunks"), "{e}");
    let e = fails(d, &["simulate", "-s", "zb-auto", "--mem-limit", "0.5"]);
    assert!(e.starts_with("error: cannot fit memory: "), "{e}");
    let e = fails(d, &["render", "-s", "1f1b", "--theme", "neon", "-o", "x.svg"]);
    assert!(e.starts_with("error: unknown theme `neon`"), "{e}");
    let e = fails(d, &["simulate", "--from", "missing.csv"]);
    assert!(e.starts_with("error: reading missing.csv"), "{e}");
}

#[test]
fn a_limit_below_a_fixed_schedule_s_peak_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let out = bubblescope(dir.path(), &["simulate", "-s", "1f1b", "--mem-limit", "3", "--json"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim_end(), "warning: device 0 peaks at 4 activation memory, above the limit 3");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["per_device"][0]["over_limit"], true);
    assert_eq!(v["per_device"][1]["over_limit"], false);
}

#[test]
fn render_writes_the_same_svg_as_the_core_figure() {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["render", "--schedule", "1f1b", "--devices", "4", "--microbatches", "8", "-o", "fig.svg"]);
    let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "not an SVG document");
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    let params = ScheduleParams::new(4, 8);
    let analysis = run("1f1b", &params).unwrap();
    let label = family("1f1b").unwrap().label(&params);
    let expected = figure_svg(&[FigureItem { label: &label, analysis: &analysis }], &FigureOptions::default());
    assert_eq!(svg, expected);
    // Deterministic across runs.
    ok(dir.path(), &["render", "--schedule", "1f1b", "-o", "again.svg"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("again.svg")).unwrap(), svg);
}

#[test]
fn render_animate_writes_the_core_s_animated_figure() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["render", "-s", "zb-h1", "--animate", "--duration", "4", "--loop", "-o", "fill-and-drain.svg"];
    ok(dir.path(), &args);
    let svg = std::fs::read_to_string(dir.path().join("fill-and-drain.svg")).unwrap();
    let params = ScheduleParams::new(4, 8);
    let analysis = run("zb-h1", &params).unwrap();
    let label = family("zb-h1").unwrap().label(&params);
    let anim = AnimateOptions { duration: 4.0, looping: true };
    let item = [FigureItem { label: &label, analysis: &analysis }];
    assert_eq!(svg, figure_animated_svg(&item, &FigureOptions::default(), &anim));
    assert!(svg.contains("infinite"));
    // Once by default, for 6 seconds.
    let once = ok(dir.path(), &["render", "-s", "zb-h1", "--animate", "-o", "-"]);
    assert!(once.contains("bs-veil 6s linear 0s 1 both"), "{once}");
    // Bad durations, and animation flags without --animate, are refused.
    let e = fails(dir.path(), &["render", "-s", "zb-h1", "--animate", "--duration", "0", "-o", "x.svg"]);
    assert!(e.contains("--duration must be between 0.5 and 600 seconds, found 0"), "{e}");
    let e = fails(dir.path(), &["render", "-s", "zb-h1", "--loop", "-o", "x.svg"]);
    assert!(e.contains("--animate"), "{e}");
}

#[test]
fn render_compares_several_families_on_one_axis() {
    let dir = tempfile::tempdir().unwrap();
    let svg = ok(dir.path(), &["render", "--compare", "1f1b,zb-h1,zb-v", "--memory", "-o", "-"]);
    for title in ["1F1B · 4 devices", "ZB-H1 · 4 devices", "ZB-V · 4 devices", "Activation memory per device — ZB-V"]
    {
        assert!(svg.contains(title), "missing {title}");
    }
}

#[test]
fn list_names_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let text = ok(dir.path(), &["list"]);
    let json: serde_json::Value = serde_json::from_str(&ok(dir.path(), &["list", "--json"])).unwrap();
    let entries = json.as_array().unwrap();
    assert_eq!(entries.len(), bubblescope::FAMILIES.len());
    for f in bubblescope::FAMILIES {
        assert!(text.contains(&format!("  {} ", f.name)), "list lacks {}", f.name);
        assert!(entries.iter().any(|e| e["name"] == f.name && e["summary"] == f.summary));
    }
}

#[test]
fn convert_round_trips_and_simulates_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = "0F0,0F1,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n";
    std::fs::write(d.join("tiny.csv"), csv).unwrap();
    ok(d, &["convert", "tiny.csv", "tiny.json"]);
    ok(d, &["convert", "tiny.json", "back.csv"]);
    let back = std::fs::read_to_string(d.join("back.csv")).unwrap();
    assert_eq!(back.replace(",,", ","), csv.replace(",1F0", "1F0"), "csv → json → csv");
    let a: serde_json::Value = serde_json::from_str(&ok(d, &["simulate", "--from", "tiny.csv", "--json"])).unwrap();
    let b: serde_json::Value = serde_json::from_str(&ok(d, &["simulate", "--from", "tiny.json", "--json"])).unwrap();
    assert_eq!(a["cost"], b["cost"]);
    ok(d, &["convert", "tiny.csv", "trace.json", "--to-format", "perfetto"]);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("trace.json")).unwrap()).unwrap();
    assert!(trace["traceEvents"].as_array().unwrap().iter().any(|e| e["ph"] == "X"));
    let e = fails(d, &["convert", "tiny.csv", "out.txt"]);
    assert!(e.starts_with("error: cannot tell the output format of out.txt"), "{e}");
}

#[test]
fn pytorch_fixtures_import_and_dualpipev_equals_our_generator() {
    let Some(fx) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = fx.join("dualpipev_4rank_10mb.csv");
    let file = file.to_str().unwrap();
    let imported: serde_json::Value = serde_json::from_str(&ok(
        dir.path(),
        &["simulate", "--from", file, "--json", "--f", "2", "--b", "2", "--w", "2"],
    ))
    .unwrap();
    let generated: serde_json::Value = serde_json::from_str(&ok(
        dir.path(),
        &["simulate", "-s", "dualpipe-v", "-p", "4", "-m", "10", "--json", "--f", "2", "--b", "2", "--w", "2"],
    ))
    .unwrap();
    for key in ["cost", "makespan", "bubble_rate", "peak_memory", "per_device"] {
        assert_eq!(imported[key], generated[key], "{key}");
    }
    for name in ["zb1p_2rank_2stagep_compute.csv", "zb1p_2rank_2stagep_comms.csv"] {
        let path = fx.join(name);
        let v: serde_json::Value =
            serde_json::from_str(&ok(dir.path(), &["simulate", "--from", path.to_str().unwrap(), "--json"])).unwrap();
        assert_eq!(v["devices"], 2);
        assert_eq!(v["microbatches"], 8);
    }
}

#[test]
fn a_broken_file_is_reported_like_a_compiler() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.csv"), "0F0,0Q1\n1F0\n").unwrap();
    let e = fails(dir.path(), &["simulate", "--from", "bad.csv"]);
    assert!(e.starts_with("error: bad.csv cannot be used:\n"), "{e}");
    assert!(e.contains("bad.csv, row 0, column 1: cannot read cell `0Q1`: unknown action type `Q`"), "{e}");
    std::fs::write(dir.path().join("deadlock.csv"), "0F0,0I0,0W0\n1I0,1F0,1W0\n").unwrap();
    let e = fails(dir.path(), &["simulate", "--from", "deadlock.csv"]);
    assert!(e.contains("row 1"), "the stuck device is not named: {e}");
}
