//! Tests of the vocabulary-parallel families against the authors' code: the goldens in
//! `tests/golden/vocab/` (`tools/vocab_golden.py` runs their loops and graph passes outside
//! this repository; its README explains the grid and the tokens), and the memory counts of the
//! paper as a property over P and M.

use proptest::prelude::*;
use serde_json::Value;

use super::Family;
use crate::params::{Costs, ScheduleParams, VocabCosts};
use crate::schedule::{Op, PassKind, Schedule};

const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden/vocab");

fn golden(name: &str) -> Value {
    let path = format!("{GOLDEN_DIR}/{name}.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// The parameters of a 1F1B golden case: its f and b (the fused backward) for the machine, its
/// input layer's forward as the authors' `c`, and its S.
fn params_1f1b(case: &Value) -> ScheduleParams {
    let costs = &case["costs"];
    let (f, b, c, s) = if costs.is_null() {
        (1.0, 2.0, 0.0, 0.5) // interlaced reads no costs
    } else if costs.get("f").is_some() {
        (num(costs, "f"), num(costs, "b"), num(costs, "input_f"), num(costs, "s"))
    } else {
        (1.0, 2.0, 0.0, 0.0) // the loop's own defaults before profiling
    };
    let p = num(case, "devices") as u32;
    let m = num(case, "microbatches") as u32;
    let vocab = VocabCosts { s, t: 2.0 * s, input_f: c, input_b: c, reduce: 0.0 };
    ScheduleParams::new(p, m).with_costs(Costs { vocab: Some(vocab), ..Costs::fbw(f, b, 0.0) })
}

/// A device's compute passes in the goldens' tokens (`F3`, `B3`, `S3`, `T3`, `IF3`, `IB3`).
fn tokens(schedule: &Schedule, device: usize) -> String {
    let mut out = Vec::new();
    for pass in schedule.orders[device].iter().flat_map(Op::passes) {
        let kind = match pass.kind {
            PassKind::BW | PassKind::B => "B",
            k => k.name(),
        };
        out.push(format!("{kind}{}", pass.microbatch));
    }
    out.join(" ")
}

/// The golden's passes without the loss (part of the last stage's B here).
fn golden_passes(text: &str) -> String {
    text.split(' ').filter(|t| !t.starts_with("LOSS")).collect::<Vec<_>>().join(" ")
}

/// Checks every case of a 1F1B family's golden: an order where the authors' loop runs
/// cleanly, a refusal where it raises or runs inconsistently. Returns the number of orders
/// compared.
fn check_1f1b(family: &Family, file: &str) -> usize {
    let data = golden(file);
    let cases = data["cases"].as_array().expect("cases");
    let by_name = |name: &str| cases.iter().find(|c| c["name"] == name).expect("order_of names a case");
    let mut compared = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let result = family.generate(&params_1f1b(case));
        let runnable = case["runnable"].as_bool() == Some(true);
        if !runnable {
            let e = result
                .err()
                .unwrap_or_else(|| panic!("{file} {name}: the authors' code refuses or hangs, we generate"));
            let text = e.to_string();
            assert!(!text.is_empty() && text.contains("hint:"), "{file} {name}: {text}");
            continue;
        }
        let schedule = result.unwrap_or_else(|e| panic!("{file} {name}: {e}"));
        let source = case.get("order_of").and_then(Value::as_str).map_or(case, by_name);
        let passes = source["passes"].as_array().expect("passes");
        for (rank, want) in passes.iter().enumerate() {
            let want = golden_passes(want.as_str().expect("passes text"));
            assert_eq!(tokens(&schedule, rank), want, "{file} {name} rank {rank}");
        }
        compared += 1;
    }
    compared
}

#[test]
fn vocab_1_orders_equal_the_authors_loop_over_the_golden_grid() {
    assert_eq!(check_1f1b(&super::vocab_1::FAMILY, "vocab-1"), 88);
}

#[test]
fn vocab_2_orders_equal_the_authors_loop_over_the_golden_grid() {
    assert_eq!(check_1f1b(&super::vocab_2::FAMILY, "vocab-2"), 99);
}

#[test]
fn interlaced_orders_equal_the_authors_loop_over_the_golden_grid() {
    assert_eq!(check_1f1b(&super::interlaced_vocab::FAMILY, "interlaced-vocab"), 8);
}

/// The peak of F − B (transformer activations, in microbatches) over device `d`'s order.
fn live_peak(schedule: &Schedule, d: usize) -> i64 {
    let (mut live, mut peak) = (0i64, 0i64);
    for pass in schedule.orders[d].iter().flat_map(Op::passes) {
        match pass.kind {
            PassKind::F => live += 1,
            PassKind::B | PassKind::BW => live -= 1,
            _ => {}
        }
        peak = peak.max(live);
    }
    peak
}

fn vocab_params(p: u32, m: u32) -> ScheduleParams {
    let vocab = VocabCosts::output(0.5, 1.0, 0.0);
    ScheduleParams::new(p, m).with_costs(Costs { vocab: Some(vocab), ..Costs::fbw(1.0, 1.0, 1.0) })
}

proptest! {
    #![proptest_config(crate::proptest_cases(48))]

    /// Vocab-1 holds p + 2 microbatches of activation on rank 0, Vocab-2 p + 1 (rank r: one
    /// fewer per rank), with equal stages; the simulator's peak memory says the same.
    #[test]
    fn memory_counts_are_p_plus_two_and_p_plus_one(p in 2u32..9, extra in 2u32..20) {
        for (family, more) in [(&super::vocab_1::FAMILY, 2), (&super::vocab_2::FAMILY, 1)] {
            let m = p + more + extra;
            let params = vocab_params(p, m);
            let schedule = family.generate(&params).expect("runs");
            for d in 0..p {
                prop_assert_eq!(live_peak(&schedule, d as usize), i64::from(p + more - d), "{} p {} m {} rank {}", family.name, p, m, d);
            }
            let run = crate::run(family.name, &params).expect("simulates");
            let peak0 = run.timeline.devices[0].peak_memory;
            prop_assert!((peak0 - f64::from(p + more)).abs() < 1e-9, "{} simulated peak {}", family.name, peak0);
        }
    }

    /// The interlaced schedule holds 1.5p on rank 0 (⌊3p/2⌋ − r on rank r), even p.
    #[test]
    fn interlaced_memory_count_is_one_and_a_half_p(half in 1u32..5, extra in 1u32..20) {
        let p = 2 * half;
        let m = 3 * half + extra;
        let family = &super::interlaced_vocab::FAMILY;
        let schedule = family.generate(&vocab_params(p, m)).expect("runs");
        for d in 0..p {
            prop_assert_eq!(live_peak(&schedule, d as usize), i64::from(3 * half - d), "p {} m {} rank {}", p, m, d);
        }
        let run = crate::run(family.name, &vocab_params(p, m)).expect("simulates");
        prop_assert!((run.timeline.devices[0].peak_memory - f64::from(3 * half)).abs() < 1e-9);
    }

    /// 1F1B, the baseline the paper compares with: p on rank 0.
    #[test]
    fn one_f_one_b_memory_count_is_p(p in 2u32..9, extra in 0u32..20) {
        let schedule = super::one_f_one_b::one_f_one_b(p, p + extra);
        for d in 0..p {
            prop_assert_eq!(live_peak(&schedule, d as usize), i64::from(p - d));
        }
    }
}
