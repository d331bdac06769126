//! DualPipe against a trace of DeepSeek's `step()`, their figure, their table and their memory
//! promise.

use super::super::test_support::{params, DualPipeVariant};
use super::super::BubbleQuantity;
use super::*;
use crate::error::Diagnostic;
use crate::schedule::{Pass, PassKind};
use crate::stats::stats;
use crate::{simulate, validate, Analysis, Costs, StageCosts};

/// DualPipe for the tests shared with DualPipeV: a stage is a device's whole share.
const VARIANT: DualPipeVariant = DualPipeVariant { chunks: 1, analyze, predict };

/// Validates each pipeline of a two-directional schedule on its own share of microbatches.
///
/// `crate::validate` asks every stage for all `M` microbatches, while each DualPipe pipeline
/// runs only its share ([`Placement::pipeline_microbatches`]). Until the engine's validator
/// knows about shares, each pipeline is cut out as a schedule of its own (stages renumbered
/// from 0, microbatches from the start of its share, so one outside the share is out of range)
/// and checked by `crate::validate`.
fn validate_each_pipeline(schedule: &Schedule) -> Vec<Diagnostic> {
    let placement = &schedule.placement;
    let per_pipeline = placement.stages_per_pipeline();
    let mut problems = Vec::new();
    for pipeline in 0..placement.pipelines() {
        let stages = pipeline * per_pipeline..(pipeline + 1) * per_pipeline;
        let share = placement.pipeline_microbatches(pipeline, schedule.microbatches);
        let stage_devices = placement.stage_devices()[stages.start as usize..stages.end as usize].to_vec();
        let mut view = Schedule::new(Placement::custom(placement.devices(), stage_devices), share.end - share.start);
        for (device, order) in (0u32..).zip(&schedule.orders) {
            for pass in order.iter().flat_map(Op::passes).filter(|p| stages.contains(&p.stage)) {
                let stage = pass.stage - stages.start;
                view.push(device, Pass { stage, microbatch: pass.microbatch.wrapping_sub(share.start), ..pass });
            }
        }
        problems.extend(validate(&view));
    }
    problems
}

/// `crate::run` for DualPipe, with [`validate_each_pipeline`] in place of `crate::validate`.
fn analyze(devices: u32, microbatches: u32, costs: Costs) -> Analysis {
    let case = format!("P={devices} M={microbatches} {costs:?}");
    let schedule = generate(&params(devices, microbatches, costs.clone())).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert_eq!(validate_each_pipeline(&schedule), vec![], "{case}");
    let timeline =
        simulate(&schedule, &StageCosts::for_schedule(&costs, &schedule)).unwrap_or_else(|e| panic!("{case}: {e}"));
    let stats = stats(&schedule, &timeline, &costs);
    Analysis { schedule, timeline, stats, times: None }
}

#[test]
fn follows_a_hand_trace_of_deepseeks_step_for_four_devices() {
    // dualpipe.py step() with num_ranks=4, num_chunks=8, traced by hand. Upper case is
    // pipeline 0 (microbatches 0–3, the lower stage id on every device), lower case pipeline 1.
    let expected = [
        "F0 F1 F2 f4 b4 w4 f5 [F3 x5] [f6 X0] x6 [f7 X1] x7 B2 W2 B3 W3",
        "F0 f4 F1 f5 F2 x4 [f6 X0] [F3 x5] [f7 X1] x6 X2 b7 B3 w7 W3",
        "f4 F0 f5 F1 f6 X0 [F2 x4] [f7 X1] [F3 x5] X2 x6 B3 b7 W3 w7",
        "f4 f5 f6 F0 B0 W0 F1 [f7 X1] [F2 x4] X2 [F3 x5] X3 b6 w6 b7 w7",
    ];
    let schedule = generate(&ScheduleParams::new(4, 8)).unwrap();
    for (device, line) in (0u32..).zip(expected) {
        assert_eq!(schedule.notation(device), line, "device {device}");
    }
}

#[test]
fn validates_and_simulates_for_every_size() {
    for devices in (2..=16).step_by(2) {
        for microbatches in (2 * devices..=4 * devices).step_by(2) {
            let analysis = analyze(devices, microbatches, Costs::default());
            let (half_ranks, per_direction) = (devices / 2, microbatches / 2);
            for (device, order) in (0u32..).zip(&analysis.schedule.orders) {
                let half_rank = device.min(devices - 1 - device);
                let case = format!("P={devices} M={microbatches} device {device}");
                let passes: Vec<Pass> = order.iter().flat_map(Op::passes).collect();
                let count = |kind| passes.iter().filter(|p| p.kind == kind).count() as u32;
                // Both stages run their direction's M/2 microbatches; steps 3, 6 and 7 split
                // 2H−h−1 backwards.
                assert_eq!(count(PassKind::F), 2 * per_direction, "{case}");
                assert_eq!(count(PassKind::B), 2 * half_ranks - half_rank - 1, "{case}");
                assert_eq!(count(PassKind::W), count(PassKind::B), "{case}");
                let pairs: Vec<&Op> = order.iter().filter(|op| op.is_pair()).collect();
                assert!(pairs
                    .iter()
                    .all(|op| matches!(op, Op::Pair(f, b) if f.kind == PassKind::F && b.kind == PassKind::BW)));
                // Step 4: 2(M/2−P+h+1) pairs, one fewer on the middle devices; step 5: H−h−1.
                let middle = u32::from(half_rank + 1 == half_ranks);
                let expected = 2 * (per_direction + half_rank + 1 - devices) + (half_ranks - half_rank - 1) - middle;
                assert_eq!(pairs.len() as u32, expected, "{case}");
            }
        }
    }
}

#[test]
fn reproduces_deepseeks_figure_of_8_devices_and_20_microbatches() {
    // The figure's costs per chunk: F=1, B=2 (full), W=1, F&B=3.
    let costs = VARIANT.per_chunk(1.0, 2.0, 1.0, 3.0);
    let stats = analyze(8, 20, costs.clone()).stats;
    let deepseek = (8.0 / 2.0 - 1.0) * (3.0 + 2.0 - 3.0 * 1.0);
    assert_eq!(deepseek, 6.0);
    assert_eq!(BubbleQuantity::LeastBusyIdle.of(&stats), deepseek);
    // F&B = F+B here, so no device gains from overlap and the bubble is also cost − ideal.
    assert_eq!((stats.cost, stats.ideal), (66.0, 60.0));
    assert_eq!(stats.bubble_rate, 6.0 / 66.0);
    assert_eq!(predict(&params(8, 20, costs.clone())).unwrap().bubble, Some(deepseek));
}

#[test]
fn a_pair_takes_the_overlap_time_or_the_sum_of_its_passes() {
    VARIANT.assert_pair_times(4, 10);
}

#[test]
fn bubble_is_deepseeks_formula_on_the_least_busy_device() {
    // The least busy devices are the middle ones: they overlap the most pairs.
    VARIANT.assert_deepseeks_bubble((2..=16).step_by(2), 2, |devices| devices as usize / 2);
}

#[test]
fn every_device_peaks_at_pp_plus_one_stage_activations() {
    // PP = P stages per pipeline, each 1/P of the model: a stage activation is mem-f.
    let sizes: Vec<(u32, u32)> = (2..=16).step_by(2).flat_map(|p| [2 * p, 2 * p + 2, 4 * p].map(|m| (p, m))).collect();
    VARIANT.assert_peaks_at_pp_plus_one(&sizes);
}

#[test]
fn prediction_is_cost_minus_ideal_where_the_pairs_gain_nothing() {
    let sizes: Vec<(u32, u32)> = [2, 4, 6, 10, 16].into_iter().flat_map(|p| [(p, 2 * p), (p, 2 * p + 6)]).collect();
    VARIANT.assert_cost_minus_ideal_without_gain(&sizes);
    // On two devices there is no bubble, whatever the costs.
    let stats = analyze(2, 8, Costs::fbw(1.0, 3.0, 2.0)).stats;
    assert_eq!(stats.cost - stats.ideal, 0.0);
    assert_eq!(predict(&params(2, 8, Costs::fbw(1.0, 3.0, 2.0))).unwrap().bubble, Some(0.0));
}

#[test]
fn no_bubble_is_predicted_outside_the_formulas_domain() {
    VARIANT.assert_no_bubble_outside_the_domain((5, 10));
}

#[test]
fn rejects_parameters_the_reference_asserts_against() {
    let cases = [
        (5, 20, "dualpipe needs an even number of devices, found 5\n  hint: the two directions meet in the middle of the devices: use 4 or 6 devices"),
        (1, 20, "dualpipe needs an even number of devices, found 1\n  hint: the two directions meet in the middle of the devices: use 2 devices"),
        (4, 6, "dualpipe needs at least 2·devices = 8 microbatches, found 6\n  hint: use 8 or more microbatches, or at most 2 devices"),
        (2, 3, "dualpipe needs at least 2·devices = 4 microbatches, found 3\n  hint: use 4 or more microbatches"),
        (4, 9, "dualpipe needs an even number of microbatches, found 9\n  hint: each direction runs half of them: use 8 or 10 microbatches"),
    ];
    for (devices, microbatches, message) in cases {
        assert_eq!(generate(&ScheduleParams::new(devices, microbatches)).unwrap_err().to_string(), message);
    }
    assert_eq!(generate(&ScheduleParams::new(5, 20)).unwrap_err().field, Field::Devices);
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
        half_devices in 1u32..5,
        extra in 0u32..6,
        (f, w_part, gain) in (0.1f64..4.0, 0.0f64..1.0, proptest::option::of(0.0f64..1.0)),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs};
        let devices = 2 * half_devices;
        let w = f * w_part;
        // F&B between the full backward and the sum of the three passes.
        let overlap = gain.map(|g| f + w + g * f);
        let costs = Costs { overlap, ..explained_costs(f, f, w, mem_f, mem_f * mem_w_part) };
        check_explained(&FAMILY, &params(devices, 2 * devices + 2 * extra, costs))?;
    }
}
