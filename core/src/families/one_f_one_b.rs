//! 1F1B (PipeDream-flush, DAPPLE, Megatron): one forward, one fused backward.
//!
//! Device `d` runs `min(P-1-d, M)` warm-up forwards, then alternates one forward and one fused
//! backward, then drains the remaining backwards. At most `P-d` microbatches are in flight.

use super::formula::{min, sym, Explanation, Formula, Sym, Term};
use super::gpipe::{fill_and_drain, fill_and_drain_orders, Split, FILL_AND_DRAIN};
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
    explain,
    ..Family::DEFAULTS
};

/// The 1F1B orders for `devices` devices and `microbatches` microbatches: `P−1−d` warm-up
/// forwards on device `d`.
pub fn one_f_one_b(devices: u32, microbatches: u32) -> Schedule {
    fill_and_drain_orders(devices, microbatches, |d| devices - 1 - d)
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    Some(fill_and_drain(params, Split::Whole, Formula::new(MEMORY, vec![in_flight()])))
}

/// The microbatches device `d` holds at its peak: its warm-up forwards and one more.
pub(super) fn in_flight() -> Term {
    Term::new(
        "device d holds its P−1−d warm-up forwards and one more, at most M",
        min(sym(Sym::P) - sym(Sym::D), sym(Sym::M)) * sym(Sym::MemF),
    )
}

/// Where the memory of 1F1B is stated.
pub(super) const MEMORY: &str = "Narayanan et al. (SC 2021), §2.2.1: at most p microbatches in flight (device d: P−d)";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| e.prediction(FILL_AND_DRAIN, "min(P−d, M)·mem-f on device d"))
}

#[cfg(test)]
#[path = "one_f_one_b_tests.rs"]
mod tests;
