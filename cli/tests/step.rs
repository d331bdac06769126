//! The whole step through the CLI: every published row of `tests/fixtures/published/runs.json`
//! predicted as `docs/cost-model.md`'s fidelity table says (the golden predictions
//! `tools/fidelity.py --golden` writes), the step's JSON and text, and the bad input it refuses.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ok(args: &[&str]) -> String {
    common::ok(&root(), args)
}

fn fails(args: &[&str]) -> String {
    common::fails(&root(), args)
}

fn step_of(args: &[&str]) -> Value {
    let mut all = vec!["simulate", "--json"];
    all.extend_from_slice(args);
    let v: Value = serde_json::from_str(&ok(&all)).expect("json");
    v["step"].clone()
}

fn read(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root().join(path)).expect("fixture")).expect("json")
}

/// The row's metric from its step: seconds per step, or a throughput.
fn metric(step: &Value, metric: &str) -> f64 {
    match metric {
        "step_s" => step["time"].as_f64().unwrap() / 1e6,
        other => step[other].as_f64().unwrap(),
    }
}

#[test]
fn every_published_row_is_predicted_as_the_fidelity_table_says() {
    let rows = read("tests/fixtures/published/runs.json");
    let golden = read("tests/golden/published_predictions.json");
    let rows = rows["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 92, "Zero Bubble Tables 4 and 6, SC21 Table 1 with PP, torchtitan 405B");
    // Each row says which runtime it ran on; the rows on Megatron-LM's schedules (the Zero
    // Bubble paper's 1F1B and 1F1B-I baselines, SC21) run its blocking exchanges, the rest
    // asynchronous sends.
    for row in rows {
        let id = row["id"].as_str().unwrap();
        let runtime = row["runtime"].as_str().unwrap_or_else(|| panic!("{id} names no runtime"));
        let args: Vec<&str> = row["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let blocking = args.windows(2).any(|w| w == ["--p2p", "blocking"]);
        let megatron = id.starts_with("sc21-")
            || (id.starts_with("zb-") && ["1f1b", "1f1b-i"].contains(&row["schedule"].as_str().unwrap()));
        assert_eq!(blocking, megatron, "{id}: {args:?}");
        assert_eq!(runtime.starts_with("Megatron-LM"), megatron, "{id}: {runtime}");
    }
    let mut errors = Vec::new();
    for row in rows {
        let id = row["id"].as_str().unwrap();
        let args: Vec<&str> = row["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let step = step_of(&args);
        let kind = row["metric"].as_str().unwrap();
        let predicted = metric(&step, kind);
        let want = golden[id].as_f64().unwrap_or_else(|| panic!("{id} has no golden prediction"));
        assert!((predicted - want).abs() <= 1e-5 * want.abs(), "{id}: predicted {predicted}, the table says {want}");
        let measured = row["measured"].as_f64().unwrap();
        let error = if kind == "step_s" { measured / predicted - 1.0 } else { predicted / measured - 1.0 };
        errors.push(error.abs());
    }
    // The fidelity the docs state, as a floor that must not slip.
    errors.sort_by(f64::total_cmp);
    let median = (errors[(errors.len() - 1) / 2] + errors[errors.len() / 2]) / 2.0;
    let within = errors.iter().filter(|e| **e <= 0.10).count();
    assert!(median <= 0.083, "median error {median}");
    assert!(within >= 55, "{within} rows within 10%");
}

#[test]
fn the_sc21_preset_row_leads_with_its_step_and_shows_what_it_is_made_of() {
    let args = [
        "-s",
        "interleaved-1f1b",
        "--chunks",
        "2",
        "-p",
        "8",
        "--model",
        "sc21-145.6b",
        "--recompute",
        "full",
        "--dp",
        "24",
        "--global-batch",
        "2304",
    ];
    let step = step_of(&args);
    for key in ["time", "pipeline", "tp", "dp", "optimizer", "tokens_per_gpu_s", "samples_per_gpu_s", "mfu", "hfu"] {
        assert!(step[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {step}");
    }
    let sum: f64 = ["pipeline", "tp", "dp", "optimizer"].iter().map(|k| step[k].as_f64().unwrap()).sum();
    assert!((sum - step["time"].as_f64().unwrap()).abs() < 1e-6 * sum);
    assert_eq!((step["gpus"].as_u64(), step["global_batch"].as_u64()), (Some(1536), Some(2304)));
    assert_eq!(step["reductions"].as_array().unwrap().len(), 8, "one DP reduction per device");
    let mut text_args = vec!["simulate"];
    text_args.extend_from_slice(&args);
    let text = ok(&text_args);
    assert!(text.starts_with("step "), "{text}");
    let first = text.lines().next().unwrap();
    assert!(first.contains("tokens/s/GPU") && first.contains("MFU"), "{first}");
}

#[test]
fn the_step_of_one_replica_is_the_pipeline_and_the_optimizer() {
    let step = step_of(&["-s", "zb-h1", "-p", "4", "-m", "8", "--model", "zb-1.5b"]);
    assert_eq!((step["tp"].as_f64(), step["dp"].as_f64()), (Some(0.0), Some(0.0)));
    let v: Value =
        serde_json::from_str(&ok(&["simulate", "--json", "-s", "zb-h1", "-p", "4", "-m", "8", "--model", "zb-1.5b"]))
            .unwrap();
    let cost = v["stats"]["cost"].as_f64().or_else(|| v["cost"].as_f64()).expect("the pipeline's cost");
    let want = cost + step["optimizer"].as_f64().unwrap();
    assert!((step["time"].as_f64().unwrap() - want).abs() < 1e-6 * want);
}

#[test]
fn zero3_counts_its_gathers_and_fp8_is_faster_on_h100() {
    let base = ["-s", "zb-v", "-p", "4", "-m", "8", "--model", "llama-3-8b", "--tp", "2", "--dp", "4"];
    let mut z3 = base.to_vec();
    z3.extend_from_slice(&["--zero", "3"]);
    let step = step_of(&z3);
    let gathers: u64 = step["gathers"].as_array().unwrap().iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert!(gathers > 4 * 2, "zb-v's two chunks alternate: {gathers} gathers");
    let bf16 = step_of(&base)["pipeline"].as_f64().unwrap();
    let mut fp8 = base.to_vec();
    fp8.extend_from_slice(&["--precision", "fp8"]);
    assert!(step_of(&fp8)["pipeline"].as_f64().unwrap() < bf16);
}

#[test]
fn bad_step_input_says_what_was_wrong_with_a_hint() {
    let model = ["-s", "1f1b", "-p", "8", "--model", "sc21-145.6b"];
    let cases: [(&[&str], &str); 6] = [
        (&["--gpus", "1000", "--dp", "24"], "is not tp · pp · dp"),
        (&["--dp", "24", "--global-batch", "2300"], "global-batch 2300 is not a multiple of dp · micro-batch"),
        (&["--zero", "4"], "zero must be 0, 1, 2 or 3"),
        (&["--precision", "fp8"], "precision fp8 needs FP8 tensor cores"),
        (&["--tp", "16"], "wider than a node"),
        (&["--rank-order", "pp-tp"], "unknown rank order"),
    ];
    for (extra, says) in cases {
        let mut args = vec!["simulate"];
        args.extend_from_slice(&model);
        args.extend_from_slice(extra);
        let e = fails(&args);
        assert!(e.contains(says), "{extra:?}: {e}");
        assert!(e.contains("hint:"), "{extra:?}: {e}");
        // Notes may come first; the error line is lowercase.
        let line = e.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{e}"));
        assert!(!line["error: ".len()..].starts_with(char::is_uppercase), "{line}");
    }
    let e = fails(&["simulate", "-s", "1f1b", "--zero", "1"]);
    assert!(e.contains("need costs from a model") && e.contains("hint:"), "{e}");
}

/// The figure shows the whole step: with a model, `render` draws each device's DP reduction
/// and the optimizer step after the passes (the playground draws the same strips), the axis
/// reaching the step's end; without a model there is no step to draw, and step flags are refused.
#[test]
fn render_draws_the_steps_strips_with_a_model() {
    let run = ["-s", "1f1b", "-p", "4", "-m", "8", "--model", "llama-3-8b", "--dp", "4", "--zero", "1"];
    let mut args = vec!["render"];
    args.extend_from_slice(&run);
    args.extend_from_slice(&["-o", "-"]);
    let svg = ok(&args);
    assert!(svg.contains("DP reduction") && svg.contains("optimizer step"), "the legend names the strips");
    let plain = ok(&["render", "-s", "1f1b", "-p", "4", "-m", "8", "-o", "-"]);
    assert!(!plain.contains("DP reduction"), "no model, no step");
    let said = fails(&["render", "-s", "1f1b", "-p", "4", "-m", "8", "--zero", "1", "-o", "-"]);
    assert!(said.contains("need costs from a model") && said.contains("hint:"), "{said}");
    // --global-batch sets the microbatches, as in simulate: 64 / (dp 4 · micro-batch 1) = 16.
    let step = step_of(&["-s", "1f1b", "-p", "4", "--model", "llama-3-8b", "--dp", "4", "--global-batch", "64"]);
    assert_eq!(step["global_batch"].as_u64(), Some(64));
    let svg16 = ok(&[
        "render",
        "-s",
        "1f1b",
        "-p",
        "4",
        "--model",
        "llama-3-8b",
        "--dp",
        "4",
        "--global-batch",
        "64",
        "-o",
        "-",
    ]);
    assert!(svg16.contains("1F1B · 4 devices · 16 microbatches"), "the title gives 16 microbatches");
}

/// Issue 38: with a model, `sweep` composes each run's whole step, ranks the runs of each
/// microbatch count by it, and gives it in JSON and CSV as `simulate` does for the same run.
#[test]
fn sweep_ranks_by_the_whole_step_and_agrees_with_simulate() {
    let model = ["--model", "llama-3-8b", "--dp", "4", "--zero", "1"];
    let mut args = vec!["sweep", "--schedules", "1f1b,zb-h1,interleaved-1f1b,zb-v", "-p", "8", "-m", "16", "--json"];
    args.extend_from_slice(&model);
    let v: Value = serde_json::from_str(&ok(&args)).expect("json");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        let name = r["schedule"].as_str().unwrap();
        let mut sim = vec!["-s", name, "-p", "8", "-m", "16"];
        sim.extend_from_slice(&model);
        let step = step_of(&sim);
        assert_eq!(r["step"]["time"], step["time"], "{name}: the sweep's step is simulate's");
        assert_eq!(r["step"]["mfu"], step["mfu"], "{name}");
    }
    // The table lists the fastest step first (the order of the step column).
    let mut text_args = args.clone();
    text_args.retain(|a| *a != "--json");
    let table = ok(&text_args);
    let order: Vec<&str> = table.lines().skip(1).take(4).map(|l| l[2..].split_whitespace().next().unwrap()).collect();
    let mut by_step: Vec<(f64, &str)> =
        runs.iter().map(|r| (r["step"]["time"].as_f64().unwrap(), r["schedule"].as_str().unwrap())).collect();
    by_step.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(order, by_step.iter().map(|x| x.1).collect::<Vec<_>>(), "{table}");
    assert!(table.lines().next().unwrap().contains("tok/s/GPU"), "{table}");
    // CSV gains the step's columns at the end; without a model they stay empty.
    let mut csv_args = text_args.clone();
    csv_args.push("--csv");
    let csv = ok(&csv_args);
    // (71bd13f added ep and a2a_overlap after them; this test still asked for mfu last.)
    assert!(csv.lines().next().unwrap().ends_with(",trade,step_time,tokens_per_gpu_s,mfu,ep,a2a_overlap"), "{csv}");
    let plain = ok(&["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--csv"]);
    let row: Vec<&str> = plain.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row[16..19], ["", "", ""], "{plain}");
    // A global batch would fix what a sweep varies.
    let said = fails(&[
        "sweep",
        "--schedules",
        "1f1b",
        "-p",
        "8",
        "-m",
        "16",
        "--model",
        "llama-3-8b",
        "--global-batch",
        "64",
    ]);
    assert!(said.contains("--global-batch") && said.contains("hint:"), "{said}");
    let said = fails(&["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--zero", "1"]);
    assert!(said.contains("need costs from a model"), "{said}");
}

/// Issue 38: `plan` with a model ranks by the whole step, and shards static memory by the ZeRO
/// stage over the replicas: ZeRO 1 over 8 replicas holds 2 + 4 + 12/8 bytes per parameter,
/// and fits where ZeRO 0 does not (which says so, naming --zero). The global batch is over
/// every replica.
#[test]
fn plan_ranks_by_the_step_and_shards_static_memory_by_zero() {
    let base =
        ["plan", "-p", "4", "--model", "llama-3.2-1b", "--mem-limit", "8GiB", "--dp", "8", "--global-batch", "256"];
    let mut zero1 = base.to_vec();
    zero1.extend(["--zero", "1", "--json"]);
    let v: Value = serde_json::from_str(&ok(&zero1)).expect("json");
    assert_eq!(v["static_memory"]["bytes_per_parameter"].as_f64(), Some(2.0 + 4.0 + 12.0 / 8.0));
    let plans = v["plans"].as_array().unwrap();
    assert!(!plans.is_empty());
    for (i, p) in plans.iter().enumerate() {
        assert_eq!(p["step"]["global_batch"].as_u64(), Some(256), "plan {i}");
        assert_eq!(p["step"]["zero"].as_u64(), Some(1));
        assert_eq!(p["samples"].as_f64(), Some(32.0), "each replica runs 256 / 8");
        if i > 0 {
            let rate = |p: &Value| p["step"]["tokens_per_gpu_s"].as_f64().unwrap();
            assert!(rate(p) <= rate(&plans[i - 1]));
        }
    }
    let said = fails(&base);
    assert!(said.contains("no plan fits") && said.contains("--zero 1"), "{said}");
    // The global batch must split over the replicas, and --gpus must be tp · pp · dp.
    let mut odd = base.to_vec();
    odd[10] = "100";
    let said = fails(&odd);
    assert!(said.contains("not a multiple of the 8 data-parallel replicas") && said.contains("hint:"), "{said}");
    let mut gpus = base.to_vec();
    gpus.extend(["--gpus", "30"]);
    let said = fails(&gpus);
    assert!(said.contains("gpus 30 is not tp · pp · dp") && said.contains("hint:"), "{said}");
}

/// Found by the third hostile pass: on/off flags name themselves when their value is bad; a
/// sweep whose GPUs are not tp · pp · dp fails as simulate fails; a global batch of 0 is too
/// small, not "not a multiple".
#[test]
fn step_flags_say_what_is_wrong_in_every_command() {
    for flag in ["--sequence-parallel=maybe", "--tp-overlap=maybe", "--flash-attention=maybe"] {
        let said = fails(&["simulate", "-s", "1f1b", "--model", "llama-3-8b", flag]);
        let name = flag.split('=').next().unwrap().trim_start_matches('-');
        assert!(said.contains(&format!("{name} must be")), "{flag}: {said}");
    }
    let said = fails(&["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--model", "llama-3-8b", "--gpus", "30"]);
    assert!(said.contains("gpus 30 is not tp · pp · dp") && said.contains("hint:"), "{said}");
    let said = fails(&["sweep", "--schedules", "1f1b", "-p", "4", "-m", "8", "--model", "llama-3-8b", "--zero", "4"]);
    assert!(said.contains("zero must be 0, 1, 2 or 3"), "{said}");
    let said = fails(&["simulate", "-s", "1f1b", "-p", "4", "--model", "llama-3-8b", "--global-batch", "0"]);
    assert!(said.contains("at least 1, found 0") && said.contains("hint:"), "{said}");
}

/// Found by the fourth hostile pass: `--global-batch` set the microbatches over an explicit
/// `-m` that disagreed, in simulate and render alike. Now the pair is refused naming both,
/// unless they agree.
#[test]
fn global_batch_and_an_explicit_m_must_agree() {
    let llama = ["-s", "1f1b", "--model", "llama-3-8b", "--global-batch", "64"];
    let says = "--global-batch 64 sets 64 microbatches (global batch / (dp · micro-batch) = 64 / (1 · 1)), but --microbatches (-m) 4 was given";
    for command in [&["simulate"][..], &["render", "-o", "-"][..]] {
        for m in [&["-m", "4"][..], &["--microbatches", "4"][..]] {
            let args: Vec<&str> = command.iter().chain(&llama).chain(m).copied().collect();
            let said = fails(&args);
            assert!(said.contains(says), "{said}");
            assert!(
                said.contains("hint: give one of the two: drop -m, or give --global-batch 4 for 4 microbatches"),
                "{said}"
            );
        }
    }
    // When they agree, or -m is left out, the global batch sets the microbatches.
    let agree = step_of(&["-s", "1f1b", "--model", "llama-3-8b", "--global-batch", "64", "-m", "64"]);
    assert_eq!(agree, step_of(&["-s", "1f1b", "--model", "llama-3-8b", "--global-batch", "64"]));
    assert_eq!(agree["global_batch"].as_u64(), Some(64));
}

#[test]
fn negative_step_counts_name_their_rule() {
    // Read wide: -1 gets the flag's own range, not clap's "not in 0..=4294967295".
    for command in [&["simulate", "-s", "1f1b"][..], &["plan", "-p", "4", "--mem-limit", "80GiB"][..]] {
        let e = fails(&common::join(command, &["--model", "llama-3.2-1b", "--zero", "-1"]));
        assert!(e.contains("zero must be 0, 1, 2 or 3, found -1\n  hint: "), "{e}");
        assert!(!e.contains("4294967295"), "{e}");
    }
    for flag in ["--gpus", "--global-batch"] {
        let e = fails(&["simulate", "-s", "1f1b", "--model", "llama-3.2-1b", flag, "-1"]);
        assert!(e.contains("must be at least 1, found -1\n  hint: "), "{flag}: {e}");
    }
}

/// Hostile pass 5, items 12 to 14: explain and plan --gpus say the flags that change nothing,
/// with the rule simulate uses; a rank order inside one node is such a flag.
#[test]
fn explain_and_plan_gpus_note_flags_without_effect() {
    let explain = ["explain", "-s", "1f1b", "--model", "llama-3.2-1b"];
    let cases: [(&[&str], &str); 3] = [
        (&["--tp-overlap"], "note: --tp-overlap true has no effect at tp 1"),
        (&["--sequence-parallel", "false"], "note: --sequence-parallel false has no effect at tp 1"),
        (&["--rank-order", "tp-pp-dp"], "note: --rank-order tp-pp-dp has no effect with one data-parallel replica"),
    ];
    for (flags, says) in cases {
        let said = common::ok_stderr(&root(), &common::join(&explain, flags));
        assert!(said.contains(says) && said.contains("\n  hint: "), "{flags:?}: {said}");
    }
    let said = common::ok_stderr(&root(), &common::join(&explain, &["--tp", "2", "--tp-overlap"]));
    assert!(!said.contains("has no effect"), "{said}");
    let plan = ["plan", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--top", "1"];
    let said = common::ok_stderr(
        &root(),
        &common::join(&plan, &["--gpus", "1", "--zero", "1", "--tp-overlap", "--rank-order", "tp-pp-dp"]),
    );
    for says in [
        "note: in the plans shown, --zero 1 has no effect with one data-parallel replica (dp 1)",
        "note: in the plans shown, --tp-overlap true has no effect at tp 1",
        "note: in the plans shown, --rank-order tp-pp-dp has no effect",
    ] {
        assert!(said.contains(says), "{says}: {said}");
    }
    let said = common::ok_stderr(
        &root(),
        &common::join(&plan, &["--gpus", "4", "--rank-order", "tp-pp-dp", "--sequence-parallel", "false"]),
    );
    assert!(said.contains("--rank-order tp-pp-dp has no effect when all 4 GPUs sit in one node"), "{said}");
    assert!(said.contains("--sequence-parallel false has no effect at tp 1"), "{said}");
    let said = common::ok_stderr(&root(), &common::join(&plan, &["--gpus", "4"]));
    assert!(!said.contains("has no effect"), "{said}");
}

/// Found by the fourth hostile pass: flags at a setting where they change nothing were taken
/// without a word. Each is now noted with a hint, as other unused settings are.
#[test]
fn flags_without_effect_at_their_setting_are_noted() {
    let base = ["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", "llama-3-8b"];
    let cases: [(&[&str], &str); 5] = [
        (
            &["--rank-order", "tp-pp-dp"],
            "note: --rank-order tp-pp-dp has no effect with one data-parallel replica (dp 1)",
        ),
        (&["--zero", "1"], "note: --zero 1 has no effect with one data-parallel replica (dp 1)"),
        (&["--gpus", "4"], "note: --gpus 4 are one pipeline's GPUs (tp · pp): one replica, as without it"),
        (&["--sequence-parallel", "false"], "note: --sequence-parallel false has no effect at tp 1"),
        (&["--tp-overlap"], "note: --tp-overlap true has no effect at tp 1"),
    ];
    for (flags, says) in cases {
        let said = common::ok_stderr(&root(), &common::join(&base, flags));
        assert!(said.contains(says) && said.contains("\n  hint: "), "{flags:?}: {said}");
    }
    // Render draws the step, and sweep runs every family with it: both say so too.
    for command in [&["render", "-s", "1f1b", "-o", "-"][..], &["sweep", "--schedules", "1f1b,zb-v"][..]] {
        let args = common::join(command, &["-p", "4", "-m", "8", "--model", "llama-3-8b", "--rank-order", "tp-pp-dp"]);
        let said = common::ok_stderr(&root(), &args);
        assert!(said.contains("note: --rank-order tp-pp-dp has no effect"), "{command:?}: {said}");
    }
    // Where they act, nothing is said.
    // (dp 4: 16 GPUs span two nodes of 8, where the order moves groups; at dp 2 all 8 sit in
    // one node and the order is noted, hostile pass 5 item 14.)
    for flags in [&["--dp", "4", "--zero", "1", "--rank-order", "tp-pp-dp"][..], &["--tp", "2", "--tp-overlap"][..]] {
        let said = common::ok_stderr(&root(), &common::join(&base, flags));
        assert!(!said.contains("has no effect"), "{flags:?}: {said}");
    }
}
