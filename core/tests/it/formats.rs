//! Import and export: PyTorch CSV (PyTorch's own files and our own), Bubblescope JSON, Perfetto.

use bubblescope::formats::{
    self, export, export_json, export_perfetto, export_pytorch_csv, import, CsvForm, Dialect, ExportOptions, Format,
    ImportOptions, Imported, TorchVersion, MAX_FILE_BYTES,
};
use bubblescope::params::MAX_DEVICES;
use bubblescope::sim::dependency;
use bubblescope::validate::MAX_DIAGNOSTICS;
use bubblescope::{
    analyze, simulate, validate, Costs, Op, Pass, Placement, PlacementKind, Schedule, ScheduleParams, Severity,
    StageCosts, FAMILIES,
};
use proptest::prelude::*;

// -------------------------------------------------------------------------------------------
// Helpers

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/pytorch/");

/// PyTorch's own test file `name`, read from the shared folder (never copied into the repository).
fn fixture(name: &str) -> Option<String> {
    match std::fs::read_to_string(format!("{FIXTURES}{name}")) {
        Ok(text) => Some(text),
        Err(_) => {
            eprintln!("note: {FIXTURES}{name} is not there; skipping the test that reads it");
            None
        }
    }
}

fn read(text: &str, format: Format) -> Imported {
    import(text, format, &ImportOptions::default())
}

fn csv(text: &str) -> Imported {
    read(text, Format::PytorchCsv)
}

/// The schedule of an import that must be clean: no errors and no warnings.
fn clean(imported: Imported) -> Schedule {
    assert!(imported.diagnostics.is_empty(), "unexpected diagnostics:\n{}", imported.report());
    imported.schedule.expect("a clean import has a schedule")
}

fn messages(imported: &Imported) -> Vec<String> {
    imported.diagnostics.iter().map(ToString::to_string).collect()
}

fn csv_export(schedule: &Schedule, form: CsvForm, dialect: Dialect) -> String {
    export_pytorch_csv(schedule, form, dialect).unwrap_or_else(|e| panic!("export failed: {e}"))
}

/// A valid, deadlock-free schedule on any placement: microbatch by microbatch, every forward
/// down its pipeline, then every backward back up (fused or split).
fn sequential(placement: Placement, microbatches: u32, slices: u32, split: bool) -> Schedule {
    let per = placement.stages_per_pipeline();
    let pipelines = placement.pipelines();
    let mut s = Schedule::new(placement, microbatches);
    s.slices = slices;
    for pipeline in 0..pipelines {
        for microbatch in s.placement.pipeline_microbatches(pipeline, microbatches) {
            for slice in 0..slices {
                for local in 0..per {
                    s.push_placed(Pass::f(pipeline * per + local, microbatch).with_slice(slice));
                }
                for local in (0..per).rev() {
                    let stage = pipeline * per + local;
                    if split {
                        s.push_placed(Pass::b(stage, microbatch).with_slice(slice));
                        s.push_placed(Pass::w(stage, microbatch).with_slice(slice));
                    } else {
                        s.push_placed(Pass::bw(stage, microbatch).with_slice(slice));
                    }
                }
            }
        }
    }
    s
}

#[path = "../support/shuffled.rs"]
mod shuffled;
use shuffled::shuffled;

/// Every schedule each implemented family generates for a few sizes.
fn family_schedules() -> Vec<(String, Schedule)> {
    let sizes = [(1, 1), (2, 4), (3, 5), (4, 8), (4, 12)];
    let mut out = Vec::new();
    for family in FAMILIES {
        let mut generated = 0;
        let mut not_implemented = false;
        for (devices, microbatches) in sizes {
            // A vocabulary for the vocabulary-parallel families; the others do not read it.
            let costs = Costs { vocab: Some(bubblescope::VocabCosts::output(0.5, 1.0, 0.0)), ..Costs::default() };
            match bubblescope::generate(family.name, &ScheduleParams::new(devices, microbatches).with_costs(costs)) {
                Ok(s) => {
                    generated += 1;
                    out.push((format!("{} P={devices} M={microbatches}", family.name), s));
                }
                Err(e) if e.message.contains("not implemented yet") => not_implemented = true,
                Err(_) => {} // These sizes do not fit the family; another may.
            }
        }
        if not_implemented {
            eprintln!("note: {} is not implemented yet; its round trips are skipped", family.name);
        } else {
            assert!(generated > 0, "{} generated no schedule for any of {sizes:?}", family.name);
        }
    }
    out
}

/// Schedules the families do not cover yet: every placement kind, split backward, slices.
fn synthetic_schedules() -> Vec<(String, Schedule)> {
    vec![
        ("linear split".into(), sequential(Placement::linear(3), 4, 1, true)),
        ("interleaved".into(), sequential(Placement::interleaved(2, 3), 3, 1, false)),
        ("v".into(), sequential(Placement::v_shape(3), 2, 1, true)),
        ("wave".into(), sequential(Placement::wave(2, 2), 3, 1, false)),
        ("custom".into(), sequential(Placement::custom(3, vec![2, 0, 1, 1]), 2, 1, true)),
        ("one device".into(), sequential(Placement::linear(1), 3, 1, true)),
        ("shuffled linear".into(), shuffled(Placement::linear(4), 6, 1)),
        ("shuffled interleaved".into(), shuffled(Placement::interleaved(3, 2), 5, 2)),
        ("shuffled v".into(), shuffled(Placement::v_shape(3), 6, 3)),
        ("shuffled wave".into(), shuffled(Placement::wave(2, 3), 4, 4)),
    ]
}

/// The PyTorch files, imported (those that are there).
fn fixture_schedules() -> Vec<(String, Schedule)> {
    ["dualpipev_4rank_10mb.csv", "zb1p_2rank_2stagep_compute.csv", "zb1p_2rank_2stagep_comms.csv"]
        .into_iter()
        .filter_map(|name| fixture(name).map(|text| (name.to_string(), clean(csv(&text)))))
        .collect()
}

// -------------------------------------------------------------------------------------------
// PyTorch's own files

#[test]
fn pytorch_dualpipev_file_imports_validates_and_simulates() {
    let Some(text) = fixture("dualpipev_4rank_10mb.csv") else { return };
    let s = clean(csv(&text));
    assert_eq!(
        s.placement,
        Placement::v_shape(4),
        "stages 0..4 down the ranks and 4..8 back up: PyTorch's style=\"v\""
    );
    assert_eq!((s.devices(), s.microbatches, s.slices), (4, 10, 1));
    // 8 stages × 10 microbatches × (F + one backward, split or full), 4 ranks × 3.
    assert_eq!(s.pass_count(), 182);
    // Its OVERLAP_F_B cells, counted in the file row by row.
    assert_eq!(s.orders.iter().flatten().filter(|op| op.is_pair()).count(), 9 + 10 + 11 + 11);
    assert_eq!(validate(&s), vec![]);
    let a = analyze(s.clone(), &Costs::default()).expect("PyTorch's DualPipeV schedule runs");
    assert!(a.stats.cost > 0.0);
    // The current dialect: `7I0` is stage 7's input gradient, `7B6` its full backward, and the
    // first pair overlaps 0F7 with 7B3.
    assert_eq!(s.orders[0][8], Op::One(Pass::b(7, 0)));
    assert_eq!(s.orders[0][17], Op::Pair(Pass::f(0, 7), Pass::bw(7, 3)));
    // Written back in the current dialect, it is PyTorch's file byte for byte.
    assert_eq!(csv_export(&s, CsvForm::ComputeOnly, Dialect::Current), text);
}

#[test]
fn pytorch_zb1p_files_import_validate_simulate_and_agree() {
    let (Some(compute_text), Some(comms_text)) =
        (fixture("zb1p_2rank_2stagep_compute.csv"), fixture("zb1p_2rank_2stagep_comms.csv"))
    else {
        return;
    };
    let compute = clean(csv(&compute_text));
    let comms = clean(csv(&comms_text));
    for s in [&compute, &comms] {
        assert_eq!(s.placement, Placement::interleaved(2, 2), "PyTorch's loop style: stage s on rank s mod 2");
        assert_eq!((s.microbatches, s.slices), (8, 1));
        assert_eq!(validate(s), vec![]);
        analyze(s.clone(), &Costs::default()).expect("PyTorch's ZB1P schedule runs");
    }
    // Legacy dialect: `B` is the input gradient in the compute file, `BW` the full backward in
    // the comms file.
    assert_eq!(compute.orders[0][4], Op::One(Pass::b(2, 0)));
    assert_eq!(comms.orders[0][4], Op::One(Pass::bw(2, 0)));

    // Merging each input gradient directly followed by its weight gradient (PyTorch's
    // `_merge_bw`, which its runtime does not call: it runs the pair as two actions) makes the
    // two files hold the same schedule.
    let merged = import(&compute_text, Format::PytorchCsv, &ImportOptions { merge_bw: true, ..Default::default() });
    let merged = clean(merged);
    assert_eq!(merged, comms);
    assert_ne!(compute, comms, "read as written, the compute file keeps its split backwards");
    // Same cost and peak either way under Bubblescope's cost model.
    let costs = Costs::fbw(1.0, 2.0, 1.0);
    let (a, b) = (analyze(compute, &costs).unwrap(), analyze(comms.clone(), &costs).unwrap());
    assert_eq!((a.stats.cost, a.stats.peak_memory), (b.stats.cost, b.stats.peak_memory));

    // Lowering the merged schedule with SEND/RECV reproduces PyTorch's comms file byte for byte.
    assert_eq!(csv_export(&merged, CsvForm::ComputeComms, Dialect::Legacy), comms_text);
}

#[test]
fn pytorch_compute_file_exports_back_without_its_idle_cells() {
    let Some(text) = fixture("zb1p_2rank_2stagep_compute.csv") else { return };
    let s = clean(csv(&text));
    let without_idle: String = text
        .lines()
        .map(|line| line.split(',').filter(|c| !c.is_empty()).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    assert_eq!(csv_export(&s, CsvForm::ComputeOnly, Dialect::Legacy), without_idle);
}

// -------------------------------------------------------------------------------------------
// Round trips

/// Every lossless format `schedule` can be written in, and what reading it back gives.
fn assert_round_trips(what: &str, schedule: &Schedule, costs: &Costs) {
    let json = export_json(schedule, Some(costs));
    let back = read(&json, Format::Json);
    assert!(back.diagnostics.is_empty(), "{what} via json:\n{}", back.report());
    assert_eq!(back.schedule.as_ref(), Some(schedule), "{what} via json");
    assert_eq!(back.costs.map(|c| format!("{c:?}")), Some(format!("{costs:?}")), "{what}: costs via json");

    // PyTorch's grammar has no second pipeline, no slices and no vocabulary shard's pass.
    let csv_possible = schedule.placement.pipelines() == 1 && schedule.slices == 1 && !schedule.has_vocab_passes();
    for form in [CsvForm::ComputeOnly, CsvForm::ComputeComms] {
        for dialect in [Dialect::Current, Dialect::Legacy] {
            let result = export_pytorch_csv(schedule, form, dialect);
            if !csv_possible {
                assert!(result.is_err(), "{what}: PyTorch CSV cannot hold it, but export succeeded");
                continue;
            }
            let text = result.unwrap_or_else(|e| panic!("{what} {form:?} {dialect:?}: {e}"));
            let format = if form == CsvForm::ComputeComms { Format::PytorchCsvComms } else { Format::PytorchCsv };
            let back = read(&text, format);
            assert!(back.diagnostics.is_empty(), "{what} via {form:?} {dialect:?}:\n{}\n{text}", back.report());
            let back = back.schedule.expect("a schedule");
            if schedule.devices() == 1 && schedule.placement.kind() != back.placement.kind() {
                // With one device every layout has the same table; only the kind can differ.
                assert_eq!(back.placement.stage_devices(), schedule.placement.stage_devices());
                assert_eq!(back.orders, schedule.orders, "{what} via {form:?} {dialect:?}");
            } else {
                assert_eq!(&back, schedule, "{what} via {form:?} {dialect:?}");
            }
        }
    }
}

#[test]
fn every_family_round_trips_through_every_lossless_format() {
    let costs = Costs { comm: 0.25, overlap: Some(2.5), mem_w: Some(0.375), ..Costs::fbw(1.5, 2.0, 0.75) };
    let schedules = family_schedules();
    assert!(!schedules.is_empty());
    for (what, schedule) in &schedules {
        assert_round_trips(what, schedule, &costs);
    }
}

#[test]
fn every_placement_kind_round_trips() {
    for (what, schedule) in synthetic_schedules().iter().chain(&fixture_schedules()) {
        assert_round_trips(what, schedule, &Costs::default());
    }
    // JSON keeps what PyTorch CSV cannot: two pipelines, sequence slices, no costs.
    let two = sequential(Placement::two_directional(2), 4, 1, false);
    assert_round_trips("two-directional", &two, &Costs::default());
    let sliced = sequential(Placement::v_shape(2), 2, 3, true);
    assert_round_trips("slices", &sliced, &Costs::default());
    let back = read(&export_json(&sliced, None), Format::Json);
    assert_eq!((back.schedule.as_ref(), back.costs), (Some(&sliced), None));
}

#[test]
fn exported_comms_files_are_what_pytorch_would_run() {
    // Every cross-device dependency has a SEND right after its producer and a RECV before its
    // consumer: checked by the importer, which reports any pairing or order problem.
    for (what, s) in family_schedules().iter().chain(&synthetic_schedules()) {
        if s.placement.pipelines() > 1 || s.slices > 1 || s.has_vocab_passes() {
            continue; // Not expressible in PyTorch CSV (tested elsewhere).
        }
        let text = csv_export(s, CsvForm::ComputeComms, Dialect::Current);
        let cells: Vec<&str> = text.lines().flat_map(|l| l.split(',')).collect();
        let typed = |t: &str| {
            cells.iter().filter(|c| c.trim_start_matches(|ch: char| ch.is_ascii_digit()).starts_with(t)).count()
        };
        let (sends, recvs) = (typed("SEND_"), typed("RECV_"));
        // Torch 2.15 waits for every send once, and reduces every stage's gradients once.
        assert_eq!(typed("WAIT_SEND_"), sends, "{what}:\n{text}");
        let stages = s.placement.stages() as usize;
        assert_eq!((typed("REDUCE_GRAD"), typed("WAIT_REDUCE_GRAD")), (stages, stages), "{what}:\n{text}");
        let crossing = s
            .orders
            .iter()
            .enumerate()
            .flat_map(|(d, order)| order.iter().flat_map(Op::passes).map(move |p| (d as u32, p)))
            .filter(|&(d, p)| {
                dependency(&s.placement, p).is_some_and(|dep| s.placement.device_of(dep.stage) != Some(d))
            })
            .count();
        assert_eq!((sends, recvs), (crossing, crossing), "{what}:\n{text}");
        clean(read(&text, Format::PytorchCsvComms));
    }
}

#[test]
fn json_costs_round_trip_bit_for_bit() {
    let hard = Costs {
        f: 0.1 + 0.2,
        b: 994.1414234139935,
        w: 1e-7,
        comm: 105.00455722256841,
        links: None,
        overlap: Some(1e12),
        mem_f: 2.0 / 3.0,
        mem_w: Some(0.5),
        profile: None,
        trade: None,
        vocab: Some(bubblescope::VocabCosts {
            s: 0.1 + 0.7,
            t: 1e-9,
            input_f: 3.0e-3,
            input_b: 0.0,
            reduce: 2.0 / 3.0,
        }),
        p2p: bubblescope::P2p::Async,
        split_vocab: None,
    };
    let s = sequential(Placement::linear(2), 2, 1, false);
    let back = read(&export_json(&s, Some(&hard)), Format::Json).costs.expect("costs");
    let bits = |c: Costs| [c.f, c.b, c.w, c.comm, c.overlap.unwrap(), c.mem_f, c.mem_w.unwrap()].map(f64::to_bits);
    assert_eq!(bits(back), bits(hard));
}

#[test]
fn json_keeps_per_piece_costs_and_the_times_they_give() {
    // A heavy last stage from lists, and a transformer's per-layer pieces (more pieces than
    // devices): the file must give back the same costs and so the same simulation.
    let lists = bubblescope::CostLists {
        f: Some(vec![1.0, 1.0, 1.0, 3.0]),
        mem_f: Some(vec![1.0, 1.0, 2.0, 4.0]),
        ..Default::default()
    };
    let from_lists = lists.apply(&Costs::default(), 4).unwrap();
    let model = bubblescope::model::ModelSpec::preset("llama-3-8b").resolve().unwrap();
    let from_model = model.derive(4).unwrap().costs();
    for (what, costs) in [("lists", from_lists), ("model", from_model)] {
        assert!(costs.profile.is_some(), "{what}: the case needs a profile");
        let a = bubblescope::run("zb-h1", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let back = read(&export_json(&a.schedule, Some(&costs)), Format::Json);
        assert!(back.diagnostics.is_empty(), "{what}:\n{}", back.report());
        // The file holds the stages as cut, the ends on them: a model's split view for the
        // vocabulary-parallel families (`split_vocab`) is the model's, not the file's.
        assert_eq!(back.costs.as_ref(), Some(&Costs { split_vocab: None, ..costs.clone() }), "{what}");
        let again = analyze(back.schedule.unwrap(), &back.costs.unwrap()).unwrap().stats;
        assert_eq!((again.cost, again.peak_memory), (a.stats.cost, a.stats.peak_memory), "{what}");
    }
    // A bad profile is refused with the costs, not the schedule.
    let s = sequential(Placement::linear(2), 2, 1, false);
    let mut file: serde_json::Value = serde_json::from_str(&export_json(&s, Some(&Costs::default()))).unwrap();
    file["costs"]["profile"] =
        serde_json::json!({"f": [1, 2], "b": [1], "w": [1, 1], "mem_f": [1, 1], "mem_w": [0.5, 0.5]});
    let text = file.to_string();
    let back = read(&text, Format::Json);
    assert!(back.costs.is_none() && back.schedule.is_some(), "{}", back.report());
    assert!(back.report().contains("the profile's b list has 1 number, but its f list has 2"), "{}", back.report());
    // Each malformed profile says what is wrong in the file's terms, with a hint, and never
    // names a Rust type; the schedule still loads.
    let profile = serde_json::json!({"f": [1, 2], "b": [1, 1], "w": [1, 1], "mem_f": [1, 1], "mem_w": [0.5, 0.5]});
    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut file = file.clone();
        file["costs"]["profile"] = profile.clone();
        edit(&mut file);
        read(&file.to_string(), Format::Json)
    };
    for (what, edit, wanted) in [
        (
            "a list instead of an object",
            &(|f: &mut serde_json::Value| f["costs"]["profile"] = serde_json::json!([]))
                as &dyn Fn(&mut serde_json::Value),
            "expected an object of five lists, f, b, w, mem_f and mem_w",
        ),
        (
            "an empty list",
            &|f: &mut serde_json::Value| f["costs"]["profile"]["f"] = serde_json::json!([]),
            "the profile's f list is empty",
        ),
        (
            "a missing list",
            &|f: &mut serde_json::Value| {
                f["costs"]["profile"].as_object_mut().unwrap().remove("mem_w");
            },
            "missing field `mem_w`",
        ),
    ] {
        let back = with(edit);
        let report = back.report();
        assert!(back.costs.is_none() && back.schedule.is_some(), "{what}: {report}");
        assert!(report.contains(wanted) && report.contains("hint: "), "{what}: {report}");
        assert!(!report.contains("Json") && !report.contains("struct"), "{what}: {report}");
    }
    // −0 reads as 0.
    let back = with(&|f| f["costs"]["profile"]["w"] = serde_json::json!([-0.0, 1]));
    assert_eq!(back.costs.unwrap().profile.unwrap().w[0].to_bits(), 0.0f64.to_bits());
    // Per-device numbers that disagree with the profile: a warning, and the profile's means.
    let back = with(&|f| f["costs"]["f"] = serde_json::json!(7));
    let report = back.report();
    assert!(report.contains("warning: costs.f is 7, but its profile gives 1.5 per device"), "{report}");
    assert_eq!(back.costs.unwrap().f, 1.5);
}

#[test]
fn json_finer_cuts_that_are_not_the_same_model_are_dropped_with_a_warning() {
    // Llama 3 8B on 4 devices: finer cuts at 8, 16 and 32 pieces (its 32 layers divide).
    let costs = bubblescope::model::ModelSpec::preset("llama-3-8b").resolve().unwrap().derive(4).unwrap().costs();
    let finer: Vec<usize> = costs.profile.as_ref().unwrap().finer.iter().map(|p| p.pieces()).collect();
    assert!(finer.len() >= 2, "{finer:?}");
    let s = bubblescope::run("zb-h1", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap().schedule;
    let file: serde_json::Value = serde_json::from_str(&export_json(&s, Some(&costs))).unwrap();
    let read_edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut f = file.clone();
        edit(&mut f["costs"]["profile"]["finer"]);
        read(&f.to_string(), Format::Json)
    };
    for (what, edit, wanted) in [
        (
            "a piece's forward changed",
            &(|f: &mut serde_json::Value| {
                let x = f[0]["f"][0].as_f64().unwrap_or_else(|| f[0]["f"][0].as_str().unwrap().parse().unwrap());
                f[0]["f"][0] = serde_json::json!(x * 2.0);
            }) as &dyn Fn(&mut serde_json::Value),
            "costs.profile.finer[0] is not the profile cut finer (its f adds up to",
        ),
        (
            "no more pieces than the profile",
            &|f: &mut serde_json::Value| {
                f[0] = serde_json::json!({"f": [1], "b": [1], "w": [1], "mem_f": [1], "mem_w": [1]});
            },
            "costs.profile.finer[0] is not the profile cut finer (it has 1 piece, not more than the profile's 4)",
        ),
        (
            "the same count twice",
            &|f: &mut serde_json::Value| f[1] = f[0].clone(),
            "costs.profile.finer[1] is not the profile cut finer (an earlier finer cut has",
        ),
        (
            // A repeat of a dropped cut's count is no repeat: the valid copy is kept.
            "a valid cut after a dropped one of its count",
            &|f: &mut serde_json::Value| {
                f[1] = f[0].clone();
                let x = f[0]["f"][0].as_f64().unwrap_or_else(|| f[0]["f"][0].as_str().unwrap().parse().unwrap());
                f[0]["f"][0] = serde_json::json!(x * 2.0);
            },
            "costs.profile.finer[0] is not the profile cut finer (its f adds up to",
        ),
        (
            // A cut that is no valid profile at all is dropped the same way, not the costs.
            "a negative number in a cut",
            &|f: &mut serde_json::Value| f[1]["w"][0] = serde_json::json!(-1.0),
            "costs.profile.finer[1] is not the profile cut finer (it is no valid profile: w must not be negative, found -1)",
        ),
    ] {
        let back = read_edited(edit);
        let report = back.report();
        assert!(back.schedule.is_some(), "{what}: {report}");
        assert!(report.contains(wanted) && report.contains("hint: finer holds"), "{what}: {report}");
        assert_eq!(report.matches("is not the profile cut finer").count(), 1, "{what}: {report}");
        // Totals print with at most 6 significant digits, not float noise.
        for total in report.split("adds up to ").skip(1).map(|t| t.split([',', ')']).next().unwrap_or("")) {
            let digits = total.chars().filter(char::is_ascii_digit).collect::<String>();
            assert!(digits.trim_start_matches('0').len() <= 6, "{what}: {total} in {report}");
        }
        // The one cut is dropped, the rest of the costs kept.
        let kept = back.costs.unwrap().profile.unwrap();
        assert_eq!(kept.finer.len(), finer.len() - 1, "{what}");
        assert_eq!(
            (kept.f.clone(), kept.mem_f.clone()),
            (costs.profile.as_ref().unwrap().f.clone(), costs.profile.as_ref().unwrap().mem_f.clone())
        );
    }
}

#[test]
fn the_json_example_in_the_module_docs_loads() {
    let example = r#"{
  "format": "bubblescope-schedule",
  "version": 1,
  "placement": {"kind": "v", "devices": 2, "stages_per_pipeline": 4, "stage_device": [0, 1, 1, 0]},
  "microbatches": 2,
  "slices": 1,
  "costs": {"f": 1.0, "b": 1.0, "w": 1.0, "comm": 0.0, "overlap": null, "mem_f": 1.0, "mem_w": null},
  "orders": [
    ["0F0", "0F1", "3F0", "(3F1;3BW0)", "3BW1", "0BW0", "0BW1"],
    ["1F0", "1F1", "2F0", "2F1", "2BW0", "1BW0", "2BW1", "1BW1"]
  ]
}"#;
    let docs = include_str!("../../src/formats/mod.rs");
    let in_docs: String = example.lines().map(|l| format!("//! {l}\n").replace("//! \n", "//!\n")).collect();
    assert!(docs.contains(&in_docs), "the example in formats/mod.rs changed; update this test");
    let imported = read(example, Format::Json);
    let s = clean(imported.clone());
    assert_eq!(imported.costs, Some(Costs::default()));
    assert_eq!(s.placement, Placement::v_shape(2));
    analyze(s, &Costs::default()).unwrap();
}

// -------------------------------------------------------------------------------------------
// Dialects, placement, options

#[test]
fn the_dialect_is_read_from_the_file_or_forced() {
    // `B` alone is a full backward (current); with `W` it is an input gradient (legacy).
    let full = clean(csv("0F0,0B0\n"));
    assert_eq!(full.orders[0][1], Op::One(Pass::bw(0, 0)));
    let split = clean(csv("0F0,0B0,0W0\n"));
    assert_eq!(split.orders[0][1], Op::One(Pass::b(0, 0)));
    // `I` means current, so `B` is full; `BW` means legacy, so `B` is an input gradient.
    let current = clean(csv("0F0,0F1,0I0,0W0,0B1\n"));
    assert_eq!(current.orders[0][4], Op::One(Pass::bw(0, 1)));
    let legacy = clean(csv("0F0,0F1,0B0,0W0,0BW1\n"));
    assert_eq!(legacy.orders[0][2], Op::One(Pass::b(0, 0)));
    // Forcing a dialect wins over the file.
    let forced = import(
        "0F0,0B0,0W0\n",
        Format::PytorchCsv,
        &ImportOptions { dialect: Some(Dialect::Current), ..Default::default() },
    );
    assert_eq!(forced.schedule.unwrap().orders[0][1], Op::One(Pass::bw(0, 0)));
}

#[test]
fn known_placements_are_recognised_and_others_are_custom() {
    assert_eq!(clean(csv("0F0,0B0\n1F0,1B0\n")).placement.kind(), PlacementKind::Linear);
    let custom = clean(csv("1F0,1B0\n0F0,0B0\n"));
    assert_eq!(custom.placement, Placement::custom(2, vec![1, 0]));
    assert_eq!(custom.placement.stage_scale(), 1.0);
}

#[test]
fn idle_cells_quotes_spaces_crlf_and_a_bom_are_accepted() {
    let s = clean(csv("\u{feff}0F0, ,\"0B0\"\r\n,,1F0 ,  1B0\r\n"));
    assert_eq!(s, clean(csv("0F0,0B0\n1F0,1B0\n")));
}

#[test]
fn per_stage_actions_in_a_compute_only_file_are_ignored_with_a_warning() {
    let imported = csv("0UNSHARD,0F0,0B0,0REDUCE_GRAD,0RESHARD\n1F0,1B0\n");
    assert_eq!(
        messages(&imported),
        ["warning: row 0, column 0: `0UNSHARD` and 2 more actions are not compute actions: PyTorch's \
          `_load_csv(format=\"compute_only\")` refuses them in a compute-only file (its lowering adds them); \
          read here and ignored\n  \
          hint: delete them to give PyTorch the file, or add the SEND/RECV actions and load it as compute_comms"]
    );
    assert_eq!(imported.schedule, Some(clean(csv("0F0,0B0\n1F0,1B0\n"))));
    // With one rank nothing is sent, so they make the file PyTorch's compute_comms form.
    let one = "0UNSHARD,0F0,0F1,0B0,0B1,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n";
    assert_eq!(clean(csv(one)), clean(csv("0F0,0F1,0B0,0B1\n")));
}

// -------------------------------------------------------------------------------------------
// Errors, exactly

#[test]
fn an_unknown_cell_is_skipped_and_the_rest_still_loads() {
    let imported = import(
        "0F0,0X1,0B0\n1F0,1B0\n",
        Format::PytorchCsv,
        &ImportOptions { source: Some("my.csv".into()), ..Default::default() },
    );
    assert_eq!(
        messages(&imported),
        ["error: my.csv, row 0, column 1: cannot read cell `0X1`: unknown action type `X`\n  \
          hint: a cell is `<stage><type><microbatch>` such as `0F1`, `3I0`, `2W5` or `4SEND_F2`, an overlapped pair such \
          as `(0F7;7B3)OVERLAP_F_B`, or empty\n  \
          hint: the types PyTorch writes are F, I, W and B (current dialect; F, B, W and BW in the legacy one), \
          OVERLAP_F_B, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD and REDUCE_GRAD, and since torch 2.15 \
          WAIT_SEND_F, WAIT_SEND_B and WAIT_REDUCE_GRAD\n  hint: the cell is skipped"]
    );
    assert_eq!(imported.schedule, Some(clean(csv("0F0,0B0\n1F0,1B0\n"))));
}

#[test]
fn cell_text_in_messages_is_escaped_and_truncated() {
    let nasty = format!("0F0,\u{1b}[31m<script>\u{202e}{}\n", "9".repeat(100));
    let imported = csv(&nasty);
    let first = &imported.diagnostics[0].message;
    assert_eq!(
        first,
        // 40 characters of the cell: the escape, `[31m<script>`, the override and 26 nines.
        "row 0, column 1: cannot read cell `\\u{1b}[31m<script>\\u{202e}99999999999999999999999999…`: \
         expected a stage number at `\\u{1b}[31m<script>\\u{202e}99999999999999999999999999…`"
    );
    assert!(imported.diagnostics.iter().all(|d| !d.message.chars().any(char::is_control)));
}

#[test]
fn a_stage_on_two_rows_is_an_error_at_the_second_row() {
    let imported = csv("0F0,1F0,1B0,0B0\n1F0,1B0\n");
    assert_eq!(
        messages(&imported),
        ["error: row 1, column 0: `1F0` puts stage 1 on row 1, but it runs on row 0 (first at row 0, column 1)\n  \
          hint: a stage runs on one rank: PyTorch infers the stage-to-rank map from the rows\n  \
          hint: the actions of stage 1 on row 1 are skipped"]
    );
    let s = imported.schedule.unwrap();
    assert_eq!(s.placement, Placement::custom(2, vec![0, 0]));
    assert_eq!(s.orders[1], vec![]);
}

#[test]
fn missing_repeated_and_misordered_actions_are_named_as_written() {
    let imported = csv("0F0,0F1,0I1,0W0,0I0,0F1\n1F0,1B0,1W1,1F1\n");
    assert_eq!(
        messages(&imported),
        [
            "error: row 0, column 5: `0F1` appears twice: first at row 0, column 1\n  \
             hint: each action runs once per microbatch; delete one of them",
            "error: row 0, column 3: `0W0` comes before its input-gradient action `0I0` at row 0, column 4\n  \
             hint: the weight gradient needs the input gradient's result: move it after",
            "error: row 0, column 2: `0I1` has no weight-gradient action `0W1`\n  \
             hint: add `0W1` after it on the same row",
            "error: row 1, column 2: `1W1` has no input-gradient action `1I1`\n  \
             hint: add `1I1` before it on the same row",
        ]
    );
}

#[test]
fn mixed_dialects_are_reported_with_the_evidence() {
    let imported = csv("0F0,0I0,0W0\n1F0,1BW0\n");
    assert_eq!(
        messages(&imported)[0],
        "error: row 1, column 1: cannot read cell `1BW0`: `BW` is the legacy dialect's full backward, but this file is \
         read in the current dialect (because of the `I` at row 0, column 1)\n  \
         hint: a file uses one dialect throughout; choose the dialect explicitly if the guess is wrong\n  \
         hint: the cell is skipped"
    );
}

#[test]
fn a_deadlocked_file_reports_every_stuck_device() {
    // Row 0 runs microbatch 0 first, row 1 microbatch 1 first: each waits for the other.
    let imported = csv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n2F0,2B0,2F1,2B1\n");
    assert_eq!(
        messages(&imported),
        [
            "error: row 0, column 1: deadlock: device 0 is stuck at `0B0`, waiting for `1B0` at row 1, column 3",
            "error: row 1, column 0: deadlock: device 1 is stuck at `1F1`, waiting for `0F1` at row 0, column 2",
            "error: row 2, column 0: deadlock: device 2 is stuck at `2F0`, waiting for `1F0` at row 1, column 2\n  \
             hint: the 3 stuck devices wait for each other in a cycle: move an action so \
             that what it waits for comes first",
        ]
    );
    // Columns count idle and SEND/RECV cells, so they are file columns, not op positions.
    let imported = csv(",0F0,0B0\n,,1B0,1F0\n");
    assert_eq!(
        messages(&imported),
        ["error: row 1, column 2: `1B0` comes before its forward `1F0` at row 1, column 3\n  \
          hint: a backward needs its forward's activations: move it after the forward"]
    );
}

#[test]
fn send_and_recv_cells_are_checked_and_dropped() {
    let good = "0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0,1WAIT_SEND_B0\n";
    assert_eq!(clean(csv(good)), clean(csv("0F0,0B0\n1F0,1B0\n")));
    // Old PyTorch fused a SEND with the next RECV in one cell (legacy dialect: B, W, BW).
    let fused = "0F0,0SEND_F0_0RECV_B0,0BW0\n1RECV_F0,1F0,1B0,1SEND_B0,1W0\n";
    assert_eq!(clean(csv(fused)), clean(csv("0F0,0BW0\n1F0,1B0,1W0\n")));

    let imported = csv("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0\n");
    assert_eq!(
        messages(&imported),
        [
            "error: row 1, column 1: `1RECV_F0` comes after `1F0` at row 1, column 0, which needs what it receives: \
             a RECV must come first",
            "error: row 0, column 2: `0RECV_B0` has no matching `1SEND_B0` on row 1\n  \
             hint: add `1SEND_B0` on row 1, after the action that computes it",
        ]
    );

    let imported = csv("0F0,0SEND_F0,0F1,0SEND_F1,0B0,0B1\n1RECV_F1,1RECV_F0,1F0,1F1,1B0,1B1\n");
    assert_eq!(
        messages(&imported),
        [
            "error: row 0, column 4: `0B0` needs the gradient of stage 1 from row 1, but there is no `0RECV_B0` for it\n  \
             hint: in the compute+comms form, add `1SEND_B0` on row 1 after the action \
             that computes it, and `0RECV_B0` on row 0 before this one",
            "error: row 0, column 5: `0B1` needs the gradient of stage 1 from row 1, but there is no `0RECV_B1` for it\n  \
             hint: in the compute+comms form, add `1SEND_B1` on row 1 after the action \
             that computes it, and `0RECV_B1` on row 0 before this one",
            "warning: row 0, column 3: row 0 sends `0SEND_F1` after `0SEND_F0`, but row 1 receives `1RECV_F1` before \
             `1RECV_F0`\n  hint: messages between two ranks are matched in the order they are \
             posted; swap the RECV cells",
        ]
    );

    // Stages 0 and 1 on row 0, stage 2 on row 1.
    let imported = csv("0F0,0SEND_F0,1F0,1SEND_F0,1RECV_B0,1B0,1SEND_B0,0B0,0SEND_F7,2SEND_F0\n\
         2RECV_F0,2F0,2SEND_F0,2B0,2SEND_B0,2SEND_B0\n");
    assert_eq!(
        messages(&imported),
        [
            "warning: row 0, column 1: `0SEND_F0` is not needed: stages 0 and 1 both run on row 0\n  \
             hint: PyTorch passes data between stages of the same rank without SEND/RECV; \
             delete the cell",
            "warning: row 0, column 6: `1SEND_B0` is not needed: stages 0 and 1 both run on row 0\n  \
             hint: PyTorch passes data between stages of the same rank without SEND/RECV; \
             delete the cell",
            "error: row 0, column 8: `0SEND_F7` names stage 0, microbatch 7, but the compute actions have stages 0 to 2 \
             and microbatches 0 to 0",
            "error: row 0, column 9: `2SEND_F0` is on row 0, but stage 2 runs on row 1\n  \
             hint: a stage's SEND and RECV actions go on the row that runs the stage",
            "error: row 1, column 2: `2SEND_F0` sends the output of the last stage, which has no next stage\n  \
             hint: delete the cell",
            "error: row 1, column 5: `2SEND_B0` appears twice: first at row 1, column 4",
        ]
    );
    assert_eq!(imported.schedule, Some(clean(csv("0F0,1F0,1B0,0B0\n2F0,2B0\n"))));
}

/// A valid torch 2.15 file of 1F1B on two ranks, two microbatches (PyTorch's lowering).
const TORCH_2_15: &str = "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,\
                          0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n\
                          1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,\
                          1WAIT_REDUCE_GRAD,1RESHARD,1WAIT_SEND_B0,1WAIT_SEND_B1\n";

#[test]
fn torch_2_15_files_read_clean_and_so_do_2_14_ones_with_a_note() {
    let s = clean(read(TORCH_2_15, Format::PytorchCsvComms));
    assert_eq!(s, clean(csv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")));
    // Torch 2.14 writes no waits: the file reads, with a note that 2.15 refuses it.
    let old = "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n\
               1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n";
    let imported = csv(old);
    assert_eq!(
        messages(&imported),
        ["warning: row 0, column 2: the file has SEND actions but no WAIT_SEND: torch 2.14 runs it, torch 2.15 refuses \
          it (\"Pipeline sends at rank 0 have no matching wait\")\n  \
          hint: write it for torch 2.15 with `bubblescope convert IN OUT --to-format pytorch-csv-comms --torch 2.15`"],
        "{old}"
    );
    assert_eq!(imported.schedule, Some(s));
}

#[test]
fn a_wait_that_can_block_its_row_is_named() {
    // Right after its send, before this row's backward of the microbatch: the row may wait for
    // row 1 to receive, which the simulator (running the compute order) does not model.
    let early = TORCH_2_15.replace(",0WAIT_SEND_F0", "").replace("0SEND_F0,", "0SEND_F0,0WAIT_SEND_F0,");
    assert_eq!(
        messages(&csv(&early)),
        ["warning: row 0, column 3: `0WAIT_SEND_F0` can hold row 0 up until `1RECV_F0` has been received on its \
          peer's row: Bubblescope times the compute order and does not delay the row for it\n  \
          hint: PyTorch waits for a forward's send after this row's backward of the same microbatch and for a \
          backward's at the end of the row, where a wait never blocks"]
    );
}

#[test]
fn sends_and_waits_that_do_not_pair_are_refused_before_anything_is_simulated() {
    // Row 1 runs microbatch 1 first, which would deadlock; the pairing refuses the file first.
    let unpaired = TORCH_2_15.replace(",0WAIT_SEND_F1", "").replace(",1WAIT_SEND_B0", "");
    let imported = csv(&unpaired);
    assert_eq!(
        messages(&imported),
        [
            "error: row 0, column 4: `0SEND_F1` has no matching `0WAIT_SEND_F1` on row 0\n  \
             hint: torch 2.15 refuses the file (\"Pipeline sends at rank 0 have no matching wait\"): add \
             `0WAIT_SEND_F1` after `0B1`; a forward's send is waited for after this row's backward of its microbatch, \
             a backward's at the end of the row\n  \
             hint: or write the file for torch 2.14, which waits for every send at the end of the step",
            "error: row 1, column 5: `1SEND_B0` has no matching `1WAIT_SEND_B0` on row 1\n  \
             hint: torch 2.15 refuses the file (\"Pipeline sends at rank 1 have no matching wait\"): add \
             `1WAIT_SEND_B0` at the end of the row; a forward's send is waited for after this row's backward of its \
             microbatch, a backward's at the end of the row\n  \
             hint: or write the file for torch 2.14, which waits for every send at the end of the step",
        ]
    );
    // A wait before its send, a second wait, and reductions that do not pair.
    let bad = "0UNSHARD,0WAIT_SEND_F0,0F0,0SEND_F0,0RECV_B0,0B0,0WAIT_SEND_F0,0WAIT_SEND_F0,0REDUCE_GRAD,0RESHARD\n\
               1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_REDUCE_GRAD,1WAIT_SEND_B0\n";
    assert_eq!(
        messages(&csv(bad)),
        [
            "error: row 0, column 1: `0WAIT_SEND_F0` has no `0SEND_F0` before it on row 0 to wait for\n  \
             hint: torch 2.15 refuses it (\"Pipeline wait 0WAIT_SEND_F0 at rank 0 has no pending send\"): a send is \
             waited for once, after it is posted",
            "error: row 0, column 7: `0WAIT_SEND_F0` has no `0SEND_F0` before it on row 0 to wait for\n  \
             hint: torch 2.15 refuses it (\"Pipeline wait 0WAIT_SEND_F0 at rank 0 has no pending send\"): a send is \
             waited for once, after it is posted",
            "error: row 0, column 8: `0REDUCE_GRAD` has no matching `0WAIT_REDUCE_GRAD` on row 0\n  \
             hint: torch 2.15 refuses the file (\"Stage 0 at rank 0 has REDUCE_GRAD without WAIT_REDUCE_GRAD\"): \
             add `0WAIT_REDUCE_GRAD` after it",
            "error: row 1, column 6: `1WAIT_REDUCE_GRAD` has no `1REDUCE_GRAD` before it on row 1 to wait for\n  \
             hint: torch 2.15 refuses a WAIT_REDUCE_GRAD without a pending reduction",
        ]
    );
    let two = "0F0,0F1,0B0,0B1,0REDUCE_GRAD,0REDUCE_GRAD,0WAIT_REDUCE_GRAD\n";
    assert!(messages(&csv(two))[0].starts_with(
        "error: row 0, column 5: `0REDUCE_GRAD` starts while stage 0's reduction is pending: torch 2.15 runs one at a time"
    ));
}

#[test]
fn a_file_that_mixes_torch_2_15_and_legacy_cells_is_refused() {
    let imported = csv("0F0,0SEND_F0,0RECV_B0,0BW0,0WAIT_SEND_F0\n1RECV_F0,1F0,1B0,1W0,1SEND_B0,1WAIT_SEND_B0\n");
    assert_eq!(
        messages(&imported)[0],
        "error: row 0, column 4: the file mixes dialects: `0WAIT_SEND_F0` is torch 2.15's, but `0BW0` at row 0, \
         column 3 is the legacy dialect's, which PyTorch stopped writing before 2.14\n  \
         hint: a file is written for one PyTorch version: torch 2.15's use F, I, W, B and one SEND or RECV per cell; \
         write it again with `bubblescope convert IN OUT --to-format pytorch-csv-comms --torch 2.15`"
    );
    assert!(imported.has_errors());
}

#[test]
fn reductions_missing_misplaced_or_on_another_row_are_named() {
    // Without REDUCE_GRAD PyTorch runs the file and the gradients come out M times too large.
    let none = TORCH_2_15.replace(",0REDUCE_GRAD,0WAIT_REDUCE_GRAD", "").replace(",1REDUCE_GRAD,1WAIT_REDUCE_GRAD", "");
    assert_eq!(
        messages(&csv(&none)),
        ["warning: row 0: stage 0 and 1 more stage have no REDUCE_GRAD: PyTorch runs the file, but the gradients come \
          out M = 2 times too large (REDUCE_GRAD is where the runtime divides a stage's gradients by its microbatches)\n  \
          hint: add `0REDUCE_GRAD` right after the stage's last full backward or weight pass (and \
          `0WAIT_REDUCE_GRAD` after it for torch 2.15), or write the file again with \
          `bubblescope convert IN OUT --to-format pytorch-csv-comms`"]
    );
    // Before the stage's last backward it divides too early.
    let early = "0F0,0F1,0B0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0B1\n";
    assert_eq!(
        messages(&csv(early)),
        ["warning: row 0, column 3: `0REDUCE_GRAD` comes before `0B1` at row 0, column 5: the runtime divides the \
          stage's gradients by M there, so the gradients of the backward passes after it are not divided\n  \
          hint: move it after the stage's last full backward or weight pass"]
    );
    let elsewhere = TORCH_2_15.replace("1REDUCE_GRAD,1WAIT_REDUCE_GRAD", "0REDUCE_GRAD,0WAIT_REDUCE_GRAD");
    assert!(messages(&csv(&elsewhere))
        .iter()
        .any(|m| m.starts_with("error: row 1, column 9: `0REDUCE_GRAD` is on row 1, but stage 0 runs on row 0")));
}

#[test]
fn pytorch_csv_comms_requires_comms() {
    let imported = read("0F0,0B0\n1F0,1B0\n", Format::PytorchCsvComms);
    assert_eq!(
        messages(&imported),
        ["error: the file has no SEND or RECV actions, but the compute+comms form needs them wherever data crosses rows\n  \
          hint: read it as pytorch-csv (compute only)"]
    );
    assert!(imported.schedule.is_some());
}

#[test]
fn a_mistyped_huge_stage_is_pointed_at() {
    let imported = csv("0F0,0B0,0F1,0B1\n1F0,1B0,1F1,71B1\n");
    assert_eq!(
        messages(&imported),
        ["error: row 1, column 3: `71B1` names stage 71, but the file has only 8 actions, so most stages would have \
          none\n  hint: check this cell's stage number"]
    );
    assert_eq!(imported.schedule, None);
}

#[test]
fn a_pass_outside_its_pipelines_share_is_reported() {
    let two = sequential(Placement::two_directional(2), 4, 1, false);
    let text = export_json(&two, None).replacen("\"0F0\"", "\"0F3\"", 1);
    assert_eq!(
        messages(&read(&text, Format::Json))[0],
        "error: orders[0][0]: `0F3` is not in its pipeline's share: pipeline 0 runs microbatches 0 to 1\n  \
         hint: the two pipelines of a two-directional schedule split the microbatches in \
         equal halves"
    );
}

#[test]
fn two_directional_and_sliced_schedules_cannot_be_pytorch_csv() {
    let two = sequential(Placement::two_directional(2), 2, 1, false);
    assert_eq!(
        export(&two, None, Format::PytorchCsv, &ExportOptions::default()).unwrap_err().to_string(),
        "PyTorch CSV holds one pipeline, but this schedule runs 2 model replicas in opposite directions \
         (two-directional placement)\n  hint: export it as JSON (--to-format json), which keeps both pipelines"
    );
    let sliced = sequential(Placement::linear(2), 2, 2, false);
    assert_eq!(
        export(&sliced, None, Format::PytorchCsvComms, &ExportOptions::default()).unwrap_err().to_string(),
        "PyTorch CSV has no sequence slices, but this schedule splits every microbatch into 2 slices\n  \
         hint: export it as JSON (--to-format json), which keeps the slices"
    );
}

#[test]
fn a_deadlocked_schedule_cannot_get_send_recv_cells() {
    let mut s = sequential(Placement::linear(2), 2, 1, false);
    // Device 1 runs microbatch 1 first: 1F1 waits for 0F1, which comes after 0BW0, which
    // waits for 1BW0, which comes after 1F1.
    s.orders[1] =
        vec![Op::One(Pass::f(1, 1)), Op::One(Pass::bw(1, 1)), Op::One(Pass::f(1, 0)), Op::One(Pass::bw(1, 0))];
    assert_eq!(validate(&s), vec![]);
    let err = export_pytorch_csv(&s, CsvForm::ComputeComms, Dialect::Current).unwrap_err();
    assert!(err.to_string().starts_with("the schedule deadlocks, so SEND/RECV actions cannot be placed"), "{err}");
    assert!(err.hints.iter().any(|h| h.starts_with("row 1 is stuck at column 0 `1F1`")), "{err}");
}

#[test]
fn json_errors_name_the_field_and_the_op() {
    let j = |text: &str| messages(&read(text, Format::Json));
    // Eighth hostile pass: a file of the wrong shape says what a schedule holds.
    assert_eq!(
        j("[1, 2"),
        ["error: the file is not valid JSON: EOF while parsing a list at line 1 column 5\n  \
          hint: a Bubblescope schedule is the object `simulate --export FILE.json` writes: format, version, placement, \
          microbatches, slices, orders and costs (docs/formats.md has every field)"]
    );
    assert_eq!(
        j(r#"{"traceEvents": []}"#),
        ["error: the file has no \"format\" field: expected \"format\": \"bubblescope-schedule\"\n  \
          hint: this importer reads Bubblescope schedules; Perfetto traces cannot be imported"]
    );
    assert_eq!(
        j(r#"{"format": "bubblescope-schedule", "version": 2}"#),
        ["error: the file is version 2, newer than the version 1 this Bubblescope reads\n  hint: update Bubblescope"]
    );
    let s = sequential(Placement::v_shape(2), 1, 1, false);
    let good = export_json(&s, None);
    let bad_kind = good.replace("\"kind\":\"v\"", "\"kind\":\"interleaved\"");
    assert_eq!(
        j(&bad_kind),
        ["error: placement: the interleaved kind on 2 devices has stages_per_pipeline 4 and stage_device [0, 1, 0, 1], \
          found 4 and [0, 1, 1, 0]\n  hint: a Bubblescope schedule is the object `simulate --export FILE.json` writes: \
          format, version, placement, microbatches, slices, orders and costs (docs/formats.md has every field)"]
    );
    let bad_op = good.replace("\"3BW0\"", "\"3X0\"").replace("\"orders\"", "\"extra\": 1, \"orders\"");
    assert_eq!(
        j(&bad_op),
        [
            "warning: unknown field `extra` is ignored",
            "error: orders[0][2]: cannot read op `3X0`: unknown kind `X`, expected F, B, W, BW, R, S, T, IF or IB\n  \
             hint: an op is `<stage><kind><microbatch>` with kind F, B, W, BW or R, e.g. `0F1` or `3BW2`, `.<slice>` after it \
             for split sequences, or a pair `(3F1;3BW0)`; S, T, IF and IB take a vocabulary shard (the device's number) \
             for the stage, e.g. `2S0`\n  hint: the op is skipped",
            "error: orders[0]: the backward of stage 3, microbatch 0 is missing\n  \
             hint: add `3BW0`, or `3B0` and then `3W0`",
        ]
    );
    let bad_costs = good.replace(
        "\"costs\": null",
        "\"costs\": {\"f\": -1, \"b\": 1, \"w\": 1, \"comm\": 0, \"overlap\": null, \"mem_f\": 1, \"mem_w\": null}",
    );
    assert_eq!(
        j(&bad_costs),
        ["error: costs: f must not be negative, found -1\n  hint: times are durations: 0 or more, e.g. 1 or 2.5\n  hint: the costs are not loaded"]
    );
}

#[test]
fn files_too_large_are_refused_with_one_error() {
    let big = "0F0,".repeat(MAX_FILE_BYTES / 4 + 1);
    for format in [Format::PytorchCsv, Format::Json] {
        let imported = read(&big, format);
        assert_eq!(imported.schedule, None);
        assert_eq!(
            messages(&imported),
            [format!(
                "error: the file has {} bytes, more than the 16777216 (16 MiB) an import reads\n  \
                 hint: a schedule this large is beyond what Bubblescope simulates; cut it into smaller files",
                big.len()
            )]
        );
    }
    let rows = "\n".repeat(MAX_DEVICES as usize + 1);
    assert_eq!(
        messages(&csv(&rows)),
        ["error: the file has more than 1024 rows, but one row is one device and at most 1024 are supported\n  \
          hint: is this a schedule file? PyTorch writes one row per rank"]
    );
    assert_eq!(
        messages(&read("0F0", Format::Perfetto)),
        ["error: perfetto traces can be written but not read: a trace holds times, not a schedule\n  \
          hint: import the schedule's JSON (--from-format json) or PyTorch CSV instead"]
    );
}

// -------------------------------------------------------------------------------------------
// Format names

#[test]
fn format_names_and_extensions_are_the_cli_contract() {
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["pytorch-csv", "pytorch-csv-comms", "json", "perfetto"]);
    for f in Format::ALL {
        assert_eq!(Format::from_name(f.name()), Ok(f));
    }
    assert_eq!(Format::from_name("JSON"), Ok(Format::Json));
    assert_eq!(
        Format::from_name("csv").unwrap_err().to_string(),
        "unknown format `csv`\n  hint: did you mean `pytorch-csv`?\n  \
         hint: expected one of: pytorch-csv, pytorch-csv-comms, json, perfetto"
    );
    assert_eq!(Format::from_extension("runs/zb1p.CSV"), Some(Format::PytorchCsv));
    assert_eq!(Format::from_extension(".json"), Some(Format::Json));
    assert_eq!(Format::from_extension("json"), Some(Format::Json));
    assert_eq!(Format::from_extension("trace.pftrace"), None);
    assert!(!Format::Perfetto.can_import());
}

#[test]
fn json_with_a_byte_order_mark_is_accepted_like_csv() {
    let s = sequential(Placement::linear(2), 2, 1, true);
    let text = format!("\u{feff}{}", export_json(&s, Some(&Costs::default())));
    assert_eq!(clean(read(&text, Format::Json)), s);
}

#[test]
fn a_file_read_as_the_wrong_format_says_what_it_looks_like() {
    let csv_text = "0F0,0F1,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\n";
    let as_json = read(csv_text, Format::Json);
    assert!(as_json.has_errors());
    assert_eq!(
        as_json.diagnostics[0].hints,
        ["the content looks like a PyTorch CSV: read it with --from-format pytorch-csv (or name it .csv)"]
    );
    let json_text = export_json(&sequential(Placement::linear(2), 1, 1, true), None);
    let as_csv = read(&json_text, Format::PytorchCsv);
    assert!(as_csv.has_errors());
    assert!(
        as_csv.diagnostics[0].hints.iter().any(|h| h
            == "the content looks like Bubblescope JSON: read it with --from-format json (or name it .json)"),
        "{}",
        as_csv.report()
    );
    // A file of the right format that is merely broken gets no such hint.
    assert!(read("0F0,0Q1\n", Format::PytorchCsv)
        .diagnostics
        .iter()
        .all(|d| !d.hints.iter().any(|h| h.contains("looks like"))));
    // Neither the name nor the content tells: an error with the way out.
    let err = formats::detect("notes.txt", "hello", None).unwrap_err();
    assert_eq!(err.message, "cannot tell the format of `notes.txt` from its name or its content");
    assert_eq!(formats::detect("-", csv_text, None), Ok(Format::PytorchCsv));
    assert_eq!(formats::detect("-", &json_text, None), Ok(Format::Json));
}

#[test]
fn a_file_is_analysed_at_its_own_sizes_and_its_costs_are_checked() {
    let s = sequential(Placement::linear(3), 4, 1, true);
    let costs = Costs::fbw(2.0, 1.0, 1.0);
    let run = formats::analyze_file("zb\u{202e}.csv", s.clone(), costs.clone(), Some(10.0));
    assert_eq!(run.label, "zb\\u{202e}.csv · 3 devices · 4 microbatches · 3 stages");
    assert_eq!((run.params.devices, run.params.microbatches, run.params.mem_limit), (3, 4, Some(10.0)));
    let expected = analyze(s.clone(), &costs).unwrap();
    assert_eq!(run.analysis.unwrap().stats, expected.stats);
    let tiny = formats::analyze_file("a.csv", s.clone(), Costs::fbw(1e-300, 1.0, 1.0), None);
    assert_eq!(
        tiny.analysis.unwrap_err().to_string().lines().next(),
        Some("f must be 0 or at least 1e-9, found 1e-300")
    );
    let negative_limit = formats::analyze_file("a.csv", s, costs, Some(-1.0));
    assert_eq!(
        negative_limit.analysis.unwrap_err().to_string().lines().next(),
        Some("mem-limit must not be negative, found -1")
    );
}

#[test]
fn an_analysis_exports_by_format_name_with_its_file_name_and_type() {
    let params = ScheduleParams::new(3, 4);
    let a = bubblescope::run("zb-h1", &params).unwrap();
    for format in Format::ALL {
        let by_name = Format::from_name(format.name()).unwrap();
        let text = formats::export_analysis(&a, &params.costs, by_name, &ExportOptions::default()).unwrap();
        assert_eq!(Ok(text), export(&a.schedule, Some(&params.costs), format, &ExportOptions::default()), "{format}");
        assert!(format.file_name("zb").ends_with(format.extension()), "{format}");
    }
    assert_eq!(Format::PytorchCsvComms.file_name("zb"), "zb-comms.csv");
    assert_eq!(Format::Perfetto.file_name("zb"), "zb.trace.json");
    assert_eq!(Format::PytorchCsv.media_type(), "text/csv");
}

// -------------------------------------------------------------------------------------------
// Perfetto

#[test]
fn perfetto_trace_has_a_track_per_device_slices_flows_and_memory() {
    let schedule = sequential(Placement::v_shape(2), 2, 1, true);
    let costs = Costs { comm: 0.5, ..Costs::fbw(2.0, 2.0, 2.0) };
    let timeline = simulate(&schedule, &StageCosts::for_schedule(&costs, &schedule)).unwrap();
    let text = export_perfetto(&schedule, &timeline).unwrap();
    assert_eq!(Ok(text.clone()), export(&schedule, Some(&costs), Format::Perfetto, &ExportOptions::default()));
    let trace: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = trace["traceEvents"].as_array().unwrap();
    let of = |ph: &str| events.iter().filter(|e| e["ph"] == ph).collect::<Vec<_>>();

    let names: Vec<(&str, u64, &str)> = of("M")
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| ("thread_name", e["tid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("thread_name", 0, "device 0"), ("thread_name", 1, "device 1")]);
    assert!(of("M").iter().any(|e| e["name"] == "process_name"));

    // One complete slice per op, in each device's order, at the simulated times (1 time unit
    // = 1 µs), named as the JSON format writes the op; no args.
    let slices = of("X");
    assert_eq!(slices.len(), schedule.orders.iter().map(Vec::len).sum::<usize>());
    for (device, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        let on_device: Vec<_> = slices.iter().filter(|e| e["tid"] == device as u64).collect();
        assert_eq!(on_device.len(), order.len());
        for ((e, op), t) in on_device.iter().zip(order).zip(&times.ops) {
            assert_eq!((e["ts"].as_f64(), e["dur"].as_f64()), (Some(t.start), Some(t.end - t.start)));
            let name = e["name"].as_str().unwrap();
            let pass = op.first();
            assert!(name.starts_with(&format!("{}{}{}", pass.stage, pass.kind.name(), pass.microbatch)), "{name}");
            assert!(e.get("args").is_none() && e.get("cat").is_none(), "{e}");
        }
    }
    // A flow per dependency between devices: on a V with two devices, every F and input
    // gradient except at the V's tip (stages 1→2 share device 1) and the ends.
    let (starts, finishes) = (of("s"), of("f"));
    let crossing = 2 * 2 * 2; // microbatches × (0→1 and 2→3) × (forward and backward)
    assert_eq!((starts.len(), finishes.len()), (crossing, crossing));
    for (s, f) in starts.iter().zip(&finishes) {
        assert_eq!(s["id"], f["id"]);
        assert_eq!(f["bp"], "e");
        assert_ne!(s["tid"], f["tid"]);
        assert!(s["ts"].as_f64() < f["ts"].as_f64());
    }
    // Memory: one point per change, the value after everything at that time.
    let counters = of("C");
    assert!(!counters.is_empty(), "memory counters");
    for (device, times) in timeline.devices.iter().enumerate() {
        let points: Vec<(f64, f64)> = counters
            .iter()
            .filter(|e| e["name"] == format!("memory {device}"))
            .map(|e| (e["ts"].as_f64().unwrap(), e["args"]["activation"].as_f64().unwrap()))
            .collect();
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1), "{points:?}");
        let peak = points.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(peak, times.peak_memory);
    }

    let other = sequential(Placement::linear(2), 1, 1, false);
    assert!(export_perfetto(&other, &timeline).is_err());
    assert_eq!(
        export(&schedule, None, Format::Perfetto, &ExportOptions::default()).unwrap_err().message,
        "a perfetto trace needs costs to time the schedule, and none were given"
    );
}

// -------------------------------------------------------------------------------------------
// Bad input, fuzzed

/// What any import must give: no panic, a bounded report, and when it reports no error, a
/// schedule the engine accepts.
fn check_sane(imported: &Imported) {
    assert!(imported.diagnostics.len() <= MAX_DIAGNOSTICS + 1, "{} diagnostics", imported.diagnostics.len());
    for d in &imported.diagnostics {
        assert!(!d.message.chars().any(|c| c.is_control()), "unescaped control character in {:?}", d.message);
        assert!(d.message.chars().count() < 2000, "message too long: {}", d.message.len());
    }
    if !imported.has_errors() {
        let s = imported.schedule.as_ref().expect("no errors, so a schedule");
        assert_eq!(validate(s), vec![]);
        simulate(s, &StageCosts::for_schedule(&Costs::default(), s)).expect("no errors, so no deadlock");
    }
    if let Some(s) = &imported.schedule {
        assert_eq!(s.orders.len(), s.placement.devices() as usize);
    }
}

fn seed_files() -> Vec<String> {
    let mut files = Vec::new();
    for (_, s) in family_schedules().into_iter().take(6).chain(synthetic_schedules()) {
        files.push(csv_export(&s, CsvForm::ComputeOnly, Dialect::Current));
        files.push(csv_export(&s, CsvForm::ComputeComms, Dialect::Legacy));
        for torch in TorchVersion::ALL {
            files.push(
                formats::export_pytorch_csv_with(&s, CsvForm::ComputeComms, &ExportOptions::torch(torch)).unwrap(),
            );
        }
        files.push(export_json(&s, Some(&Costs::default())));
    }
    files
}

#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, String),
    Delete(usize),
    Duplicate(usize, usize),
    Swap(usize, usize),
    Truncate(usize),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    let cell = prop_oneof![
        "[0-9]{0,2}(F|I|B|W|BW|SEND_F|RECV_B|X)?[0-9]{0,2}",
        "[0-9]{0,2}(WAIT_SEND_F|WAIT_SEND_B|SEND_B|RECV_F|UNSHARD|RESHARD|REDUCE_GRAD|WAIT_REDUCE_GRAD)?[0-9]{0,2}",
        "\\([0-9]F[0-9];[0-9](B|I|W)[0-9]\\)(OVERLAP_F_B)?",
        "\\PC{0,12}",
        "[\",\n\r;()]{1,3}",
    ];
    prop_oneof![
        (any::<usize>(), cell).prop_map(|(i, c)| Edit::Replace(i, c)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Duplicate(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// Applies `edits` to the cells (or JSON strings) of `text`.
fn mutate(text: &str, edits: &[Edit]) -> String {
    let json = text.starts_with('{');
    let sep = if json { '"' } else { ',' };
    let mut parts: Vec<String> = text.split(sep).map(str::to_string).collect();
    for edit in edits {
        let n = parts.len().max(1);
        match edit {
            Edit::Replace(i, c) => parts[i % n] = c.clone(),
            Edit::Delete(i) if parts.len() > 1 => {
                parts.remove(i % n);
            }
            Edit::Duplicate(a, b) => {
                let cell = parts[a % n].clone();
                parts.insert(b % n, cell);
            }
            Edit::Swap(a, b) => parts.swap(a % n, b % n),
            Edit::Truncate(at) => {
                let joined = parts.join(&sep.to_string());
                let mut cut = at % (joined.len() + 1);
                while !joined.is_char_boundary(cut) {
                    cut -= 1;
                }
                parts = joined[..cut].split(sep).map(str::to_string).collect();
            }
            Edit::Delete(_) => {}
        }
    }
    parts.join(&sep.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}|[0-9A-Z_,;()\"\n]{0,200}") {
        for format in Format::ALL {
            check_sane(&read(&text, format));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        check_sane(&read(&text, Format::PytorchCsv));
        check_sane(&read(&text, Format::Json));
    }

    #[test]
    fn mutated_valid_files_never_panic(seed in 0usize..1000, edits in proptest::collection::vec(edit_strategy(), 1..6)) {
        let files = seed_files();
        let text = mutate(&files[seed % files.len()], &edits);
        let format = if text.starts_with('{') { Format::Json } else { Format::PytorchCsv };
        check_sane(&read(&text, format));
        check_sane(&read(&text, Format::PytorchCsvComms));
        let options = ImportOptions { merge_bw: true, dialect: Some(Dialect::Legacy), source: Some("f\n.csv".into()) };
        check_sane(&import(&text, Format::PytorchCsv, &options));
    }

    #[test]
    fn json_costs_round_trip_exactly(
        f in 0.0f64..1e12, b in 0.0f64..1e6, w in 0.0f64..1e3, comm in 0.0f64..10.0,
        overlap in proptest::option::of(0.0f64..1e4), mem_f in 1e-9f64..1e9, share in 0.0f64..=1.0,
    ) {
        let costs = Costs {
            f,
            b,
            w,
            comm,
            links: None,
            overlap,
            mem_f,
            mem_w: Some(mem_f * share),
            profile: None,
            trade: None,
            vocab: None,
            p2p: bubblescope::P2p::Async,
            split_vocab: None,
        };
        prop_assume!(costs.check().is_ok());
        let s = sequential(Placement::linear(2), 1, 1, true);
        let back = read(&export_json(&s, Some(&costs)), Format::Json);
        prop_assert!(back.diagnostics.is_empty(), "{}", back.report());
        let bits = |c: Costs| {
            let optional = |v: Option<f64>| v.map(f64::to_bits);
            (c.f.to_bits(), c.b.to_bits(), c.w.to_bits(), c.comm.to_bits(), optional(c.overlap), c.mem_f.to_bits(), optional(c.mem_w))
        };
        prop_assert_eq!(back.costs.map(bits), Some(bits(costs)));
    }
}

#[test]
fn many_errors_are_capped() {
    let text: String = (0..500).map(|i| format!("0Q{i},")).collect();
    let imported = csv(&text);
    assert_eq!(imported.diagnostics.len(), MAX_DIAGNOSTICS + 1);
    assert_eq!(
        imported.diagnostics.last().unwrap().to_string(),
        "error: and 451 more errors not shown\n  hint: fix the problems above first; the rest are often consequences"
    );
    assert!(imported.diagnostics.iter().all(|d| d.severity == Severity::Error));
}
