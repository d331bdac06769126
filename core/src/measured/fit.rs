//! Costs fitted from a measured run: what a user re-plans with.
//!
//! A device runs a pass's work, then its own code until the next pass begins (sending the
//! result, posting receives, the runtime's bookkeeping), then waits for the next pass's input
//! if it has not arrived. So per stage, F, B and W are the medians (robust to a slow outlier)
//! of each pass's work plus the time its device spent after it before the next pass: the
//! runtime's per-pass overhead is in them, as every prediction must pay it. The hop is the
//! median time from the end of that time on the input's device to the work that waited for
//! it. A run of full backwards only fits `b` as the full backward and `w` as 0.
//!
//! Beside each median the fit keeps the samples' spread (their median absolute deviation)
//! and names the passes far from their median ([`Outlier`]), so a disturbed run shows as
//! disturbed: the medians do not follow those passes, the measured step does.

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
    /// How far each stage's samples lie from its median.
    pub spread: Spread,
    /// The passes far from their stage's median, farthest first (by ratio).
    pub outliers: Vec<Outlier>,
    /// What the fit could not see directly and assumed.
    pub notes: Vec<String>,
}

/// The spread of each stage's samples behind `f`, `b` and `w`: their median absolute
/// deviation from the median, µs (0 for a stage with fewer than two samples).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// Of the forwards, per stage.
    pub f: Vec<f64>,
    /// Of the input-gradient (or full backward) passes, per stage.
    pub b: Vec<f64>,
    /// Of the weight-gradient passes, per stage.
    pub w: Vec<f64>,
}

/// A pass whose sample (its work and the device's time after it), or its work alone, lies
/// far from its stage's median of the same: more than [`Outlier::MADS`] scaled median
/// absolute deviations away, and more than [`Outlier::RATIO`] times above or below it. The
/// work alone shows a pass cut short (a forward of 12 µs among 4 ms ones), whose sample the
/// device's time after it would fill back up.
#[derive(Clone, Debug, PartialEq)]
pub struct Outlier {
    /// Its device.
    pub device: u32,
    /// The action, as the trace names it.
    pub label: String,
    /// Its stage.
    pub stage: u32,
    /// Its kind (F, B, W, or BW when the backwards were not split).
    pub kind: PassKind,
    /// Its sample, µs: the work and the device's time after it.
    pub time: f64,
    /// Of which the work itself.
    pub work: f64,
    /// The stage's median of this kind, µs (what the fit took).
    pub median: f64,
    /// The stage's median work of this kind, µs.
    pub work_median: f64,
}

impl Outlier {
    /// How many scaled median absolute deviations from the median make an outlier.
    pub const MADS: f64 = 3.0;
    /// The least factor an outlier lies above or below its median (so that samples of a
    /// very even stage, a few µs apart, are no outliers).
    pub const RATIO: f64 = 1.5;
    /// The factor that makes a median absolute deviation a standard deviation's estimate
    /// for normally spread samples.
    const MAD_SCALE: f64 = 1.4826;

    /// How far the pass lies from its median: `time / median` (3.5 for a pass that took three
    /// and a half times its median), or `work / work_median` when that lies farther (in
    /// either direction: 0.003 for a forward cut to 12 µs of a 4 ms median).
    pub fn ratio(&self) -> f64 {
        let (time, work) = (self.time_ratio(), self.work_ratio());
        let far = |r: f64| if r > 0.0 { r.max(1.0 / r) } else { f64::INFINITY };
        if far(work) > far(time) {
            work
        } else {
            time
        }
    }

    /// `time / median`.
    pub fn time_ratio(&self) -> f64 {
        quotient(self.time, self.median)
    }

    /// `work / work_median`.
    pub fn work_ratio(&self) -> f64 {
        quotient(self.work, self.work_median)
    }

    /// Whether `time` is an outlier among samples of median `median` and median absolute
    /// deviation `mad`.
    pub fn is_outlying(time: f64, median: f64, mad: f64) -> bool {
        let far = (time - median).abs() > Self::MADS * Self::MAD_SCALE * mad;
        far && (time > Self::RATIO * median || Self::RATIO * time < median)
    }
}

/// A ratio to a median as the text shows it: two decimals (`2.54`), or two significant
/// digits below 0.01 (`0.003`), so a pass cut far short never shows as `0`.
pub fn format_ratio(r: f64) -> String {
    if r.abs() >= 0.01 || r == 0.0 {
        crate::units::format_number(r, 2)
    } else {
        crate::units::format_significant(r, 2)
    }
}

/// `a / b`, infinite for `b` at or below 0.
/// `a / b`, a median's ratio: 1 for 0 / 0 (a pass of no work among passes of none is not far
/// from them), infinite for a positive `a` over 0.
fn quotient(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else if a > 0.0 {
        f64::INFINITY
    } else {
        1.0
    }
}

/// `2.7× the median 4 ms`: ratio `r` to a median (`median`, as the text names it: `the
/// median 4 ms`); `above the median 0 µs` when the median is 0 and the ratio has no finite
/// value, never `inf×`.
pub fn against_median(r: f64, median: &str) -> String {
    match r.is_finite() {
        true => format!("{}× {median}", format_ratio(r)),
        false => format!("above {median}"),
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    crate::units::sort::sort_by(&mut v, f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The median absolute deviation of `v` from its median `m` (0 with fewer than two samples).
fn mad(v: &[f64], m: f64) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    median(v.iter().map(|x| (x - m).abs()).collect()).unwrap_or(0.0)
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
        // Where each sample came from: (device, position in its order), parallel to `samples`.
        let mut origins: Vec<[Vec<(usize, usize)>; 4]> = vec![Default::default(); stages];
        let mut pairs = 0;
        // Pairs: (the F's stage, the pair's device time).
        let mut pair_samples: Vec<(usize, f64)> = Vec::new();
        for (d, (order, ops)) in run.schedule.orders.iter().zip(&run.ops).enumerate() {
            for (i, (op, m)) in order.iter().zip(ops).enumerate() {
                match *op {
                    Op::One(p) => {
                        if let Some(s) = samples.get_mut(p.stage as usize) {
                            s[p.kind.index()].push(m.duration() + tail(ops, i));
                            origins[p.stage as usize][p.kind.index()].push((d, i));
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
        let (spread, outliers) = spread_and_outliers(run, &samples, &origins, backward);
        Fitted { f, b, w, comm, overhead, overlap, backward, spread, outliers, notes }
    }

    /// The note a fit with outliers gets: how many passes, how far off, on which devices.
    pub fn outlier_note(&self) -> Option<String> {
        if self.outliers.is_empty() {
            return None;
        }
        let mut devices: Vec<u32> = self.outliers.iter().map(|o| o.device).collect();
        devices.sort_unstable();
        devices.dedup();
        // A ratio over a median of 0 has no finite value: the range is of the others.
        let finite = self.outliers.iter().map(Outlier::ratio).filter(|r| r.is_finite());
        let (low, high) = finite.fold((f64::INFINITY, 0.0_f64), |(l, h), r| (l.min(r), h.max(r)));
        let ratio = |r: f64| format!("{}×", format_ratio(r));
        let range = match (low.is_finite(), self.outliers.iter().any(|o| !o.ratio().is_finite())) {
            (false, _) => "above a median of 0 of".to_string(),
            (true, true) => format!("{} to above a median of 0 of", ratio(low)),
            (true, false) if high - low < 0.005 => ratio(high),
            (true, false) => format!("{} to {}", ratio(low), ratio(high)),
        };
        let names: Vec<String> = devices.iter().map(u32::to_string).collect();
        let on = match names.split_last() {
            Some((last, [])) => format!("device {last}"),
            Some((last, rest)) => format!("devices {} and {last}", rest.join(", ")),
            None => String::new(),
        };
        Some(format!(
            "{} on {on} ran far from {} stage's median ({range} it): the fitted medians do not follow {}",
            crate::schedule::counted(self.outliers.len() as u32, "pass", "passes"),
            if self.outliers.len() == 1 { "its" } else { "their" },
            if self.outliers.len() == 1 { "it" } else { "them" },
        ))
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
            a2a_f: Vec::new(),
            a2a_b: Vec::new(),
            finer: Vec::new(),
        };
        let costs = Costs { comm: self.comm, ..Costs::default() };
        Costs { overlap: self.overlap, ..costs.with_profile(profile, devices) }
    }
}

/// Each stage's spread, and the samples far from their median, farthest first.
fn spread_and_outliers(
    run: &MeasuredRun,
    samples: &[[Vec<f64>; 4]],
    origins: &[[Vec<(usize, usize)>; 4]],
    backward: BackwardSplit,
) -> (Spread, Vec<Outlier>) {
    let kinds: &[PassKind] = match backward {
        BackwardSplit::Split => &[PassKind::F, PassKind::B, PassKind::W],
        BackwardSplit::FullOnly => &[PassKind::F, PassKind::BW],
    };
    let mut spread = Spread { f: vec![0.0; samples.len()], b: vec![0.0; samples.len()], w: vec![0.0; samples.len()] };
    let mut outliers = Vec::new();
    for (stage, (of_stage, from)) in samples.iter().zip(origins).enumerate() {
        for &kind in kinds {
            let values = &of_stage[kind.index()];
            let Some(m) = median(values.clone()) else { continue };
            let deviation = mad(values, m);
            let slot = match kind {
                PassKind::F => &mut spread.f,
                PassKind::W => &mut spread.w,
                _ => &mut spread.b,
            };
            slot[stage] = deviation;
            let works: Vec<f64> = from[kind.index()].iter().map(|&(d, i)| run.ops[d][i].duration()).collect();
            let work_median = median(works.clone()).unwrap_or(0.0);
            let work_deviation = mad(&works, work_median);
            for ((&time, &work), &(d, i)) in values.iter().zip(&works).zip(&from[kind.index()]) {
                if Outlier::is_outlying(time, m, deviation) || Outlier::is_outlying(work, work_median, work_deviation) {
                    outliers.push(Outlier {
                        device: d as u32,
                        label: run.ops[d][i].label.clone(),
                        stage: stage as u32,
                        kind,
                        time,
                        work,
                        median: m,
                        work_median,
                    });
                }
            }
        }
    }
    crate::units::sort::sort_by(&mut outliers, |a, b| {
        (b.ratio().max(1.0 / b.ratio())).total_cmp(&(a.ratio().max(1.0 / a.ratio())))
    });
    (spread, outliers)
}
