//! GPipe: every forward, then every backward (fill and drain).

use super::{per_device_microbatch, BubbleQuantity, Family, FamilyGroup, Prediction};
use crate::error::ParamError;
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
    options: &[],
    constraints: "any devices and microbatches",
    passes: per_device_microbatch::<2>,
    slow_search: None,
    generate,
    predict,
};

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let (devices, microbatches) = (params.devices, params.microbatches);
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for d in 0..devices {
        for mb in 0..microbatches {
            schedule.push(d, Pass::f(d, mb));
        }
        for mb in 0..microbatches {
            schedule.push(d, Pass::bw(d, mb));
        }
    }
    Ok(schedule)
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let c = &params.costs;
    let p = f64::from(params.devices);
    Some(Prediction {
        bubble: (c.comm == 0.0).then_some((p - 1.0) * (c.f + c.b + c.w)),
        bubble_formula: "(P−1)(F+B+W)",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: Some(vec![f64::from(params.microbatches) * c.mem_f; params.devices as usize]),
        memory_formula: "M·mem-f on every device",
    })
}
