//! Costs fitted from a measured run: what a user re-plans with.
//!
//! A device runs a pass's work, then its own code until the next pass begins (sending the
//! result, posting receives, the runtime's bookkeeping), then waits for the next pass's input
//! if it has not arrived. So per stage, F, B and W are the medians (robust to a slow outlier)
//! of each pass's work plus the time its device spent after it before the next pass: the
//! runtime's per-pass overhead is in them, as every prediction must pay it. The hop is the
//! median time from the end of that time on the input's device to the work that waited for
//! it. A run of full backwards only fits `b` as the full backward and `w` as 0.

use super::run::MeasuredRun;
use crate::params::{CostProfile, Costs};
use crate::schedule::{Op, PassKind};

/// How the run's backwards were split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackwardSplit {
    /// Input- and weight-gradient passes (`I`, `W`): `b` and `w` are theirs.
    Split,
    /// Full backwards only: `b` is the full backward, `w` is 0.
    FullOnly,
}

/// Costs per stage of the measured pipeline, µs, overhead included.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    /// Forward per stage.
    pub f: Vec<f64>,
    /// Input gradient per stage (the full backward with [`BackwardSplit::FullOnly`]).
    pub b: Vec<f64>,
    /// Weight gradient per stage.
    pub w: Vec<f64>,
    /// One hop between devices.
    pub comm: f64,
    /// The runtime's time per pass, included in `f`, `b` and `w`.
    pub overhead: f64,
    /// The time of an overlapped F&B pair, as [`Costs::overlap`] takes it (scaled per stage
    /// by its work), when the run has pairs.
    pub overlap: Option<f64>,
    /// How the backwards were split.
    pub backward: BackwardSplit,
    /// What the fit could not see directly and assumed.
    pub notes: Vec<String>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The time device `ops[i]`'s device spent after it before its next pass began (0 after the
/// last).
fn tail(ops: &[super::run::MeasuredOp], i: usize) -> f64 {
    ops.get(i + 1).map_or(0.0, |next| next.lead)
}

impl Fitted {
    /// The measured F, B and W a model calibration takes: those of the middle stage (the
    /// upper median among the stages that hold neither the embedding nor the LM head, the
    /// first and last, when there are three or more), compute only: the runtime's per-pass
    /// overhead is taken off. Returns the stage and its times.
    ///
    /// # Errors
    /// A message with a hint when the backwards were not split (no W to calibrate to) or a
    /// pass's compute time is not positive.
    pub fn calibration_stage(&self) -> Result<(usize, [f64; 3]), String> {
        if self.backward == BackwardSplit::FullOnly {
            return Err("the run has full backwards only, so it measures no W to calibrate to\n  \
                 hint: record a schedule that splits the backward (a Zero Bubble schedule, or a CSV with I and W actions)"
                .to_string());
        }
        let stages = self.f.len();
        let inner: Vec<usize> = if stages >= 3 { (1..stages - 1).collect() } else { (0..stages).collect() };
        let Some(&stage) = inner.get(inner.len() / 2) else {
            return Err("the run has no stages\n  hint: record at least one pipeline step".to_string());
        };
        let times = [self.f[stage], self.b[stage], self.w[stage]].map(|t| t - self.overhead);
        if times.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(format!(
                "stage {stage}'s passes take no time once the runtime's overhead ({} µs) is taken off\n  \
                 hint: profile a larger model or microbatch, so compute outweighs the runtime",
                crate::units::format_number(self.overhead, 1)
            ));
        }
        Ok((stage, times))
    }

    /// Fits `run`'s costs.
    pub fn of(run: &MeasuredRun) -> Fitted {
        let stages = run.schedule.placement.stages() as usize;
        let mut samples: Vec<[Vec<f64>; 4]> = vec![Default::default(); stages];
        let mut pairs = 0;
        // Pairs: (the F's stage, the pair's device time).
        let mut pair_samples: Vec<(usize, f64)> = Vec::new();
        for (order, ops) in run.schedule.orders.iter().zip(&run.ops) {
            for (i, (op, m)) in order.iter().zip(ops).enumerate() {
                match *op {
                    Op::One(p) => {
                        if let Some(s) = samples.get_mut(p.stage as usize) {
                            s[p.kind.index()].push(m.duration() + tail(ops, i));
                        }
                    }
                    Op::Pair(first, _) => {
                        pairs += 1;
                        pair_samples.push((first.stage as usize, m.duration() + tail(ops, i)));
                    }
                }
            }
        }
        let mut notes = Vec::new();
        if pairs > 0 {
            notes.push(format!(
                "{pairs} overlapped F&B pairs are left out of the fit: their parts cannot be told apart"
            ));
        }
        let split = samples.iter().any(|s| !s[PassKind::B.index()].is_empty());
        let backward = if split { BackwardSplit::Split } else { BackwardSplit::FullOnly };
        if backward == BackwardSplit::FullOnly {
            notes.push("the run has full backwards only: b is the full backward and w is 0".to_string());
        }
        let per_stage =
            |kind: PassKind| -> Vec<Option<f64>> { samples.iter().map(|s| median(s[kind.index()].clone())).collect() };
        let f = per_stage(PassKind::F);
        let (b, w) = match backward {
            BackwardSplit::Split => {
                // A stage whose I and W were merged into B: its B less the other stages' W share.
                (per_stage(PassKind::B), per_stage(PassKind::W))
            }
            BackwardSplit::FullOnly => (per_stage(PassKind::BW), vec![Some(0.0); stages]),
        };
        // Stages with no sample of a kind take the median of the others.
        let mut fill = |v: Vec<Option<f64>>, name: &str| -> Vec<f64> {
            let known: Vec<f64> = v.iter().flatten().copied().collect();
            let fallback = median(known).unwrap_or(0.0);
            let missing = v.iter().filter(|x| x.is_none()).count();
            if missing > 0 {
                notes.push(format!("{missing} stages ran no single {name} pass: they take the others' median"));
            }
            v.into_iter().map(|x| x.unwrap_or(fallback)).collect()
        };
        let (f, b, w) = (fill(f, "F"), fill(b, "B"), fill(w, "W"));
        let overhead =
            median(run.ops.iter().flat_map(|ops| (0..ops.len().saturating_sub(1)).map(|i| tail(ops, i))).collect())
                .unwrap_or(0.0);
        // Hops: from the end of the producer's time (work and what followed it) to the work
        // that waited for it; with no wait, only an upper bound is seen.
        let hop = |o: &super::run::MeasuredOp| {
            let (d, i) = o.input_from?;
            let ops = run.ops.get(d as usize)?;
            let producer = ops.get(i as usize)?;
            Some(o.work_start - producer.end - tail(ops, i as usize))
        };
        // A pass's own code before its first operator is no wait: only a wait well above the
        // usual such time (that of passes with no input to await) shows the hop.
        let usual = median(
            run.ops.iter().flatten().filter(|o| o.input_from.is_none()).map(|o| o.work_start - o.span_start).collect(),
        )
        .unwrap_or(0.0);
        let waited: Vec<f64> = run
            .ops
            .iter()
            .flatten()
            .filter(|o| o.waited > (2.0 * usual).max(0.1 * o.duration()) + 1.0)
            .filter_map(hop)
            .collect();
        let comm = match median(waited) {
            Some(c) => c.max(0.0),
            None => {
                let slack = run.ops.iter().flatten().filter_map(hop).fold(f64::INFINITY, f64::min);
                if slack.is_finite() {
                    notes.push("no pass waited for an input: the hop is at most the smallest slack seen".to_string());
                    slack.max(0.0)
                } else {
                    0.0
                }
            }
        };
        // A pair of stage s costs `overlap × work(s) / mean work` (`StageCosts`): solve each
        // sample for `overlap`, take the median.
        let work = |s: usize| {
            f.get(s).copied().unwrap_or(0.0) + b.get(s).copied().unwrap_or(0.0) + w.get(s).copied().unwrap_or(0.0)
        };
        let devices = run.schedule.devices().max(1) as f64;
        let mean_work = (0..stages).map(work).sum::<f64>() / devices;
        let overlap = median(
            pair_samples.iter().filter(|(s, _)| work(*s) > 0.0).map(|&(s, time)| time * mean_work / work(s)).collect(),
        );
        Fitted { f, b, w, comm, overhead, overlap, backward, notes }
    }

    /// The fitted costs as Bubblescope's costs for `devices` devices: a profile with one piece
    /// per stage (so this run's stages take exactly their own costs, and any other family's
    /// stages the part of the model they cover), memory in mem-f units.
    pub fn costs(&self, devices: u32) -> Costs {
        let pieces = self.f.len().max(1);
        let per_piece_memory = f64::from(devices) / pieces as f64;
        let profile = CostProfile {
            f: self.f.clone(),
            b: self.b.clone(),
            w: self.w.clone(),
            mem_f: vec![per_piece_memory; pieces],
            mem_w: vec![per_piece_memory / 2.0; pieces],
            finer: Vec::new(),
        };
        let costs = Costs { comm: self.comm, ..Costs::default() };
        Costs { overlap: self.overlap, ..costs.with_profile(profile, devices) }
    }
}
