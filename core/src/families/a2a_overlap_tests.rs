//! Tests of `--a2a-overlap` (Megatron-Core's combined 1F1B) on 1f1b and interleaved-1f1b:
//! Megatron's own warm-up counts (the golden file `tests/golden/megatron-a2a-warmup.json`,
//! written by `tools/megatron_warmup.py` from Megatron's `get_pp_rank_microbatches`), the
//! pairs' timing by the one pair rule ([`StageCosts::op`]), memory, refusals and export.

use crate::error::{Field, Severity};
use crate::formats::{export, import, ExportOptions, Format, ImportOptions};
use crate::params::{CostProfile, Costs, ScheduleParams, StageCosts};
use crate::schedule::{Op, PassKind, Schedule};
use crate::{analyze, simulate, validate};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden/megatron-a2a-warmup.json");

/// The family's generator itself, past [`crate::Family::generate`]'s refusal of costs with no
/// all-to-all: the order does not depend on the costs.
fn orders(params: &ScheduleParams) -> Schedule {
    let chunks = params.chunks.unwrap_or(1);
    let family =
        if chunks == 1 && params.group.is_none() { super::FAMILY } else { crate::families::interleaved::FAMILY };
    (family.generate)(params).unwrap_or_else(|e| panic!("{params:?}: {e}"))
}

fn params(devices: u32, microbatches: u32, chunks: u32, group: Option<u32>, paired: bool) -> ScheduleParams {
    ScheduleParams {
        chunks: (chunks > 1).then_some(chunks),
        group: group.filter(|_| chunks > 1),
        a2a_overlap: paired,
        ..ScheduleParams::new(devices, microbatches)
    }
}

/// The lone forwards device `device` runs before its first op with a backward in it.
fn leading_forwards(schedule: &Schedule, device: u32) -> u64 {
    schedule.orders[device as usize].iter().take_while(|op| matches!(op, Op::One(p) if p.kind == PassKind::F)).count()
        as u64
}

fn assert_valid_and_simulates(schedule: &Schedule, costs: &Costs, case: &str) {
    let errors: Vec<_> = validate(schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
    assert!(errors.is_empty(), "{case}: {errors:?}");
    simulate(schedule, &StageCosts::for_schedule(costs, schedule)).unwrap_or_else(|e| panic!("{case}: {e}"));
}

/// The golden test: for every row of Megatron's table, the generator's warm-up on that rank,
/// read off its order, with and without the flag.
///
/// * Without the flag (all 215 rows): the 1F1B loop's first steady forward also runs before
///   the first backward, so the order starts with `min(warm-up + 1, total)` forwards.
/// * With the flag, interleaved (146 rows): the order starts with exactly Megatron's
///   `warmup_with` lone forwards, then pairs.
/// * With the flag, non-interleaved P > 1 (68 rows): Megatron refuses the flag (null in the
///   file); Bubblescope's extension warms up one more, `min(P − rank, M)`.
/// * With the flag, P = 1 (1 row): Megatron's function says 0, but it is never asked then:
///   `combined_1f1b_schedule_for_no_pipelining` runs microbatch 0's forward alone first, and
///   so does the generator (1 lone forward). This row cannot be compared with the function.
#[test]
fn warm_up_counts_equal_megatrons() {
    let text = std::fs::read_to_string(GOLDEN).expect("the golden file");
    let golden: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let rows = golden["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 215);
    let (mut megatron, mut refused, mut pp1) = (0, 0, 0);
    let int = |row: &serde_json::Value, key: &str| row[key].as_u64().unwrap_or_else(|| panic!("{key} in {row}"));
    for row in rows {
        let (pp, vpp, m, group, rank) =
            (int(row, "pp"), int(row, "vpp"), int(row, "microbatches"), int(row, "group"), int(row, "rank"));
        let total = int(row, "total_microbatches");
        let group = (vpp > 1).then_some(group as u32);
        let case = format!("pp {pp} vpp {vpp} M {m} group {group:?} rank {rank}");
        let plain = orders(&params(pp as u32, m as u32, vpp as u32, group, false));
        let paired = orders(&params(pp as u32, m as u32, vpp as u32, group, true));
        assert_eq!(leading_forwards(&plain, rank as u32), (int(row, "warmup_without") + 1).min(total), "{case}");
        let with = leading_forwards(&paired, rank as u32);
        match row["warmup_with"].as_u64() {
            Some(_) if pp == 1 => {
                assert_eq!(with, 1, "{case}");
                pp1 += 1;
            }
            Some(want) => {
                assert_eq!(with, want, "{case}");
                megatron += 1;
            }
            None => {
                assert!(row["megatron_refuses_with_flag"].as_bool().unwrap(), "{case}");
                assert_eq!(with, (pp - rank).min(m), "{case}");
                refused += 1;
            }
        }
        // After the warm-up, pairs until the forwards run out, then lone backwards.
        let order = &paired.orders[rank as usize];
        let pairs = order.iter().filter(|op| op.is_pair()).count() as u64;
        assert_eq!(pairs, total - with, "{case}");
        assert_valid_and_simulates(&paired, &Costs::default(), &case);
    }
    assert_eq!((megatron, refused, pp1), (146, 68, 1));
}

/// Costs with an all-to-all inside every forward and input gradient: `f`, `b`, `w` per device
/// share and all-to-all `a2a_f`, `a2a_b`.
fn moe_costs(devices: u32, [f, b, w]: [f64; 3], [a2a_f, a2a_b]: [f64; 2]) -> Costs {
    let n = devices as usize;
    let mut profile = CostProfile::uniform(&Costs::fbw(f, b, w), n);
    profile.a2a_f = vec![a2a_f; n];
    profile.a2a_b = vec![a2a_b; n];
    Costs::fbw(f, b, w).with_profile(profile, devices)
}

/// Every size the property tests run: (devices, microbatches, chunks).
fn sizes() -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for p in 1..=5 {
        for m in 1..=10 {
            out.push((p, m, 1));
            for v in 2..=3 {
                // Megatron's default group P needs M to be a multiple of P.
                if m % p == 0 {
                    out.push((p, m, v));
                }
            }
        }
    }
    out
}

#[test]
fn with_no_all_to_all_pairs_take_f_plus_b_and_the_ideal_is_the_plain_ones() {
    let costs = Costs { comm: 0.25, ..Costs::fbw(1.0, 1.5, 0.5) };
    for (p, m, v) in sizes() {
        let case = format!("P {p} M {m} V {v}");
        let plain = analyze(orders(&params(p, m, v, None, false)), &costs).unwrap();
        let paired = analyze(orders(&params(p, m, v, None, true)), &costs).unwrap();
        // Pairs count as work once, at the sum of their passes: the same ideal.
        assert!((paired.stats.ideal - plain.stats.ideal).abs() < 1e-9, "{case}");
        assert!(paired.stats.cost >= plain.stats.ideal - 1e-9, "{case}");
        let stage = StageCosts::for_schedule(&costs, &paired.schedule);
        for (d, order) in paired.schedule.orders.iter().enumerate() {
            for (i, op) in order.iter().enumerate() {
                if let Op::Pair(f, b) = *op {
                    let t = &paired.timeline.devices[d].ops[i];
                    let sum = stage.pass(f) + stage.pass(b);
                    assert!((t.end - t.start - sum).abs() < 1e-9, "{case}: {op}");
                }
            }
        }
    }
}

#[test]
fn with_the_all_to_all_pairs_are_no_slower_and_hide_it() {
    for (f, b, w, af, ab) in [(1.0, 1.0, 1.0, 0.3, 0.3), (2.0, 3.0, 1.0, 1.5, 2.5), (1.0, 2.0, 0.0, 1.0, 2.0)] {
        for (p, m, v) in sizes() {
            let costs = moe_costs(p, [f, b, w], [af, ab]);
            let case = format!("P {p} M {m} V {v} costs {f} {b} {w} a2a {af} {ab}");
            let plain = analyze(orders(&params(p, m, v, None, false)), &costs).unwrap();
            let paired = analyze(orders(&params(p, m, v, None, true)), &costs).unwrap();
            let stage = StageCosts::for_schedule(&costs, &paired.schedule);
            for (d, order) in paired.schedule.orders.iter().enumerate() {
                for (i, op) in order.iter().enumerate() {
                    if let Op::Pair(fw, bw) = *op {
                        let t = &paired.timeline.devices[d].ops[i];
                        // The one pair rule: the longer of its compute and its all-to-all.
                        let [a, c] = stage.a2a[fw.stage as usize];
                        let sum = stage.pass(fw) + stage.pass(bw);
                        let rule = (sum - a - c).max(a + c);
                        assert!((t.end - t.start - rule).abs() < 1e-9, "{case}: {op}");
                        assert!(t.end - t.start <= sum + 1e-9, "{case}: {op}");
                    }
                }
            }
            // The steady state does no more work on any device: each pair takes at most its
            // passes' sum.
            for (a, b) in paired.stats.per_device.iter().zip(&plain.stats.per_device) {
                assert!(a.work <= b.work + 1e-9, "{case}");
            }
            assert!(paired.stats.ideal <= plain.stats.ideal + 1e-9, "{case}");
        }
    }
}

/// A pair's forward allocates while its backward still holds: combined 1F1B holds one
/// microbatch more than 1F1B on every device that reaches its steady state.
#[test]
fn a_paired_forward_holds_its_activation() {
    for p in 1..=6 {
        for m in 1..=10 {
            let costs = Costs::fbw(1.0, 1.0, 1.0);
            let paired = analyze(orders(&params(p, m, 1, None, true)), &costs).unwrap();
            let plain = analyze(orders(&params(p, m, 1, None, false)), &costs).unwrap();
            for d in 0..p {
                let peak = paired.timeline.devices[d as usize].peak_memory;
                assert_eq!(peak, f64::from((p - d + 1).min(m)), "P {p} M {m} device {d}");
                let before = plain.timeline.devices[d as usize].peak_memory;
                assert_eq!(before, f64::from((p - d).min(m)), "P {p} M {m} device {d}");
            }
        }
    }
}

#[test]
fn the_flag_is_refused_on_dense_costs_and_on_families_that_cannot_pair() {
    let dense = ScheduleParams { a2a_overlap: true, ..ScheduleParams::new(4, 8) };
    for family in ["1f1b", "interleaved-1f1b"] {
        let e = crate::generate(family, &dense).unwrap_err();
        assert_eq!(e.field, Field::A2aOverlap, "{family}");
        assert!(e.message.contains("dense") && !e.hints.is_empty(), "{family}: {e}");
        let moe = ScheduleParams { costs: moe_costs(4, [1.0, 1.0, 1.0], [0.5, 0.5]), ..dense.clone() };
        let s = crate::generate(family, &moe).unwrap();
        assert!(s.orders.iter().flatten().any(Op::is_pair), "{family}");
    }
    let moe = ScheduleParams { costs: moe_costs(4, [1.0, 1.0, 1.0], [0.5, 0.5]), ..dense };
    for family in ["gpipe", "zb-h1", "looped-bfs", "dualpipe", "zb-v"] {
        let e = crate::generate(family, &moe).unwrap_err();
        assert_eq!(e.field, Field::A2aOverlap, "{family}");
        assert!(e.message.contains("cannot take --a2a-overlap"), "{family}: {e}");
        assert!(e.hints.iter().any(|h| h.contains("-s 1f1b or -s interleaved-1f1b")), "{family}: {e}");
    }
}

#[test]
fn pairs_export_as_overlap_f_b_and_read_back_equal() {
    for (p, m, v) in [(4, 8, 1), (4, 8, 2), (2, 6, 3), (1, 3, 1)] {
        let schedule = orders(&params(p, m, v, None, true));
        for format in [Format::PytorchCsv, Format::PytorchCsvComms, Format::Json] {
            let text = export(&schedule, None, format, &ExportOptions::default()).unwrap();
            if format != Format::Json && p > 1 {
                assert!(text.contains(")OVERLAP_F_B"), "{format:?}");
            }
            let back = import(&text, format, &ImportOptions::default());
            assert!(!back.has_errors(), "{format:?}: {:?}", back.diagnostics);
            let back = back.schedule.expect("a schedule");
            let compute = |s: &Schedule| -> Vec<Vec<Op>> { s.orders.clone() };
            assert_eq!(compute(&back), compute(&schedule), "P {p} M {m} V {v} {format:?}");
        }
    }
    // The cell PyTorch reads: `(xFy;uBv)OVERLAP_F_B`, stage 3's forward of microbatch 1 with its
    // full backward of microbatch 0 on the last device of 1F1B at P = 4.
    let csv =
        export(&orders(&params(4, 8, 1, None, true)), None, Format::PytorchCsv, &ExportOptions::default()).unwrap();
    assert!(csv.contains("(3F1;3B0)OVERLAP_F_B"), "{csv}");
}

/// The whole step: interleaved (V ≥ 2, where Megatron runs combined 1F1B) and P = 1 are never
/// slower paired, at equal stages and no communication, with or without an all-to-all. Plain
/// 1F1B with P > 1, Bubblescope's extension, is slower once M ≥ 2P: device d's pair with
/// backward k waits for device d+1's pair with backward k, so each step walks the whole
/// pipeline (why Megatron refuses the flag without a virtual pipeline).
#[test]
fn paired_interleaving_is_no_slower_and_paired_plain_1f1b_chains_the_devices() {
    for (f, b, w, af, ab) in
        [(1.0, 1.0, 1.0, 0.3, 0.3), (2.0, 3.0, 1.0, 1.5, 2.5), (1.0, 2.0, 0.0, 1.0, 2.0), (1.0, 1.0, 1.0, 0.0, 0.0)]
    {
        for (p, m, v) in sizes() {
            let costs = moe_costs(p, [f, b, w], [af, ab]);
            let case = format!("P {p} M {m} V {v} a2a {af} {ab}");
            let plain = analyze(orders(&params(p, m, v, None, false)), &costs).unwrap();
            let paired = analyze(orders(&params(p, m, v, None, true)), &costs).unwrap();
            if v > 1 || p == 1 {
                assert!(paired.stats.cost <= plain.stats.cost + 1e-9, "{case}");
            } else if m >= 2 * p {
                assert!(paired.stats.cost > plain.stats.cost, "{case}");
            }
        }
    }
}
