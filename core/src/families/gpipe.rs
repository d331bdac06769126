//! GPipe: every forward, then every backward (fill and drain).

use super::formula::{sym, Assumption, Explanation, Expr, Formula, Mark, Sym, Term};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
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
    explain,
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

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let held = Term::new("every microbatch's activations, held until its backward", sym(Sym::M) * sym(Sym::MemF));
    Some(fill_and_drain(params, Split::Whole, Formula::new(GPIPE_MEMORY, vec![held])))
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| e.prediction(FILL_AND_DRAIN, "M·mem-f on every device"))
}

/// GPipe's memory, as its paper states it.
const GPIPE_MEMORY: &str = "Huang et al., GPipe (NeurIPS 2019), §2.3: activations of all M micro-batches are held \
                            until the backward (without re-materialization)";

/// The bubble of one pipeline fill and drain, as [`Prediction::bubble_formula`] writes it.
pub(super) const FILL_AND_DRAIN: &str = "(P−1)(F+B+W)";

/// What a fill-and-drain schedule's passes are of: whole stages, one of `V` chunks, or one of
/// `K` sequence slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Split {
    /// GPipe and 1F1B.
    Whole,
    /// Megatron's interleaving (with `V` chunks; one chunk is 1F1B).
    Chunks,
    /// Seq1F1B (with `K` slices).
    Slices,
}

/// The explanation of a schedule whose bubble is one pipeline fill and drain of one pass,
/// `(P−1)(F+B+W)` without communication (GPipe's and 1F1B's: 1F1B reorders the passes, not
/// the bubble), over `V` for Megatron's chunks and over `K` for Seq1F1B's slices, with its
/// peak memory formula.
pub(super) fn fill_and_drain(params: &ScheduleParams, split: Split, memory: Formula) -> Explanation {
    let (p, m) = (params.devices, params.microbatches);
    let (divisor, source) = match split {
        Split::Chunks if params.chunks.unwrap_or(1) > 1 => (Some(Sym::V), NARAYANAN_INTERLEAVED),
        Split::Slices => (Some(Sym::K), SEQ1F1B),
        _ => (None, NARAYANAN_1F1B),
    };
    let per_chunk = |e: Expr| match divisor {
        Some(d) => e / sym(d),
        None => e,
    };
    // Microbatch 0's forwards on the chunk-0 stages before the last device; the last
    // microbatch's backwards on the chunk-0 stages after the first (its first slice: the
    // backward runs the slices in reverse).
    let fill = (0..p.saturating_sub(1)).map(|s| Pass::f(s, 0)).collect();
    let drain = (1..p).map(|s| Pass::bw(s, m.saturating_sub(1))).collect();
    let bubble = Formula::new(
        source,
        vec![
            Term::new(
                "fill: the last device waits for the first forward on every device before it",
                per_chunk((sym(Sym::P) - 1) * sym(Sym::F)),
            )
            .marking(vec![Mark { device: p - 1, passes: fill }]),
            Term::new(
                "drain: the first device waits for the last backward on every device after it",
                per_chunk((sym(Sym::P) - 1) * (sym(Sym::B) + sym(Sym::W))),
            )
            .marking(vec![Mark { device: 0, passes: drain }]),
        ],
    );
    Explanation::new(params, Some(bubble), Some(memory), vec![Assumption::no_comm(params)])
}

/// Where Narayanan et al. state the bubble of a plain pipeline.
const NARAYANAN_1F1B: &str =
    "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters (SC 2021), §2.2.1: (p−1)·(t_f+t_b)";

/// Where Seq1F1B's comes from.
const SEQ1F1B: &str = "Sun et al., Seq1F1B (NAACL 2025): 1F1B's bubble over the K slices; the exact form derived \
                       here, proven by property test";

/// Where they state the interleaved schedule's.
const NARAYANAN_INTERLEAVED: &str =
    "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters (SC 2021), §2.2.2: (p−1)·(t_f+t_b)/v";

#[cfg(test)]
#[path = "gpipe_tests.rs"]
mod tests;
