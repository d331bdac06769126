//! Stats: cost, bubble rates and peak memory.
//!
//! * `cost` is the longest per-device span, first op start to last op end (Zero Bubble §5.3:
//!   "the largest execution time of all stages"): one training step takes this long, and
//!   every device is held for all of it.
//! * A device's *work* is the sum of its passes' times, an overlapped F&B pair counted at its
//!   overlap time. `ideal` is the mean device's work, `Σ work / devices`; with equal stages
//!   and no overlap every device does the papers' `M * (F + B + W)`, and `ideal` is exactly
//!   that.
//! * `bubble_rate` is `(cost - ideal) / cost = 1 - Σ work / (devices * cost)`: the share of
//!   GPU time idle in a step. With equal stages it is the papers' `(cost - M(F+B+W)) / cost`
//!   (to within float noise at the run's scale: differences of times go through the one
//!   noise rule, [`crate::units::difference`]).
//!   With unequal stages it also counts what the lighter devices idle while the busiest one
//!   works (on 4 devices with one doing twice the others' work, at least 3/8 of GPU time).
//! * `bubble_rate_paper` is `(cost - busiest_work) / cost`, the papers' metric measured
//!   against the busiest device's work: the same number with equal stages, and with unequal
//!   stages what the busiest device alone idles (`bubble_rate - bubble_rate_paper =
//!   (busiest_work - ideal) / cost`, the imbalance part of [`crate::attribution`] over cost).
//!   The other normalisations users meet are kept next to them, each named for what it
//!   divides by ([`BubbleMeasure`]).
//! * Per device, [`Stats::idle_share`] is `(cost - work) / cost`, the share of the step the
//!   device does no work; their mean is `bubble_rate`. [`DeviceStats::bubble_rate`] is the
//!   idle time between its own first and last pass over that span.

use crate::params::{Costs, StageCosts};
use crate::schedule::Schedule;
use crate::sim::{PerOpTimes, Timeline};

/// One device's numbers.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct DeviceStats {
    /// The device.
    pub device: u32,
    /// Start of its first op.
    pub start: f64,
    /// End of its last op.
    pub end: f64,
    /// `end - start`.
    pub span: f64,
    /// Time spent running ops.
    pub busy: f64,
    /// `span - busy`: idle time between its first and last op.
    pub idle: f64,
    /// `idle / span`: the share of its own span the device sits idle.
    pub bubble_rate: f64,
    /// Highest activation memory held, in the unit of mem-f.
    pub peak_memory: f64,
    /// The work it must do whatever the order: the sum of its ops' times.
    pub work: f64,
}

/// The numbers of a simulated schedule.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Stats {
    /// The longest per-device span (the papers' cost).
    pub cost: f64,
    /// First op start to last op end over all devices.
    pub makespan: f64,
    /// The mean device's work, `Σ work / devices` (`M * (F + B + W)` with equal stages and
    /// no overlap).
    pub ideal: f64,
    /// `(cost - ideal) / cost = 1 - Σ work / (devices * cost)`: the share of GPU time idle
    /// (the papers' bubble rate with equal stages).
    pub bubble_rate: f64,
    /// `(cost - ideal) / ideal`: bubble relative to ideal compute (Megatron, DualPipe issues,
    /// the Zero Bubble playground).
    pub bubble_over_ideal: f64,
    /// Total idle device time over `devices * makespan` (idle inside the makespan).
    pub idle_over_makespan: f64,
    /// The busiest device's work: the least any order of these passes can cost
    /// (`M * (F + B + W)` with equal stages and no overlap).
    pub busiest_work: f64,
    /// `(cost - busiest_work) / cost`: the Zero Bubble papers' bubble rate, against the
    /// busiest device's work (equal to `bubble_rate` with equal stages).
    pub bubble_rate_paper: f64,
    /// Highest activation memory of any device.
    pub peak_memory: f64,
    /// For a schedule that recomputes or offloads: the highest activation memory of the same
    /// compute orders without R passes and copies (what the trade saves is this less
    /// `peak_memory`). `None` otherwise.
    pub peak_without_trade: Option<f64>,
    /// Per-device numbers.
    pub per_device: Vec<DeviceStats>,
}

/// A bubble-rate normalisation, for labels and switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BubbleMeasure {
    /// `(cost - ideal) / cost`, ideal the mean device's work: the share of GPU time idle.
    OverCost,
    /// `(cost - busiest work) / cost`: the Zero Bubble papers' `(cost - M(F+B+W)) / cost`.
    Paper,
    /// `(cost - ideal) / ideal`.
    OverIdeal,
    /// Idle device time over `devices * makespan`.
    IdleOverMakespan,
}

impl BubbleMeasure {
    /// Every measure, the headline first.
    pub const ALL: [BubbleMeasure; 4] =
        [BubbleMeasure::OverCost, BubbleMeasure::Paper, BubbleMeasure::OverIdeal, BubbleMeasure::IdleOverMakespan];

    /// The formula, as a label.
    pub fn label(self) -> &'static str {
        match self {
            BubbleMeasure::OverCost => "(cost − ideal) / cost",
            BubbleMeasure::Paper => "(cost − busiest work) / cost",
            BubbleMeasure::OverIdeal => "(cost − ideal) / ideal",
            BubbleMeasure::IdleOverMakespan => "idle / (devices × makespan)",
        }
    }

    /// Where the measure comes from.
    pub fn origin(self) -> &'static str {
        match self {
            BubbleMeasure::OverCost => "of GPU time idle",
            BubbleMeasure::Paper => "Zero Bubble papers, busiest device",
            BubbleMeasure::OverIdeal => "Megatron, DualPipe, ZB playground",
            BubbleMeasure::IdleOverMakespan => "utilisation view",
        }
    }

    /// The value of this measure in `stats`.
    pub fn of(self, stats: &Stats) -> f64 {
        match self {
            BubbleMeasure::OverCost => stats.bubble_rate,
            BubbleMeasure::Paper => stats.bubble_rate_paper,
            BubbleMeasure::OverIdeal => stats.bubble_over_ideal,
            BubbleMeasure::IdleOverMakespan => stats.idle_over_makespan,
        }
    }
}

impl BubbleMeasure {
    /// The measure's key in permalinks and the app (`measure=ideal`): `cost`, `paper`,
    /// `ideal` or `idle`.
    pub fn key(self) -> &'static str {
        match self {
            BubbleMeasure::OverCost => "cost",
            BubbleMeasure::Paper => "paper",
            BubbleMeasure::OverIdeal => "ideal",
            BubbleMeasure::IdleOverMakespan => "idle",
        }
    }

    /// The measure with key `key`, if any (the inverse of [`BubbleMeasure::key`]).
    pub fn from_key(key: &str) -> Option<BubbleMeasure> {
        BubbleMeasure::ALL.into_iter().find(|m| m.key() == key)
    }
}

impl DeviceStats {
    /// Whether this device's peak activation memory is above `limit` (none: never). Memory
    /// sums are compared with a tolerance of 1e-9, so a peak that equals the limit up to
    /// rounding is not over it.
    pub fn over_limit(&self, limit: Option<f64>) -> bool {
        limit.is_some_and(|l| self.peak_memory > l + 1e-9)
    }
}

impl Stats {
    /// How many times faster than `baseline` (the ratio of costs); `None` when this cost is 0.
    pub fn speedup_over(&self, baseline: &Stats) -> Option<f64> {
        self.speedup_over_cost(baseline.cost)
    }

    /// [`Stats::speedup_over`] a baseline whose cost alone is known.
    pub fn speedup_over_cost(&self, baseline_cost: f64) -> Option<f64> {
        (self.cost > 0.0).then(|| baseline_cost / self.cost)
    }

    /// `device`'s own idle share: `(cost - work) / cost`, the share of the step it does no
    /// work (idle between its passes, and before and after them). The mean over devices is
    /// [`Stats::bubble_rate`]; 0 for a device that does not exist.
    pub fn idle_share(&self, device: usize) -> f64 {
        self.per_device.get(device).map_or(0.0, |d| ratio(less(self.cost, d.work), self.cost))
    }
}

/// Computes the stats of `schedule` as simulated in `timeline` under `costs`.
pub fn stats(schedule: &Schedule, timeline: &Timeline, costs: &Costs) -> Stats {
    stats_of(schedule, timeline, costs, device_work(schedule, costs), &[])
}

/// The peak of `schedule`'s compute orders without its R passes and copies, when it has any
/// (one more simulation: [`crate::analyze`] fills [`Stats::peak_without_trade`] with it).
pub fn peak_without_trade(schedule: &Schedule, costs: &Costs) -> Option<f64> {
    if !schedule.trades_memory() {
        return None;
    }
    let plain = schedule.compute_orders();
    let costs = Costs { trade: None, ..costs.clone() };
    let timeline = crate::sim::simulate(&plain, &StageCosts::for_schedule(&costs, &plain)).ok()?;
    Some(timeline.devices.iter().map(|d| d.peak_memory).fold(0.0, f64::max))
}

/// The stats of a measured run replayed in `timeline`: each device's work is the time its
/// passes took, as measured (`costs` only say what equal stages would be), and its span runs
/// from when it began its first pass (`times`' starts: its wait for that pass's input kept),
/// so cost and makespan are the measured step's.
pub fn measured_stats(schedule: &Schedule, timeline: &Timeline, costs: &Costs, times: &PerOpTimes) -> Stats {
    let work = timeline.devices.iter().map(|d| d.ops.iter().map(|o| o.end - o.start).sum()).collect();
    stats_of(schedule, timeline, costs, work, &times.starts)
}

fn stats_of(schedule: &Schedule, timeline: &Timeline, costs: &Costs, work: Vec<f64>, starts: &[f64]) -> Stats {
    let mut per_device = Vec::with_capacity(timeline.devices.len());
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    for (device, dt) in timeline.devices.iter().enumerate() {
        let start = dt.ops.first().map_or(0.0, |o| starts.get(device).map_or(o.start, |&s| s.min(o.start)));
        let end = dt.ops.last().map_or(0.0, |o| o.end);
        if !dt.ops.is_empty() {
            first = first.min(start);
            last = last.max(end);
        }
        let busy: f64 = dt.ops.iter().map(|o| o.end - o.start).sum();
        let span = end - start;
        let idle = less(span, busy);
        per_device.push(DeviceStats {
            device: device as u32,
            start,
            end,
            span,
            busy,
            idle,
            bubble_rate: ratio(idle, span),
            peak_memory: dt.peak_memory,
            work: work.get(device).copied().unwrap_or(0.0),
        });
    }
    let makespan = if last >= first { last - first } else { 0.0 };
    let cost = per_device.iter().map(|d| d.span).fold(0.0, f64::max);
    let ideal = mean_work(schedule, costs, &work);
    let busiest = busiest_work(schedule, costs, &work);
    let busy_total: f64 = per_device.iter().map(|d| d.busy).sum();
    let capacity = makespan * per_device.len() as f64;
    Stats {
        cost,
        makespan,
        ideal,
        bubble_rate: ratio(less(cost, ideal), cost),
        bubble_over_ideal: ratio(less(cost, ideal), ideal),
        idle_over_makespan: ratio(less(capacity, busy_total), capacity),
        busiest_work: busiest,
        bubble_rate_paper: ratio(less(cost, busiest), cost),
        peak_memory: per_device.iter().map(|d| d.peak_memory).fold(0.0, f64::max),
        peak_without_trade: None,
        per_device,
    }
}

/// The device with the most work and how far above the mean it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bottleneck {
    /// The busiest device.
    pub device: u32,
    /// Its work.
    pub work: f64,
    /// The mean work over all devices.
    pub mean: f64,
}

impl Bottleneck {
    /// How much more work than the mean, as a fraction (0.23 for 23%).
    pub fn excess(&self) -> f64 {
        ratio(self.work - self.mean, self.mean)
    }
}

impl Stats {
    /// The busiest device, when it does measurably (more than 0.5%) more work than the mean.
    pub fn bottleneck(&self) -> Option<Bottleneck> {
        let n = self.per_device.len();
        if n < 2 {
            return None;
        }
        let mean = self.per_device.iter().map(|d| d.work).sum::<f64>() / n as f64;
        let busiest = self.per_device.iter().max_by(|a, b| a.work.total_cmp(&b.work))?;
        let b = Bottleneck { device: busiest.device, work: busiest.work, mean };
        (b.excess() > 0.005).then_some(b)
    }
}

/// Each device's work under `costs`: the sum of its ops' times as the simulator runs them.
pub fn device_work(schedule: &Schedule, costs: &Costs) -> Vec<f64> {
    let stage_costs = StageCosts::for_schedule(costs, schedule);
    schedule.orders.iter().map(|order| order.iter().map(|op| stage_costs.op(op)).sum()).collect()
}

/// The busiest device's work. With equal stages, no overlapped pairs and every device doing
/// `M` microbatches' share, that is exactly the papers' `M * (F + B + W)`, returned as written
/// (summing pass by pass could differ in the last bit).
pub(crate) fn busiest_work(schedule: &Schedule, costs: &Costs, work: &[f64]) -> f64 {
    as_written(schedule, costs, work.iter().copied().fold(0.0, f64::max))
}

/// The mean device's work, `Σ work / devices`: with equal stages and no overlapped pairs, the
/// papers' `M * (F + B + W)` as written, like [`busiest_work`] (then every device does it).
pub(crate) fn mean_work(schedule: &Schedule, costs: &Costs, work: &[f64]) -> f64 {
    let mean = if work.is_empty() { 0.0 } else { work.iter().sum::<f64>() / work.len() as f64 };
    as_written(schedule, costs, mean)
}

/// `value`, or the papers' `M * (F + B + W)` when costs are uniform, no op is an overlapped
/// pair and `value` equals it up to rounding.
fn as_written(schedule: &Schedule, costs: &Costs, value: f64) -> f64 {
    let paper = f64::from(schedule.microbatches) * (costs.f + costs.b + costs.w);
    let pairs = schedule.orders.iter().flatten().any(|op| op.is_pair());
    let tolerance = 1e-9 * paper.abs().max(1.0);
    if costs.is_uniform() && !pairs && (value - paper).abs() <= tolerance {
        paper
    } else {
        value
    }
}

/// `a − b` as reports give it ([`difference`](crate::units::difference), the one noise rule):
/// 0 when the two differ by float noise alone (a device idle 2e-10 µs of a 2 s span, a bubble
/// rate of −8e-16), and a difference a few rounding steps from a short decimal at the terms'
/// scale is that decimal (`2` for 50.00000000000007 − 48), so a rate is the papers'
/// `(cost − ideal) / cost` to within float noise at the run's scale, and prints without it
/// (`0.04`, not `0.0400000000000015`).
fn less(a: f64, b: f64) -> f64 {
    crate::units::difference(a, b)
}

/// `num / den` ([`quotient`](crate::units::quotient)): 3 / 51, not 3 / 50.99999999999997;
/// 0 without a positive denominator.
fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        crate::units::quotient(num, den)
    } else {
        0.0
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    #[test]
    fn measure_keys_round_trip() {
        crate::error::assert_names_round_trip(&BubbleMeasure::ALL, BubbleMeasure::key, BubbleMeasure::from_key);
        assert_eq!(BubbleMeasure::from_key("ideal"), Some(BubbleMeasure::OverIdeal));
    }
}
