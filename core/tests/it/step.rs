//! The whole step's properties: with one replica, no TP and no ZeRO a step is the pipeline's
//! cost plus the optimizer, for every family; exposed DP time never exceeds the reduction and
//! is zero when the drain hides it.

use bubblescope::model::{Model, ModelSpec};
use bubblescope::step::{compose, StepSpec};
use bubblescope::{ScheduleParams, FAMILIES};
use proptest::prelude::*;

fn params(model: &Model, devices: u32, microbatches: u32) -> ScheduleParams {
    let derived = model.derive(devices).unwrap();
    ScheduleParams {
        costs: derived.costs(),
        units: bubblescope::Units::Model,
        ..ScheduleParams::new(devices, microbatches)
    }
}

#[test]
fn one_replica_without_tp_or_zero_is_the_pipeline_plus_the_optimizer_for_every_family() {
    let model = ModelSpec::preset("zb-1.5b").resolve().unwrap();
    let plan = StepSpec { zero: Some(0), ..StepSpec::default() }.resolve(&model, 4, 8).unwrap();
    let derived = model.derive(4).unwrap();
    let mut ran = 0;
    for family in FAMILIES {
        let p = params(&model, 4, 8);
        let Ok(analysis) = bubblescope::run(family.name, &p) else { continue };
        let step = compose(&model, &derived, &plan, &analysis, &[]).unwrap();
        let want = analysis.stats.cost + step.optimizer;
        assert!((step.time - want).abs() <= 1e-9 * want, "{}: {} vs {want}", family.name, step.time);
        assert_eq!((step.tp, step.dp), (0.0, 0.0), "{}", family.name);
        assert!(step.optimizer > 0.0 && step.pipeline == analysis.stats.cost, "{}", family.name);
        ran += 1;
    }
    assert!(ran >= 15, "only {ran} families ran at P = 4, M = 8");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn exposed_dp_never_exceeds_the_reduction_and_vanishes_when_the_drain_hides_it(
        devices in 2u32..6,
        microbatches in 2u32..12,
        dp in 1u32..64,
        zero in 0u32..3,
        tp in prop::sample::select(vec![1u32, 2, 4]),
        family in prop::sample::select(vec!["1f1b", "zb-h1", "zb-h2", "zb-v", "interleaved-1f1b", "gpipe"]),
    ) {
        let model = Model { tp, dp, ..ModelSpec::preset("zb-1.5b").resolve().unwrap() };
        let p = params(&model, devices, microbatches);
        let Ok(analysis) = bubblescope::run(family, &p) else { return Ok(()) };
        let derived = model.derive(devices).unwrap();
        let plan = StepSpec { zero: Some(zero), ..StepSpec::default() }
            .resolve(&model, devices, microbatches)
            .unwrap();
        let step = compose(&model, &derived, &plan, &analysis, &[]).unwrap();
        let end = analysis.timeline.end();
        let longest = step.reductions.iter().map(|r| r.end - r.start).fold(0.0, f64::max);
        // ZeRO-1/2 add the all-gather of the new weights after the optimizer: as long as the
        // reduce-scatter at most.
        let bound = if zero == 0 { longest } else { 2.0 * longest };
        prop_assert!(step.dp >= 0.0 && step.dp <= bound + 1e-9 * bound.max(1.0), "{} > {}", step.dp, bound);
        let hidden = step.reductions.iter().all(|r| r.end <= end);
        if hidden && zero == 0 {
            prop_assert_eq!(step.dp, 0.0);
        }
        if dp == 1 {
            prop_assert_eq!(step.dp, 0.0);
        }
        // Each device's reduction starts once its last weight gradient is done.
        for r in &step.reductions {
            prop_assert!(r.start <= end && r.end >= r.start);
        }
        let total = step.pipeline + step.tp + step.dp + step.optimizer;
        prop_assert!((step.time - total).abs() <= 1e-9 * total);
    }
}

#[test]
fn a_schedule_that_delays_w_delays_its_own_reduction() {
    // ZB-H2 pushes W to the tail; its devices start reducing later than 1F1B's, relative to
    // the pipeline's end (on the mean device: the last one ends the pipeline in both): the
    // drain hides less.
    let model = Model { dp: 64, ..ModelSpec::preset("zb-1.5b").resolve().unwrap() };
    let derived = model.derive(4).unwrap();
    let plan = StepSpec::default().resolve(&model, 4, 8).unwrap();
    let slack = |family: &str| {
        let a = bubblescope::run(family, &params(&model, 4, 8)).unwrap();
        let s = compose(&model, &derived, &plan, &a, &[]).unwrap();
        let end = a.timeline.end();
        s.reductions.iter().map(|r| end - r.start).sum::<f64>() / s.reductions.len() as f64
    };
    assert!(slack("zb-h2") < slack("1f1b"), "{} vs {}", slack("zb-h2"), slack("1f1b"));
}

#[test]
fn zero3_gathers_follow_the_chunk_order() {
    // One chunk per device: one gather per step. ZB-V alternates its two chunks: many more.
    let model = Model { dp: 8, ..ModelSpec::preset("zb-1.5b").resolve().unwrap() };
    let derived = model.derive(4).unwrap();
    let plan = StepSpec { zero: Some(3), ..StepSpec::default() }.resolve(&model, 4, 8).unwrap();
    let gathers = |family: &str| {
        let a = bubblescope::run(family, &params(&model, 4, 8)).unwrap();
        compose(&model, &derived, &plan, &a, &[]).unwrap().gathers.iter().map(|g| g.count).max().unwrap()
    };
    assert_eq!(gathers("1f1b"), 1);
    let v = gathers("zb-v");
    assert!(v > 8, "zb-v gathers {v} times");
}
