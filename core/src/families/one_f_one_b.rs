//! 1F1B (PipeDream-flush, DAPPLE, Megatron): one forward, one fused backward.
//!
//! Device `d` runs `min(P-1-d, M)` warm-up forwards, then alternates one forward and one fused
//! backward, then drains the remaining backwards. At most `P-d` microbatches are in flight.

use super::gpipe::{fill_and_drain, fill_and_drain_orders};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "1f1b",
    title: "1F1B",
    group: FamilyGroup::Classic,
    summary: "one forward, one fused backward: GPipe's bubble at P microbatches of memory",
    reference: "Narayanan et al., PipeDream-Flush (ICML 2021); Fan et al., DAPPLE (PPoPP 2021)",
    url: "https://arxiv.org/abs/2006.09503",
    passes: per_device_microbatch::<2>,
    generate: |params| Ok(one_f_one_b(params.devices, params.microbatches)),
    predict,
    ..Family::DEFAULTS
};

/// The 1F1B orders for `devices` devices and `microbatches` microbatches: `P−1−d` warm-up
/// forwards on device `d`.
pub fn one_f_one_b(devices: u32, microbatches: u32) -> Schedule {
    fill_and_drain_orders(devices, microbatches, |d| devices - 1 - d)
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let (p, m) = (params.devices, params.microbatches);
    let peak = (0..p).map(|d| f64::from((p - d).min(m)) * params.costs.mem_f).collect();
    Some(fill_and_drain(params, peak, "min(P−d, M)·mem-f on device d"))
}
