//! Tests of V-Half with Vocabulary Parallelism against the authors' scheduler: the goldens in
//! `tests/golden/vocab/v-half-vocab.json` (`tools/vocab_golden.py` runs their graph passes
//! outside this repository), the memory counts over P and M, and bad input.

use proptest::prelude::*;
use serde_json::Value;

use super::v_half_vocab::{v_half_vocab, v_half_vocab_with_times, Fusion, FAMILY};
use crate::params::{Costs, ScheduleParams, StageCosts, VocabCosts};
use crate::schedule::{Op, PassKind, Placement, Schedule};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden/vocab/v-half-vocab.json");

fn golden() -> Value {
    let text = std::fs::read_to_string(GOLDEN).unwrap_or_else(|e| panic!("{GOLDEN}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{GOLDEN}: {e}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// The costs of a golden case as this crate's (a device's F, B and W: two chunks, each costing
/// the authors' per-chunk time), with a vocabulary.
fn case_costs(case: &Value) -> Costs {
    let c = &case["costs"];
    let vocab = VocabCosts::output(0.0, 0.0, 0.0);
    Costs {
        comm: num(c, "comm"),
        vocab: Some(vocab),
        ..Costs::fbw(2.0 * num(c, "f"), 2.0 * num(c, "b"), 2.0 * num(c, "w"))
    }
}

fn fusion_of(case: &Value) -> Fusion {
    if case["backward_fusion"].as_bool().expect("backward_fusion") {
        Fusion::On
    } else {
        Fusion::Off
    }
}

/// A device's passes in the goldens' tokens: `F3.1` (kind, microbatch, chunk) for the
/// transformer passes, `S3`, `T3`, `IF3`, `IB3` for the vocabulary passes.
fn tokens(schedule: &Schedule, device: usize) -> String {
    let mut out = Vec::new();
    for pass in schedule.orders[device].iter().flat_map(Op::passes) {
        if pass.kind.is_vocab() {
            out.push(format!("{}{}", pass.kind.name(), pass.microbatch));
        } else {
            let chunk = schedule.placement.chunk_of(pass.stage);
            out.push(format!("{}{}.{chunk}", pass.kind.name(), pass.microbatch));
        }
    }
    out.join(" ")
}

/// Peaks over a device's order: F − W over both chunks (chunk activations) and S − T.
fn live_peaks(schedule: &Schedule, device: usize) -> (i64, i64) {
    let (mut live, mut peak, mut s, mut s_peak) = (0i64, 0i64, 0i64, 0i64);
    for pass in schedule.orders[device].iter().flat_map(Op::passes) {
        match pass.kind {
            PassKind::F => live += 1,
            PassKind::W => live -= 1,
            PassKind::S => s += 1,
            PassKind::T => s -= 1,
            _ => {}
        }
        peak = peak.max(live);
        s_peak = s_peak.max(s);
    }
    (peak, s_peak)
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("list").iter().map(|x| x.as_f64().expect("number")).collect()
}

/// Every golden case: the compute passes of each device in order (transformer passes with their
/// chunk, S, T, IF, IB), the four vocabulary time lists, and the live peaks. The authors' p2p
/// and collective nodes (SF, RF, SB, RB, SIF, RIB, RS, RT, SS, ST) are not in the IR: the
/// simulator derives the hops and barriers from the passes.
#[test]
fn orders_and_vocabulary_times_equal_the_authors_scheduler_over_the_golden_grid() {
    let data = golden();
    let cases = data["cases"].as_array().expect("cases");
    let mut compared = 0;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let (p, m) = (num(case, "devices") as u32, num(case, "microbatches") as u32);
        let placement = Placement::v_shape(p);
        let costs = StageCosts::new(&case_costs(case), &placement);
        let (schedule, times) = v_half_vocab_with_times(p, m, fusion_of(case), &costs);
        let passes = case["passes"].as_array().expect("passes");
        assert_eq!(passes.len(), p as usize, "{name}");
        for (device, want) in passes.iter().enumerate() {
            assert_eq!(tokens(&schedule, device), want.as_str().expect("text"), "{name} device {device}");
            let (peak, s_peak) = live_peaks(&schedule, device);
            let want = &case["live_peak"][device];
            assert_eq!((peak, s_peak), (num(want, "F_chunks") as i64, num(want, "S") as i64), "{name} device {device}");
        }
        let t = &case["timings"];
        assert_eq!(times.s, floats(&t["S"]), "{name} S");
        assert_eq!(times.t, floats(&t["T"]), "{name} T");
        assert_eq!(times.input_f, floats(&t["IF"]), "{name} IF");
        assert_eq!(times.input_b, floats(&t["IB"]), "{name} IB");
        assert_eq!(schedule.vocab.map(|v| v.barriers), Some(num(case, "barriers") as u32), "{name}");
        compared += 1;
    }
    assert_eq!(compared, 54);
}

fn params(p: u32, m: u32) -> ScheduleParams {
    let costs = Costs { vocab: Some(VocabCosts::output(0.5, 1.0, 0.0)), mem_w: Some(1.0), ..Costs::fbw(1.0, 1.0, 1.0) };
    ScheduleParams::new(p, m).with_costs(costs)
}

/// The family (backward fusion, the authors' default) gives the same orders as the placement
/// for every golden case with fusion; all of them run in the simulator. Of the cases without
/// fusion, the three at P = 2, M = 2 do not: there the authors' times put device 0's B0 of the
/// last stage before T0, whose barrier it waits for (their runtime would pop an empty list).
#[test]
fn the_family_runs_every_golden_case_with_fusion_and_the_simulator_finds_the_three_that_cannot_run() {
    let data = golden();
    let mut unrunnable = Vec::new();
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let (p, m) = (num(case, "devices") as u32, num(case, "microbatches") as u32);
        let costs = case_costs(case);
        let placement = Placement::v_shape(p);
        let schedule = v_half_vocab(p, m, fusion_of(case), &StageCosts::new(&costs, &placement));
        if crate::sim::simulate(&schedule, &StageCosts::for_schedule(&costs, &schedule)).is_err() {
            unrunnable.push(name.to_string());
        }
        if fusion_of(case) == Fusion::On {
            let params = ScheduleParams::new(p, m).with_costs(costs);
            let generated = FAMILY.generate(&params).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(generated, schedule, "{name}");
        }
    }
    assert_eq!(unrunnable, ["fusion-off-p2-m2-runtime", "fusion-off-p2-m2-b2f", "fusion-off-p2-m2-b1.5f-w0.5f"]);
}

#[test]
fn bad_input_is_refused_with_hints() {
    let no_vocab = ScheduleParams::new(4, 8).with_costs(Costs::fbw(1.0, 1.0, 1.0));
    let cases = [
        (no_vocab, "v-half-vocab splits the output layer by vocabulary, but these costs have no vocabulary layer"),
        (params(4, 1), "v-half-vocab cannot run on 4 devices and 1 microbatch"),
        (params(3, 9), "v-half-vocab cannot run on 3 devices and 9 microbatches"),
    ];
    for (params, start) in cases {
        let e = FAMILY.generate(&params).expect_err(start).to_string();
        assert!(e.starts_with(start) && e.contains("hint:"), "{e}");
    }
    let e = FAMILY.generate(&params(3, 9)).expect_err("odd").to_string();
    assert!(e.contains("use --devices 2 or 4"), "{e}");
    // Accepted at the edges: an even count from 2 microbatches, an odd one while M ≤ (P + 1)/2.
    for (p, m) in [(2, 2), (4, 2), (8, 2), (3, 2), (5, 3), (7, 4)] {
        FAMILY.generate(&params(p, m)).unwrap_or_else(|e| panic!("p {p} m {m}: {e}"));
    }
    for (p, m) in [(3, 3), (5, 4), (7, 5)] {
        assert!(FAMILY.generate(&params(p, m)).is_err(), "p {p} m {m}");
    }
}

proptest! {
    #![proptest_config(crate::proptest_cases(32))]

    /// From M = 3P on, every device holds P + 2 + 2·barriers chunk activations at its peak
    /// (plain V-Half's P + 2, one more microbatch of a stage per barrier) and one S ahead of
    /// its T; the simulator's peak, with W holding a forward's memory until it runs, is half
    /// that in mem-f (a chunk is half a stage).
    #[test]
    fn memory_is_p_plus_two_chunks_plus_two_per_barrier(half in 1u32..5, extra in 0u32..16) {
        let p = 2 * half;
        let m = 3 * p + extra;
        for fusion in [Fusion::On, Fusion::Off] {
            let costs = params(p, m).costs;
            let schedule = v_half_vocab(p, m, fusion, &StageCosts::new(&costs, &Placement::v_shape(p)));
            let barriers = i64::from(schedule.vocab.expect("vocab").barriers);
            for d in 0..p as usize {
                prop_assert_eq!(live_peaks(&schedule, d), (i64::from(p) + 2 + 2 * barriers, 1), "{:?} p {} m {} device {}", fusion, p, m, d);
            }
        }
        let run = crate::run(FAMILY.name, &params(p, m)).expect("simulates");
        let want = f64::from(p + 4) / 2.0;
        for device in &run.timeline.devices {
            prop_assert!((device.peak_memory - want).abs() < 1e-9, "p {} m {}: peak {}", p, m, device.peak_memory);
        }
    }
}
