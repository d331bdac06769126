//! DualPipeV against PyTorch's test schedule, DeepSeek's table and Victarry's emulation.

use super::super::test_support::{params, DualPipeVariant};
use super::*;
use crate::schedule::{Pass, PassKind};
use crate::{run, validate, Analysis, Costs};

/// PyTorch's DualPipeV test artifact (P=4, M=10), read in place: it is not ours to copy.
const PYTORCH_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/pytorch");

/// DualPipeV for the tests shared with DualPipe: two chunks of half a share per device.
const VARIANT: DualPipeVariant = DualPipeVariant { chunks: 2, analyze, predict };

/// `crate::run` for DualPipeV, panicking with the case on an error.
fn analyze(devices: u32, microbatches: u32, costs: Costs) -> Analysis {
    run("dualpipe-v", &params(devices, microbatches, costs.clone()))
        .unwrap_or_else(|e| panic!("P={devices} M={microbatches} {costs:?}: {e}"))
}

/// One PyTorch action, `<stage><TYPE><mb>`: `F`, `I` (our B), `W`, `B` (our BW).
fn parse_action(cell: &str) -> Result<Pass, String> {
    let type_at = cell.find(|c: char| !c.is_ascii_digit()).ok_or_else(|| format!("no type in `{cell}`"))?;
    let mb_at = cell[type_at..]
        .find(|c: char| c.is_ascii_digit())
        .map(|i| type_at + i)
        .ok_or_else(|| format!("no microbatch in `{cell}`"))?;
    let number = |s: &str| s.parse::<u32>().map_err(|e| format!("`{s}` in `{cell}`: {e}"));
    let kind = match &cell[type_at..mb_at] {
        "F" => PassKind::F,
        "I" => PassKind::B,
        "W" => PassKind::W,
        "B" => PassKind::BW,
        other => return Err(format!("unknown action type `{other}` in `{cell}`")),
    };
    Ok(Pass::new(kind, number(&cell[..type_at])?, number(&cell[mb_at..])?))
}

/// PyTorch's compute-only CSV: one row per rank, one action per cell, `(a;b)OVERLAP_F_B` for
/// an overlapped pair, an empty cell for an idle slot.
fn parse_pytorch_csv(text: &str) -> Result<Vec<Vec<Op>>, String> {
    let rows = text.lines().filter(|line| !line.trim().is_empty());
    rows.map(|line| {
        let cells = line.split(',').map(str::trim).filter(|cell| !cell.is_empty());
        cells
            .map(|cell| match cell.strip_prefix('(').and_then(|c| c.strip_suffix(")OVERLAP_F_B")) {
                Some(inner) => match inner.split(';').collect::<Vec<_>>()[..] {
                    [forward, backward] => Ok(Op::Pair(parse_action(forward)?, parse_action(backward)?)),
                    _ => Err(format!("an overlap holds two actions, found `{cell}`")),
                },
                None => parse_action(cell).map(Op::One),
            })
            .collect()
    })
    .collect()
}

#[test]
fn the_parser_reads_every_action_kind_and_pairs() {
    let orders = parse_pytorch_csv("0F1,,7I0,7W0,(0F7;7B3)OVERLAP_F_B\n3F0\n").unwrap();
    assert_eq!(
        orders,
        vec![
            vec![
                Op::One(Pass::f(0, 1)),
                Op::One(Pass::b(7, 0)),
                Op::One(Pass::w(7, 0)),
                Op::Pair(Pass::f(0, 7), Pass::bw(7, 3)),
            ],
            vec![Op::One(Pass::f(3, 0))],
        ]
    );
    assert!(parse_pytorch_csv("0X1").unwrap_err().contains("unknown action type `X`"));
    assert!(parse_pytorch_csv("(0F1)OVERLAP_F_B").unwrap_err().contains("two actions"));
}

#[test]
fn matches_pytorchs_dualpipev_test_schedule_op_for_op() {
    if !std::path::Path::new(PYTORCH_DIR).is_dir() {
        println!("note: {PYTORCH_DIR} does not exist; skipping the PyTorch DualPipeV comparison");
        return;
    }
    let path = format!("{PYTORCH_DIR}/dualpipev_4rank_10mb.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let reference = parse_pytorch_csv(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut expected = Schedule::new(Placement::v_shape(4), 10);
    assert_eq!(reference.len(), 4, "one row per rank");
    expected.orders = reference;
    // The file's placement is ours: stage k on device k for k < 4, on device 7−k after.
    assert_eq!(validate(&expected), vec![], "PyTorch's schedule under our V placement");

    let generated = generate(&ScheduleParams::new(4, 10)).unwrap();
    for device in 0..4 {
        assert_eq!(generated.notation(device), expected.notation(device), "device {device}");
        assert_eq!(generated.orders[device as usize], expected.orders[device as usize], "device {device}");
    }
}

#[test]
fn validates_and_simulates_for_every_size() {
    for devices in 1..=16 {
        for microbatches in 2 * devices..=4 * devices {
            let analysis = analyze(devices, microbatches, Costs::default());
            let schedule = &analysis.schedule;
            assert_eq!(validate(schedule), vec![], "P={devices} M={microbatches}");
            for (device, order) in (0u32..).zip(&schedule.orders) {
                // Every pair overlaps a forward with the full backward of the device's other chunk.
                let pairs: Vec<(Pass, Pass)> = order
                    .iter()
                    .filter_map(|op| match *op {
                        Op::Pair(f, b) => Some((f, b)),
                        Op::One(_) => None,
                    })
                    .collect();
                assert!(pairs
                    .iter()
                    .all(|(f, b)| f.kind == PassKind::F && b.kind == PassKind::BW && f.stage != b.stage));
                // Step 4 runs 2(M−2P+d+1) pairs (one fewer on the last device), step 5 P−d−1.
                let expected = 2 * (microbatches + device + 1 - 2 * devices) + (devices - device - 1)
                    - u32::from(device + 1 == devices);
                assert_eq!(pairs.len() as u32, expected, "P={devices} M={microbatches} device {device}");
            }
        }
    }
}

#[test]
fn a_pair_takes_half_the_overlap_time_or_the_sum_of_its_passes() {
    VARIANT.assert_pair_times(3, 8);
}

#[test]
fn bubble_is_deepseeks_formula_on_the_least_busy_device() {
    // The least busy device is the last: it overlaps the most pairs.
    VARIANT.assert_deepseeks_bubble([1, 2, 3, 4, 5, 8, 12, 16], 1, |devices| devices as usize - 1);
}

#[test]
fn victarrys_emulation_check_holds() {
    // Victarry/PP-Schedule-Visualization formula.py: per-device F=2, D=2, W=2 (B=4), FwB=6,
    // per-stage times X/2; total − active(last rank) = (p−1)(FwB + B − 3W) in stage times.
    let costs = Costs { overlap: Some(6.0), ..Costs::fbw(2.0, 2.0, 2.0) };
    let (f, d, w, fwb) = (1.0, 1.0, 1.0, 3.0);
    let b = d + w;
    for p in 1..=16 {
        for m in 2 * p..=4 * p {
            let stats = analyze(p, m, costs.clone()).stats;
            let (pf, mf) = (f64::from(p), f64::from(m));
            let active = (2.0 * (mf - pf) - 1.0) * fwb + (2.0 * pf + 1.0) * (f + b);
            let total = (pf - 1.0) * f
                + 2.0 * pf * f
                + (2.0 * (mf - pf) - 1.0) * fwb
                + (pf - 1.0) * fwb
                + (2.0 * pf - 1.0) * d
                + w
                + 2.0 * b
                + f;
            let last = stats.per_device.last().unwrap();
            assert_eq!(last.busy, active, "p={p} m={m}");
            assert_eq!(stats.makespan, total, "p={p} m={m}");
            assert_eq!(stats.makespan - last.busy, (pf - 1.0) * (fwb + b - 3.0 * w), "p={p} m={m}");
        }
    }
    // The active-time count (2(m−p)−1 pairs on the last rank) holds whatever the pair gains.
    let gain = Costs { overlap: Some(5.0), ..costs.clone() };
    for (p, m) in [(1, 2), (4, 10), (7, 20)] {
        let stats = analyze(p, m, gain.clone()).stats;
        let active = (2.0 * f64::from(m - p) - 1.0) * 2.5 + (2.0 * f64::from(p) + 1.0) * (f + b);
        assert_eq!(stats.per_device.last().unwrap().busy, active, "p={p} m={m}");
    }
}

#[test]
fn every_device_peaks_at_pp_plus_one_chunk_activations() {
    // PP = 2P stages of 1/(2P) of the model: a chunk activation is mem-f/2.
    let sizes: Vec<(u32, u32)> = (1..=16).flat_map(|p| [2 * p, 3 * p, 4 * p].map(|m| (p, m))).collect();
    VARIANT.assert_peaks_at_pp_plus_one(&sizes);
}

#[test]
fn prediction_is_cost_minus_ideal_where_the_pairs_gain_nothing() {
    // DeepSeek's figure setting (F=1, B=2, W=1, F&B=3 per chunk): (PP/2−1)(3+2−3) = 2(P−1).
    let figure = VARIANT.per_chunk(1.0, 2.0, 1.0, 3.0);
    let prediction = predict(&params(4, 10, figure.clone())).unwrap();
    assert_eq!(prediction.bubble, Some(6.0));
    let stats = analyze(4, 10, figure.clone()).stats;
    assert_eq!((stats.cost, stats.ideal), (66.0, 60.0));

    let sizes: Vec<(u32, u32)> = [1, 2, 3, 6, 9, 16].into_iter().flat_map(|p| [(p, 2 * p), (p, 3 * p + 1)]).collect();
    VARIANT.assert_cost_minus_ideal_without_gain(&sizes);
}

#[test]
fn no_bubble_is_predicted_outside_the_formulas_domain() {
    VARIANT.assert_no_bubble_outside_the_domain((4, 7));
}

#[test]
fn rejects_too_few_microbatches() {
    let message =
        |devices, microbatches| generate(&ScheduleParams::new(devices, microbatches)).unwrap_err().to_string();
    assert_eq!(
        message(4, 7),
        "dualpipe-v needs at least 2·devices = 8 microbatches, found 7\n  hint: use 8 or more microbatches, or at most 3 devices"
    );
    assert_eq!(
        message(1, 1),
        "dualpipe-v needs at least 2·devices = 2 microbatches, found 1\n  hint: use 2 or more microbatches"
    );
    assert_eq!(generate(&ScheduleParams::new(4, 7)).unwrap_err().field, Field::Microbatches);
}

#[test]
fn with_overlap_gains_the_prediction_is_deepseeks_least_busy_idle() {
    VARIANT.assert_least_busy_idle_with_overlap_gains();
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(48))]

    /// In DeepSeek's domain (no communication, F = B, W ≤ F, B+W ≤ F&B ≤ F+B+W) the least busy
    /// device idles DeepSeek's bubble and every device holds PP+1 stage activations: the
    /// explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        half_devices in 1u32..6,
        extra in 0u32..6,
        (f, w_part, gain) in (0.1f64..4.0, 0.0f64..1.0, proptest::option::of(0.0f64..1.0)),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs};
        let devices = half_devices;
        let w = f * w_part;
        // F&B between the full backward and the sum of the three passes.
        let overlap = gain.map(|g| f + w + g * f);
        let costs = Costs { overlap, ..explained_costs(f, f, w, mem_f, mem_f * mem_w_part) };
        check_explained(&FAMILY, &params(devices, 2 * devices + extra, costs))?;
    }
}
