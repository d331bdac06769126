//! What the vocabulary-parallel families share (Yeung et al., "Balancing Pipeline Parallelism
//! with Vocabulary Parallelism", MLSys 2025): the checks on their parameters and the
//! finite-state machine that places the S passes of the 1F1B versions.
//!
//! The rules are read off the authors' code (`sail-sg/VocabularyParallelism` at 6191c3b,
//! `vocab_parallel_schedule.py`); `docs/notes/vocab-oracles.md` says where each lives.
//! Uses params, schedule and error only.

use crate::error::{Field, ParamError};
use crate::params::{Costs, ScheduleParams, VocabCosts};
use crate::units::short_number;

/// The S-pass placement of the 1F1B versions: per rank (rank 0 first), whether its S step runs
/// between B and F (`bsf`) or after F, its offset (in the unit of the costs), and how many S
/// steps it runs in warm-up.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SPlacement {
    /// Per rank: the S step between B and F (the authors' BSF state) rather than after F (BFS).
    pub(crate) bsf: Vec<bool>,
    /// Per rank: the offset the machine reached.
    pub(crate) offsets: Vec<f64>,
    /// Per rank: S steps in warm-up (`num_warmup_s_pass`).
    pub(crate) warmup_s: Vec<u32>,
    /// The forward and backward times the machine ran on (the loop compares offsets with
    /// them).
    pub(crate) f: f64,
    pub(crate) b: f64,
}

impl SPlacement {
    /// Runs the machine for `devices` ranks from the forward time `f` and the backward time
    /// `b` of one stage: from the last rank (BSF, offset 0) towards rank 0, a rank stays BSF with
    /// the offset lowered by `f` while that stays at or above `−b`; otherwise it is BFS at the
    /// same offset and the rank before it BSF with the offset raised by `b − f`.
    pub(crate) fn new(devices: u32, f: f64, b: f64) -> SPlacement {
        let n = devices as usize;
        let (mut bsf, mut offsets) = (vec![true], vec![0.0]);
        let mut offset = 0.0;
        while bsf.len() < n {
            if offset - f >= -b {
                offset -= f;
                bsf.push(true);
                offsets.push(offset);
            } else {
                bsf.push(false);
                offsets.push(offset);
                offset += b - f;
                bsf.push(true);
                offsets.push(offset);
            }
        }
        bsf.truncate(n);
        offsets.truncate(n);
        bsf.reverse();
        offsets.reverse();
        let mut warmup_s = vec![0u32; n];
        for rank in (0..n.saturating_sub(1)).rev() {
            let repeat = !bsf[rank + 1] && bsf[rank];
            warmup_s[rank] = warmup_s[rank + 1] + u32::from(!repeat);
        }
        SPlacement { bsf, offsets, warmup_s, f, b }
    }
}

/// The vocabulary costs of `params`, or the error every vocabulary-parallel family gives
/// for a model without a vocabulary.
pub(crate) fn vocab_costs(params: &ScheduleParams, family: &str) -> Result<VocabCosts, ParamError> {
    params.costs.vocab.ok_or_else(|| {
        ParamError::new(
            Field::S,
            format!("{family} splits the output layer by vocabulary, but these costs have no vocabulary layer"),
        )
        .hint("give the output layer's time per vocabulary shard: --s (forward) and --t (backward), e.g. --s 0.5 --t 1")
        .hint("or give a model (--model llama-3-8b, or --vocab with the other sizes): it prices the shards from its vocabulary")
    })
}

/// What a vocabulary-parallel family does with an output-layer shard longer than a stage's
/// forward (S > f): the authors' placement asserts `f >= c` for the input layer's time only
/// (checked, [`check_fsm_costs`]) and runs a longer S as it is, each S step then longer than
/// the F beside it. The note saying so, or `None` when S ≤ f (or no shard is priced).
pub fn long_output_layer_note(params: &ScheduleParams, family: &str) -> Option<String> {
    let v = params.costs.vocab?;
    let f = params.costs.f;
    let time = |t: f64| match params.units {
        crate::units::Units::Cost => short_number(t),
        _ => crate::units::format_micros(t),
    };
    (v.s > f).then(|| {
        format!(
            "{family}: one shard's output-layer forward (S {}) is longer than a stage's forward (f {}); the authors' placement assumes f ≥ the input layer's time only, so the order is theirs and each S step runs longer than the F beside it, which adds idle time (more devices shorten S: it is 1/P of the output layer)",
            time(v.s),
            time(f)
        )
    })
}

/// The two assumptions of the authors' S placement (`assert f >= c` and `assert b >= f`),
/// refused as their code refuses them. `c` is the input layer's forward (the timer tuple's
/// fourth entry, not the output layer's S): an S longer than F is accepted, as theirs accepts
/// it, and only lengthens the S steps.
pub(crate) fn check_fsm_costs(f: f64, b: f64, vocab: &VocabCosts, family: &str) -> Result<(), ParamError> {
    if vocab.input_f > f {
        return Err(ParamError::new(
            Field::S,
            format!(
                "{family} assumes a stage's forward takes at least the input layer's, found f {} < input layer {}",
                short_number(f),
                short_number(vocab.input_f)
            ),
        )
        .hint("the authors' placement refuses this (assert f >= c): the S passes would add bubbles")
        .hint("put fewer vocabulary rows per device, or more layers per stage"));
    }
    if b < f {
        return Err(backward_below_forward(family, "", b, f));
    }
    Ok(())
}

/// Each stage's backward (b + w) at least its forward, as the authors' S placement assumes
/// (`assert b >= f`): with per-device costs the first stage that breaks it is named, with its
/// own values (`costs` over `devices` devices).
pub(crate) fn check_stage_backwards(costs: &Costs, devices: u32, family: &str) -> Result<(), ParamError> {
    let Some(profile) = costs.profile.as_deref() else { return Ok(()) };
    for k in 0..devices as usize {
        let [f, b, w, _, _] = profile.share(k, devices as usize);
        if b + w < f {
            return Err(backward_below_forward(family, &format!("stage {k}'s "), b + w, f));
        }
    }
    Ok(())
}

/// The error for a backward `b` (b + w) shorter than the forward `f` (of `whose`: empty, or
/// `stage 2's `).
fn backward_below_forward(family: &str, whose: &str, b: f64, f: f64) -> ParamError {
    ParamError::new(
        Field::B,
        format!(
            "{family} assumes a stage's backward takes at least its forward, found {whose}b + w = {} < f = {}",
            short_number(b),
            short_number(f)
        ),
    )
    .hint("the authors' S placement needs b >= f (assert b >= f); with b + w as the backward, raise b or w")
}

/// The smallest microbatch count the authors' loop runs consistently, refused below it.
pub(crate) fn check_microbatches(
    params: &ScheduleParams,
    least: u32,
    family: &str,
    why: &str,
) -> Result<(), ParamError> {
    if params.microbatches >= least {
        return Ok(());
    }
    Err(ParamError::new(
        Field::Microbatches,
        format!(
            "{family} needs at least {least} microbatches on {} devices, found {}",
            params.devices, params.microbatches
        ),
    )
    .hint(why.to_string())
    .hint(format!("use --microbatches {least} or more")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples of `docs/notes/vocab-oracles.md` (p = 8, f = 1).
    #[test]
    fn machine_matches_the_notes_examples() {
        let s = SPlacement::new(8, 1.0, 2.0);
        assert_eq!(s.bsf, [true, false, true, true, false, true, true, true]);
        assert_eq!(s.offsets, [-1.0, -2.0, -2.0, -1.0, -2.0, -2.0, -1.0, 0.0]);
        let s = SPlacement::new(8, 1.0, 3.0);
        assert_eq!(s.bsf, [true, true, true, false, true, true, true, true]);
        assert_eq!(s.offsets, [-3.0, -2.0, -1.0, -3.0, -3.0, -2.0, -1.0, 0.0]);
        let s = SPlacement::new(8, 1.0, 1.5);
        assert_eq!(s.offsets, [-1.0, -1.0, -1.5, -1.5, -0.5, -1.0, -1.0, 0.0]);
    }
}
