//! 1F1B (PipeDream-flush, DAPPLE, Megatron): one forward, one fused backward.
//!
//! Device `d` runs `min(P-1-d, M)` warm-up forwards, then alternates one forward and one fused
//! backward, then drains the remaining backwards. At most `P-d` microbatches are in flight.
//!
//! With `--a2a-overlap` (Megatron-Core's combined 1F1B, `--overlap-moe-expert-parallel-comm`)
//! device `d` warms up with one forward more, `min(P−d, M)`, then runs each steady-state
//! forward overlapped with the backward of an earlier microbatch as one pair
//! ([`push_orders`]). Megatron itself refuses the flag without a virtual pipeline when P > 1;
//! here plain 1F1B takes it with the same rule (Bubblescope's extension).

use super::formula::{min, sym, Explanation, Formula, Sym, Term};
use super::gpipe::{fill_and_drain, fill_and_drain_orders, Split, FILL_AND_DRAIN};
use super::{per_device_microbatch, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction};
use crate::error::Field;
use crate::params::ScheduleParams;
use crate::schedule::{Op, Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "1f1b",
    title: "1F1B",
    group: FamilyGroup::Classic,
    summary: "one forward, one fused backward: GPipe's bubble at P microbatches of memory",
    reference: "Narayanan et al., PipeDream-Flush (ICML 2021); Fan et al., DAPPLE (PPoPP 2021)",
    url: "https://arxiv.org/abs/2006.09503",
    options: &[FamilyOption { field: Field::A2aOverlap, default: OptionDefault::Unset }],
    constraints: "any devices and microbatches; --a2a-overlap needs an expert all-to-all (an MoE model with EP > 1)",
    passes: per_device_microbatch::<2>,
    generate: |params| Ok(generate(params.devices, params.microbatches, params.a2a_overlap)),
    predict,
    explain,
    ..Family::DEFAULTS
};

/// 1F1B's orders, or with `paired` (`--a2a-overlap`) combined 1F1B's.
pub fn generate(devices: u32, microbatches: u32, paired: bool) -> Schedule {
    if paired {
        combined_one_f_one_b(devices, microbatches)
    } else {
        one_f_one_b(devices, microbatches)
    }
}

/// Combined 1F1B on a linear pipeline: device `d` runs `min(P−d, M)` warm-up forwards (one
/// more than 1F1B, so that no pair holds a forward and the backward that needs it), then
/// pairs forward `k + warm-up` with backward `k`, then drains.
pub fn combined_one_f_one_b(devices: u32, microbatches: u32) -> Schedule {
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    for d in 0..devices {
        let warm = warm_up(devices, d, microbatches, true) as usize;
        push_orders(
            &mut schedule,
            d,
            warm,
            microbatches as usize,
            true,
            |k| Pass::f(d, k as u32),
            |k| Pass::bw(d, k as u32),
        );
    }
    schedule
}

/// 1F1B's warm-up forwards on device `device`: `P−1−d`, one more with `paired`, at most `M`.
pub fn warm_up(devices: u32, device: u32, microbatches: u32, paired: bool) -> u32 {
    (devices - 1 - device + u32::from(paired)).min(microbatches)
}

/// Appends to `device`'s order the 1F1B loop over `total` forwards (`forward(k)`) and
/// backwards (`backward(k)`): `warm` forwards, then forward `warm + k` and backward `k`,
/// one after the other or, with `paired`, overlapped as one pair; then the remaining
/// backwards. The one loop of 1F1B, interleaved 1F1B and their combined (paired) forms.
pub(super) fn push_orders(
    schedule: &mut Schedule,
    device: u32,
    warm: usize,
    total: usize,
    paired: bool,
    forward: impl Fn(usize) -> Pass,
    backward: impl Fn(usize) -> Pass,
) {
    let warm = warm.min(total);
    let steady = total - warm;
    for k in 0..warm {
        schedule.push(device, forward(k));
    }
    for k in 0..steady {
        if paired {
            schedule.push(device, Op::Pair(forward(warm + k), backward(k)));
        } else {
            schedule.push(device, forward(warm + k));
            schedule.push(device, backward(k));
        }
    }
    for k in steady..total {
        schedule.push(device, backward(k));
    }
}

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

#[cfg(test)]
#[path = "a2a_overlap_tests.rs"]
mod a2a_overlap_tests;
