//! 1F1B (PipeDream-flush, DAPPLE, Megatron): one forward, one fused backward.
//!
//! Device `d` runs `min(P-1-d, M)` warm-up forwards, then alternates one forward and one fused
//! backward, then drains the remaining backwards. At most `P-d` microbatches are in flight.

use super::gpipe::fill_and_drain;
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
use crate::error::ParamError;
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "1f1b",
    title: "1F1B",
    group: FamilyGroup::Classic,
    summary: "one forward, one fused backward: GPipe's bubble at P microbatches of memory",
    reference: "Narayanan et al., PipeDream-Flush (ICML 2021); Fan et al., DAPPLE (PPoPP 2021)",
    url: "https://arxiv.org/abs/2006.09503",
    passes: per_device_microbatch::<2>,
    generate,
    predict,
    ..Family::DEFAULTS
};

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    Ok(one_f_one_b(params.devices, params.microbatches))
}

/// The 1F1B orders for `devices` devices and `microbatches` microbatches.
pub fn one_f_one_b(devices: u32, microbatches: u32) -> Schedule {
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for d in 0..devices {
        let warm_up = (devices - 1 - d).min(microbatches);
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
    let (p, m) = (params.devices, params.microbatches);
    let peak = (0..p).map(|d| f64::from((p - d).min(m)) * params.costs.mem_f).collect();
    Some(fill_and_drain(params, peak, "min(P−d, M)·mem-f on device d"))
}
