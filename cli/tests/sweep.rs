//! `bubblescope sweep`: rows equal individual `simulate` runs, invalid combinations listed,
//! bad input refused, the chart written.

mod common;

use common::{fails, fails_with_hint, join, ok};

use bubblescope::{family, Field};
use serde_json::Value;

/// Every sweep row, run again as its own `simulate --json`, has the same numbers; with costs
/// that make every attribution part non-zero.
fn rows_equal_simulate(costs: &[&str], limit: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "sweep",
        "--schedules",
        "1f1b,zb-h1,zb-2p,interleaved-1f1b,zb-v,dualpipe-v,gpipe",
        "--devices",
        "4",
        "--microbatches",
        "8..12:4",
        "--chunks",
        "2,3",
        "--json",
    ];
    args.extend_from_slice(costs);
    if let Some(l) = limit {
        args.extend(["--mem-limit", l]);
    }
    let sweep: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let runs = sweep["runs"].as_array().unwrap();
    assert!(runs.len() >= 10, "{sweep}");
    for row in runs {
        let name = row["schedule"].as_str().unwrap();
        let (m, limit) = (row["microbatches"].to_string(), row["mem_limit"].clone());
        let mut sim = vec!["simulate", "--schedule", name, "--devices", "4", "--microbatches", &m, "--json"];
        let chunks = row["chunks"].to_string();
        if family(name).unwrap().uses(Field::Chunks) {
            sim.extend(["--chunks", &chunks]);
        }
        let limit_text = limit.to_string();
        if !limit.is_null() {
            sim.extend(["--mem-limit", &limit_text]);
        }
        sim.extend_from_slice(costs);
        let single: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
        for key in ["schedule", "devices", "microbatches", "chunks", "mem_limit", "cost", "bubble_rate", "peak_memory"]
        {
            assert_eq!(row[key], single[key], "{key} of {name} M {m}: sweep {row} vs simulate");
        }
        for part in ["communication", "imbalance", "schedule", "memory"] {
            assert_eq!(row["attribution"][part], single["attribution"][part], "{part} of {name} M {m}");
        }
    }
}

#[test]
fn sweep_attribution_has_the_memory_part_simulate_prints() {
    let dir = tempfile::tempdir().unwrap();
    let families = ["zb-auto", "zb-v", "v-auto", "zb-opt"];
    let args =
        ["sweep", "--schedules", "zb-auto,zb-v,v-auto,zb-opt", "-p", "4", "-m", "8", "--mem-limit", "4", "--json"];
    let sweep: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let runs = sweep["runs"].as_array().unwrap();
    for name in families {
        let row = runs.iter().find(|r| r["schedule"] == name).unwrap_or_else(|| panic!("{name}: {sweep}"));
        let sim = ["simulate", "-s", name, "-p", "4", "-m", "8", "--mem-limit", "4", "--json"];
        let single: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
        assert!(single["attribution"]["memory"].is_number(), "{name}: {}", single["attribution"]);
        assert_eq!(row["attribution"]["memory"], single["attribution"]["memory"], "{name}");
    }
    // The CSV's last column and the table say it too.
    let csv = ok(dir.path(), &args[..args.len() - 1].iter().copied().chain(["--csv"]).collect::<Vec<_>>());
    assert!(csv.lines().next().unwrap().contains(",pareto,error,bubble_rate_paper,attribution_memory,trade,"), "{csv}");
    let table = ok(dir.path(), &args[..args.len() - 1]);
    assert!(table.contains(" · memory "), "{table}");
}

#[test]
fn sweep_rows_equal_individual_simulate_runs() {
    rows_equal_simulate(&["--f", "1,1,1,2", "--b", "1,1,1,2.5", "--comm", "0.25"], None);
}

#[test]
fn sweep_rows_equal_simulate_under_a_memory_limit() {
    // Memory-aware families plan under the limit, the others are checked against it.
    rows_equal_simulate(&["--comm", "0.5"], Some("5"));
}

#[test]
fn invalid_combinations_are_listed_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(
        dir.path(),
        &[
            "sweep",
            "--schedules",
            "1f1b,dualpipe,gpipe",
            "--devices",
            "3",
            "--microbatches",
            "6",
            "--mem-limit",
            "4",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let runs: Vec<&str> = v["runs"].as_array().unwrap().iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(runs, vec!["1f1b"]);
    let invalid = v["invalid"].as_array().unwrap();
    assert_eq!(invalid.len(), 2);
    assert_eq!(invalid[0]["schedule"], "dualpipe");
    assert!(invalid[0]["error"].as_str().unwrap().contains("even"), "{}", invalid[0]);
    assert_eq!(invalid[1]["schedule"], "gpipe");
    assert_eq!(invalid[1]["mem_limit"], 4.0);
    assert!(invalid[1]["error"].as_str().unwrap().starts_with("peak memory 6 on device 0 is above the memory limit 4"));
    // The table and the CSV list them too.
    let table = ok(dir.path(), &["sweep", "--schedules", "1f1b,dualpipe", "-p", "3", "-m", "6"]);
    assert!(table.contains("invalid combinations (1):\n  dualpipe M 6: "), "{table}");
    let csv = ok(dir.path(), &["sweep", "--schedules", "1f1b,dualpipe", "-p", "3", "-m", "6", "--csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("schedule,devices,microbatches,chunks,mem_limit,cost,bubble_rate,peak_memory,"));
    assert!(lines[1].starts_with("1f1b,3,6,1,,"));
    assert!(lines[2].starts_with("dualpipe,3,6,,,,,,,,,,\""), "{}", lines[2]);
    // Interleaved 1F1B at M = 9 on 4 devices needs another group, and its hint names
    // --group: the sweep takes it, and the run then equals simulate's with the same group.
    let args = ["sweep", "--schedules", "interleaved-1f1b", "-p", "4", "-m", "9", "--chunks", "2", "--json"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    assert!(v["invalid"][0]["error"].as_str().unwrap().contains("--group 5"), "{v}");
    let grouped: Vec<&str> = args.iter().copied().chain(["--group", "5"]).collect();
    let v: Value = serde_json::from_str(&ok(dir.path(), &grouped)).unwrap();
    let single =
        ["simulate", "-s", "interleaved-1f1b", "-p", "4", "-m", "9", "--chunks", "2", "--group", "5", "--json"];
    let s: Value = serde_json::from_str(&ok(dir.path(), &single)).unwrap();
    assert_eq!(v["runs"][0]["cost"], s["cost"], "{v}");
}

#[test]
fn the_table_marks_the_front_and_sorts_by_speed() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(dir.path(), &["sweep", "--schedules", "1f1b,zb-h1,zb-h2", "-p", "4", "-m", "8"]);
    let rows: Vec<&str> = out.lines().skip(1).take(3).collect();
    assert!(rows[0].starts_with("* zb-h2"), "{out}");
    assert!(rows[1].starts_with("* zb-h1"), "{out}");
    assert!(rows[2].starts_with("  1f1b"), "{out}");
    assert!(out.contains("(2 of 3 runs)"));
}

#[test]
fn with_a_model_the_table_reads_in_milliseconds_and_gib_like_plan() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-s", "1f1b", "-p", "8", "-m", "16", "--model", "llama-3.2-1b"];
    let out = ok(
        dir.path(),
        &[&["sweep", "--schedules", "1f1b", "--devices", "8", "--microbatches", "16"], &args[6..]].concat(),
    );
    let v: Value = serde_json::from_str(&ok(dir.path(), &[&["simulate", "--json"], &args[..]].concat())).unwrap();
    // Four significant digits of the slowest run, the same decimals in every column.
    let cost = v["cost"].as_f64().unwrap() / 1e3;
    let decimals = (3 - cost.log10().floor() as i32).clamp(0, 6) as usize;
    let ms = format!("{cost:.decimals$} ms");
    let row = out.lines().nth(1).unwrap();
    assert!(row.contains(&ms) && row.contains("GiB") && !row.contains("µs"), "{row} should hold {ms}");
    // The parts read as the sum they are, every one of them ≥ 0.
    let parts = row.split("GiB").nth(1).unwrap().trim();
    let at = &v["attribution"];
    let part = |k: &str| format!("{:.decimals$} ms", at[k].as_f64().unwrap() / 1e3);
    assert_eq!(parts, format!("{} + {} + {}", part("communication"), part("imbalance"), part("schedule")));
    assert!(at["imbalance"].as_f64().unwrap() > 0.0, "the LM head makes the last device the busiest: {at}");
}

#[test]
fn bad_lists_exit_2_with_hints() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["sweep", "--schedules", "1f1b", "-p", "4"];
    let cases: [(&[&str], &str); 7] = [
        (&["-m", "64..8"], "error: the range 64..8 in --microbatches is empty: its start 64 is above its end 8"),
        (&["-m", "8..64:0"], "the step in --microbatches must be between 1 and 65536, found 0"),
        (&["-m", "8,,16"], "item 2 of --microbatches is empty"),
        (&["-m", "eight"], "must be a whole number, found `eight`"),
        (&["-m", "8", "--chunks", "2"], "none of the swept schedules reads --chunks"),
        (&["-m", "8", "--mem-limit", "4,"], "item 2 of --mem-limit is empty"),
        (&["-m", "8", "-o", "pareto.png"], "sweep writes SVG, but pareto.png asks for PNG"),
    ];
    for (extra, says) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        fails_with_hint(dir.path(), &args, says);
    }
    let err = fails(dir.path(), &["sweep", "--schedules", "1f1b,zbh9", "-p", "4", "-m", "8"]);
    assert!(err.contains("unknown schedule `zbh9`"), "{err}");
    // Eighth hostile pass: `all` in a list was an "unknown schedule", "did you mean `zb-v`?".
    let err = fails_with_hint(
        dir.path(),
        &["sweep", "--schedules", "all,1f1b", "-p", "4", "-m", "8"],
        "`all` stands alone in the schedule list",
    );
    assert!(!err.contains("did you mean"), "{err}");
    let err = fails(dir.path(), &["sweep", "--schedules", "all", "-p", "64", "-m", "16384,32768"]);
    assert!(err.contains("passes together"), "{err}");
}

#[test]
fn the_chart_is_written_as_svg() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "sweep",
            "--schedules",
            "1f1b,zb-h1,zb-h2,zb-v",
            "-p",
            "4",
            "-m",
            "8,16",
            "--mem-limit",
            "6",
            "-o",
            "pareto.svg",
        ],
    );
    let svg = std::fs::read_to_string(dir.path().join("pareto.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
    assert!(svg.contains("limit 6"));
    assert!(svg.contains("Pareto front"));
}

#[test]
fn simulate_refuses_as_many_chunks_as_sweep_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let max = bubblescope::params::MAX_CHUNKS.to_string();
    let over = (bubblescope::params::MAX_CHUNKS + 1).to_string();
    let sweep =
        fails(dir.path(), &["sweep", "--schedules", "interleaved-1f1b", "-p", "4", "-m", "8", "--chunks", &over]);
    let simulate = fails(dir.path(), &["simulate", "-s", "interleaved-1f1b", "--chunks", &over]);
    for err in [&sweep, &simulate] {
        assert!(err.contains(&format!("between 1 and {max}, found {over}")), "{err}");
        assert!(err.contains("\n  hint: "), "{err}");
    }
    // The cap itself runs, with the lower bound simulate prints (65,536 passes).
    let out = ok(dir.path(), &["simulate", "-s", "interleaved-1f1b", "--chunks", &max, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["passes"], 65_536);
    assert!(v["lower_bound"].as_f64().is_some_and(|b| b > 0.0), "{}", v["lower_bound"]);
}

#[test]
fn an_overlap_no_swept_family_reads_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = fails(dir.path(), &["sweep", "--schedules", "1f1b,zb-h1", "-p", "4", "-m", "8", "--overlap", "1.5"]);
    assert!(e.starts_with("error: none of the swept schedules reads --overlap\n  hint: add a family"), "{e}");
    // With a family that reads it, the others run without it (as with --group).
    let out =
        ok(dir.path(), &["sweep", "--schedules", "1f1b,dualpipe", "-p", "4", "-m", "8", "--overlap", "1.5", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["invalid"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 2, "{v}");
}

#[test]
fn rounding_noise_does_not_put_a_run_on_the_front() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "sweep",
        "--schedules",
        "v-half,seq1f1b",
        "--devices",
        "4",
        "-m",
        "4",
        "--f",
        "1,1,1,2",
        "--comm",
        "0.2",
        "--json",
    ];
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let run = |name: &str| runs.iter().find(|r| r["schedule"] == name).unwrap().clone();
    let (v_half, seq) = (run("v-half"), run("seq1f1b"));
    // The same cost up to the last bits; seq1f1b holds less.
    assert!((v_half["cost"].as_f64().unwrap() - seq["cost"].as_f64().unwrap()).abs() < 1e-9, "{v}");
    assert!(seq["peak_memory"].as_f64() < v_half["peak_memory"].as_f64(), "{v}");
    assert_eq!((v_half["pareto"].as_bool(), seq["pareto"].as_bool()), (Some(false), Some(true)), "{v}");
}

/// A setting listed twice runs once: trades (however spelled), memory limits and chunks, as
/// schedules and microbatch counts already did.
#[test]
fn a_setting_listed_twice_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let runs = |extra: &[&str]| -> usize {
        let args = join(&["sweep", "--schedules", "1f1b,interleaved-1f1b", "-p", "4", "-m", "8", "--json"], extra);
        let v: serde_json::Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
        v["runs"].as_array().unwrap().len() + v["invalid"].as_array().unwrap().len()
    };
    assert_eq!(runs(&["--trades", "none,full"]), 4);
    assert_eq!(runs(&["--trades", "none,none,full,FULL"]), 4, "none and full once each");
    assert_eq!(runs(&["--mem-limit", "4,4"]), 2);
    assert_eq!(runs(&["--mem-limit", "4,8,4"]), 4);
    assert_eq!(runs(&["--chunks", "2,2"]), 2);
    let table = ok(dir.path(), &["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--trades", "none,none"]);
    assert!(table.contains("(1 of 1 runs)"), "{table}");
}

/// Item 6 and a minor item: `--copy-time` where nothing offloads is refused, not ignored; a
/// row whose offload setting found no wait to hide a copy in says it offloaded nothing (in the
/// table, and as `offloaded: 0` in JSON).
#[test]
fn a_copy_time_needs_an_offload_and_an_empty_offload_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = ["sweep", "--schedules", "zb-h1,1f1b", "-p", "4", "-m", "8"];
    for extra in [&["--copy-time", "3"][..], &["--copy-time", "3", "--trades", "none,full"][..]] {
        fails_with_hint(d, &join(&base, extra), "--copy-time prices copies to the host, but nothing is offloaded");
    }
    let table = ok(d, &join(&base, &["--trades", "none,offload", "--copy-time", "3"]));
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("trades offload")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows.iter().all(|r| r.ends_with("trades offload auto on every device, nothing offloaded")), "{table}");
    let v: Value =
        serde_json::from_str(&ok(d, &join(&base, &["--trades", "none,offload", "--copy-time", "3", "--json"])))
            .unwrap();
    assert!(v["runs"].as_array().unwrap().iter().all(|r| r["offloaded"] == 0), "{v}");
    // Where copies do hide, the row says what it trades and no more.
    let table = ok(d, &["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--offload", "1", "--copy-time", "0.5"]);
    assert!(table.contains("trades offload on every device\n"), "{table}");
    let v: Value = serde_json::from_str(&ok(
        d,
        &["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--offload", "1", "--copy-time", "0.5", "--json"],
    ))
    .unwrap();
    assert!(v["runs"][0]["offloaded"].as_u64().unwrap() > 0, "{v}");
}

/// Hostile pass 5, item 11: sweep took --s and --t without a word when no swept family splits
/// the vocabulary; it refuses them as simulate does (one rule), and runs them where one does.
#[test]
fn shard_costs_no_swept_family_reads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--s", "--t"] {
        let args = ["sweep", "--schedules", "1f1b,zb-h1", "-p", "4", "-m", "8", flag, "0.5"];
        let e = fails_with_hint(dir.path(), &args, "1f1b and zb-h1 do not split the output layer by vocabulary");
        assert!(e.contains("remove --s and --t"), "{e}");
    }
    ok(dir.path(), &["sweep", "--schedules", "1f1b,v-half-vocab", "-p", "4", "-m", "8", "--s", "0.5"]);
}

/// Issue 41: an MoE model swept over EP degrees, with and without Megatron's combined 1F1B.
/// Every row is the run `simulate` gives at its own `--ep` (and `--a2a-overlap`); a paired run
/// at EP 1 has no all-to-all to hide and is listed as invalid, with the reason.
#[test]
fn ep_degrees_and_combined_1f1b_rows_equal_simulate_at_their_own_ep() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["--devices", "4", "--model", "mixtral-8x7b", "--dp", "4"];
    let args = join(
        &[
            "sweep",
            "--schedules",
            "1f1b,interleaved-1f1b,zb-v",
            "--microbatches",
            "8",
            "--ep",
            "1,2,4",
            "--a2a-overlap",
            "--json",
        ],
        &base,
    );
    let sweep: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let runs = sweep["runs"].as_array().unwrap();
    // 3 EP degrees × (1f1b, interleaved, zb-v) plain, and 2 × 2 paired (EP 1 cannot pair).
    assert_eq!(runs.len(), 3 * 3 + 2 * 2, "{sweep}");
    let mut seen = std::collections::BTreeSet::new();
    for row in runs {
        let name = row["schedule"].as_str().unwrap();
        let ep = row["ep"].to_string();
        let paired = row["a2a_overlap"] == Value::Bool(true);
        seen.insert((name.to_string(), ep.clone(), paired));
        let chunks = row["chunks"].to_string();
        let mut sim = join(&["simulate", "--schedule", name, "--microbatches", "8", "--ep", &ep, "--json"], &base);
        if family(name).unwrap().uses(Field::Chunks) {
            sim.extend(["--chunks", &chunks]);
        }
        if paired {
            sim.push("--a2a-overlap");
        }
        let one: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
        for field in ["cost", "bubble_rate", "peak_memory"] {
            assert_eq!(row[field], one[field], "{name} ep {ep} paired {paired}: {field}");
        }
        assert_eq!(row["step"]["time"], one["step"]["time"], "{name} ep {ep} paired {paired}: step");
    }
    assert_eq!(seen.len(), runs.len(), "every row is its own run");
    let invalid = sweep["invalid"].as_array().unwrap();
    assert_eq!(invalid.len(), 2, "{sweep}");
    for row in invalid {
        assert_eq!((row["ep"].as_u64(), row["a2a_overlap"].as_bool()), (Some(1), Some(true)), "{row}");
        assert!(row["error"].as_str().unwrap().contains("--ep 1"), "{row}");
    }
    // The table names each row by family, pairing and EP.
    let table_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let table = ok(dir.path(), &table_args);
    for label in ["interleaved-1f1b+a2a ep 4", "zb-v ep 1", "1f1b+a2a ep 2"] {
        assert!(table.contains(label), "{label} in\n{table}");
    }
}

/// A list of EP degrees is for sweep and plan -p; the other commands run one, and say so.
#[test]
fn ep_lists_are_refused_outside_sweep_and_checked_inside() {
    let dir = tempfile::tempdir().unwrap();
    let model = ["-p", "4", "--model", "mixtral-8x7b", "--dp", "4"];
    // plan with -p takes a list too (a_plan_across_ep_degrees_runs_each_at_its_own, cli plan).
    for command in [&["simulate"][..], &["costs"], &["explain", "-s", "1f1b"]] {
        let args = join(&join(command, &model), &["--ep", "2,4"]);
        fails_with_hint(dir.path(), &args, "lists 2 degrees, but this command runs one");
    }
    let sweep = join(&["sweep", "--schedules", "zb-v", "-m", "8"], &model);
    fails_with_hint(dir.path(), &join(&sweep, &["--ep", "2,2"]), "EP 2 is listed twice");
    fails_with_hint(dir.path(), &join(&sweep, &["--ep", "2,3"]), "does not divide");
    fails_with_hint(dir.path(), &join(&sweep, &["--a2a-overlap"]), "pairs F and B");
}

/// Eighth hostile pass: `sweep --csv` printed costs with float noise (`8.199999999999998`,
/// `7.999999999999998`, peak `1.4117647058823528`) where `--json` prints 8.2, 8 and 24/17:
/// every number of a CSV row is now the JSON's.
#[test]
fn csv_numbers_are_the_json_numbers_without_float_noise() {
    let d = &std::env::temp_dir();
    let base = [
        "sweep",
        "--schedules",
        "all",
        "-p",
        "4",
        "-m",
        "8,12",
        "--f",
        "0.1",
        "--b",
        "0.2",
        "--w",
        "0.3",
        "--comm",
        "0.1",
        "--trades",
        "none,full,offload",
        "--copy-time",
        "0.3",
    ];
    let v: serde_json::Value = serde_json::from_str(&ok(d, &join(&base, &["--json"]))).unwrap();
    let csv = ok(d, &join(&base, &["--csv"]));
    let runs = v["runs"].as_array().unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).take(runs.len()).collect();
    for (run, row) in runs.iter().zip(&rows) {
        assert_eq!(row[0], run["schedule"].as_str().unwrap(), "{row:?}");
        for (col, key) in [(5, "cost"), (6, "bubble_rate"), (7, "peak_memory"), (13, "bubble_rate_paper")] {
            let x: f64 = row[col].parse().unwrap();
            assert_eq!(x, run[key].as_f64().unwrap(), "{key} in {row:?}");
        }
    }
}
