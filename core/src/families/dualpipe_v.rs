//! DualPipeV: DualPipe "cut in half" (Sea AI Lab's blog, adopted in deepseek-ai/DualPipe
//! `dualpipe/dualpipev.py`; ported as PyTorch's `ScheduleDualPipeV`).
//!
//! One model on `P` devices in a V ([`Placement::v_shape`]): stage `k` on device `k` for
//! `k < P` and on device `2P−1−k` after, so each device holds two half-size chunks (stage scale
//! 1/2) and the last device hands chunk 0's output straight to chunk 1. Device `d` runs
//! DeepSeek's 8-step program ([`super::dualpipe_recipe`]) with half rank `d` out of `P`, both
//! phases seeing all `M` microbatches; the reference requires `M ≥ 2P`. The order matches
//! PyTorch's own test schedule `dualpipev_4rank_10mb.csv` op for op (tested).
//!
//! Costs: a chunk runs at half the user's F, B, W and `--overlap` (the F&B time of one device's
//! share, i.e. of two chunks, as the other costs are); without `--overlap` a pair takes the sum
//! of its passes.
//!
//! Bubble. DeepSeek's table gives `(PP/2−1)(F&B+B−3W)` with `PP = 2P` stages and per-chunk
//! times (our costs halved), `B` the full backward: `(P−1)(F&B+B−3W)/2` in the user's costs.
//! As for DualPipe (see `dualpipe.rs`) their bubble is `makespan − busy` on the least busy
//! device, here the last two (they overlap the most pairs, `2M−2P−1`); it is exact when `F =
//! B−W`, `W ≤ F`, `B ≤ F&B ≤ F+B` and there is no communication time, and it is `cost − ideal`
//! only when the pairs gain nothing, which is where [`predict`] gives it. Victarry's
//! PP-Schedule-Visualization checks the same number by emulation; the tests repeat that check.
//!
//! Memory. DeepSeek's "activation per device `PP+1`" counts one microbatch's activations on one
//! stage; a DualPipeV stage is `1/PP = 1/(2P)` of the model, half of our mem-f. Every device
//! peaks at `2P+1` chunk activations, `(P+½)·mem-f`: half a microbatch more than 1F1B's first
//! device on the same `P` devices.

use super::dualpipe_recipe::{check_microbatches, deepseek_explanation, device_order, Phases, Shape, DEEPSEEK_MEMORY};
use super::formula::{sym, Explanation, Formula, Sym, Term};
use super::{per_device_microbatch, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Op, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "dualpipe-v",
    title: "DualPipeV",
    group: FamilyGroup::TwoDirectional,
    summary: "DualPipe cut in half: V placement on P devices, overlapped F&B pairs",
    reference: "Sea AI Lab, Cut-in-half DualPipe (2025); deepseek-ai/DualPipe",
    url: "https://github.com/deepseek-ai/DualPipe",
    options: &[FamilyOption { field: Field::Overlap, default: OptionDefault::Unset }],
    constraints: "microbatches ≥ 2·devices",
    passes,
    generate,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// The exact passes: DeepSeek's recipe runs some backwards whole and splits others into B and W.
fn passes(params: &ScheduleParams) -> u64 {
    // A forward and a backward per chunk and microbatch, plus a W for every backward the
    // recipe splits: P(3P − 1)/2.
    let p = u64::from(params.devices);
    per_device_microbatch::<4>(params).saturating_add(p * (3 * p).saturating_sub(1) / 2)
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    check(params)?;
    Ok(dualpipe_v(params.devices, params.microbatches))
}

/// Checks the reference's rule: at least `2·devices` microbatches.
fn check(params: &ScheduleParams) -> Result<(), ParamError> {
    check_microbatches(FAMILY.name, params, params.microbatches / 2)
}

/// The DualPipeV orders, for `microbatches` at least `2·devices`.
fn dualpipe_v(devices: u32, microbatches: u32) -> Schedule {
    let shape = Shape { half_ranks: devices, microbatches_per_phase: microbatches };
    let orders: Vec<Vec<Op>> = (0..devices)
        .map(|device| {
            let phases = Phases { stages: [device, 2 * devices - 1 - device], first_microbatch: [0, 0] };
            device_order(shape, device, phases)
        })
        .collect();
    Schedule { orders, ..Schedule::new(Placement::v_shape(devices), microbatches) }
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    check(params).ok()?;
    let mut e = deepseek_explanation(params, sym(Sym::P), 2);
    e.memory = Some(Formula::new(
        DEEPSEEK_MEMORY,
        vec![Term::new(
            "PP+1 chunk activations (PP = 2P chunks of mem-f/2) on every device",
            (2 * sym(Sym::P) + 1) * sym(Sym::MemF) / 2,
        )],
    ));
    Some(e)
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "(PP/2−1)(F&B+B−3W), PP = 2·devices, per-chunk times, B the full backward",
            "PP+1 chunk activations: (2P+1)·mem-f/2 on every device",
        )
    })
}

#[cfg(test)]
#[path = "dualpipe_v_tests.rs"]
mod tests;
