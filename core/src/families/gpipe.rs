//! GPipe: every forward, then every backward (fill and drain).

use super::{per_device_microbatch, BubbleQuantity, Family, FamilyGroup, Prediction};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "gpipe",
    title: "GPipe",
    group: FamilyGroup::Classic,
    summary: "all forwards, then all backwards: simple, but every microbatch's activations are held at once",
    reference: "Huang et al., GPipe (NeurIPS 2019)",
    url: "https://arxiv.org/abs/1811.06965",
    passes: per_device_microbatch::<2>,
    generate: |params| Ok(fill_and_drain_orders(params.devices, params.microbatches, |_| params.microbatches)),
    predict,
    ..Family::DEFAULTS
};

/// The orders of a linear pipeline with fused backwards: device `d` runs `warm_up(d)` forwards
/// (at most `microbatches`), then alternates one forward and one backward, then drains the
/// remaining backwards. GPipe warms up with every microbatch, so it runs all its forwards
/// first; 1F1B with `P−1−d`.
pub(super) fn fill_and_drain_orders(devices: u32, microbatches: u32, warm_up: impl Fn(u32) -> u32) -> Schedule {
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for d in 0..devices {
        let warm_up = warm_up(d).min(microbatches);
        let steady = microbatches - warm_up;
        for mb in 0..warm_up {
            schedule.push(d, Pass::f(d, mb));
        }
        for i in 0..steady {
            schedule.push(d, Pass::f(d, warm_up + i));
            schedule.push(d, Pass::bw(d, i));
        }
        for mb in steady..microbatches {
            schedule.push(d, Pass::bw(d, mb));
        }
    }
    schedule
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let peak = vec![f64::from(params.microbatches) * params.costs.mem_f; params.devices as usize];
    Some(fill_and_drain(params, peak, "M·mem-f on every device"))
}

/// The prediction of a schedule whose bubble is one pipeline fill and drain, `(P−1)(F+B+W)`
/// without communication (GPipe's, and 1F1B's: it reorders the passes, not the bubble), with
/// its peak memory per device.
pub(super) fn fill_and_drain(
    params: &ScheduleParams,
    peak_memory: Vec<f64>,
    memory_formula: &'static str,
) -> Prediction {
    let c = &params.costs;
    let p = f64::from(params.devices);
    Prediction {
        bubble: (c.comm == 0.0).then_some((p - 1.0) * (c.f + c.b + c.w)),
        bubble_formula: "(P−1)(F+B+W)",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: Some(peak_memory),
        memory_formula,
    }
}
