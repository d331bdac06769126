//! Recompute and offload through the binary: what `simulate` reports is the difference of two
//! independent runs, the planner's choice reproduces with `simulate`, files keep the passes,
//! PyTorch files hold the compute orders with a note, and bad input exits 2 with a hint.

mod common;

use common::{fails_with_hint, join, ok, ok_in_scratch, ok_stderr, SMALL_MODEL};

use serde_json::Value;
use std::path::PathBuf;

fn json(args: &[&str]) -> Value {
    let all = join(args, &["--json"]);
    serde_json::from_str(&ok_in_scratch(&all)).expect("json")
}

#[test]
fn the_trade_line_is_the_difference_to_the_same_orders_without_it() {
    for (family, extra) in [
        ("1f1b", &["--recompute", "full"][..]),
        ("gpipe", &["--offload", "auto", "--copy-time", "2.5", "-m", "16"][..]),
        ("zb-h1", &["--recompute", "full,none,full,none", "--offload", "0.5", "--copy-time", "0.2"][..]),
    ] {
        let base = join(&["simulate", "-s", family, "--comm", "0.1"], extra);
        let traded = json(&base);
        let plain_args: Vec<&str> = ["simulate", "-s", family, "--comm", "0.1"]
            .into_iter()
            .chain(extra.iter().copied().filter(|a| *a == "-m" || *a == "16"))
            .collect();
        let plain = json(&plain_args);
        let t = &traded["trade"];
        let cost = |v: &Value| v["cost"].as_f64().unwrap();
        let peak = |v: &Value| v["peak_memory"].as_f64().unwrap();
        assert!((t["time"].as_f64().unwrap() - (cost(&traded) - cost(&plain))).abs() < 1e-9, "{family}: {t}");
        assert!((t["saved"].as_f64().unwrap() - (peak(&plain) - peak(&traded))).abs() < 1e-9, "{family}: {t}");
        assert!(peak(&traded) <= peak(&plain) + 1e-12 && cost(&traded) >= cost(&plain) - 1e-12, "{family}");
    }
    assert_eq!(json(&["simulate", "-s", "1f1b"])["trade"], Value::Null);
}

#[test]
fn a_model_prices_selective_recompute_and_copies_at_the_host_link() {
    let selective = json(&join(
        &join(&["simulate", "-s", "1f1b", "--flash-attention", "false"], &SMALL_MODEL),
        &["--recompute", "selective"],
    ));
    let plain = json(&join(&join(&["simulate", "-s", "1f1b", "--flash-attention", "false"], &SMALL_MODEL), &[]));
    assert!(selective["peak_memory"].as_f64() < plain["peak_memory"].as_f64());
    // Copies at half the link take twice as long each.
    let at = |gbps: &str| {
        let v = json(&join(
            &join(&["simulate", "-s", "gpipe", "-m", "8"], &SMALL_MODEL),
            &["--offload", "1", "--host-gbps", gbps],
        ));
        v["trade"]["copying"][0].as_f64().unwrap() / (2.0 * v["trade"]["offloaded"][0].as_f64().unwrap())
    };
    let (fast, slow) = (at("400"), at("200"));
    assert!(fast > 0.0 && (slow / fast - 2.0).abs() < 1e-9, "{fast} {slow}");
}

#[test]
fn the_planner_trades_only_when_it_must_and_its_choice_reproduces() {
    let v: Value =
        serde_json::from_str(&ok_in_scratch(&["plan", "-p", "4", "--mem-limit", "2", "--copy-time", "0.05", "--json"]))
            .unwrap();
    let plans = v["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    let traded = plans.iter().find(|p| !p["trade"].is_null()).expect("some plan trades");
    let p = traded;
    let recompute =
        p["trade"]["recompute"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect::<Vec<_>>().join(",");
    let offload = p["trade"]["offload"].as_str().unwrap().to_string();
    let m = p["microbatches"].to_string();
    let mut args =
        vec!["simulate", "-s", p["schedule"].as_str().unwrap(), "-p", "4", "-m", &m, "--recompute", &recompute];
    let chunks = p["chunks"].to_string();
    if !p["chunks"].is_null() {
        args.extend(["--chunks", &chunks]);
    }
    if offload != "none" {
        args.extend(["--offload", &offload, "--copy-time", "0.05"]);
    }
    let again = json(&args);
    assert_eq!(again["cost"].as_f64(), p["cost"].as_f64(), "{p}");
    assert!(again["peak_memory"].as_f64().unwrap() <= 2.0 + 1e-12);
    // Nothing fits below the least memory any candidate reaches: the error names it.
    let e = fails_with_hint(
        &std::env::temp_dir(),
        &["plan", "-p", "4", "--mem-limit", "0.01", "--copy-time", "0.05"],
        "no plan fits",
    );
    assert!(e.contains("even with the most recompute and offload tried, the least memory a candidate needs is"), "{e}");
}

#[test]
fn files_keep_recompute_and_copies_and_pytorch_files_hold_the_compute_orders() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flags = ["-s", "gpipe", "--recompute", "full,none,none,none", "--offload", "auto", "--copy-time", "0.3"];
    let first: Value =
        serde_json::from_str(&ok(d, &join(&join(&["simulate"], &flags), &["--export", "t.json", "--json"]))).unwrap();
    let text = std::fs::read_to_string(d.join("t.json")).unwrap();
    assert!(text.contains("\"copies\"") && text.contains("0R0"), "{text}");
    let back: Value =
        serde_json::from_str(&ok(d, &["simulate", "--from", "t.json", "--copy-time", "0.3", "--json"])).unwrap();
    assert_eq!(back["cost"], first["cost"]);
    assert_eq!(back["peak_memory"], first["peak_memory"]);
    let said = ok_stderr(d, &join(&join(&["simulate"], &flags), &["--export", "t.csv"]));
    assert!(said.contains("PyTorch's runtime has no recompute or offload action"), "{said}");
    ok(d, &["simulate", "-s", "gpipe", "--export", "plain.csv"]);
    assert_eq!(
        std::fs::read_to_string(d.join("t.csv")).unwrap(),
        std::fs::read_to_string(d.join("plain.csv")).unwrap()
    );
}

#[test]
fn bad_trades_exit_2_with_a_hint() {
    let d = std::env::temp_dir();
    for (args, says) in [
        // Eighth hostile pass: "one value for every device or one per device: 4, found 2".
        (&["--recompute", "full,none"][..], "one value for all devices or one per device, 4 in all, found 2"),
        // Eighth hostile pass: `auto` in a list was "a fraction from 0 to 1, found `auto`".
        (
            &["--offload", "auto,auto", "--copy-time", "1"][..],
            "offload auto stands alone: a list gives one fraction per device",
        ),
        (&["--recompute", "sometimes"][..], "unknown recompute `sometimes`"),
        (&["--offload", "1.5", "--copy-time", "1"][..], "from 0 to 1, found 1.5"),
        (&["--offload", "-0.5", "--copy-time", "1"][..], "found -0.5"),
        (&["--offload", "auto"][..], "offload needs the time a copy to the host takes"),
        (&["--offload", "auto", "--copy-time", "0"][..], "copy-time must be above 0"),
        (&["--offload", "auto", "--copy-time", "NaN"][..], "copy-time must be above 0"),
        (&["--offload", "auto", "--copy-time", "1e300"][..], "at most 1e12, found 1e300"),
        (&["--copy-time", "2"][..], "nothing is offloaded"),
        (&["--recompute", "selective"][..], "selective recompute needs a model"),
        (&["--offload", "auto", "--host-gbps", "3"][..], "host-gbps needs costs from a model"),
        (
            &["--model", "llama-3-8b", "--offload", "auto", "--host-gbps", "0"][..],
            "--host-gbps must be at least 0.001 GB/s",
        ),
        // A link so slow a copy would take ~1e300 µs, or one whose copies overflow to inf,
        // names --host-gbps, not the copy time it gives.
        (
            &["--model", "llama-3-8b", "--offload", "auto", "--host-gbps", "1e-30"][..],
            "--host-gbps must be at least 0.001 GB/s (below it a copy could take more than 1e12 µs), found 1e-30",
        ),
        (
            &["--model", "llama-3-8b", "--offload", "auto", "--host-gbps", "1e-320"][..],
            "--host-gbps must be at least 0.001 GB/s (below it a copy could take more than 1e12 µs), found 1e-320",
        ),
        (&["--recompute", "full", "--optimal"][..], "recomputes or offloads"),
    ] {
        fails_with_hint(&d, &join(&["simulate", "-s", "1f1b"], args), says);
    }
}

#[test]
fn a_sweep_runs_every_setting_and_draws_the_traded_runs_hollow() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "sweep",
        "--schedules",
        "1f1b,zb-h1",
        "-p",
        "4",
        "-m",
        "8",
        "--trades",
        "none,full,offload",
        "--copy-time",
        "0.2",
    ];
    let v: Value = serde_json::from_str(&ok(d, &join(&args, &["--json", "-o", "p.svg"]))).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 3);
    for r in runs {
        // Each run is what `simulate` gives with the same setting.
        let mut again = vec!["simulate", "-s", r["schedule"].as_str().unwrap()];
        match r["trade"].as_str() {
            None => {}
            Some(t) if t.starts_with("recompute") => again.extend(["--recompute", "full"]),
            Some(_) => again.extend(["--offload", "auto", "--copy-time", "0.2"]),
        }
        let one = json(&again);
        assert_eq!(
            (one["cost"].as_f64(), one["peak_memory"].as_f64()),
            (r["cost"].as_f64(), r["peak_memory"].as_f64()),
            "{r}"
        );
    }
    let svg = std::fs::read_to_string(d.join("p.svg")).unwrap();
    assert!(svg.contains("recompute/offload"), "the legend names the hollow markers");
    let e = common::fails_with_hint(d, &join(&args[..7], &["--trades", "full,sometimes"]), "unknown trade `sometimes`");
    assert!(e.contains("expected none, selective, full, offload"), "{e}");
    common::fails_with_hint(d, &join(&args, &["--recompute", "full"]), "cannot be used with");
}

/// Selective recompute drops the attention scores, which FlashAttention never stores: on such
/// a model `simulate`, `sweep --trades` and `plan` all refuse it with the same reason and hint
/// (before: simulate ran it as a no-op, sweep listed duplicate rows and plan dropped its
/// trade search for it).
#[test]
fn selective_recompute_under_flash_attention_is_refused_everywhere() {
    let d = tempfile::tempdir().expect("scratch");
    let says = "selective drops the attention scores, but this model's FlashAttention never stores them: it would recompute nothing";
    let llama = ["--model", "llama-3-8b"];
    for args in [
        join(&["simulate", "-s", "1f1b", "--recompute", "selective"], &llama),
        join(&["simulate", "-s", "1f1b", "--recompute", "none,selective,none,none"], &llama),
        join(&["plan", "-p", "4", "--mem-limit", "80GiB", "--recompute", "selective"], &llama),
        join(&["sweep", "--schedules", "1f1b,zb-h1", "-p", "4", "-m", "8", "--trades", "none,selective"], &llama),
    ] {
        let e = fails_with_hint(d.path(), &args, says);
        let flag = if args[0] == "sweep" { "error: --trades: recompute selective" } else { "error: --recompute " };
        assert!(e.starts_with(flag), "{e}");
        assert!(e.contains("hint: recompute full") && e.contains("flash-attention false"), "{e}");
    }
    // Without FlashAttention the scores are stored, and selective recompute drops them.
    ok_stderr(
        d.path(),
        &join(&["simulate", "-s", "1f1b", "--recompute", "selective", "--flash-attention", "false"], &llama),
    );
}

/// A fraction that rounds to none of a device's forwards names --offload, not the waits
/// (before: "nothing was offloaded: no wait … hides three round trips").
#[test]
fn an_offload_fraction_that_rounds_to_nothing_names_offload() {
    let d = tempfile::tempdir().expect("scratch");
    for fraction in ["1e-320", "0.05", "1e-320,0,0,0"] {
        let e = fails_with_hint(
            d.path(),
            &["simulate", "-s", "zb-h1", "--offload", fraction, "--copy-time", "0.2"],
            "rounds to none of the 8 forwards a device runs, so nothing is offloaded",
        );
        assert!(e.starts_with("error: --offload ") && e.contains("offload at least 0.0625"), "{e}");
        assert!(!e.contains("no wait"), "{e}");
    }
    // One forward of 8 rounds up from 0.0625.
    let said = ok_stderr(d.path(), &["simulate", "-s", "zb-h1", "--offload", "0.0625", "--copy-time", "0.2"]);
    assert!(!said.contains("nothing"), "{said}");
}

#[test]
fn asking_to_offload_what_no_wait_hides_says_so_and_offloading_nothing_says_nothing() {
    let d = tempfile::tempdir().expect("scratch");
    let slow = ok_stderr(d.path(), &["simulate", "-s", "1f1b", "--offload", "auto", "--copy-time", "1e3"]);
    assert!(slow.contains("note: nothing was offloaded: no wait between a forward and its backward"), "{slow}");
    let none = ok_stderr(d.path(), &["simulate", "-s", "1f1b", "--offload", "0", "--copy-time", "1"]);
    assert!(!none.contains("nothing was offloaded"), "{none}");
}

/// `--offload pipeoffload` is PipeOffload's placement for its own grouped interleaved
/// schedule: any other family refuses it with a hint (a sweep lists it among the invalid
/// combinations, with the reason), where before it was taken and offloaded nothing.
#[test]
fn pipeoffload_placement_is_for_group_interleaved_only() {
    let copies = ["--offload", "pipeoffload", "--copy-time", "0.2"];
    for family in ["1f1b", "zb-h1", "interleaved-1f1b"] {
        let e = fails_with_hint(
            tempfile::tempdir().unwrap().path(),
            &join(&["simulate", "-s", family, "-p", "4", "-m", "8"], &copies),
            "pipeoffload",
        );
        assert!(e.contains("group-interleaved") && e.contains("--offload auto"), "{family}: {e}");
    }
    let ok_run = json(&join(&["simulate", "-s", "group-interleaved", "-p", "4", "-m", "8"], &copies));
    let offloaded: u64 = ok_run["trade"]["offloaded"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum();
    assert!(offloaded > 0, "{ok_run:#}");
    let sweep = json(&join(&["sweep", "--schedules", "1f1b,group-interleaved", "-p", "4", "-m", "8"], &copies));
    let runs: Vec<&str> = sweep["runs"].as_array().unwrap().iter().map(|r| r["schedule"].as_str().unwrap()).collect();
    assert_eq!(runs, ["group-interleaved"], "{sweep:#}");
    let invalid = &sweep["invalid"][0];
    assert_eq!(invalid["schedule"], "1f1b", "{sweep:#}");
    assert!(invalid["error"].as_str().unwrap().contains("pipeoffload"), "{sweep:#}");
}

/// Copies without slots take their time from a copy rate: a file of them read without one is
/// refused with a hint, not timed at zero; with `--copy-time` it reads back to the run that
/// wrote it; copies with slots carry their own times.
#[test]
fn copies_without_slots_need_a_copy_rate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let traded = ["simulate", "-s", "gpipe", "-m", "16", "--offload", "auto", "--copy-time", "2.5"];
    let original: Value = serde_json::from_str(&ok(d, &join(&traded, &["--json", "--export", "c.json"]))).unwrap();
    // The export carries its copy rate; a file without one (written by hand) needs it given.
    let text = std::fs::read_to_string(d.join("c.json")).unwrap();
    let (head, tail) = text.split_once(",\"copy_time\":").expect("the export carries costs.copy_time");
    let rate_free = format!("{head}{}", &tail[tail.find('}').unwrap()..]);
    std::fs::write(d.join("c.json"), rate_free).unwrap();
    fails_with_hint(d, &["simulate", "--from", "c.json"], "--copy-time");
    // Eighth hostile pass: with a model the hint named only --copy-time, which a model
    // refuses ("copy-time is for plain costs"); it names --host-gbps too, which then runs.
    let e = fails_with_hint(d, &["simulate", "--from", "c.json", "--model", "llama-3.2-1b"], "no copy time is given");
    assert!(e.contains("with a model give --host-gbps"), "{e}");
    ok(d, &["simulate", "--from", "c.json", "--model", "llama-3.2-1b", "--host-gbps", "25"]);
    let back: Value =
        serde_json::from_str(&ok(d, &["simulate", "--from", "c.json", "--copy-time", "2.5", "--json"])).unwrap();
    assert_eq!((&back["cost"], &back["peak_memory"]), (&original["cost"], &original["peak_memory"]));
    let slotted = ["simulate", "-s", "group-interleaved", "-p", "4", "-m", "8", "--offload", "pipeoffload"];
    let original: Value =
        serde_json::from_str(&ok(d, &join(&slotted, &["--copy-time", "0.2", "--json", "--export", "s.json"]))).unwrap();
    let back: Value = serde_json::from_str(&ok(d, &["simulate", "--from", "s.json", "--json"])).unwrap();
    assert_eq!(back["cost"], original["cost"]);
}

/// A file that holds its own R passes and copies runs as it says: recompute and offload flags,
/// which would change nothing, are refused with a hint, as they are on a measured run.
#[test]
fn trade_flags_on_a_file_that_trades_already_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["simulate", "-s", "gpipe", "-m", "16", "--offload", "auto", "--copy-time", "2.5", "--export", "c.json"]);
    ok(d, &["simulate", "-s", "1f1b", "--recompute", "full", "--export", "r.json"]);
    for (file, extra) in [
        ("c.json", &["--recompute", "full", "--copy-time", "2.5"][..]),
        ("c.json", &["--offload", "auto", "--copy-time", "2.5"][..]),
        ("c.json", &["--offload", "0", "--copy-time", "2.5"][..]),
        ("c.json", &["--offload", "1,0,0,0", "--copy-time", "2.5"][..]),
        ("r.json", &["--recompute", "full"][..]),
        ("r.json", &["--offload", "auto", "--copy-time", "1"][..]),
    ] {
        let e = fails_with_hint(d, &join(&["simulate", "--from", file], extra), "already");
        assert!(e.contains("--recompute") && e.contains("--offload"), "{file} {extra:?}: {e}");
    }
    let run = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/traces/zbv");
    let run = run.to_str().unwrap();
    fails_with_hint(d, &["simulate", "--from", run, "--recompute", "full"], "measured run");
    fails_with_hint(d, &["simulate", "--from", run, "--offload", "auto", "--copy-time", "1"], "measured run");
    // convert writes orders as they are: trade flags would change nothing.
    ok(d, &["simulate", "-s", "1f1b", "--export", "s.csv"]);
    for extra in [&["--recompute", "full"][..], &["--offload", "auto", "--copy-time", "1"][..]] {
        fails_with_hint(d, &join(&["convert", "s.csv", "o.json"], extra), "do not apply");
    }
}

/// An export of an offloaded schedule carries its copy time (`costs.copy_time`), so
/// `simulate --from` reads it back alone to the same run, in every family that offloads and
/// with a model's host link (before, it refused its own export: its copies had no time).
#[test]
fn offloaded_exports_read_back_alone_to_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = ["-p", "4", "-m", "8", "--offload", "auto", "--copy-time", "0.2"];
    let mut cases: Vec<Vec<&str>> = ["gpipe", "1f1b", "zb-h1", "zb-h2", "zb-v", "interleaved-1f1b", "dualpipe-v"]
        .iter()
        .map(|f| join(&["-s", f], &plain))
        .collect();
    cases.push(vec!["-s", "group-interleaved", "-p", "4", "-m", "8", "--offload", "pipeoffload", "--copy-time", "0.2"]);
    let model = ["-s", "zb-v", "-p", "4", "-m", "16", "--model", "zb-1.5b", "--offload", "auto", "--host-gbps", "400"];
    cases.push(model.to_vec());
    for flags in cases {
        let run = |args: &[&str]| -> Value { serde_json::from_str(&ok(d, args)).unwrap() };
        let first = run(&join(&join(&["simulate"], &flags), &["--export", "off.json", "--json"]));
        let offloaded: u64 = first["trade"]["offloaded"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum();
        assert!(offloaded > 0, "{flags:?}: the case offloads");
        let back = run(&["simulate", "--from", "off.json", "--json"]);
        for key in ["cost", "peak_memory", "trade"] {
            assert_eq!(back[key], first[key], "{flags:?}: {key}");
        }
        // A copy time given again replaces the file's (PipeOffload's copies keep their slots).
        if !flags.contains(&"--model") && !flags.contains(&"pipeoffload") {
            let slower = run(&["simulate", "--from", "off.json", "--copy-time", "50", "--json"]);
            assert!(slower["cost"].as_f64() > first["cost"].as_f64(), "{flags:?}: --copy-time 50 is slower");
        }
    }
    // A copy time that is no time is refused, naming it.
    let text = std::fs::read_to_string(d.join("off.json")).unwrap().replace("\"copy_time\":2.5e-6", "\"copy_time\":-1");
    std::fs::write(d.join("bad.json"), text).unwrap();
    fails_with_hint(d, &["simulate", "--from", "bad.json"], "a copy to the host must take some time, found -1");
}
