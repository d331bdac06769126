//! PyTorch's interleaved zero-bubble schedule, `ScheduleInterleavedZeroBubble` (PyTorch's
//! "ZB1P"): interleaved 1F1B with the backward split into I (input gradient, Bubblescope's B)
//! and W, each device's Ws lagging its Is by the device's index.
//!
//! `P·V` stages loop over the devices (stage `s` on device `s mod P`, PyTorch's `loop` style),
//! so each device holds `V` chunks. The order is PyTorch's, written here from its algorithm:
//!
//! * Microbatches go in `R = max(1, ⌊M/P⌋)` rounds of `N = M/R`; PyTorch refuses an `M` that
//!   is not a multiple of `R`, and so does this family (with the same reason).
//! * Device `d` warms up with `w = min((V−1)·N + P−1−d, V·M)` forwards, then runs op index
//!   `k = 0 … V·M + w − 1`: a forward while `k < V·M`, and once `k ≥ w` an input gradient. The
//!   forward of op index `k` is on chunk `⌊k/N⌋ mod V`, the input gradient on chunk
//!   `V−1−(⌊(k−w)/N⌋ mod V)`, so forwards climb the chunks and backwards descend them, `N`
//!   microbatches at a time. Every chunk numbers its microbatches 0, 1, 2, … per kind.
//! * After each input gradient with `k − w ≥ d`, one W: that of the oldest input gradient whose
//!   W has not run (so device `d`'s Ws lag by `d`); the remaining Ws end the order, oldest first.
//!
//! PyTorch then spaces its rows with idle cells for its lock-step display
//! (`_add_bubbles_to_actions`), which changes no device's order. The tests compare the orders
//! with PyTorch's own dumps of the class for every `P` in 2..=8, `V` in 2..=4 and `M` up to
//! `3·P·V` (`tests/fixtures/pytorch-dumps/interleaved-zero-bubble-grid.jsonl.gz`), refusals
//! included. `V = 1` (a stage per device) is accepted, as PyTorch does.

use super::{count_option, per_chunk, Family, FamilyGroup, FamilyOption, ZERO_BUBBLE};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "interleaved-zb",
    title: "Interleaved ZB (PyTorch)",
    group: FamilyGroup::ZeroBubble,
    summary: "PyTorch's ScheduleInterleavedZeroBubble: interleaved 1F1B with split backward, \
              each device's Ws lagging its input gradients by the device's index",
    reference: "PyTorch's ScheduleInterleavedZeroBubble, after Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://docs.pytorch.org/docs/stable/distributed.pipelining.html",
    options: &[FamilyOption::count(Field::Chunks, DEFAULT_CHUNKS)],
    constraints: "chunks ≥ 1 (default 2); microbatches a multiple of the rounds max(1, ⌊microbatches/devices⌋), \
                  as PyTorch requires",
    passes,
    generate,
    ..Family::citing(ZERO_BUBBLE)
};

/// Chunks per device when `--chunks` is not given (PyTorch's examples use 2).
pub const DEFAULT_CHUNKS: u32 = 2;

/// F, I and W per chunk and microbatch.
fn passes(params: &ScheduleParams) -> u64 {
    per_chunk(params, params.chunks.unwrap_or(DEFAULT_CHUNKS), 3)
}

/// PyTorch's rounds for `microbatches` on `devices`: `max(1, ⌊M/P⌋)`.
fn rounds(devices: u32, microbatches: u32) -> u32 {
    (microbatches / devices.max(1)).max(1)
}

/// The error for `microbatches` that are not a multiple of their rounds, with the nearest
/// counts that are.
fn not_a_multiple(devices: u32, microbatches: u32) -> ParamError {
    let fits = |m: u32| m > 0 && m % rounds(devices, m) == 0;
    let below = (1..microbatches).rev().find(|&m| fits(m));
    let above = (microbatches + 1..=microbatches.saturating_mul(2).max(microbatches + 1)).find(|&m| fits(m));
    let r = rounds(devices, microbatches);
    let nearest: Vec<String> = below.into_iter().chain(above).map(|m| m.to_string()).collect();
    ParamError::new(
        Field::Microbatches,
        format!(
            "interleaved-zb needs microbatches to be a multiple of its rounds, max(1, ⌊microbatches/devices⌋) = {r}, \
             found {microbatches}"
        ),
    )
    .hint(format!(
        "PyTorch refuses it too (\"Zero bubble requires the number of microbatches to be a multiple of the number \
         of rounds ({r}), but got {microbatches}.\"); use --microbatches {}",
        nearest.join(" or ")
    ))
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let (devices, microbatches) = (params.devices, params.microbatches);
    let chunks = count_option(
        Field::Chunks,
        params.chunks,
        DEFAULT_CHUNKS,
        "--chunks 2 is PyTorch's usual two stages per rank; --chunks 1 is one stage per device",
    )?;
    let r = rounds(devices, microbatches);
    if microbatches % r != 0 {
        return Err(not_a_multiple(devices, microbatches));
    }
    Ok(interleaved_zero_bubble(devices, microbatches, chunks))
}

/// The orders of `ScheduleInterleavedZeroBubble` for `devices`, `microbatches` (a multiple of
/// its rounds) and `chunks` stages per device.
pub(crate) fn interleaved_zero_bubble(devices: u32, microbatches: u32, chunks: u32) -> Schedule {
    let placement = if chunks == 1 { Placement::linear(devices) } else { Placement::interleaved(devices, chunks) };
    let mut schedule = Schedule::new(placement, microbatches);
    let (p, m, v) = (devices as usize, microbatches as usize, chunks as usize);
    let per_round = m / rounds(devices, microbatches) as usize;
    for device in 0..p {
        let stage = |chunk: usize| (chunk * p + device) as u32;
        let warm_up = ((v - 1) * per_round + (p - 1 - device)).min(v * m);
        // The next microbatch of every chunk, per kind; the chunks whose W is owed, oldest first.
        let (mut next_f, mut next_i, mut next_w) = (vec![0u32; v], vec![0u32; v], vec![0u32; v]);
        let mut owed: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
        let w = |chunk: usize, schedule: &mut Schedule, next_w: &mut [u32]| {
            schedule.push(device as u32, Pass::w(stage(chunk), next_w[chunk]));
            next_w[chunk] += 1;
        };
        for k in 0..v * m + warm_up {
            if k < v * m {
                let chunk = (k / per_round) % v;
                schedule.push(device as u32, Pass::f(stage(chunk), next_f[chunk]));
                next_f[chunk] += 1;
            }
            if k >= warm_up {
                let j = k - warm_up;
                let chunk = v - 1 - (j / per_round) % v;
                schedule.push(device as u32, Pass::b(stage(chunk), next_i[chunk]));
                next_i[chunk] += 1;
                owed.push_back(chunk);
                if j >= device {
                    if let Some(oldest) = owed.pop_front() {
                        w(oldest, &mut schedule, &mut next_w);
                    }
                }
            }
        }
        while let Some(oldest) = owed.pop_front() {
            w(oldest, &mut schedule, &mut next_w);
        }
    }
    schedule
}

#[cfg(test)]
#[path = "interleaved_zb_tests.rs"]
mod tests;
