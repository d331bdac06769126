//! DualPipe: DeepSeek's bidirectional pipeline (DeepSeek-V3 technical report, §3.2.1;
//! deepseek-ai/DualPipe `dualpipe/dualpipe.py`).
//!
//! Two replicas of the model run in opposite directions on the same `P` devices
//! ([`Placement::two_directional`]): pipeline 0 puts its stage `s` on device `s` and runs
//! microbatches `0..M/2`; pipeline 1 puts its stage `s` on device `P−1−s` and runs `M/2..M`.
//! Every device therefore holds two full stages (stage scale 1, twice the parameters of 1F1B).
//! Each device runs DeepSeek's 8-step program ([`super::dualpipe_recipe`]) with its half rank
//! `min(d, P−1−d)`: forwards of both directions fill the pipe, the steady state alternates
//! overlapped F&B pairs ([`Op::Pair`], a forward of one direction with the full backward of the
//! other), and steps 3, 6 and 7 split backwards into B with the W deferred (DeepSeek's
//! `WeightGradStore`) to fill the drain. The reference requires `P` even, `M` even and
//! `M ≥ 2P`; so does this generator.
//!
//! Costs: a pair takes `--overlap` (the F&B time at stage scale 1), or F+B+W when it is not
//! given (no gain).
//!
//! The details are in `docs/schedule-families.md`, under `families/dualpipe.rs`.

use super::dualpipe_recipe::{check_microbatches, deepseek_explanation, device_order, Phases, Shape, DEEPSEEK_MEMORY};
use super::formula::{sym, Explanation, Formula, Sym, Term};
use super::{per_device_microbatch, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Op, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "dualpipe",
    title: "DualPipe",
    group: FamilyGroup::TwoDirectional,
    summary: "DeepSeek's bidirectional pipeline: two model replicas, overlapped F&B pairs",
    reference: "DeepSeek-AI, DeepSeek-V3 Technical Report (2024); deepseek-ai/DualPipe",
    url: "https://github.com/deepseek-ai/DualPipe",
    options: &[FamilyOption { field: Field::Overlap, default: OptionDefault::Unset }],
    constraints: "devices even; microbatches even and ≥ 2·devices",
    passes,
    generate,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// The exact passes: DeepSeek's recipe runs some backwards whole and splits others into B and W.
fn passes(params: &ScheduleParams) -> u64 {
    // A forward and a backward per stage for each pipeline's half of the microbatches, plus a
    // W for every backward the recipe splits: h(3h − 1) with h = P/2 half ranks.
    let h = u64::from(params.devices / 2);
    per_device_microbatch::<2>(params).saturating_add(h * (3 * h).saturating_sub(1))
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    check(params)?;
    Ok(dualpipe(params.devices, params.microbatches))
}

/// Checks the reference's rules: devices even, microbatches at least `2·devices` and even.
fn check(params: &ScheduleParams) -> Result<(), ParamError> {
    let (devices, microbatches) = (params.devices, params.microbatches);
    if devices % 2 != 0 {
        let (fewer, more) = (u64::from(devices) - 1, u64::from(devices) + 1);
        let suggestion = if fewer > 0 { format!("{fewer} or {more}") } else { more.to_string() };
        return Err(ParamError::new(
            Field::Devices,
            format!("dualpipe needs an even number of devices, found {devices}"),
        )
        .hint(format!("the two directions meet in the middle of the devices: use {suggestion} devices")));
    }
    // Each direction's devices come in pairs.
    check_microbatches(FAMILY.name, params, microbatches / 2 / 2 * 2)?;
    if microbatches % 2 != 0 {
        return Err(ParamError::new(
            Field::Microbatches,
            format!("dualpipe needs an even number of microbatches, found {microbatches}"),
        )
        .hint(format!(
            "each direction runs half of them: use {} or {} microbatches",
            u64::from(microbatches) - 1,
            u64::from(microbatches) + 1
        )));
    }
    Ok(())
}

/// The DualPipe orders, for `devices` even and `microbatches` even and at least `2·devices`.
fn dualpipe(devices: u32, microbatches: u32) -> Schedule {
    let placement = Placement::two_directional(devices);
    let shape = Shape { half_ranks: devices / 2, microbatches_per_phase: microbatches / 2 };
    let orders: Vec<Vec<Op>> = (0..devices)
        .map(|device| {
            // Device d holds stage d of pipeline 0 and stage 2P−1−d (pipeline 1's P−1−d). Its
            // phase 0 is the one where it is nearer the input: pipeline 0 on the first half.
            let forward_direction = device;
            let reverse_direction = 2 * devices - 1 - device;
            let stages = if device < devices / 2 {
                [forward_direction, reverse_direction]
            } else {
                [reverse_direction, forward_direction]
            };
            let first_microbatch =
                stages.map(|stage| placement.pipeline_microbatches(placement.pipeline_of(stage), microbatches).start);
            let half_rank = device.min(devices - 1 - device);
            device_order(shape, half_rank, Phases { stages, first_microbatch })
        })
        .collect();
    Schedule { orders, ..Schedule::new(placement, microbatches) }
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    check(params).ok()?;
    let mut e = deepseek_explanation(params, sym(Sym::P) / 2, 1);
    e.memory = Some(Formula::new(
        DEEPSEEK_MEMORY,
        vec![Term::new("PP+1 stage activations on every device", (sym(Sym::P) + 1) * sym(Sym::MemF))],
    ));
    Some(e)
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "(PP/2−1)(F&B+B−3W), PP = devices, B the full backward",
            "PP+1 stage activations: (P+1)·mem-f on every device",
        )
    })
}

#[cfg(test)]
#[path = "dualpipe_tests.rs"]
mod tests;
