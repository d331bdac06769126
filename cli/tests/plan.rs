//! `bubblescope plan`: every printed plan fits its limit (checked by simulating it again), the
//! winner exports as a PyTorch CSV that imports back to the same numbers, bad input exits 2.

mod common;

use common::{fails, fails_with_hint, join, ok, ok_stderr, read_back};

use bubblescope::{family, Field};
use serde_json::Value;

const MODEL: [&str; 10] = ["--layers", "8", "--hidden", "1024", "--heads", "16", "--seq", "1024", "--vocab", "32000"];

/// `simulate` flags that reproduce plan `p`: its family, devices, microbatches, chunks, limit,
/// trade and pairing, and with `model` (the plan's model flags) its micro-batch and layout.
fn simulate_args(p: &Value, model: Option<&[&str]>) -> Vec<String> {
    let name = p["schedule"].as_str().unwrap();
    let devices = p["devices"].as_u64().map_or("4".to_string(), |d| d.to_string());
    let mut args: Vec<String> = [
        "simulate",
        "--schedule",
        name,
        "--devices",
        &devices,
        "--microbatches",
        &p["microbatches"].to_string(),
        "--json",
    ]
    .map(String::from)
    .to_vec();
    if family(name).unwrap().uses(Field::Chunks) {
        args.extend(["--chunks".into(), p["chunks"].to_string()]);
    }
    if p["a2a_overlap"] == Value::Bool(true) {
        args.push("--a2a-overlap".into());
    }
    if !p["activation_limit"].is_null() {
        args.extend(["--mem-limit".into(), p["activation_limit"].to_string()]);
    }
    args.extend(trade_args(p));
    if let Some(model) = model {
        args.extend(model.iter().map(|m| m.to_string()));
        args.extend(["--micro-batch".into(), p["micro_batch"].to_string()]);
        if let Some(layout) = p["layout"].as_str() {
            args.extend(["--layout".into(), layout.to_string()]);
        }
    }
    args
}

/// `simulate --json` at plan `p`'s settings (see [`simulate_args`]).
fn simulate_plan(dir: &std::path::Path, p: &Value, model: &[&str]) -> Value {
    let args = simulate_args(p, Some(model));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&ok(dir, &args)).unwrap()
}

/// The `--recompute` and `--offload` flags of plan `p`'s trade (none when it trades nothing).
fn trade_args(p: &Value) -> Vec<String> {
    let Some(t) = p["trade"].as_object() else { return Vec::new() };
    let recompute: Vec<&str> = t["recompute"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let mut args = vec!["--recompute".to_string(), recompute.join(",")];
    if t["offload"] != "none" {
        args.extend(["--offload".into(), t["offload"].as_str().unwrap().to_string()]);
    }
    args
}

#[test]
fn every_printed_plan_fits_the_limit_when_simulated_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut args =
        vec!["plan", "--devices", "4", "--mem-limit", "2GiB", "--global-batch", "16", "--top", "40", "--json"];
    args.extend(MODEL);
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let limit = v["mem_limit"].as_f64().unwrap();
    assert_eq!(limit, 2.0 * 1_073_741_824.0);
    let plans = v["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 40);
    assert!(plans.iter().any(|p| p["trade"].is_null()) && plans.iter().any(|p| !p["trade"].is_null()));
    assert!(v["over_limit"].as_u64().unwrap() > 0, "the limit binds");
    let mut layouts = std::collections::BTreeSet::new();
    for (i, p) in plans.iter().enumerate() {
        layouts.insert(p["layout"].to_string());
        let m = p["microbatches"].as_u64().unwrap();
        assert_eq!(16 % m, 0, "M divides the global batch");
        assert_eq!(m * p["micro_batch"].as_u64().unwrap(), 16);
        let args = simulate_args(p, Some(&MODEL));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let single: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
        assert_eq!(single["cost"], p["cost"], "plan {i}: {p}");
        let statics = p["static_memory"].as_array().unwrap();
        for (d, s) in single["per_device"].as_array().unwrap().iter().zip(statics) {
            let total = d["peak_memory"].as_f64().unwrap() + s.as_f64().unwrap();
            assert!(total <= limit, "plan {i} device {}: {total} > {limit}", d["device"]);
        }
        // Throughput: samples per second from the cost in µs.
        let expected = 16.0 / (p["cost"].as_f64().unwrap() * 1e-6);
        assert!((p["throughput"].as_f64().unwrap() - expected).abs() < 1e-6 * expected);
        // Ranked by the whole step: tokens/s per GPU, as simulate composes it for the plan.
        if i > 0 {
            let rate = |p: &Value| p["step"]["tokens_per_gpu_s"].as_f64().unwrap();
            assert!(rate(p) <= rate(&plans[i - 1]), "plan {i} ranks below plan {}", i - 1);
        }
        assert_eq!(
            single["step"]["tokens_per_gpu_s"], p["step"]["tokens_per_gpu_s"],
            "plan {i}: the step is simulate's"
        );
    }
    assert!(layouts.len() > 1, "layouts moved off the ends are searched: {layouts:?}");
    // 18 bytes per parameter of the share: the default with a model.
    assert_eq!(v["static_memory"]["bytes_per_parameter"], 18.0);
}

#[test]
fn the_winner_exports_and_imports_back() {
    let dir = tempfile::tempdir().unwrap();
    // Hand-set costs: the imported file runs with the same ones.
    let costs = ["--f", "1", "--b", "1.5", "--w", "0.5", "--comm", "0.1"];
    let mut args =
        vec!["plan", "--devices", "4", "--mem-limit", "5", "--static-memory", "0.5", "--export", "plan.csv", "--json"];
    args.extend(costs);
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let best = &v["plans"][0];
    assert!(best["memory"].as_f64().unwrap() <= 5.0);
    let mut sim = vec!["simulate", "--from", "plan.csv", "--json"];
    sim.extend(costs);
    let imported: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
    assert_eq!(imported["devices"], 4);
    assert_eq!(imported["microbatches"], best["microbatches"]);
    assert_eq!(imported["cost"], best["cost"], "{best}");
    assert_eq!(imported["peak_memory"], best["peak_memory"]);
    ok(dir.path(), &["convert", "plan.csv", "plan.json"]);
    // `--export -` writes the CSV alone to standard output, the same bytes.
    let mut piped = vec!["plan", "--devices", "4", "--mem-limit", "5", "--static-memory", "0.5", "--export", "-"];
    piped.extend(costs);
    assert_eq!(ok(dir.path(), &piped), std::fs::read_to_string(dir.path().join("plan.csv")).unwrap());
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("plan.json")).unwrap()).unwrap();
    assert!(json.is_object());
    // With a model: the export, read back at the plan's micro-batch and layout, costs the same.
    let mut args =
        vec!["plan", "--devices", "4", "--mem-limit", "2GiB", "--global-batch", "8", "--export", "m.csv", "--json"];
    args.extend(MODEL);
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let best = &v["plans"][0];
    let mut sim: Vec<String> = ["simulate", "--from", "m.csv", "--json"].map(String::from).to_vec();
    sim.extend(MODEL.map(String::from));
    sim.extend(["--micro-batch".into(), best["micro_batch"].to_string()]);
    if let Some(layout) = best["layout"].as_str() {
        sim.extend(["--layout".into(), layout.to_string()]);
    }
    sim.extend(trade_args(best));
    let sim: Vec<&str> = sim.iter().map(String::as_str).collect();
    let imported: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
    assert_eq!(imported["cost"], best["cost"], "{best}");
    // The export says how to read it back; the command it prints gives the plan's cost.
    let said = ok_stderr(dir.path(), &args);
    assert_eq!(read_back(dir.path(), &said)["cost"], best["cost"], "{said}");
}

#[test]
fn the_table_names_throughput_memory_and_attribution() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["plan", "--devices", "4", "--mem-limit", "2GiB", "--global-batch", "16", "--top", "2"];
    args.extend(MODEL);
    let out = ok(dir.path(), &args);
    assert!(out.starts_with("best plans on 4 devices under 2 GiB per device"), "{out}");
    assert!(out.contains("samples/s") && out.contains("tokens/s"), "{out}");
    assert!(out.contains("memory ") && out.contains("+ static up to"), "{out}");
    assert!(out.contains("bubble = communication"), "{out}");
    assert!(out.contains("\n2. "), "{out}");
    assert!(!out.contains("\n3. "), "{out}");
}

#[test]
fn bad_plan_requests_exit_2_with_hints() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["plan", "-p", "4"], "--mem-limit is required"),
        // A model setting's error names its flag, as in `simulate`.
        (
            &["plan", "-p", "4", "--mem-limit", "80GiB", "--model", "llama-3-8b", "--kv-heads", "5"],
            "error: --kv-heads 5 does not divide heads 32",
        ),
        (&["plan", "-p", "4", "--mem-limit", "5", "--export", "plan.txt"], "cannot tell the output format"),
        (&["plan", "-p", "4", "--mem-limit", "5", "--global-batch", "8"], "--global-batch needs costs from a model"),
        (&["plan", "-p", "4", "--mem-limit", "5", "--static-memory", "auto"], "needs a model"),
        (
            &["plan", "-p", "4", "--mem-limit", "0.5", "--recompute", "none"],
            "no plan fits under the limit of 0.5 per device",
        ),
        (
            &["plan", "-p", "4", "--mem-limit", "0.01"],
            "even with the most recompute and offload tried, the least memory a candidate needs is 0.4706",
        ),
    ];
    for (args, says) in cases {
        fails_with_hint(dir.path(), args, says);
    }
    // Llama 3 70B's weights and Adam state alone overflow 80 GiB on 8 devices: the error says
    // so and names --tp, with which the same search finds plans.
    let big = [
        "plan",
        "--model",
        "llama-3-70b",
        "-p",
        "8",
        "--mem-limit",
        "80GiB",
        "--global-batch",
        "8",
        "--micro-batch",
        "1",
    ];
    let err = fails(dir.path(), &big);
    assert!(
        err.contains("hint: weights and optimizer state alone take") && err.contains("--tp (currently 1)"),
        "{err}"
    );
    let with_tp: Vec<&str> = big.iter().copied().chain(["--tp", "8"]).collect();
    assert!(ok(dir.path(), &with_tp).starts_with("best plans on 8 devices under 80 GiB"));
}

#[test]
fn the_search_says_what_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let tiny =
        ["--layers", "2", "--hidden", "64", "--heads", "2", "--seq", "64", "--vocab", "100", "--mem-limit", "1GiB"];
    // 128 samples on 2 devices: counts above 64 are not tried, so micro-batches of 2 or more.
    let args: Vec<&str> = ["plan", "-p", "2", "--global-batch", "128"].into_iter().chain(tiny).collect();
    let out = common::bubblescope(dir.path(), &args);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        said.contains(
            "note: microbatch counts above 64 (32 per device) are not tried, so micro-batches are 2 samples or more"
        ),
        "{said}"
    );
    // With the micro-batch fixed, nothing is left out.
    let fixed = join(&args, &["--micro-batch", "1"]);
    assert!(!String::from_utf8_lossy(&common::bubblescope(dir.path(), &fixed).stderr).contains("note:"));
    // Two layers on three devices: the last holds the LM head alone.
    let args: Vec<&str> = ["plan", "-p", "3", "--micro-batch", "1"].into_iter().chain(tiny).collect();
    let said = String::from_utf8_lossy(&common::bubblescope(dir.path(), &args).stderr).to_string();
    assert!(said.contains("note: 2 layers on 3 devices: with one stage per device, 1 device holds no layer"), "{said}");
    // On four devices one would hold nothing at all: refused.
    let args: Vec<&str> = ["plan", "-p", "4", "--micro-batch", "1"].into_iter().chain(tiny).collect();
    let said = fails(dir.path(), &args);
    assert!(said.starts_with("error: 2 layers cannot fill 4 devices: share 2 would hold no layer"), "{said}");
}

#[test]
fn export_takes_the_best_plan_a_pytorch_csv_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    // A two-directional schedule (Chimera or DualPipe) wins here, but its two pipelines do not
    // fit PyTorch's CSV: the export takes the best plan that does, says so, and reads back at
    // that plan's cost.
    let args = ["plan", "--model", "zb-1.5b", "-p", "2", "--mem-limit", "40GiB", "--global-batch", "16"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&args, &["--json"]))).unwrap();
    let plans = v["plans"].as_array().unwrap();
    let best = plans[0]["schedule"].as_str().unwrap();
    assert!(["dualpipe", "chimera"].contains(&best), "{v}");
    // Two-directional (DualPipe, Chimera) and sequence-split schedules have no PyTorch form.
    let k = plans
        .iter()
        .position(|p| !["dualpipe", "chimera", "seq1f1b"].contains(&p["schedule"].as_str().unwrap()))
        .unwrap();
    let said = ok_stderr(dir.path(), &join(&args, &["--export", "x.csv"]));
    assert!(said.contains(&format!("note: plan 1 ({best}) cannot be written as a PyTorch schedule CSV")), "{said}");
    assert!(said.contains(&format!("--export wrote plan {}", k + 1)), "{said}");
    assert_eq!(read_back(dir.path(), &said)["cost"], plans[k]["cost"], "{said}");
}

#[test]
fn plans_that_cut_the_model_in_proportion_say_so() {
    // 30 layers on 4 devices: interleaved 1F1B's 12 and 16 stages take no whole-layer cut.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "plan",
        "--devices",
        "4",
        "--mem-limit",
        "80GiB",
        "--model",
        "llama-3-8b",
        "--layers",
        "30",
        "--global-batch",
        "32",
        "--top",
        "5",
        "--json",
    ];
    let out = common::bubblescope(dir.path(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    // Every shown interleaved plan without a layout is noted, by its stage count.
    let plans = v["plans"].as_array().unwrap();
    let interleaved = ["interleaved-1f1b", "interleaved-zb"];
    let cut = |p: &&Value| interleaved.contains(&p["schedule"].as_str().unwrap()) && p["layout"].is_null();
    assert!(plans.iter().any(|p| cut(&p)), "{v}");
    for p in plans.iter().filter(cut) {
        let stages = 4 * p["chunks"].as_u64().unwrap();
        // "`a` runs 16 stages on 4 devices", "`a`, `b` run 16 stages", on a note naming it.
        let name = format!("`{}`", p["schedule"].as_str().unwrap());
        let noted =
            e.lines().any(|l| l.starts_with("note: ") && l.contains(&name) && l.contains(&format!(" {stages} stages")));
        assert!(noted, "{name} at {stages} stages: {e}");
    }
    assert_eq!(e.matches("the model is cut into 4 pieces").count(), 1, "{e}");
}

#[test]
fn plan_export_writes_the_best_plan_one_csv_can_hold_beyond_top() {
    // At a slow matmul rate DualPipe, which runs two pipelines, fills the first plans here;
    // `--top` then shows only those, and the export looks past them.
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = ["plan", "--devices", "4", "--mem-limit", "3GiB", "--tflops", "100"]
        .into_iter()
        .chain(common::SMALL_MODEL)
        .collect();
    let all: Value = serde_json::from_str(&ok(dir.path(), &join(&args, &["--top", "50", "--json"]))).unwrap();
    let plans = all["plans"].as_array().unwrap();
    // Two-directional schedules (two pipelines) are what one CSV cannot hold.
    let k = plans.iter().position(|p| p["schedule"] != "dualpipe" && p["schedule"] != "chimera").unwrap();
    assert!(k >= 2, "the scenario needs two-pipeline plans first: {k}");
    let top = k.to_string();
    let said = ok_stderr(dir.path(), &join(&args, &["--top", top.as_str(), "--export", "p.csv"]));
    assert!(
        said.contains(&format!("--export wrote plan {} ({} · M ", k + 1, plans[k]["schedule"].as_str().unwrap())),
        "{said}"
    );
    assert_eq!(read_back(dir.path(), &said)["cost"], plans[k]["cost"], "{said}");
}

#[test]
fn plan_export_read_back_command_names_the_cost_flags_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["plan", "--devices", "4", "--mem-limit", "20", "--f", "1,1,1,2", "--comm", "0.25", "--w", "0.5"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&args, &["--json"]))).unwrap();
    let said = ok_stderr(dir.path(), &join(&args, &["--export", "p.csv"]));
    let command = said.split("with: bubblescope ").nth(1).map(str::trim).unwrap();
    assert!(!command.contains("same cost flags"), "{command}");
    for flag in ["--f 1,1,1,2", "--comm 0.25", "--w 0.5"] {
        assert!(command.contains(flag), "{flag}: {command}");
    }
    let read_back = read_back(dir.path(), &said);
    assert_eq!(read_back["cost"], v["plans"][0]["cost"], "{said}");
    assert_eq!(read_back["peak_memory"], v["plans"][0]["peak_memory"], "{said}");
}

#[test]
fn plan_names_the_global_batch_when_micro_batches_would_be_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> =
        ["plan", "-p", "4", "--mem-limit", "3GiB", "--global-batch", "1000000000"].into_iter().chain(MODEL).collect();
    let e = fails(dir.path(), &args);
    assert!(e.contains("error: --global-batch 1000000000 over at most 128 microbatches leaves micro-batches of 7812500 samples or more, above the 1000000 a model takes\n  hint: "), "{e}");
    assert!(!e.contains("--micro-batch must be"), "{e}");
}

#[test]
fn plan_names_only_the_limit_it_exceeds() {
    let dir = tempfile::tempdir().unwrap();
    let e = fails(
        dir.path(),
        &[
            "plan",
            "--devices",
            "64",
            "--mem-limit",
            "80GiB",
            "--model",
            "llama-3-70b",
            "--global-batch",
            "2048",
            "--tp",
            "8",
        ],
    );
    assert!(e.starts_with("error: the plan search's candidates have "), "{e}");
    assert!(e.contains(" passes together, more than the 32000000 supported\n  hint: "), "{e}");
    assert!(!e.contains("candidates and"), "{e}");
}

/// The user's own `--recompute` / `--offload` is the plan's trade: the report, the JSON and
/// the read-back command carry it, so the file read back gives the plan's cost and peak.
#[test]
fn a_trade_the_user_gives_is_carried_to_the_report_the_json_and_the_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trades: [&[&str]; 4] = [
        &["--recompute", "full"],
        &["--recompute", "full,full,none,none"],
        &["--offload", "auto", "--copy-time", "0.1"],
        &["--recompute", "full", "--offload", "1,0.5,0,0", "--copy-time", "0.1"],
    ];
    for trade in trades {
        let args = join(&["plan", "-p", "4", "--mem-limit", "2"], trade);
        let v: Value = serde_json::from_str(&ok(d, &join(&args, &["--json"]))).unwrap();
        let best = &v["plans"][0];
        let t = &best["trade"];
        assert!(t.is_object(), "{trade:?}: the plan trades, the JSON says so: {best:#}");
        if let Some(i) = trade.iter().position(|a| *a == "--recompute") {
            let asked: Vec<&str> = trade[i + 1].split(',').collect();
            let per_device: Vec<&str> =
                t["recompute"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
            let expected: Vec<&str> = if asked.len() == 1 { vec![asked[0]; 4] } else { asked };
            assert_eq!(per_device, expected, "{trade:?}");
        }
        if let Some(i) = trade.iter().position(|a| *a == "--offload") {
            assert_eq!(t["offload"], trade[i + 1], "{trade:?}");
        }
        let table = ok(d, &args);
        assert!(table.contains("   trades "), "{trade:?}: {table}");
        let said = ok_stderr(d, &join(&args, &["--export", "pe.csv"]));
        // The plan written: the first, or the one the note names when a CSV cannot hold it.
        let written = said
            .split("--export wrote plan ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next()?.parse::<usize>().ok())
            .map_or(0, |n| n - 1);
        let exported = &v["plans"][written];
        for key in ["recompute", "offload"] {
            assert_eq!(exported["trade"][key], t[key], "{trade:?}: every plan runs the trade given");
        }
        let again = read_back(d, &said);
        assert_eq!(again["cost"], exported["cost"], "{trade:?}: {said}");
        assert_eq!(again["peak_memory"], exported["peak_memory"], "{trade:?}: {said}");
    }
}

/// `plan --gpus N` without -p searches every tensor × pipeline × data split and ZeRO stage:
/// each plan runs on tp · pp · dp = N GPUs, its step is the one `simulate` composes for it,
/// and the best of each split is the best that `plan` finds on that split alone.
#[test]
fn gpus_without_devices_searches_every_split_and_each_split_agrees_with_its_own_plan() {
    let dir = tempfile::tempdir().unwrap();
    let search = ["plan", "--gpus", "4", "--mem-limit", "2GiB", "--global-batch", "16", "--gpu", "a100-80gb"];
    let mut args = join(&search, &["--top", "100000", "--json"]);
    args.extend(MODEL);
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    assert!(v["devices"].is_null() && v["gpus"] == 4, "{}", v["gpus"]);
    let key = |m: &Value| {
        (m["tp"].as_u64().unwrap(), m["pp"].as_u64().unwrap(), m["dp"].as_u64().unwrap(), m["zero"].as_u64().unwrap())
    };
    let searched: Vec<_> = v["meshes"]["searched"].as_array().unwrap().iter().map(key).collect();
    let skipped = v["meshes"]["skipped"].as_array().unwrap();
    // 1 · 1 · 4 at ZeRO 0 keeps all 18 bytes of ~150M parameters: over 2 GiB, said and left out.
    assert!(skipped.iter().any(|s| key(s) == (1, 1, 4, 0) && s["why"].as_str().unwrap().contains("alone take")));
    assert!(searched.len() >= 10 && searched.iter().all(|(t, p, d, _)| t * p * d == 4), "{searched:?}");
    let plans = v["plans"].as_array().unwrap();
    for p in plans {
        assert_eq!(p["devices"], p["pp"]);
        assert!(searched.contains(&key(p)), "{p}");
    }
    let rate = |p: &Value| p["step"]["tokens_per_gpu_s"].as_f64().unwrap();
    for w in plans.windows(2) {
        assert!(rate(&w[0]) >= rate(&w[1]), "ranked by the step's tokens/s/GPU");
    }
    // The winner's step, composed again by simulate from its own flags.
    let best = &plans[0];
    let (tp, pp, dp, zero) = key(best);
    let mut sim = simulate_args(best, Some(&MODEL));
    sim[4] = pp.to_string();
    sim.extend(
        ["--tp", &tp.to_string(), "--dp", &dp.to_string(), "--zero", &zero.to_string(), "--gpu", "a100-80gb"]
            .map(String::from),
    );
    let sim: Vec<&str> = sim.iter().map(String::as_str).collect();
    let single: Value = serde_json::from_str(&ok(dir.path(), &sim)).unwrap();
    let s = single["step"]["tokens_per_gpu_s"].as_f64().unwrap();
    assert!((s - rate(best)).abs() <= 1e-9 * s, "simulate {s} vs plan {}", rate(best));
    // Each split alone: `plan -p pp --tp --dp --zero` finds the same best rate as the search.
    for &(tp, pp, dp, zero) in &searched {
        let fixed = [
            "-p",
            &pp.to_string(),
            "--tp",
            &tp.to_string(),
            "--dp",
            &dp.to_string(),
            "--zero",
            &zero.to_string(),
            "--top",
            "1",
            "--json",
        ]
        .map(String::from);
        let mut args: Vec<&str> = search.iter().copied().filter(|a| *a != "--gpus" && *a != "4").collect();
        args.extend(["--gpus", "4"]);
        args.extend(fixed.iter().map(String::as_str));
        args.extend(MODEL);
        let alone: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
        let first = plans.iter().find(|p| key(p) == (tp, pp, dp, zero)).map(rate);
        let alone_best = alone["plans"].as_array().unwrap().first().map(rate);
        if pp > 1 {
            assert_eq!(first, alone_best, "split tp {tp} pp {pp} dp {dp} zero {zero}");
        } else {
            // On one stage the search tries 1F1B and interleaved 1F1B only: never better.
            assert!(first.unwrap_or(0.0) <= alone_best.unwrap_or(0.0) * (1.0 + 1e-12), "pp 1 tp {tp} dp {dp}");
        }
    }
}

#[test]
fn gpus_without_devices_refuses_what_it_cannot_search() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "--gpus", "6", "--mem-limit", "80GiB", "--gpu", "a100-80gb", "--micro-batch", "1"];
    let mut args = join(&base, &["--tp", "4"]);
    args.extend(MODEL);
    fails_with_hint(dir.path(), &args, "tp 4 does not divide the 6 GPUs");
    fails_with_hint(dir.path(), &["plan", "--gpus", "6", "--mem-limit", "80", "--f", "1"], "needs costs from a model");
    let mut args = join(&base, &["--calibrate", "1,2,1"]);
    args.extend(MODEL);
    fails_with_hint(dir.path(), &args, "--calibrate needs -p");
    let mut args = vec!["plan", "--gpus", "8", "--mem-limit", "1MiB", "--gpu", "a100-80gb", "--micro-batch", "1"];
    args.extend(MODEL);
    fails_with_hint(dir.path(), &args, "no split of 8 GPUs can run this model");
    // The largest count is searched in a blink (its divisors up to √N), not hung on.
    let mut args =
        vec!["plan", "--gpus", "4294967295", "--mem-limit", "80GiB", "--gpu", "a100-80gb", "--micro-batch", "1"];
    args.extend(MODEL);
    fails_with_hint(dir.path(), &args, "no split of 4294967295 GPUs can run this model");
    fails_with_hint(dir.path(), &["plan", "--gpus", "-1", "--mem-limit", "80GiB"], "a count must be at least 1");
    fails_with_hint(dir.path(), &["plan", "--mem-limit", "80GiB"], "--devices <P>");
}

/// Llama 3.2 1B on 8 devices: its LM head (a 128k vocabulary) outweighs two layers, so the
/// split balanced by cost beats every plan on the even split, in step rate and idle share.
#[test]
fn a_balanced_split_beats_the_even_split_when_the_head_is_heavy() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "plan",
        "-p",
        "8",
        "--model",
        "llama-3.2-1b",
        "--mem-limit",
        "80GiB",
        "--global-batch",
        "16",
        "--top",
        "100000",
        "--json",
    ];
    let v: Value = serde_json::from_str(&ok(dir.path(), &args)).unwrap();
    let plans = v["plans"].as_array().unwrap();
    let rate = |p: &Value| p["step"]["tokens_per_gpu_s"].as_f64().unwrap();
    let even = plans.iter().find(|p| p["layout"].is_null()).expect("an even-split plan fits");
    let best = &plans[0];
    let layout = best["layout"].as_str().expect("the best plan moves layers");
    let counts: Vec<u32> = layout.split(',').map(|c| c.parse().unwrap()).collect();
    assert_eq!(counts.iter().sum::<u32>(), 16);
    // More than the one or two layers the fixed moves take off the ends.
    let moved = counts.iter().zip([2u32; 8]).map(|(&c, e)| c.abs_diff(e)).sum::<u32>() / 2;
    assert!(moved >= 2, "{layout}");
    assert!(rate(best) > rate(even) * 1.02, "{} against {}", rate(best), rate(even));
    let idle = |p: &Value| p["bubble_rate"].as_f64().unwrap();
    assert!(idle(best) < idle(even), "idle share {} against {}", idle(best), idle(even));
}

#[test]
fn a_model_beside_costs_from_is_refused_as_simulate_refuses_it() {
    // One rule: --costs-from sets the costs, so a model beside it is refused in plan too.
    let dir = tempfile::tempdir().unwrap();
    let run = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/traces/gpipe")
        .display()
        .to_string();
    for command in [&["plan", "-p", "4", "--mem-limit", "80GiB"][..], &["simulate", "-s", "1f1b"][..]] {
        let args = join(command, &["--model", "llama-3.2-1b", "--costs-from", &run]);
        let e = fails_with_hint(dir.path(), &args, "model flags cannot be combined with --costs-from");
        assert!(e.contains("hint: --costs-from sets F, B, W and comm from the run"), "{e}");
    }
}

#[test]
fn a_layout_without_e_and_l_is_blamed_on_the_layout_not_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let args =
        ["plan", "--gpus", "4", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--layout", "t*4|t*4|t*4|t*4"];
    let e =
        fails_with_hint(dir.path(), &args, "the layout has 0 embeddings (E) and 0 LM heads (L), expected one of each");
    assert!(e.contains("hint: put `E` in the first stage and `L` in the last"), "{e}");
    assert!(!e.contains("under the limit") && !e.contains("raise --mem-limit"), "{e}");
    // Splits all left out for their stage count: the limit is not why either.
    let args = [
        "plan",
        "--gpus",
        "3",
        "--tp",
        "1",
        "--dp",
        "1",
        "--model",
        "llama-3.2-1b",
        "--mem-limit",
        "80GiB",
        "--layout",
        "Et*4|t*4|t*4|t*4L",
    ];
    let e = fails_with_hint(dir.path(), &args, "no split of 3 GPUs can run this model (");
    assert!(!e.contains("raise --mem-limit"), "{e}");
}

#[test]
fn static_memory_is_capped_as_the_memory_limit_is() {
    let dir = tempfile::tempdir().unwrap();
    for (value, shown) in [("1e300", "1e300"), ("-1", "-1"), ("2e15", "2e15")] {
        let args = ["plan", "-p", "4", "--mem-limit", "100", "--static-memory", value];
        let e = fails_with_hint(
            dir.path(),
            &args,
            "static-memory must be a finite size from 0 to 1PiB (1125899906842624 bytes)",
        );
        assert!(e.contains(&format!("found {shown}\n")), "{value}: {e}");
    }
}

/// Hostile pass 5, items 3 to 6: the 1PiB cap reads back (PiB is a unit), values out of range
/// are echoed as typed and called what they are (not finite, not "negative"), and static
/// memory that alone fills the cap says no allowed limit fits.
#[test]
fn the_memory_cap_is_stated_as_typed_and_a_full_cap_fits_no_limit() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "-p", "4", "--model", "llama-3.2-1b", "--top", "1"];
    for value in ["nan", "inf", "1e309", "9007199254740993", "1025TiB"] {
        let args = join(&base, &["--mem-limit", "80GiB", "--static-memory", value]);
        let e = fails_with_hint(
            dir.path(),
            &args,
            &format!("static-memory must be a finite size from 0 to 1PiB (1125899906842624 bytes), found `{value}`\n"),
        );
        assert!(!e.contains("non-negative"), "{e}");
    }
    let e = fails_with_hint(dir.path(), &join(&base, &["--mem-limit", "9007199254740993"]), "found `9007199254740993`");
    assert!(e.contains("mem-limit must be a finite size from 0 to 1PiB"), "{e}");
    for (limit, fixed) in [("1PiB", "1024TiB"), ("80GiB", "1125899906842624"), ("1pib", "1PiB")] {
        let args = join(&base, &["--mem-limit", limit, "--static-memory", fixed]);
        let e = fails_with_hint(dir.path(), &args, "no allowed limit fits: static memory of 1024TiB alone fills");
        assert!(!e.contains("a limit from there on fits"), "{e}");
    }
    // A byte below the cap: the candidates need more than any allowed limit.
    let args = join(&base, &["--mem-limit", "1PiB", "--static-memory", "1125899906842623"]);
    let e = fails_with_hint(dir.path(), &args, "no plan fits");
    assert!(e.contains("no allowed limit fits") && !e.contains("a limit from there on fits"), "{e}");
    // Just below the cap: the search runs (1PiB is a limit the parser takes).
    ok(dir.path(), &join(&base, &["--mem-limit", "1PiB", "--static-memory", "1000TiB"]));
}

#[test]
fn plan_on_one_pipeline_notes_flags_without_effect() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["plan", "-p", "4", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--zero", "1", "--top", "1"];
    let said = ok_stderr(dir.path(), &args);
    assert!(said.contains("note: --zero 1 has no effect with one data-parallel replica (dp 1)"), "{said}");
    let said = ok_stderr(dir.path(), &join(&args, &["--dp", "2"]));
    assert!(!said.contains("has no effect"), "{said}");
}

/// `--p2p blocking` plans under blocking sends (issue 43, pass 6, item 1): orders that
/// deadlock are counted apart and listed nowhere, and 1F1B costs what `simulate` gives it
/// blocking, not its async cost.
#[test]
fn plans_are_searched_under_blocking_sends() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "-p", "4", "--mem-limit", "100", "--comm", "0.3", "--top", "200", "--json"];
    let blocking: Value = serde_json::from_str(&ok(dir.path(), &join(&base, &["--p2p", "blocking"]))).unwrap();
    let asynchronous: Value = serde_json::from_str(&ok(dir.path(), &base)).unwrap();
    assert!(asynchronous.get("deadlocked").is_none(), "async output is unchanged");
    assert!(blocking["deadlocked"].as_u64().unwrap() > 0, "{}", blocking["deadlocked"]);
    let plans = |v: &Value| v["plans"].as_array().unwrap().clone();
    assert!(plans(&asynchronous).iter().any(|p| p["schedule"] == "zb-v"));
    assert!(plans(&blocking).iter().all(|p| p["schedule"] != "zb-v"), "zb-v deadlocks under blocking sends");
    let cost = |v: &Value| {
        let p = plans(v).into_iter().find(|p| p["schedule"] == "1f1b" && p["microbatches"] == 32).unwrap();
        p["cost"].as_f64().unwrap()
    };
    let simulated: Value = serde_json::from_str(&ok(
        dir.path(),
        &["simulate", "-s", "1f1b", "-p", "4", "-m", "32", "--comm", "0.3", "--p2p", "blocking", "--json"],
    ))
    .unwrap();
    assert_eq!(cost(&blocking), simulated["cost"].as_f64().unwrap());
    assert!(cost(&blocking) > cost(&asynchronous));
    let table = ok(dir.path(), &["plan", "-p", "4", "--mem-limit", "3", "--p2p", "blocking"]);
    assert!(table.contains("deadlocked under --p2p blocking"), "{table}");
}

/// The no-plan-fits hint shows the least need rounded up, so the limit it names fits, and
/// says "raise --mem-limit" only when an allowed limit would (issue 43, pass 6, item 7).
#[test]
fn the_least_need_is_a_limit_that_fits_and_no_raise_past_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "-p", "4", "--model", "llama-3.2-1b", "--top", "1"];
    let args = join(&base, &["--mem-limit", "1023.99TiB", "--static-memory", "1023.99TiB"]);
    let e = fails_with_hint(dir.path(), &args, "no plan fits under the limit of 1023.99 TiB");
    let need = e.split("the least memory a candidate needs is ").nth(1).and_then(|r| r.split(" per device").next());
    let need = need.unwrap_or_else(|| panic!("{e}")).replace(' ', "");
    assert_ne!(need, "1023.99TiB", "{e}");
    ok(dir.path(), &join(&base, &["--mem-limit", &need, "--static-memory", "1023.99TiB"]));
    assert!(e.contains("raise --mem-limit"), "{e}");
    let args = join(&base, &["--mem-limit", "1PiB", "--static-memory", "1125899906842623"]);
    let e = fails_with_hint(dir.path(), &args, "no allowed limit fits");
    assert!(!e.contains("raise --mem-limit") && !e.contains("is 1024 TiB per device"), "{e}");
}

/// The plan says what balancing removed: the best plan on the even split without vocabulary
/// parallelism and the best vocabulary-parallel plan, each with its rank, idle share and
/// imbalance; the vocabulary plan has no imbalance left (Llama 3.2 1B, whose head outweighs
/// two layers).
#[test]
fn the_plan_reports_the_imbalance_removed() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["plan", "-p", "8", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--global-batch", "16"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&args, &["--json"]))).unwrap();
    let b = &v["balance"];
    let rate = |x: &Value| x["bubble_rate"].as_f64().unwrap();
    assert!(b["even"]["layout"].is_null() && b["even"]["rank"].as_u64().unwrap() > 1, "{b}");
    assert!(rate(&b["best"]) < rate(&b["even"]), "{b}");
    assert!(b["even"]["imbalance"].as_f64().unwrap() > b["best"]["imbalance"].as_f64().unwrap(), "{b}");
    let vocabulary = b["vocabulary"]["schedule"].as_str().unwrap();
    assert!(vocabulary.contains("vocab"), "{b}");
    assert_eq!(b["vocabulary"]["imbalance"].as_f64(), Some(0.0));
    let text = ok(dir.path(), &args);
    assert!(text.contains("\nbalanced: on the even split the best plan is "), "{text}");
    assert!(
        text.contains("\nvocabulary parallelism: the best plan that splits the vocabulary over every device is "),
        "{text}"
    );
}

/// Megatron's layout with the embedding and the loss as stages of their own is tried for every
/// family that loops chunks, at each chunk count, and each such plan is what `simulate` gives
/// at that family, chunk count, microbatches, micro-batch and layout.
#[test]
fn the_plan_tries_the_embedding_and_the_loss_as_stages_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["plan", "-p", "8", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--global-batch", "16"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&args, &["--top", "100000", "--json"]))).unwrap();
    let own: Vec<&Value> = v["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["layout"].as_str().is_some_and(|l| l.starts_with("E|") && l.ends_with("|L")))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for p in &own {
        let name = p["schedule"].as_str().unwrap();
        assert!(family(name).unwrap().uses(Field::Chunks), "{name} does not loop chunks: {p}");
        let chunks = p["chunks"].as_u64().unwrap();
        let layout = p["layout"].as_str().unwrap();
        assert_eq!(layout.split('|').count() as u64, 8 * chunks, "{layout}");
        seen.insert((name.to_string(), chunks));
    }
    // Its 16 layers leave a share of 32 stages empty: chunks 4 is not tried.
    for name in ["interleaved-1f1b", "interleaved-zb"] {
        for chunks in [2, 3] {
            assert!(seen.contains(&(name.to_string(), chunks)), "{name} chunks {chunks} on E and L alone: {seen:?}");
        }
    }
    // The best such plan, its trade too, run again by simulate.
    let p = own[0];
    let sim = simulate_plan(dir.path(), p, &["--model", "llama-3.2-1b"]);
    assert_eq!(sim["cost"].as_f64(), p["cost"].as_f64(), "{p}\n{sim}");
    assert_eq!(sim["bubble_rate"].as_f64(), p["bubble_rate"].as_f64(), "{p}\n{sim}");
}

/// With an MoE model the families that pair passes run plain and paired (Megatron's combined
/// 1F1B), and a paired plan is what `simulate --a2a-overlap` gives at its settings; a dense
/// model's plans never pair.
#[test]
fn an_moe_plan_tries_combined_1f1b() {
    let dir = tempfile::tempdir().unwrap();
    let moe = ["plan", "-p", "4", "--model", "olmoe-1b-7b", "--dp", "2", "--ep", "2", "--mem-limit", "80GiB"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&moe, &["--top", "100000", "--json"]))).unwrap();
    let plans = v["plans"].as_array().unwrap();
    let paired: Vec<&Value> = plans.iter().filter(|p| p["a2a_overlap"] == Value::Bool(true)).collect();
    let names: std::collections::BTreeSet<&str> = paired.iter().map(|p| p["schedule"].as_str().unwrap()).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["1f1b", "interleaved-1f1b"], "only the families that pair");
    assert!(plans.iter().any(|p| p["schedule"] == "1f1b" && p["a2a_overlap"] == Value::Bool(false)), "and plain");
    let p = paired[0];
    let sim = simulate_plan(dir.path(), p, &moe[3..9]);
    assert_eq!(sim["cost"].as_f64(), p["cost"].as_f64(), "{p}\n{sim}");
    let text = ok(dir.path(), &join(&moe, &["--top", "100000"]));
    assert!(text.contains(" · a2a-overlap\n"), "the table says which plans pair");
    let dense = ["plan", "-p", "4", "--model", "llama-3.2-1b", "--mem-limit", "80GiB", "--top", "100000", "--json"];
    let d: Value = serde_json::from_str(&ok(dir.path(), &dense)).unwrap();
    assert!(d["plans"].as_array().unwrap().iter().all(|p| p["a2a_overlap"] == Value::Bool(false)));
}

/// `--ep 2,4` ranks the plans of each EP degree together; each plan names its degree and is
/// what `simulate` gives at that `--ep`, and an export's read-back command carries it.
#[test]
fn a_plan_across_ep_degrees_runs_each_at_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "-p", "4", "--model", "olmoe-1b-7b", "--dp", "4", "--ep", "2,4", "--mem-limit", "80GiB"];
    let v: Value = serde_json::from_str(&ok(dir.path(), &join(&base, &["--top", "100000", "--json"]))).unwrap();
    let plans = v["plans"].as_array().unwrap();
    for ep in [2, 4] {
        let p = plans.iter().find(|p| p["ep"].as_u64() == Some(ep)).unwrap_or_else(|| panic!("a plan at ep {ep}"));
        let sim = simulate_plan(dir.path(), p, &["--model", "olmoe-1b-7b", "--dp", "4", "--ep", &ep.to_string()]);
        assert_eq!(sim["cost"].as_f64(), p["cost"].as_f64(), "ep {ep}: {p}\n{sim}");
    }
    let said = ok_stderr(dir.path(), &join(&base, &["--export", "best.csv"]));
    // Plan 1, or the plan the note names when plan 1 cannot be written as a CSV.
    let k = said.split("--export wrote plan ").nth(1).and_then(|r| r.split_whitespace().next()?.parse::<usize>().ok());
    let written = &plans[k.unwrap_or(1) - 1];
    let ep = written["ep"].as_u64().unwrap();
    let at = |end: &str| said.contains(&format!("--ep {ep}{end}"));
    assert!(at(" ") || at("\n"), "the read-back command runs at the written plan's degree: {said}");
    fails_with_hint(
        dir.path(),
        &["plan", "--gpus", "16", "--model", "olmoe-1b-7b", "--ep", "2,4", "--mem-limit", "80GiB"],
        "--ep lists several",
    );
}

/// Eighth hostile pass: `plan --recompute full --export p.json` printed `simulate --from p.json
/// --recompute full,full`, refused since the JSON file holds the R passes; and a file whose name
/// says another format (`--export p.csv --to-format json`) was read back by its extension, as
/// 1,000 unreadable cells. The printed command now runs, at the plan's cost, for every pairing.
#[test]
fn the_read_back_command_runs_whatever_the_format_and_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (file, format) in [("p.json", "json"), ("p.csv", "json"), ("q.json", "pytorch-csv"), ("q.csv", "pytorch-csv")] {
        let args =
            ["plan", "-p", "2", "--mem-limit", "1", "--recompute", "full", "--export", file, "--to-format", format];
        let v: Value = serde_json::from_str(&ok(d, &join(&args, &["--json"]))).unwrap();
        let said = ok_stderr(d, &args);
        assert_eq!(read_back(d, &said)["cost"], v["plans"][0]["cost"], "{file} as {format}: {said}");
    }
}
