//! Why there is bubble: a schedule's `cost − ideal` and each device's idle time, split into
//! named parts that are never negative and add up exactly.
//!
//! **Overall.** `cost − ideal` is the GPU time a step leaves idle, per device (`ideal` is the
//! mean device's work, so `(cost − ideal) / cost` is the share of GPU time idle). With `c₀`
//! the cost as simulated, `c₁` the cost of the same orders simulated with communication 0,
//! `w̄` the mean device's work and `ŵ` the busiest device's:
//!
//! * **communication** = `c₀ − c₁`: what the hops between devices add to the step;
//! * **imbalance** = `ŵ − w̄`: the busiest device's work over the mean's. No order of these
//!   passes can cost less than `ŵ`, so unequal stages cost the mean device at least this much
//!   idle time in every step, whatever the schedule;
//! * **schedule** = what is left, `c₁ − ŵ`: how far these orders, without communication, are
//!   from the busiest device's work (warm-up, cool-down and the waits the order creates).
//!
//! The details are in `docs/bubble-causes.md`, under `attribution.rs`.

use crate::analysis::{analyze, Analysis, AnalyzeError};
use crate::families::Family;
use crate::params::Costs;
use crate::schedule::{PassKind, Schedule};
use crate::sim::{simulate, simulate_timed, OpTimes, PerOpTimes, Timeline};
use crate::stats::{measured_stats, stats, Stats};
use crate::{error::Field, error::ParamError, error::SimError, params::ScheduleParams, params::StageCosts};

/// One split of a bubble (of `cost − ideal`, or of one device's idle time): every part `≥ 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Parts {
    /// Lost to communication.
    pub communication: f64,
    /// Added by unequal stages.
    pub imbalance: f64,
    /// Created by the order itself.
    pub schedule: f64,
}

impl Parts {
    /// The sum of the parts.
    pub fn total(&self) -> f64 {
        self.communication + self.imbalance + self.schedule
    }

    /// The parts of a run whose times are about `scale` (its cost) without float noise
    /// ([`crate::units::without_noise_in`]): a part left by subtracting equal times is 0, one
    /// a few rounding steps from a round value is that value (1, not 0.9999999999997016).
    pub fn without_noise(self, scale: f64) -> Parts {
        let clean = |v: f64| crate::units::without_noise_in(v, scale).max(0.0);
        Parts {
            communication: clean(self.communication),
            imbalance: clean(self.imbalance),
            schedule: clean(self.schedule),
        }
    }
}

/// The split of a schedule's bubble, overall and per device.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Attribution {
    /// Splits `cost − ideal` (see the module docs).
    pub overall: Parts,
    /// Splits each device's idle time: the sums of its gaps' parts ([`crate::gaps`]).
    pub per_device: Vec<Parts>,
}

/// Splits the bubble of `analysis`, simulated under `costs`: overall and per device.
///
/// # Errors
/// A [`SimError`] if a re-simulation cannot finish (it cannot when the original did: the
/// orders and dependencies are the same).
pub fn attribute(analysis: &Analysis, costs: &Costs) -> Result<Attribution, SimError> {
    let runs = Runs::of(analysis, costs)?;
    Ok(runs.attribution(analysis, costs))
}

/// Splits `cost − ideal` of `schedule` (whose stats under `costs` are `measured`) alone: one
/// re-simulation, without communication (none when there is no communication).
///
/// # Errors
/// A [`SimError`] if the re-simulation cannot finish (it cannot when the original did).
pub fn overall(schedule: &Schedule, costs: &Costs, measured: &Stats) -> Result<Parts, SimError> {
    let cost_without_comm = if costs.comm == 0.0 {
        measured.cost
    } else {
        let no_comm = variants(costs).0;
        let schedule = schedule.without_slots();
        let timeline = simulate(&schedule, &StageCosts::for_schedule(&no_comm, &schedule))?;
        stats(&schedule, &timeline, &no_comm).cost
    };
    Ok(overall_parts(measured, cost_without_comm))
}

/// The overall split from the stats as simulated and the cost of the same orders without
/// communication (see the module docs for the definition).
pub fn overall_parts(measured: &Stats, cost_without_comm: f64) -> Parts {
    let gap = measured.cost - measured.ideal;
    let imbalance = (measured.busiest_work - measured.ideal).clamp(0.0, gap.max(0.0));
    let communication = (measured.cost - cost_without_comm).clamp(0.0, (gap - imbalance).max(0.0));
    Parts { communication, imbalance, schedule: (gap - imbalance - communication).max(0.0) }
        .without_noise(measured.cost)
}

/// The costs of the two re-simulations: without communication, and without communication at
/// the mean stage's cost (every stage equal).
pub fn variants(costs: &Costs) -> (Costs, Costs) {
    (
        Costs { comm: 0.0, links: None, ..costs.clone() },
        Costs { comm: 0.0, links: None, profile: None, ..costs.clone() },
    )
}

/// The two re-simulations of a schedule's orders, without communication and without
/// communication at mean stage costs; `None` where one would repeat the run before it (no
/// communication, or equal stages).
pub(crate) struct Runs {
    pub(crate) no_comm: Option<Timeline>,
    pub(crate) even: Option<Timeline>,
}

impl Runs {
    /// The two re-simulations of `analysis`: of a measured run at its own times
    /// ([`Runs::timed`]), else under the [`variants`] of `costs`.
    pub(crate) fn of(analysis: &Analysis, costs: &Costs) -> Result<Runs, SimError> {
        match &analysis.times {
            Some(times) => Runs::timed(&analysis.schedule, costs, times),
            None => Runs::new(&analysis.schedule, costs),
        }
    }

    /// The re-simulations of a measured run: without communication, every hop 0 (its waits
    /// for inputs from other devices gone); and besides at equal stages, every op taking the
    /// mean time of its kind over the whole run. The runtime's time before each op stays.
    pub(crate) fn timed(schedule: &Schedule, costs: &Costs, times: &PerOpTimes) -> Result<Runs, SimError> {
        let memory = StageCosts::for_schedule(costs, schedule);
        let zero_hops: Vec<Vec<f64>> = times.hops.iter().map(|h| vec![0.0; h.len()]).collect();
        let no_comm = PerOpTimes { hops: zero_hops.clone(), ..times.clone() };
        // The mean duration of each kind of op (by its passes' kinds, a pair as its own kind).
        let kind = |op: &crate::schedule::Op| {
            op.passes().fold(0usize, |k, p| k * (PassKind::ALL.len() + 1) + p.kind.index() + 1)
        };
        let mut sums: std::collections::BTreeMap<usize, (f64, usize)> = std::collections::BTreeMap::new();
        for (order, durations) in schedule.orders.iter().zip(&times.durations) {
            for (op, d) in order.iter().zip(durations) {
                let e = sums.entry(kind(op)).or_insert((0.0, 0));
                e.0 += d;
                e.1 += 1;
            }
        }
        let mean = |op: &crate::schedule::Op| sums.get(&kind(op)).map_or(0.0, |&(s, n)| s / n.max(1) as f64);
        let durations = schedule.orders.iter().map(|order| order.iter().map(mean).collect()).collect();
        let even = PerOpTimes { durations, leads: times.leads.clone(), hops: zero_hops, starts: times.starts.clone() };
        let run = |t: PerOpTimes| simulate_timed(schedule, &OpTimes { times: t, memory: memory.clone() });
        Ok(Runs { no_comm: Some(run(no_comm)?), even: Some(run(even)?) })
    }

    /// Simulates the orders of `schedule` under the two [`variants`] of `costs`.
    pub(crate) fn new(schedule: &Schedule, costs: &Costs) -> Result<Runs, SimError> {
        let (no_comm, even) = variants(costs);
        let schedule = schedule.without_slots();
        let run = |c: &Costs| simulate(&schedule, &StageCosts::for_schedule(c, &schedule));
        let no_comm = if costs.comm == 0.0 { None } else { Some(run(&no_comm)?) };
        let even = if costs.is_uniform() { None } else { Some(run(&even)?) };
        Ok(Runs { no_comm, even })
    }

    /// The three timelines: as given, without communication, at mean stage costs.
    pub(crate) fn timelines<'a>(&'a self, given: &'a Timeline) -> [&'a Timeline; 3] {
        let no_comm = self.no_comm.as_ref().unwrap_or(given);
        [given, no_comm, self.even.as_ref().unwrap_or(no_comm)]
    }

    /// The attribution of `analysis` from these runs.
    pub(crate) fn attribution(&self, analysis: &Analysis, costs: &Costs) -> Attribution {
        let schedule = &analysis.schedule;
        let ts = self.timelines(&analysis.timeline);
        let cost_without_comm = match (&self.no_comm, &analysis.times) {
            // The cost is the longest span: it reads the timeline, not the costs (a measured
            // run's devices start when they began their first pass, as its own stats count).
            (Some(t), Some(times)) => measured_stats(schedule, t, &variants(costs).0, times).cost,
            (Some(t), None) => stats(schedule, t, &variants(costs).0).cost,
            (None, _) => analysis.stats.cost,
        };
        let overall = overall_parts(&analysis.stats, cost_without_comm);
        let spans = ts.map(RunSpan::of);
        let eps = tiny_gap(spans[0]);
        let per_device = (0..analysis.timeline.devices.len())
            .map(|d| {
                let ops = analysis.timeline.devices[d].ops.len();
                // The gaps between its first and last op: its idle time.
                (1..ops)
                    .fold(Parts::default(), |sum, i| {
                        let [g0, g1, g2] = [0, 1, 2].map(|k| gap_before(ts[k], spans[k], d, i));
                        if g0 <= eps {
                            return sum;
                        }
                        let p = split_gap(g0, g1, g2).0;
                        Parts {
                            communication: sum.communication + p.communication,
                            imbalance: sum.imbalance + p.imbalance,
                            schedule: sum.schedule + p.schedule,
                        }
                    })
                    .without_noise(analysis.stats.cost)
            })
            .collect();
        Attribution { overall, per_device }
    }
}

/// A whole run's start and end: the first op's start and the last op's end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunSpan {
    pub(crate) start: f64,
    pub(crate) end: f64,
}

impl RunSpan {
    pub(crate) fn of(timeline: &Timeline) -> RunSpan {
        let start =
            timeline.devices.iter().filter_map(|d| d.ops.first()).map(|o| o.start).fold(f64::INFINITY, f64::min);
        RunSpan { start: if start.is_finite() { start } else { 0.0 }, end: timeline.end() }
    }
}

/// Gaps of this length or shorter in a run over `span` are rounding, not idle time.
pub(crate) fn tiny_gap(span: RunSpan) -> f64 {
    1e-12 * (span.end - span.start).abs().max(1.0)
}

/// The gap before op `i` of `device` (`i == len` is the tail, `i == 0` the lead from the
/// run's start), in `timeline`.
pub(crate) fn gap_before(timeline: &Timeline, span: RunSpan, device: usize, i: usize) -> f64 {
    let ops = &timeline.devices[device].ops;
    let from = if i == 0 { span.start } else { ops[i - 1].end };
    let to = ops.get(i).map_or(span.end, |o| o.start);
    to - from
}

/// Splits a gap of length `g0` from the same gap's lengths without communication (`g1`) and
/// at mean stage costs (`g2`); whether clamping changed a part.
pub(crate) fn split_gap(g0: f64, g1: f64, g2: f64) -> (Parts, bool) {
    let (c, i) = (g0 - g1, g1 - g2);
    let communication = c.clamp(0.0, g0.max(0.0));
    let imbalance = i.clamp(0.0, (g0 - communication).max(0.0));
    let parts = Parts { communication, imbalance, schedule: (g0 - communication - imbalance).max(0.0) };
    (parts, communication != c || imbalance != i)
}

/// The memory part of a run of `family` at `params` whose simulated cost is `cost`: `cost`
/// minus the cost of the same family with no memory limit. `None` when the family does not
/// schedule to a limit or no limit is set.
///
/// # Errors
/// The family's [`ParamError`] if it cannot run without the limit (it can whenever it can run
/// with one), or a [`SimError`] turned into one.
pub fn memory_part(family: &Family, params: &ScheduleParams, cost: f64) -> Option<Result<f64, ParamError>> {
    if !family.uses(Field::MemLimit) {
        return None;
    }
    params.mem_limit?;
    let unlimited = f64::from(params.microbatches) * f64::from(params.devices) * params.costs.mem_f.max(0.0) + 1.0;
    let free = ScheduleParams { mem_limit: Some(unlimited), ..params.clone() };
    let run = family.generate(&free).map_err(AnalyzeError::Param).and_then(|s| analyze(s, &free.costs));
    Some(match run {
        Ok(a) => Ok(cost - a.stats.cost),
        Err(AnalyzeError::Param(e)) => Err(e),
        Err(e) => {
            Err(ParamError::new(Field::MemLimit, format!("{} without a memory limit cannot run: {e}", family.name)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::CostProfile;
    use crate::{params::ScheduleParams, run};

    #[test]
    fn memory_part_is_the_cost_of_the_limit() {
        // zb-auto at 1F1B's memory (ZB-1p) versus unlimited (the ZB-2p-like 24 at P = 4, M = 8).
        let p = ScheduleParams::new(4, 8).with_mem_limit(4.0);
        let zb = crate::family("zb-auto").unwrap();
        let limited = run("zb-auto", &p).unwrap();
        let free = run("zb-auto", &ScheduleParams::new(4, 8)).unwrap();
        let part = memory_part(zb, &p, limited.stats.cost).unwrap().unwrap();
        assert_eq!(part, limited.stats.cost - free.stats.cost);
        assert_eq!(part, 3.0);
        // No limit set, or a family without one: no memory part.
        assert!(memory_part(zb, &ScheduleParams::new(4, 8), 27.0).is_none());
        assert!(memory_part(crate::family("zb-h1").unwrap(), &p, 27.0).is_none());
        for name in ["zb-v", "v-auto", "zb-opt"] {
            let f = crate::family(name).unwrap();
            let a = run(name, &p).unwrap();
            assert!(memory_part(f, &p, a.stats.cost).unwrap().is_ok(), "{name}");
        }
    }

    #[test]
    fn one_f_one_b_at_equal_costs_is_all_schedule() {
        let a = run("1f1b", &ScheduleParams::new(4, 8)).unwrap();
        let parts = attribute(&a, &Costs::default()).unwrap();
        assert_eq!(parts.overall, Parts { communication: 0.0, imbalance: 0.0, schedule: 9.0 });
        assert_eq!(parts.per_device[0].schedule, a.stats.per_device[0].idle);
        assert_eq!(overall(&a.schedule, &Costs::default(), &a.stats).unwrap(), parts.overall);
    }

    #[test]
    fn communication_is_what_the_hops_cost() {
        let costs = Costs { comm: 1.0, ..Costs::default() };
        let a = run("1f1b", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let parts = attribute(&a, &costs).unwrap();
        let free = run("1f1b", &ScheduleParams::new(4, 8)).unwrap();
        assert_eq!(parts.overall.communication, a.stats.cost - free.stats.cost);
        assert!(parts.overall.communication > 0.0);
        assert_eq!(parts.overall.imbalance, 0.0);
        assert_eq!(overall(&a.schedule, &costs, &a.stats).unwrap(), parts.overall);
    }

    fn heavy_last(f: f64, b: f64, w: f64) -> Costs {
        let base = Costs::default();
        let mut profile = CostProfile::uniform(&base, 4);
        profile.f[3] = f;
        profile.b[3] = b;
        profile.w[3] = w;
        base.with_profile(profile, 4)
    }

    #[test]
    fn a_heavy_last_stage_shows_as_imbalance() {
        let costs = heavy_last(3.0, 3.0, 1.0);
        let a = run("1f1b", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let parts = attribute(&a, &costs).unwrap();
        // The light devices wait for the heavy one: 8 microbatches × 4 of extra F+B on the
        // last stage, less what they themselves had to spare.
        for d in 0..3 {
            assert!(parts.per_device[d].imbalance > 20.0, "{parts:?}");
        }
        assert_eq!(parts.per_device[3], Parts::default(), "the heavy device never waits");
        // Work 24, 24, 24, 56: mean 32, busiest 56; the step costs 65.
        assert_eq!((a.stats.ideal, a.stats.busiest_work, a.stats.cost), (32.0, 56.0, 65.0));
        assert_eq!(parts.overall, Parts { communication: 0.0, imbalance: 24.0, schedule: 9.0 });
        assert_eq!(parts.overall.total(), a.stats.cost - a.stats.ideal);
        // The headline is the papers' rate plus imbalance over cost.
        assert_eq!(a.stats.bubble_rate, 33.0 / 65.0);
        assert_eq!(a.stats.bubble_rate_paper, 9.0 / 65.0);
    }

    /// The example: the papers' rate says no bubble, while half of GPU time is idle.
    #[test]
    fn zb_h1_with_a_heavy_last_stage_idles_half_the_gpus() {
        let costs = heavy_last(3.0, 3.0, 2.0);
        let a = run("zb-h1", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let s = &a.stats;
        let work: Vec<f64> = s.per_device.iter().map(|d| d.work).collect();
        assert_eq!(work, [24.0, 24.0, 24.0, 64.0]);
        assert_eq!((s.cost, s.ideal, s.busiest_work), (64.0, 34.0, 64.0));
        assert_eq!(s.bubble_rate, 30.0 / 64.0);
        assert_eq!(s.bubble_rate, 1.0 - work.iter().sum::<f64>() / (4.0 * s.cost));
        assert_eq!(s.bubble_rate_paper, 0.0);
        let parts = attribute(&a, &costs).unwrap();
        assert_eq!(parts.overall, Parts { communication: 0.0, imbalance: 30.0, schedule: 0.0 });
        // Each device's own idle share; their mean is the headline.
        let shares: Vec<f64> = (0..4).map(|d| s.idle_share(d)).collect();
        assert_eq!(shares, [40.0 / 64.0, 40.0 / 64.0, 40.0 / 64.0, 0.0]);
        assert_eq!(shares.iter().sum::<f64>() / 4.0, s.bubble_rate);
    }
}
