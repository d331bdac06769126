//! Test helpers shared by the families' test files, kept once here.

use std::ops::RangeInclusive;

use super::{BubbleQuantity, Prediction};
use crate::error::{Field, Severity};
use crate::params::{Costs, ScheduleParams};
use crate::registry::generate;
use crate::schedule::Schedule;
use crate::{simulate, validate, Analysis, StageCosts};

/// `devices` and `microbatches` at `costs`.
pub(crate) fn params(devices: u32, microbatches: u32, costs: Costs) -> ScheduleParams {
    ScheduleParams::new(devices, microbatches).with_costs(costs)
}

/// Asserts `schedule` validates without errors and simulates at `costs`; `case` names it in
/// the failure.
pub(crate) fn assert_valid_and_simulates(schedule: &Schedule, costs: &Costs, case: &str) {
    let errors: Vec<_> = validate(schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
    assert!(errors.is_empty(), "{case}: {errors:?}");
    simulate(schedule, &StageCosts::for_schedule(costs, schedule)).unwrap_or_else(|e| panic!("{case}: {e}"));
}

/// Over `devices`, `microbatches(devices)` and every value in `values` of the count option
/// `field` (chunks, waves or sequence splits), each of `families` generates a schedule that
/// validates and simulates at `costs`. Sizes a family rejects are skipped, unless
/// `all_accepted`: then rejecting one fails.
pub(crate) fn assert_sizes_validate_and_simulate(
    families: &[&str],
    (field, values): (Field, RangeInclusive<u32>),
    costs: &Costs,
    devices: RangeInclusive<u32>,
    microbatches: fn(u32) -> RangeInclusive<u32>,
    all_accepted: bool,
) {
    for d in devices {
        for m in microbatches(d) {
            for value in values.clone() {
                let mut p = params(d, m, costs.clone());
                match field {
                    Field::Chunks => p.chunks = Some(value),
                    Field::Waves => p.waves = Some(value),
                    Field::SeqSplits => p.seq_splits = Some(value),
                    _ => panic!("{field:?} is not a count option"),
                }
                for family in families {
                    let case = format!("{family} {p:?}");
                    match generate(family, &p) {
                        Ok(schedule) => assert_valid_and_simulates(&schedule, costs, &case),
                        Err(e) => assert!(!all_accepted, "{case}: {e}"),
                    }
                }
            }
        }
    }
}

/// What the DualPipe and DualPipeV tests need to know of their family to check DeepSeek's
/// formulas against the simulator.
#[derive(Clone, Copy)]
pub(crate) struct DualPipeVariant {
    /// Stages per device: 1 for DualPipe (a stage is a device's whole share), 2 for DualPipeV
    /// (two chunks of half a share).
    pub chunks: u32,
    /// Generates, checks and simulates the family at `(devices, microbatches, costs)`.
    pub analyze: fn(u32, u32, Costs) -> Analysis,
    /// The family's closed form.
    pub predict: fn(&ScheduleParams) -> Option<Prediction>,
}

impl DualPipeVariant {
    /// DeepSeek's per-chunk costs (B the full backward) as CLI costs: every time scaled by the
    /// chunks per device, with B split into our b + w.
    pub fn per_chunk(self, forward: f64, full_backward: f64, weight: f64, overlap: f64) -> Costs {
        let k = f64::from(self.chunks);
        Costs { overlap: Some(k * overlap), ..Costs::fbw(k * forward, k * (full_backward - weight), k * weight) }
    }

    /// A pair takes the F&B time when one is given, else the sum of its passes: per chunk, so
    /// a device's share divided by the chunks.
    pub fn assert_pair_times(self, devices: u32, microbatches: u32) {
        let k = f64::from(self.chunks);
        for (overlap, expected) in [(Some(5.0), 5.0 / k), (None, 6.0 / k)] {
            let analysis = (self.analyze)(devices, microbatches, Costs { overlap, ..Costs::fbw(2.0, 3.0, 1.0) });
            for (order, times) in analysis.schedule.orders.iter().zip(&analysis.timeline.devices) {
                for (op, time) in order.iter().zip(&times.ops) {
                    if op.is_pair() {
                        assert_eq!(time.end - time.start, expected, "{op}");
                    }
                }
            }
        }
    }

    /// Over the sizes given, whatever mem-w, every device peaks at DeepSeek's promise of
    /// `PP + 1` stage activations (`PP = chunks · P` stages of `mem-f / chunks` each), ends
    /// with no memory held, and the prediction says so.
    pub fn assert_peaks_at_pp_plus_one(self, sizes: &[(u32, u32)]) {
        for &(devices, microbatches) in sizes {
            for mem_w in [None, Some(0.0), Some(1.0)] {
                let costs = Costs { mem_w, ..Costs::default() };
                let analysis = (self.analyze)(devices, microbatches, costs.clone());
                let stage = costs.mem_f / f64::from(self.chunks);
                let promise = f64::from(self.chunks * devices + 1) * stage;
                let case = format!("P={devices} M={microbatches} mem-w={mem_w:?}");
                for (device, timeline) in analysis.timeline.devices.iter().enumerate() {
                    assert_eq!(timeline.peak_memory, promise, "{case} device {device}");
                    assert_eq!(timeline.memory.last().map(|m| m.value), Some(0.0), "{case} device {device}");
                }
                let predicted = (self.predict)(&params(devices, microbatches, costs)).unwrap().peak_memory;
                assert_eq!(predicted, Some(vec![promise; devices as usize]), "{case}");
            }
        }
    }

    /// DeepSeek's bubble `(PP/2 − 1)(F&B + B − 3W)` in per-chunk costs, with `PP` the stages
    /// per pipeline (`chunks · P`).
    pub fn deepseek_bubble(self, devices: u32, full_backward: f64, weight: f64, overlap: f64) -> f64 {
        let pp = f64::from(self.chunks * devices);
        (pp / 2.0 - 1.0) * (overlap + full_backward - 3.0 * weight)
    }

    /// For each of `devices` at 2P, 2P + `step` (the next microbatch count the family takes),
    /// 3P and 4P microbatches, and costs in DeepSeek's domain (F = B−W, W ≤ F, B ≤ F&B ≤ F+B),
    /// the simulated idle time of the least busy device is DeepSeek's formula, and that device
    /// is the one `least_busy` names for the device count.
    pub fn assert_deepseeks_bubble(
        self,
        devices: impl IntoIterator<Item = u32>,
        step: u32,
        least_busy: fn(u32) -> usize,
    ) {
        let sizes: Vec<(u32, u32)> =
            devices.into_iter().flat_map(|p| [2 * p, 2 * p + step, 3 * p, 4 * p].map(|m| (p, m))).collect();
        let chunk_costs = [
            (1.0, 2.0, 1.0, 3.0),
            (1.0, 2.0, 1.0, 2.0),
            (1.0, 2.0, 1.0, 2.5),
            (2.0, 3.0, 1.0, 3.5),
            (2.0, 4.0, 2.0, 5.0),
            (2.0, 2.0, 0.0, 3.0),
            (1.5, 2.0, 0.5, 3.5),
            (3.0, 5.0, 2.0, 6.0),
        ];
        for (devices, microbatches) in sizes {
            for (forward, full_backward, weight, overlap) in chunk_costs {
                let costs = self.per_chunk(forward, full_backward, weight, overlap);
                let stats = (self.analyze)(devices, microbatches, costs).stats;
                let deepseek = self.deepseek_bubble(devices, full_backward, weight, overlap);
                let case =
                    format!("P={devices} M={microbatches} F={forward} B={full_backward} W={weight} F&B={overlap}");
                assert_eq!(BubbleQuantity::LeastBusyIdle.of(&stats), deepseek, "{case}");
                let device = &stats.per_device[least_busy(devices)];
                assert_eq!(stats.makespan - device.busy, deepseek, "{case}");
            }
        }
    }

    /// Over the sizes given, where the pairs gain nothing (no F&B time, or F+B+W), the
    /// prediction is `cost − ideal` of the simulation and DeepSeek's formula.
    pub fn assert_cost_minus_ideal_without_gain(self, sizes: &[(u32, u32)]) {
        for &(devices, microbatches) in sizes {
            for (f, b, w) in [(1.0, 1.0, 1.0), (2.0, 2.0, 1.0), (3.0, 3.0, 0.0), (1.0, 1.0, 0.5)] {
                for overlap in [None, Some(f + b + w)] {
                    let costs = Costs { overlap, ..Costs::fbw(f, b, w) };
                    let bubble = (self.predict)(&params(devices, microbatches, costs.clone())).unwrap().bubble;
                    let stats = (self.analyze)(devices, microbatches, costs.clone()).stats;
                    let case = format!("P={devices} M={microbatches} {costs:?}");
                    assert_eq!(bubble, Some(stats.cost - stats.ideal), "{case}");
                    // Per chunk: F = f/k, B = (b+w)/k, W = w/k and F&B = F+B.
                    let k = f64::from(self.chunks);
                    let (chunk_f, chunk_b, chunk_w) = (f / k, (b + w) / k, w / k);
                    let deepseek = self.deepseek_bubble(devices, chunk_b, chunk_w, chunk_f + chunk_b);
                    assert_eq!(bubble, Some(deepseek), "{case}");
                }
            }
        }
    }

    /// Outside the formula's domain (F&B below B, F ≠ B−W, W > F, communication) no bubble is
    /// predicted but memory is, and `invalid` (devices, microbatches) has no prediction.
    pub fn assert_no_bubble_outside_the_domain(self, invalid: (u32, u32)) {
        let base = Costs::fbw(2.0, 2.0, 1.0);
        for costs in [
            Costs { overlap: Some(2.0), ..base.clone() }, // F&B below the full backward B
            Costs::fbw(1.0, 2.0, 1.0),                    // F ≠ B − W
            Costs::fbw(1.0, 1.0, 2.0),                    // W > F
            Costs { comm: 0.5, ..base.clone() },
        ] {
            let prediction = (self.predict)(&params(4, 8, costs.clone())).unwrap();
            assert_eq!(prediction.bubble, None, "{costs:?}");
            assert!(prediction.peak_memory.is_some());
        }
        let (devices, microbatches) = invalid;
        assert_eq!((self.predict)(&params(devices, microbatches, base)), None, "invalid parameters have no prediction");
    }

    /// DeepSeek's case, F&B < F+B: the predicted bubble is the idle time of the device with the
    /// most pairs (not cost − ideal), as simulated and as DeepSeek's formula gives it.
    pub fn assert_least_busy_idle_with_overlap_gains(self) {
        for devices in [2u32, 4, 6, 8] {
            for microbatches in [2 * devices, 3 * devices] {
                for overlap in [3.0, 4.0, 4.5] {
                    let costs = Costs { overlap: Some(overlap), ..Costs::fbw(2.0, 2.0, 1.0) };
                    let prediction = (self.predict)(&params(devices, microbatches, costs.clone())).unwrap();
                    assert_eq!(prediction.bubble_quantity, BubbleQuantity::LeastBusyIdle);
                    let stats = (self.analyze)(devices, microbatches, costs).stats;
                    let case = format!("P={devices} M={microbatches} F&B={overlap}");
                    assert_eq!(prediction.bubble, Some(BubbleQuantity::LeastBusyIdle.of(&stats)), "{case}");
                    let k = f64::from(self.chunks);
                    let deepseek = self.deepseek_bubble(devices, 3.0 / k, 1.0 / k, overlap / k);
                    assert_eq!(prediction.bubble, Some(deepseek), "{case}");
                }
            }
        }
    }
}

/// Checks the property every family's explanation promises: at `params`, where all its
/// assumptions must hold, each formula it has equals the simulated value (the bubble its
/// quantity names; the peak activation memory over the devices) to 1e-9 of the run's cost
/// (of the peak for memory). Fails when the family explains nothing there.
pub(crate) fn check_explained(
    family: &super::Family,
    params: &ScheduleParams,
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prop_assert;
    let case = format!("{} {params:?}", family.name);
    let e = family.explanation(params);
    prop_assert!(e.is_some(), "{case}: no explanation");
    let e = e.unwrap();
    let broken: Vec<_> = e.assumptions.iter().filter(|a| !a.holds).map(|a| a.text.clone()).collect();
    prop_assert!(broken.is_empty(), "{case}: assumptions do not hold: {broken:?}");
    prop_assert!(e.bubble.is_some() || e.memory.is_some(), "{case}: no formula");
    let run = crate::run(family.name, params);
    prop_assert!(run.is_ok(), "{case}: {:?}", run.err());
    let run = run.unwrap();
    check_marks(&e, &run, &case)?;
    let stats = run.stats;
    let near = |a: f64, b: f64, scale: f64| (a - b).abs() <= 1e-9 * scale.abs().max(1.0);
    if let Some(value) = e.bubble_value() {
        let simulated = e.quantity.of(&stats);
        prop_assert!(near(value, simulated, stats.cost), "{case}: bubble {value} vs simulated {simulated}");
    }
    if let Some(value) = e.memory_value() {
        let simulated = stats.peak_memory;
        prop_assert!(near(value, simulated, simulated), "{case}: memory {value} vs simulated {simulated}");
    }
    Ok(())
}

/// Random costs for the explanation properties: F, B, W, mem-f and mem-w (comm 0).
pub(crate) fn explained_costs(f: f64, b: f64, w: f64, mem_f: f64, mem_w: f64) -> Costs {
    Costs { mem_f, mem_w: Some(mem_w), ..Costs::fbw(f, b, w) }
}

/// Each located term of `e` stands for passes that, simulated in `run`, take the term's value
/// in all (a fill of (P−1)·F marks P−1 forwards), and they are passes of the schedule.
fn check_marks(
    e: &super::formula::Explanation,
    run: &Analysis,
    case: &str,
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prop_assert;
    let duration = |pass: &crate::schedule::Pass| {
        let orders = run.schedule.orders.iter().zip(&run.timeline.devices);
        orders.flat_map(|(order, times)| order.iter().zip(&times.ops)).find_map(|(op, t)| {
            let mut passes = op.passes();
            (passes.any(|p| p == *pass) && !op.is_pair()).then_some(t.end - t.start)
        })
    };
    for formula in [&e.bubble, &e.memory].into_iter().flatten() {
        for (term, value) in formula.terms.iter().zip(formula.term_values(&e.vars)) {
            if term.marks.is_empty() {
                continue;
            }
            let mut total = 0.0;
            for pass in term.marks.iter().flat_map(|m| &m.passes) {
                let d = duration(pass);
                prop_assert!(
                    d.is_some(),
                    "{case}: {} marks {pass:?}, which the schedule does not run alone",
                    term.name
                );
                total += d.unwrap();
            }
            let near = (total - value.abs()).abs() <= 1e-9 * value.abs().max(1.0);
            prop_assert!(near, "{case}: {} marks passes of {total}, not {value}", term.name);
        }
    }
    Ok(())
}
