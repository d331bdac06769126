//! The `bubblescope` binary: exit codes, outputs and error texts.

mod common;

use common::{bubblescope, fails, fails_in_scratch, fails_with_hint, join, ok, ok_in_scratch, ok_stderr};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bubblescope::render::{figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions};
use bubblescope::{family, run, ScheduleParams};

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
    let out = ok_in_scratch(&["simulate", "--schedule", "1f1b", "--devices", "4", "--microbatches", "8", "--json"]);
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
    let out = ok_in_scratch(&["simulate", "-s", "zb-h1", "-p", "4", "-m", "8"]);
    assert!(out.starts_with("ZB-H1 · 4 devices · 8 microbatches\n"), "{out}");
    assert!(out.contains("cost         27 "), "{out}");
    assert!(out.contains("bubble rate  0.1111"), "{out}");
    assert!(out.contains("closed form  3            bubble (P−1)(F+B−W)"), "{out}");
    // Unequal shares print as the list that was given, not as their mean.
    let out = ok_in_scratch(&["simulate", "-s", "zb-h1", "--f", "1,1,1,3", "--mem-f", "2"]);
    assert!(out.contains("costs: F 1,1,1,3 · B 1 · W 1 · comm 0 · mem-f 2 · mem-w 1\n"), "{out}");
    // A model's in µs and bytes: the LM head's share is the heavy one.
    let out =
        ok_in_scratch(&["simulate", "-s", "1f1b", "--model", "llama-3-8b", "--latency", "1350", "--bandwidth", "1e9"]);
    // The whole step leads, then the schedule's title and its costs.
    assert!(out.starts_with("step ") && out.contains("tokens/s/GPU · MFU"), "{out}");
    let costs = out.lines().find(|l| l.starts_with("costs: ")).unwrap_or_default();
    assert!(
        costs.starts_with("costs: F ")
            && costs.contains(" ms,")
            && costs.contains("comm 1.35 ms")
            && costs.contains(" GiB"),
        "{costs}"
    );
}

#[test]
fn bad_input_exits_2_with_a_message_and_hints() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = fails(d, &["simulate", "--schedule", "dualpipe", "--devices", "5", "--microbatches", "20"]);
    assert!(e.starts_with("error: dualpipe needs an even number of devices, found 5"), "{e}");
    assert!(e.contains("\n  hint: "), "{e}");
    let e = fails(d, &["simulate", "-s", "1f1b", "--f", "-1"]);
    assert_eq!(
        e.trim_end(),
        "error: f must not be negative, found -1\n  hint: times are durations: 0 or more, e.g. 1 or 2.5"
    );
    let e = fails(d, &["simulate", "-s", "1f1b", "--devices", "many"]);
    assert!(e.contains("invalid value 'many' for '--devices <P>'"), "{e}");
    // Each of these errors opens with what is wrong, in lowercase, and gives a hint.
    let cases: [(&[&str], &str); 10] = [
        (&["simulate", "--schedule", "1f1v"], "error: unknown schedule `1f1v`\n  hint: did you mean `1f1b`?"),
        (&["simulate"], "error: --schedule (or --from FILE) is required"),
        (&["simulate", "-s", "1f1b", "--chunks", "2"], "error: 1f1b does not take --chunks"),
        (&["simulate", "-s", "zb-auto", "--mem-limit", "0.5"], "error: cannot fit memory: "),
        (&["render", "-s", "1f1b", "--theme", "neon", "-o", "x.svg"], "error: unknown theme `neon`"),
        (&["simulate", "--from", "missing.csv"], "error: cannot read missing.csv: no such file"),
        (&["simulate", "--from", "."], "error: . holds no trace files (.json or .json.gz)"),
        (
            &["render", "-s", "1f1b", "-o", "no/such/folder/x.svg"],
            "error: cannot write no/such/folder/x.svg: its folder",
        ),
        (&["simulate", "-s", "1f1b", "--mem-limit", "-1"], "error: mem-limit must not be negative, found -1"),
        (&["simulate", "-s", "1f1b", "--comm", "-0.5"], "error: comm must not be negative, found -0.5"),
    ];
    for (args, start) in cases {
        let e = fails_with_hint(d, args, start);
        assert!(e.starts_with(start) && !e.contains("os error"), "{args:?}: {e}");
    }
}

/// `--p2p`: an unknown mode, a family whose order deadlocks under blocking exchanges, a file
/// whose order does, and a measured run (its waits are in its times) each say what is wrong and
/// give a hint; the same family and file simulate with asynchronous sends.
#[test]
fn send_mode_bad_input_says_what_is_wrong_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = fails_with_hint(d, &["simulate", "-s", "1f1b", "--p2p", "sync"], "unknown send mode `sync`");
    assert!(e.starts_with("error: ") && e.contains("hint: --p2p takes async or blocking"), "{e}");
    let zbv = ["simulate", "-s", "zb-v", "-p", "4", "-m", "8", "--comm", "0.1"];
    let e = fails_with_hint(d, &join(&zbv, &["--p2p", "blocking"]), "error: schedule deadlocks");
    assert!(e.contains("its send of") && e.contains("--p2p async"), "{e}");
    ok(d, &join(&zbv, &["--p2p", "async"]));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let file = root.join("tests/fixtures/pytorch-dumps/ScheduleInterleavedZeroBubble-p2-v2-m4.compute_only.csv");
    let file = file.to_str().unwrap();
    let e = fails_with_hint(d, &["simulate", "--from", file, "--p2p", "blocking"], "schedule deadlocks");
    assert!(e.starts_with("error: ") && e.contains("--p2p async"), "{e}");
    ok(d, &["simulate", "--from", file]);
    let run = root.join("tests/fixtures/traces/csv-1f1b");
    let e = fails_with_hint(
        d,
        &["simulate", "--from", run.to_str().unwrap(), "--p2p", "blocking"],
        "is a measured run: its times are measured, so cost flags do not apply (--p2p given)",
    );
    assert!(e.starts_with("error: "), "{e}");
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
    let label = family("1f1b").unwrap().label(&params, bubblescope::units::Units::Cost);
    let expected = figure_svg(&[FigureItem::new(&label, &analysis)], &FigureOptions::default());
    assert_eq!(svg, expected);
    // Deterministic across runs.
    ok(dir.path(), &["render", "--schedule", "1f1b", "-o", "again.svg"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("again.svg")).unwrap(), svg);
}

#[test]
fn render_causes_writes_the_golden_figure() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["render", "-s", "1f1b", "-p", "4", "-m", "8", "--f", "1,1,1,3", "--comm", "0.3", "--causes", "-o", "-"];
    let svg = ok(dir.path(), &args);
    let golden = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/golden/one-f-one-b-p4-m8-unequal-comm-causes.svg"),
    )
    .unwrap();
    assert!(svg == golden, "render --causes differs from the golden figure");
    // Without the flag, the figure has no idle tints and no cause legend.
    let plain = ok(dir.path(), &args[..args.len() - 3].iter().chain(&["-o", "-"]).copied().collect::<Vec<_>>());
    assert!(svg.contains("idle by cause") && !plain.contains("idle by cause"));
}

#[test]
fn render_animate_writes_the_core_s_animated_figure() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["render", "-s", "zb-h1", "--animate", "--duration", "4", "--loop", "-o", "fill-and-drain.svg"];
    ok(dir.path(), &args);
    let svg = std::fs::read_to_string(dir.path().join("fill-and-drain.svg")).unwrap();
    let params = ScheduleParams::new(4, 8);
    let analysis = run("zb-h1", &params).unwrap();
    let label = family("zb-h1").unwrap().label(&params, bubblescope::units::Units::Cost);
    let anim = AnimateOptions { duration: 4.0, looping: true };
    let item = [FigureItem::new(&label, &analysis)];
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
    let text = ok_in_scratch(&["list"]);
    let json: serde_json::Value = serde_json::from_str(&ok_in_scratch(&["list", "--json"])).unwrap();
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
    // One `error:` line: the file's problems are listed under it, each with its hints.
    assert!(e.starts_with("error: bad.csv cannot be used: 3 errors\n"), "{e}");
    assert_eq!(e.lines().filter(|l| l.contains("error:")).count(), 1, "{e}");
    assert!(e.contains("\n    hint: "), "{e}");
    assert!(e.contains("bad.csv, row 0, column 1: cannot read cell `0Q1`: unknown action type `Q`"), "{e}");
    std::fs::write(dir.path().join("deadlock.csv"), "0F0,0I0,0W0\n1I0,1F0,1W0\n").unwrap();
    let e = fails(dir.path(), &["simulate", "--from", "deadlock.csv"]);
    assert!(e.contains("row 1"), "the stuck device is not named: {e}");
}

#[test]
fn flags_a_family_does_not_read_are_errors_naming_them() {
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--overlap", "3"]);
    assert!(e.starts_with("error: 1f1b does not take --overlap"), "{e}");
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--merge-bw"]);
    assert!(e.contains("--merge-bw"), "{e}");
    ok_in_scratch(&["simulate", "-s", "dualpipe", "-p", "4", "-m", "8", "--overlap", "3"]);
}

/// A two-device, two-microbatch schedule in PyTorch's CSV.
const TINY_CSV: &str = "0F0,0F1,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n";

/// Runs with `stdin` piped in.
fn with_stdin(dir: &Path, args: &[&str], stdin: std::process::Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bubblescope"))
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .output()
        .expect("the binary runs")
}

#[test]
fn an_output_that_is_the_input_is_refused_also_through_links() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s.csv"), TINY_CSV).unwrap();
    std::fs::hard_link(d.join("s.csv"), d.join("hard.csv")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("s.csv", d.join("soft.csv")).unwrap();
    for args in [
        &["render", "--from", "s.csv", "-o", "s.csv"][..],
        &["convert", "s.csv", "s.csv"],
        &["convert", "s.csv", "./s.csv"],
        &["convert", "s.csv", "hard.csv"],
        #[cfg(unix)]
        &["convert", "s.csv", "soft.csv"],
    ] {
        let e = fails(d, args);
        assert!(
            e.contains("is the input file s.csv: writing it would destroy the schedule\n  hint: "),
            "{args:?}: {e}"
        );
        assert_eq!(std::fs::read_to_string(d.join("s.csv")).unwrap(), TINY_CSV, "{args:?} touched the input");
    }
    ok(d, &["convert", "s.csv", "other.csv"]);
    ok(d, &["convert", "s.csv", "-", "--to-format", "json"]);
}

#[test]
fn render_compare_caps_the_total_passes_and_draws_a_repeated_name_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each alone is under the 8,000,000-pass cap; together they are not. Refused before any
    // is generated (this returns at once instead of building gigabytes).
    let started = std::time::Instant::now();
    let e = fails(d, &["render", "--compare", "1f1b,gpipe", "-p", "1024", "-m", "3906", "-o", "x.svg"]);
    assert!(e.starts_with("error: the compared schedules would have at least 15998976 passes in total, more than the 8000000 supported\n  hint: "), "{e}");
    assert!(started.elapsed().as_secs() < 10, "the cap was checked after generating");
    let twenty = vec!["1f1b"; 20].join(",");
    let svg = ok(d, &["render", "--compare", &twenty, "-o", "-"]);
    assert_eq!(svg.matches("1F1B · 4 devices · 8 microbatches").count(), 1, "a repeated name is drawn once");
    let svg = ok(d, &["render", "--compare", "1f1b,1F1B,zb_h1,zb-h1", "-o", "-"]);
    assert_eq!(svg.matches("1F1B · 4 devices").count() + svg.matches("ZB-H1 · 4 devices").count(), 2);
}

#[test]
fn imports_read_at_most_the_cap_from_pipes_and_devices_and_take_dash_for_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cap_error = "more than the 16777216 bytes (16 MiB) an import reads";
    #[cfg(unix)]
    {
        let e = fails(d, &["simulate", "--from", "/dev/zero", "--from-format", "pytorch-csv"]);
        assert!(e.starts_with("error: /dev/zero has ") && e.contains(cap_error), "{e}");
        // An endless pipe on standard input.
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let out = with_stdin(d, &["simulate", "--from", "-", "--from-format", "json"], zero.into());
        assert_eq!(out.status.code(), Some(2));
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.starts_with("error: standard input has ") && e.contains(cap_error), "{e}");
    }
    // `-` reads standard input, in simulate, render and convert; the content tells the format.
    std::fs::write(d.join("s.csv"), TINY_CSV).unwrap();
    let stdin = || std::fs::File::open(d.join("s.csv")).unwrap().into();
    let out = with_stdin(d, &["simulate", "--from", "-", "--json"], stdin());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["devices"].as_u64(), v["microbatches"].as_u64()), (Some(2), Some(2)));
    let out = with_stdin(d, &["convert", "-", "back.json"], stdin());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = with_stdin(d, &["simulate"], stdin());
    assert_eq!(out.status.code(), Some(2));
    // A regular file just over the cap.
    let over = "\n".repeat(16 * 1024 * 1024 + 1);
    std::fs::write(d.join("big.csv"), &over).unwrap();
    assert!(fails(d, &["simulate", "--from", "big.csv"]).contains(cap_error));
}

#[test]
fn family_flags_with_a_file_are_errors_and_compared_families_take_its_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s.csv"), TINY_CSV).unwrap();
    for (flag, value) in [("-p", "7"), ("--devices", "4"), ("-m", "3"), ("--microbatches", "8")] {
        let e = fails(d, &["simulate", "--from", "s.csv", flag, value]);
        let long = if flag == "-p" {
            "devices"
        } else if flag == "-m" {
            "microbatches"
        } else {
            &flag[2..]
        };
        assert!(
            e.starts_with(&format!("error: --{long} does not apply to a schedule read with --from\n  hint: ")),
            "{e}"
        );
        fails(d, &["render", "--from", "s.csv", "--compare", "1f1b", flag, value, "-o", "x.svg"]);
    }
    for flag in ["--chunks", "--group", "--waves", "--seq-splits"] {
        let e = fails(d, &["simulate", "--from", "s.csv", flag, "2"]);
        assert!(e.starts_with(&format!("error: {flag} does not apply to a schedule read with --from")), "{e}");
    }
    // Costs apply to a file.
    let v: serde_json::Value =
        serde_json::from_str(&ok(d, &["simulate", "--from", "s.csv", "--f", "2", "--json"])).unwrap();
    assert_eq!(v["costs"]["f"], 2.0);
    // The compared family runs at the file's 2 devices and 2 microbatches, not the defaults.
    let svg = ok(d, &["render", "--from", "s.csv", "--compare", "1f1b,zb-h1", "-o", "-"]);
    assert!(svg.contains("1F1B · 2 devices · 2 microbatches"), "compared family not at the file's sizes");
    assert!(!svg.contains("8 microbatches"));
}

#[test]
fn the_papers_and_pytorch_spellings_are_accepted_and_typos_suggest_the_containing_name() {
    let name = |args: &[&str]| {
        let v: serde_json::Value = serde_json::from_str(&ok_in_scratch(args)).unwrap();
        v["schedule"].as_str().unwrap().to_string()
    };
    for (typed, canonical, p, m) in [
        ("dualpipev", "dualpipe-v", "4", "10"),
        ("DualPipeV", "dualpipe-v", "4", "10"),
        ("ZBV", "zb-v", "4", "8"),
        ("v-zb", "zb-v", "4", "8"),
        ("ZBVZeroBubble", "zb-v", "4", "8"),
        ("interleaved", "interleaved-1f1b", "4", "8"),
        ("Interleaved1F1B", "interleaved-1f1b", "4", "8"),
        ("1f1bv", "1f1b-v", "4", "8"),
    ] {
        assert_eq!(name(&["simulate", "-s", typed, "-p", p, "-m", m, "--json"]), canonical, "{typed}");
    }
    let e = fails_in_scratch(&["simulate", "-s", "dualpipevv"]);
    assert!(e.starts_with("error: unknown schedule `dualpipevv`\n  hint: did you mean `dualpipe-v`?"), "{e}");
    let e = fails_in_scratch(&["simulate", "-s", "zb-v-hand"]);
    assert!(e.starts_with("error: unknown schedule `zb-v-hand`\n  hint: did you mean `zb-v-handcrafted`?"), "{e}");
}

#[test]
fn messages_print_numbers_short_and_state_the_real_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = fails(d, &["simulate", "-s", "1f1b", "--f", "1e308"]);
    assert!(e.starts_with("error: f must be at most 1e12, found 1e308\n"), "{e}");
    assert!(e.len() < 200, "{e}");
    // Sizes get a size hint, not the time-unit one.
    let e = fails(d, &["simulate", "-s", "zb-auto", "--model", "llama-3-8b", "--mem-limit", "2048TiB"]);
    assert!(
        e.contains("mem-limit must be a finite size from 0 to 1PiB (1125899906842624 bytes), found `2048TiB`")
            && e.contains("a limit above 1PiB is no limit"),
        "{e}"
    );
    let e = fails(d, &["simulate", "-s", "1f1b", "--mem-f", "2e12"]);
    assert!(e.contains("hint: use a coarser unit, e.g. GiB instead of bytes"), "{e}");
    let e = fails(d, &["simulate", "-s", "1f1b", "--model", "llama-3-8b", "--flash-attention", "maybe"]);
    assert!(
        e.contains("flash-attention must be on or off, found `maybe`")
            && e.contains("hint: write on or off (or 1 or 0"),
        "{e}"
    );
    assert_eq!(
        fails(d, &["simulate", "-s", "1f1b", "--f", "-inf"]).trim_end(),
        "error: f must be a finite number, found -inf\n  hint: give a time or size in the cost unit, e.g. 1 or 2.5"
    );
    assert_eq!(
        fails(d, &["simulate", "-s", "1f1b", "--comm", "-0.5"]).trim_end(),
        "error: comm must not be negative, found -0.5\n  hint: communication is the time of one hop between devices: 0 for none, e.g. 0.25"
    );
    // Counts out of range name the real limits.
    for (args, message) in [
        (["simulate", "-s", "1f1b", "-p", "-1"], "devices must be between 1 and 1024, found -1"),
        (["simulate", "-s", "1f1b", "-m", "70000"], "microbatches must be between 1 and 65536, found 70000"),
        (["simulate", "-s", "interleaved-1f1b", "--chunks", "-2"], "must be at least 1, found -2"),
        (
            ["simulate", "-s", "interleaved-1f1b", "--chunks", "99999999999"],
            "must be at most 4294967295, found 99999999999",
        ),
    ] {
        fails_with_hint(d, &args, message);
    }
    let e = fails(d, &["render", "-s", "1f1b", "--width", "1e300", "-o", "x.svg"]);
    assert!(e.starts_with("error: --width must be between 240 and 20000 pixels, found 1e300"), "{e}");
    // A cost that would print as 0 is refused, with the rule.
    let e = fails(d, &["simulate", "-s", "1f1b", "--f", "1e-300"]);
    assert!(e.starts_with("error: f must be 0 or at least 1e-9, found 1e-300\n  hint: "), "{e}");
    let out = ok(d, &["simulate", "-s", "1f1b", "--f", "0.00001"]);
    assert!(out.contains("costs: F 1e-5 · B 1"), "{out}");
    // PNG is not written as SVG bytes.
    let e = fails(d, &["render", "-s", "1f1b", "-o", "x.png"]);
    assert!(e.starts_with("error: render writes SVG, but x.png asks for PNG\n  hint: name the output .svg"), "{e}");
    assert!(!d.join("x.png").exists());
    // A CSV named .json, and JSON named .csv, say what they look like.
    std::fs::write(d.join("s.json"), TINY_CSV).unwrap();
    let e = fails(d, &["simulate", "--from", "s.json"]);
    assert!(e.contains("hint: the content looks like a PyTorch CSV: read it with --from-format pytorch-csv"), "{e}");
    std::fs::write(d.join("t.csv"), TINY_CSV).unwrap();
    let json = ok(d, &["convert", "t.csv", "-", "--to-format", "json"]);
    std::fs::write(d.join("j.csv"), &json).unwrap();
    let e = fails(d, &["simulate", "--from", "j.csv"]);
    assert!(e.contains("hint: the content looks like Bubblescope JSON: read it with --from-format json"), "{e}");
    // JSON with a byte-order mark reads, as CSV with one does.
    std::fs::write(d.join("bom.json"), format!("\u{feff}{json}")).unwrap();
    std::fs::write(d.join("bom.csv"), format!("\u{feff}{TINY_CSV}")).unwrap();
    ok(d, &["simulate", "--from", "bom.json"]);
    ok(d, &["simulate", "--from", "bom.csv"]);
}

#[test]
fn a_perfetto_trace_is_compact() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 1F1B CSV on 8 devices with 256 microbatches, written by the tool itself.
    let csv = {
        let (p, m) = (8u32, 256u32);
        let mut rows = Vec::new();
        for r in 0..p {
            let warm = (p - 1 - r).min(m);
            let mut cells: Vec<String> = (0..warm).map(|i| format!("{r}F{i}")).collect();
            let (mut f, mut b) = (warm, 0);
            while f < m {
                cells.push(format!("{r}F{f}"));
                cells.push(format!("{r}B{b}"));
                f += 1;
                b += 1;
            }
            while b < m {
                cells.push(format!("{r}B{b}"));
                b += 1;
            }
            rows.push(cells.join(","));
        }
        rows.join("\n") + "\n"
    };
    std::fs::write(d.join("big.csv"), &csv).unwrap();
    ok(d, &["convert", "big.csv", "trace.json", "--to-format", "perfetto"]);
    let trace = std::fs::read_to_string(d.join("trace.json")).unwrap();
    let ratio = trace.len() as f64 / csv.len() as f64;
    // 54 times before the compact form; 35 now at this size (29 on a 6 MB CSV).
    assert!(ratio < 40.0, "the trace is {ratio:.1} times the CSV");
    let v: serde_json::Value = serde_json::from_str(&trace).unwrap();
    let slices: Vec<_> = v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 2 * 8 * 256, "one event per op");
    assert!(slices.iter().all(|e| e.get("args").is_none() && e["ts"].is_u64() && e["dur"].is_u64()));
}

#[test]
fn simulate_help_groups_its_options_and_the_summary_is_short() {
    let short = ok_in_scratch(&["simulate", "-h"]);
    let words = short.split_whitespace().count();
    assert!(words <= 250, "`simulate -h` has {words} words, more than 250:\n{short}");
    let long = ok_in_scratch(&["simulate", "--help"]);
    for heading in ["Schedule:", "Costs:", "Model:", "Memory:", "Output:", "Analysis:", "Examples:"] {
        assert!(long.lines().any(|l| l == heading), "`simulate --help` lacks the heading {heading}:\n{long}");
    }
    for heading in ["Schedule:", "Costs:", "Model:", "Memory:", "Output:", "Analysis:"] {
        assert!(short.lines().any(|l| l == heading), "`simulate -h` lacks the heading {heading}:\n{short}");
    }
    // Every option is in the long help, under its heading; the examples come last.
    for flag in ["--layers", "--tp", "--optimal-nodes", "--merge-bw", "--mem-w", "--costs-from"] {
        assert!(long.contains(flag), "`simulate --help` lacks {flag}");
    }
    assert!(long.trim_end().ends_with("bubblescope simulate --from schedule.csv --json"), "{long}");
}

/// Files to write before a run: (name, text).
type Files<'a> = Vec<(&'a str, &'a str)>;

/// Runs `args` in a fresh directory holding `files`, expects exit status 2 with nothing on
/// standard output and no file written, and returns standard error.
fn refused(files: &[(&str, &str)], args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = common::bubblescope(dir.path(), args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} wrote to standard output: {}", String::from_utf8_lossy(&out.stdout));
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut expected: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
    expected.sort();
    assert_eq!(names, expected, "{args:?} wrote a file");
    stderr
}

/// The shape of every error: one `error:` line first (lowercase, or opening with a flag or a
/// quoted name), at least one `hint:` line.
fn assert_error_shape(args: &[&str], e: &str) {
    let first = e.lines().next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or_else(|| panic!("{args:?}: {e}"));
    let opening = message.chars().next().unwrap_or(' ');
    assert!(!opening.is_uppercase(), "{args:?}: not lowercase: {e}");
    assert_eq!(e.matches("error:").count(), 1, "{args:?}: more than one error line: {e}");
    assert!(e.lines().any(|l| l.trim_start().starts_with("hint: ")), "{args:?}: no hint: {e}");
}

#[test]
fn every_error_has_one_error_line_a_hint_and_writes_nothing() {
    let bad_csv = ("bad.csv", "rank,action\n0,F0\n");
    let deep = format!("{}t{}", "(".repeat(40), ")".repeat(40));
    let model = ["--layers", "40", "--hidden", "1024", "--heads", "16", "--seq", "1024", "--vocab", "32000"];
    let cases: Vec<(Files, Vec<&str>)> = vec![
        // Clap's own usage errors.
        (vec![], vec!["costs", "--model", "llama-3-8b", "--devices", "8", "--f", "3"]),
        (vec![], vec!["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--json", "--csv"]),
        (vec![], vec!["sweep", "-p", "4"]),
        (vec![], vec!["simulate", "--bogus"]),
        (vec![], vec!["simulate", "--devices", "0"]),
        (vec![], vec!["render", "-s", "1f1b", "--theme"]),
        (vec![], vec!["frobnicate"]),
        (vec![], vec![]),
        (vec![], vec!["costs", "--devices", "x"]),
        // Render's ranges.
        (vec![], vec!["render", "-s", "1f1b", "-o", "x.svg", "--width", "0"]),
        (vec![], vec!["render", "-s", "1f1b", "-o", "x.svg", "--animate", "--duration", "600.1"]),
        (vec![], vec!["render", "-s", "1f1b", "-o", "x.svg", "--row-height", "0"]),
        // Outputs.
        (vec![], vec!["render", "-s", "1f1b", "-o", "a.txt"]),
        (vec![], vec!["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "-o", "-", "--json"]),
        (vec![], vec!["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "-o", "-", "--csv"]),
        // Files.
        (vec![bad_csv], vec!["simulate", "--from", "bad.csv"]),
        (vec![bad_csv], vec!["convert", "bad.csv", "out.json"]),
        (vec![("bad.json", "{\"a\": 1}")], vec!["simulate", "--from", "bad.json"]),
        (vec![], vec!["simulate", "--from", "missing.csv"]),
        // Flags nothing reads.
        (vec![], vec!["simulate", "-s", "1f1b", "--dialect", "legacy"]),
        (vec![], vec!["simulate", "-s", "1f1b", "--from-format", "json"]),
        (vec![], vec!["render", "-s", "1f1b", "-o", "x.svg", "--dialect", "legacy"]),
        (vec![], vec!["costs", "--list", "--model", "llama-3-8b"]),
        (vec![], vec!["costs", "--list", "--devices", "8"]),
        (vec![], vec!["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--overlap", "1.5"]),
        // Models.
        ([].into(), ["costs", "--micro-batch", "1", "--layout", deep.as_str()].into_iter().chain(model).collect()),
        (vec![], vec!["simulate", "-s", "1f1b", "--model", "llama-3-8b", "--tflops", "1e-300"]),
        (vec![], vec!["simulate", "-s", "1f1b", "--model", "llama-3-8b", "--mem-limit", "2048TiB"]),
    ];
    for (files, args) in &cases {
        let e = refused(files, args);
        assert_error_shape(args, &e);
    }
}

#[test]
fn clap_usage_errors_take_the_shape_of_every_error() {
    let e = fails_in_scratch(&["costs", "--model", "llama-3-8b", "--devices", "8", "--f", "3"]);
    assert_eq!(
        e,
        "error: unexpected argument '--f' found\n  hint: a similar argument exists: '--ffn'\n  hint: `bubblescope costs --help` lists every flag\n"
    );
    let e = fails_in_scratch(&["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--json", "--csv"]);
    assert!(
        e.starts_with("error: the argument '--json' cannot be used with '--csv'\n  hint: give only one of the two\n"),
        "{e}"
    );
    let e = fails_in_scratch(&["sweep", "-p", "4"]);
    assert!(
        e.starts_with("error: the following required arguments were not provided: --schedules <LIST|all>, --microbatches <LIST|RANGE>\n"),
        "{e}"
    );
    // A value parser's own hint stays.
    let e = fails_in_scratch(&["simulate", "--devices", "0"]);
    assert!(e.contains("devices must be between 1 and 1024, found 0\n  hint: --devices is the number"), "{e}");
    // Help and version still print to standard output and succeed.
    assert!(ok_in_scratch(&["--help"]).contains("Usage: bubblescope"));
    assert!(ok_in_scratch(&["--version"]).starts_with("bubblescope "));
}

#[test]
fn sweep_writes_one_output_per_stream() {
    let dir = tempfile::tempdir().unwrap();
    let e = fails(dir.path(), &["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "-o", "-", "--json"]);
    assert!(e.starts_with("error: -o - and --json both write to standard output\n  hint: "), "{e}");
    // `-o -` alone: the chart alone.
    let out = ok(dir.path(), &["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "-o", "-"]);
    assert!(out.starts_with("<svg") && out.trim_end().ends_with("</svg>"), "{}", &out[..60.min(out.len())]);
}

#[test]
fn render_refuses_an_output_name_that_is_not_svg() {
    let dir = tempfile::tempdir().unwrap();
    let e = fails(dir.path(), &["render", "-s", "1f1b", "-o", "a.txt"]);
    assert!(e.starts_with("error: render writes SVG, but a.txt ends in .txt, expected .svg or no extension\n"), "{e}");
    assert!(!dir.path().join("a.txt").exists());
    ok(dir.path(), &["render", "-s", "1f1b", "-o", "figure"]);
    ok(dir.path(), &["render", "-s", "1f1b", "-o", "figure.SVG"]);
}

#[test]
fn file_flags_without_a_file_are_errors_naming_them() {
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--dialect", "legacy"]);
    assert!(e.starts_with("error: --dialect applies to a schedule read with --from, but no --from is given"), "{e}");
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--from-format", "json"]);
    assert!(e.starts_with("error: --from-format applies to a schedule read with --from"), "{e}");
}

#[test]
fn costs_list_json_prints_the_presets_as_json() {
    let v: serde_json::Value = serde_json::from_str(&ok_in_scratch(&["costs", "--list", "--json"])).unwrap();
    let presets = v["presets"].as_array().unwrap();
    assert!(presets.iter().any(|p| p["key"] == "llama-3-8b" && p["model"]["layers"] == 32), "{v}");
    let gpus = v["gpus"].as_array().unwrap();
    assert!(gpus.iter().any(|g| g["key"] == "a100-80gb" && g["peak_tflops"] == 312.0), "{v}");
    // The text lists the same presets and GPUs, one unindented line each under two headings.
    let text = ok_in_scratch(&["costs", "--list"]);
    let named = text.lines().filter(|l| !l.starts_with(' ') && !l.is_empty() && !l.ends_with("):")).count();
    assert_eq!(named, presets.len() + gpus.len(), "{text}");
    let e = fails_in_scratch(&["costs", "--list", "--model", "llama-3-8b"]);
    assert!(e.starts_with("error: --list prints every model preset, so it takes no model flags or --devices"), "{e}");
}

#[test]
fn a_memory_limit_past_a_tebibyte_is_taken_with_a_model() {
    let out = ok_in_scratch(&["simulate", "-s", "zb-auto", "--model", "llama-3-8b", "--mem-limit", "1TiB", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mem_limit"], 1_099_511_627_776.0);
}

#[test]
fn duplicate_json_keys_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), TINY_CSV).unwrap();
    ok(dir.path(), &["convert", "t.csv", "t.json"]);
    let text = std::fs::read_to_string(dir.path().join("t.json")).unwrap();
    let doubled = text.replacen("\"microbatches\": 2,", "\"microbatches\": 2, \"microbatches\": 3,", 1);
    assert_ne!(doubled, text);
    std::fs::write(dir.path().join("d.json"), doubled).unwrap();
    let e = fails(dir.path(), &["simulate", "--from", "d.json"]);
    assert!(
        e.starts_with("error: d.json: the key `microbatches` appears twice in the top-level object at line "),
        "{e}"
    );
    assert_eq!(e.matches("error:").count(), 1, "{e}");
    assert!(!e.contains("out of range"), "{e}");
    assert!(e.contains("\n  hint: keep one of the two"), "{e}");
}

/// Every command's short help is a summary: at most 250 words, as `simulate -h` is; the long
/// help keeps every flag.
#[test]
fn every_short_help_is_short_and_the_long_help_has_every_flag() {
    for (command, flags) in [
        ("render", &["--row-height", "--duration", "--loop", "--theme"][..]),
        ("sweep", &["--group", "--theme", "--trades"][..]),
        ("convert", &["--merge-bw", "--torch", "--to-dialect"][..]),
        ("plan", &["--static-memory", "--global-batch"][..]),
        ("costs", &["--calibrate"][..]),
        ("trace", &["--step"][..]),
    ] {
        let short = ok_in_scratch(&[command, "-h"]);
        let words = short.split_whitespace().count();
        assert!(words <= 250, "`{command} -h` has {words} words, more than 250:\n{short}");
        let long = ok_in_scratch(&[command, "--help"]);
        for flag in flags {
            assert!(long.contains(flag), "`{command} --help` lacks {flag}");
        }
    }
}

/// JSON never prints a negative zero (`-0.0`): sums of nothing and differences of equal
/// numbers are 0.
#[test]
fn json_output_has_no_negative_zero() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fixture = |name: &str| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces").join(name).display().to_string()
    };
    let zbv = fixture("zbv");
    let commands: Vec<Vec<&str>> = vec![
        vec![
            "simulate",
            "-s",
            "group-interleaved",
            "-p",
            "4",
            "-m",
            "8",
            "--offload",
            "pipeoffload",
            "--copy-time",
            "0.2",
        ],
        vec!["simulate", "-s", "1f1b", "--offload", "auto", "--copy-time", "0.1", "-m", "16"],
        vec!["simulate", "-s", "zb-h1", "--recompute", "full,none,none,none"],
        vec!["sweep", "--schedules", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trades", "none,full"],
        vec!["plan", "-p", "4", "--mem-limit", "2", "--recompute", "full", "--top", "3"],
        vec!["trace", &zbv],
        vec!["simulate", "--from", &zbv],
    ];
    fn negative_zeros(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Number(n) => usize::from(n.as_f64().is_some_and(|x| x == 0.0 && x.is_sign_negative())),
            serde_json::Value::Array(items) => items.iter().map(negative_zeros).sum(),
            serde_json::Value::Object(map) => map.values().map(negative_zeros).sum(),
            _ => 0,
        }
    }
    for mut args in commands {
        args.push("--json");
        let out = ok(d, &args);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(negative_zeros(&v), 0, "{args:?}:\n{out}");
    }
}

/// A negative profiler step gets a plain error of its own, not clap's advice to write `-- -1`.
#[test]
fn a_negative_step_is_refused_in_plain_words() {
    let zbv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/zbv");
    let e = fails_in_scratch(&["trace", zbv.to_str().unwrap(), "--step", "-1"]);
    assert!(e.contains("--step") && e.contains("found -1") && e.contains("hint:"), "{e}");
    assert!(!e.contains("-- -1"), "{e}");
}

/// Minor items of issue 43's second pass: no `-0` in a table (`--comm -0` is 0), no float
/// noise in JSON (a running total of 0.7s peaking at 2.800000000000004 prints as 2.8, as the
/// table rounds it), and `--dp` without a model says that it needs one rather than asking for
/// `--layers`.
#[test]
fn no_negative_zero_no_float_noise_and_dp_needs_a_model() {
    let table = ok_in_scratch(&["simulate", "-s", "1f1b", "--comm", "-0"]);
    assert!(table.contains("comm 0 ") && !table.contains("-0"), "{table}");
    let v: serde_json::Value =
        serde_json::from_str(&ok_in_scratch(&["simulate", "-s", "zb-v", "--mem-f", "0.7", "--json"])).unwrap();
    assert_eq!(v["peak_memory"].to_string(), "2.8");
    assert_eq!(v["per_device"][0]["peak_memory"].to_string(), "2.8");
    assert_eq!(v["least_memory"].to_string(), "0.7");
    assert_eq!(v["bubble_rate"].as_f64(), Some(1.0 - v["ideal"].as_f64().unwrap() / v["cost"].as_f64().unwrap()));
    for flags in [&["--dp", "2"][..], &["--tp", "2", "--dp", "2"][..], &["--gpu", "a100-80gb"][..]] {
        let args: Vec<&str> = ["simulate", "-s", "1f1b"].iter().chain(flags).copied().collect();
        let e = fails_in_scratch(&args);
        assert!(
            e.contains("needs a model to apply to, but no model is given") && !e.contains("--layers is required"),
            "{e}"
        );
        assert!(e.contains("hint: start from a preset"), "{e}");
    }
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--dp", "2"]);
    assert!(e.starts_with("error: --dp needs a model"), "{e}");
    // A model's sizes without a preset still name the size missing.
    let e = fails_in_scratch(&["simulate", "-s", "1f1b", "--hidden", "1024", "--dp", "2"]);
    assert!(e.contains("--layers is required"), "{e}");
}

/// Float noise in a printed number: a run of nine 0s or 9s before its last digit, or a value
/// of 1e-10 or less (a difference that should be 0).
fn noisy(text: &str) -> Option<String> {
    let mut words = text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'));
    words
        .find(|w| {
            let digits = w.split('e').next().unwrap_or("");
            let tiny = w.parse::<f64>().is_ok_and(|v| v != 0.0 && v.abs() <= 1e-10);
            digits.contains("000000000") && !digits.ends_with('0') || digits.contains("999999999") || tiny
        })
        .map(str::to_string)
}

#[test]
fn json_svg_and_perfetto_numbers_carry_no_float_noise() {
    let runs: [&[&str]; 5] = [
        // A device idle 2e-10 µs of a 2 s span: a difference that is 0.
        &["simulate", "-s", "1f1b", "--model", "mixtral-8x7b", "-p", "4", "--json"],
        // Running totals of memory and copies.
        &[
            "plan",
            "-p",
            "4",
            "--mem-limit",
            "3",
            "--recompute",
            "full,none,none,none",
            "--offload",
            "0.5",
            "--copy-time",
            "0.2",
            "--json",
        ],
        // The title's font size divided by the SVG backend's 1.24.
        &["render", "-s", "1f1b", "-o", "-"],
        &[
            "simulate",
            "-s",
            "chimera",
            "-p",
            "4",
            "-m",
            "8",
            "--offload",
            "auto",
            "--copy-time",
            "0.2",
            "--export",
            "-",
            "--to-format",
            "perfetto",
        ],
        &[
            "simulate",
            "-s",
            "1f1b",
            "-p",
            "4",
            "-m",
            "8",
            "--offload",
            "auto",
            "--copy-time",
            "0.2",
            "--export",
            "-",
            "--to-format",
            "perfetto",
        ],
    ];
    for args in runs {
        let out = ok_in_scratch(args);
        assert_eq!(noisy(&out), None, "{args:?}");
    }
    let svg = ok_in_scratch(&["render", "-s", "1f1b", "-o", "-"]);
    assert!(svg.contains(r#"font-size="13""#), "{svg}");
}

#[test]
fn tiny_costs_print_their_digits_not_zeros() {
    let out =
        ok_in_scratch(&["simulate", "-s", "1f1b", "--f", "1e-9", "--b", "1e-9", "--w", "1e-9", "--mem-f", "1e-9"]);
    assert!(out.contains("cost         3.3e-8 "), "{out}");
    assert!(out.contains("peak memory  4e-9 "), "{out}");
    // Costs of ordinary size print as before.
    let out = ok_in_scratch(&["simulate", "-s", "1f1b"]);
    assert!(out.contains("cost         33 ") && out.contains("peak memory  4 "), "{out}");
}

/// `--a2a-overlap` (issue 41): Megatron's combined 1F1B on 1f1b and interleaved-1f1b with an
/// MoE model whose all-to-all leaves the GPU; its pairs go to PyTorch's compute-only CSV as
/// `(xFy;uBv)OVERLAP_F_B` and read back as the same schedule; a dense model, `--ep 1`, another
/// family and `--from` are refused with a hint.
#[test]
fn a2a_overlap_pairs_export_and_refusals() {
    let moe = ["--model", "mixtral-8x7b", "--ep", "2", "--dp", "2"];
    let d = tempfile::tempdir().unwrap();
    let base = ["simulate", "-s", "interleaved-1f1b", "-p", "2", "-m", "4", "--a2a-overlap"];
    let csv = ok(d.path(), &join(&join(&base, &moe), &["--export", "-", "--to-format", "pytorch-csv"]));
    assert!(csv.starts_with("0F0,0F1,2F0,2F1,0F2,(0F3;2B0)OVERLAP_F_B,"), "{csv}");
    std::fs::write(d.path().join("paired.csv"), &csv).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&ok(d.path(), &["simulate", "--from", "paired.csv", "--json"])).unwrap();
    assert_eq!(v["microbatches"], 4, "{v}");
    let text = ok(d.path(), &join(&base, &moe));
    assert!(text.contains("Interleaved 1F1B · 2 devices · 4 microbatches · a2a overlap"), "{text}");
    // The JSON keeps the pairs and the all-to-all: read back, it costs what it cost.
    let json = ok(d.path(), &join(&join(&base, &moe), &["--json"]));
    ok(d.path(), &join(&join(&base, &moe), &["--export", "paired.json"]));
    let back: serde_json::Value =
        serde_json::from_str(&ok(d.path(), &["simulate", "--from", "paired.json", "--json"])).unwrap();
    let first: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back["cost"], first["cost"]);
    // Device 0 pairs 3 of its 8 chunk forwards, device 1 five.
    assert_eq!((first["pairs"].as_u64(), back["pairs"].as_u64()), (Some(8), Some(8)));
    fails_with_hint(d.path(), &join(&["simulate", "-s", "1f1b", "--a2a-overlap"], &[]), "these costs have none");
    fails_with_hint(
        d.path(),
        &["simulate", "-s", "1f1b", "--a2a-overlap", "--model", "mixtral-8x7b"],
        "a dense model, or experts not split over ranks (--ep 1)",
    );
    let e = fails_with_hint(
        d.path(),
        &join(&["simulate", "-s", "zb-h1", "--a2a-overlap"], &moe),
        "zb-h1 cannot take --a2a-overlap",
    );
    assert!(e.contains("hint: use -s 1f1b or -s interleaved-1f1b"), "{e}");
    fails_with_hint(d.path(), &["simulate", "--from", "paired.csv", "--a2a-overlap"], "--a2a-overlap does not apply");
}

/// Hostile pass 5, items 15 to 19 and 21: JSON numbers that are float noise at their run's
/// scale are exact (idle shares and attribution parts 0, a part of 1 as 1), and the
/// calibration note prints no `-0.0%`.
#[test]
fn json_differences_carry_no_float_noise() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&ok(d, args)).unwrap() };
    let zbv = |x: &'static str| {
        json(&[
            "simulate",
            "-s",
            "zb-v",
            "--f",
            x,
            "--b",
            x,
            "--w",
            x,
            "--mem-f",
            "0.1",
            "--mem-limit",
            "0.7",
            "--json",
        ])
    };
    for x in ["0.7", "1.1", "0.1", "1e-9"] {
        let out = zbv(x);
        for dev in out["per_device"].as_array().unwrap() {
            assert_eq!(dev["idle_share"].as_f64(), Some(0.0), "{x}: {dev}");
        }
        for part in ["communication", "imbalance", "schedule"] {
            assert_eq!(out["attribution"][part].as_f64(), Some(0.0), "{x}: {}", out["attribution"]);
        }
        let bubble = out["prediction"]["simulated_bubble"].as_f64().unwrap();
        assert!(bubble == 0.0 && bubble.is_sign_positive(), "{x}: {}", out["prediction"]);
    }
    let out = json(&[
        "simulate",
        "-s",
        "zb-h1",
        "--f",
        "0.1",
        "--offload",
        "auto",
        "--copy-time",
        "0.1",
        "--recompute",
        "full",
        "--json",
    ]);
    assert_eq!(out["attribution"]["imbalance"].as_f64(), Some(0.0), "{}", out["attribution"]);
    for (offload, whole) in [("auto", 1.0), ("pipeoffload", 2.0)] {
        let out = json(&[
            "plan",
            "-p",
            "4",
            "--mem-limit",
            "3",
            "--recompute",
            "none",
            "--offload",
            offload,
            "--copy-time",
            "0.2",
            "--json",
        ]);
        let parts: Vec<f64> =
            out["plans"].as_array().unwrap().iter().map(|p| p["attribution"]["schedule"].as_f64().unwrap()).collect();
        assert!(parts.iter().all(|v| v.to_string().len() < 10), "{offload}: {parts:?}");
        assert!(parts.contains(&whole), "{offload}: {parts:?}");
    }
    let said = ok_stderr(
        d,
        &["costs", "--model", "zb-1.5b", "--gpu", "a100-80gb", "-p", "8", "--calibrate=18.5ms,18.1ms,9.3ms"],
    );
    let said = said
        + &ok(d, &["costs", "--model", "zb-1.5b", "--gpu", "a100-80gb", "-p", "8", "--calibrate=18.5ms,18.1ms,9.3ms"]);
    assert!(said.contains("W 0.0%)") && !said.contains("-0.0%"), "{said}");
}

/// Eighth hostile pass: a flag that takes one number, given none (`--comm=`, `--s 1/3`,
/// `--width abc`), said the float parser's "cannot parse float from empty string" or "invalid
/// float literal", with no hint but `--help`. It says what it expected, with an example.
#[test]
fn a_number_flag_given_no_number_says_so_in_words() {
    let cases: [&[&str]; 6] = [
        &["simulate", "-s", "1f1b", "--comm"],
        &["simulate", "-s", "vocab-1", "--s"],
        &["simulate", "-s", "dualpipe-v", "--overlap"],
        &["simulate", "-s", "1f1b", "--offload", "0.5", "--copy-time"],
        &["simulate", "-s", "1f1b", "--model", "llama-3-8b", "--tflops"],
        &["render", "-s", "1f1b", "-o", "x.svg", "--width"],
    ];
    for base in cases {
        for bad in ["", "1/3", "10%"] {
            let args: Vec<&str> = base.iter().copied().chain([bad]).collect();
            let e = fails_in_scratch(&args);
            assert!(e.contains("expected a number, found") && e.contains("\n  hint: "), "{args:?}: {e}");
            assert!(!e.contains("float literal") && !e.contains("parse float"), "{args:?}: {e}");
        }
    }
}

/// Eighth hostile pass: a per-device mem-w above its piece's mem-f had only the catch-all
/// hint ("`bubblescope help` lists the commands"), where a single mem-w above mem-f says what
/// mem-w is.
#[test]
fn a_piece_whose_mem_w_is_above_its_mem_f_says_what_mem_w_is() {
    let e = fails_in_scratch(&["simulate", "-s", "gpipe", "-p", "4", "--mem-w", "1,1,1,3"]);
    assert!(e.contains("found mem-w 3 > mem-f 1 in piece 3") && e.contains("hint: mem-w is the part"), "{e}");
    assert!(!e.contains("`bubblescope help`"), "{e}");
}
