//! Seq1F1B: 1F1B over sequence slices (Sun et al., NAACL 2025, arXiv 2406.03488).
//!
//! Every microbatch is cut along the sequence into `K` slices (`--seq-splits`, default 2),
//! and the slices are the units 1F1B schedules on a linear pipeline. Forward runs a
//! microbatch's slices in order (causal attention needs the earlier slices' keys and values);
//! the fused backward runs them in reverse (a slice's gradient collects the contributions of
//! the later slices that attended to it). Both orders live on one device, so the device's
//! order carries them; across devices each slice depends on the same slice, as usual.
//!
//! Device `d` runs `min(P−d−1 + K−1, M·K)` warm-up forward slices, then one forward slice
//! and one backward slice alternately, then the remaining backward slices. The warm-up is
//! sail-sg's `seq1f1b.py` `min(p − s − 2 + k, m·k)` (peers.md §3.8; zero-bubble.md §4.10
//! writes `p − s − 2 + S`): the same number as 1F1B's `P−d−1` plus the `K−1` slices that must
//! run forward before the last slice of a microbatch can turn around. `K = 1` is exactly
//! [1F1B](super::one_f_one_b).
//!
//! Costs: the engine splits each pass uniformly, every slice costing `1/K` of F, B, W and
//! mem-f ([`crate::StageCosts::for_schedule`]). The paper splits the sequence so that slices
//! cost the same *compute* (later slices are shorter because causal attention grows with
//! position); that balanced split is not modelled, so with uniform slices the schedule is the
//! paper's ideal.
//!
//! Closed forms (checked by the tests over ranges of `P`, `M`, `K` and costs):
//! * bubble `cost − M(F+B+W) = (P−1)(F+B+W)/K` with no communication, for every `M`;
//! * peak activation memory on device `d`: `min(P−d−1+K, M·K)` slices of `mem-f/K`, so
//!   `(P+K−1)/K·mem-f` on device 0 once `M·K ≥ P+K−1` (1F1B holds `P·mem-f`).

use super::formula::{min, sym, Explanation, Formula, Sym, Term};
use super::gpipe::{fill_and_drain, Split};
use super::{count_option, per_chunk, Family, FamilyGroup, FamilyOption, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "seq1f1b",
    title: "Seq1F1B",
    group: FamilyGroup::SequenceSplit,
    summary: "1F1B over --seq-splits sequence slices per microbatch: forwards in order, backwards in reverse",
    reference: "Sun et al., Seq1F1B (NAACL 2025)",
    url: "https://arxiv.org/abs/2406.03488",
    options: &[FamilyOption::count(Field::SeqSplits, DEFAULT_SEQ_SPLITS)],
    constraints: "seq-splits ≥ 1 (default 2; 1 is plain 1F1B); slices split costs uniformly",
    passes,
    generate,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// Sequence slices per microbatch when `--seq-splits` is not given.
pub const DEFAULT_SEQ_SPLITS: u32 = 2;

/// What the smallest slice counts mean, for the error on 0 slices.
const SEQ_SPLITS_HINT: &str =
    "--seq-splits 1 is plain 1F1B; 2 or 4 cut every microbatch's sequence in halves or quarters";

/// A forward and a full backward per slice.
fn passes(params: &ScheduleParams) -> u64 {
    per_chunk(params, params.seq_splits.unwrap_or(DEFAULT_SEQ_SPLITS), 2)
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let slices = count_option(Field::SeqSplits, params.seq_splits, DEFAULT_SEQ_SPLITS, SEQ_SPLITS_HINT)?;
    Ok(seq1f1b(params.devices, params.microbatches, slices))
}

/// Forward slices device `device` runs before its first backward slice.
fn warm_up(devices: u32, microbatches: u32, slices: u32, device: u32) -> u64 {
    let units = u64::from(microbatches) * u64::from(slices);
    (u64::from(devices - 1 - device) + u64::from(slices) - 1).min(units)
}

/// The Seq1F1B orders for `devices`, `microbatches` and `slices` slices per microbatch.
pub fn seq1f1b(devices: u32, microbatches: u32, slices: u32) -> Schedule {
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    schedule.slices = slices;
    let units = microbatches as usize * slices as usize;
    // Unit k: microbatch k / K; forward slice k mod K, backward slice K−1 − k mod K.
    let unit = |k: usize| ((k / slices as usize) as u32, (k % slices as usize) as u32);
    for device in 0..devices {
        let forward = |k: usize| {
            let (mb, slice) = unit(k);
            Pass::f(device, mb).with_slice(slice)
        };
        let backward = |k: usize| {
            let (mb, slice) = unit(k);
            Pass::bw(device, mb).with_slice(slices - 1 - slice)
        };
        let warm = warm_up(devices, microbatches, slices, device) as usize;
        let steady = units - warm;
        for k in 0..warm {
            schedule.push(device, forward(k));
        }
        for k in 0..steady {
            schedule.push(device, forward(warm + k));
            schedule.push(device, backward(k));
        }
        for k in steady..units {
            schedule.push(device, backward(k));
        }
    }
    schedule
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let slices = params.seq_splits.unwrap_or(DEFAULT_SEQ_SPLITS);
    if slices == 0 {
        return None;
    }
    let mut own = params.clone();
    own.seq_splits = Some(slices);
    let (p, d, k) = (sym(Sym::P), sym(Sym::D), sym(Sym::K));
    let held = Term::new(
        "device d holds its P−d−1+K−1 warm-up forward slices and one more, at most M·K, of mem-f/K each",
        min(p - d - 1 + k.clone(), sym(Sym::M) * k.clone()) * sym(Sym::MemF) / k,
    );
    Some(fill_and_drain(&own, Split::Slices, Formula::new(MEMORY, vec![held])))
}

/// Where Seq1F1B's memory comes from: sail-sg's warm-up count.
const MEMORY: &str = "sail-sg seq1f1b.py: warm-up min(p−s−2+k, m·k) slices; derived here, proven by property test";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| e.prediction("(P−1)(F+B+W)/K", "min(P−d−1+K, M·K)·mem-f/K on device d"))
}

#[cfg(test)]
#[path = "seq1f1b_tests.rs"]
mod tests;
