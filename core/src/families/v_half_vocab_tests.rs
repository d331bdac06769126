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
    Costs { comm: num(c, "comm"), vocab: Some(vocab), ..Costs::fbw(2.0 * num(c, "f"), 2.0 * num(c, "b"), 2.0 * num(c, "w")) }
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
