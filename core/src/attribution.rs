//! Why there is bubble: a schedule's `cost − ideal` and each device's idle time, split into
//! named parts that add up exactly.
//!
//! The same pass orders are simulated three times (the simulator computes every number):
//!
//! 1. as given — cost `c₀`, ideal `i₀` (the busiest device's work);
//! 2. with communication 0 — cost `c₁`;
//! 3. with communication 0 and every stage at the mean stage's cost — cost `c₂`, ideal `i₂`.
//!
//! * **communication** = `c₀ − c₁`: what the orders lose to hops between devices;
//! * **imbalance** = `(c₁ − c₂) − (i₀ − i₂)`: what unequal stages add beyond the extra work of
//!   the busiest device (which the ideal already counts);
//!   Measured against the busiest device's work, unequal stages can even shrink the gap (the
//!   light devices fill the warm-up faster), so this part may be negative; per device it is the
//!   time light devices wait for heavy ones, never negative in practice.
//! * **schedule** = the rest, `c₂ − i₂` up to rounding: warm-up, cool-down and the waits the
//!   order itself creates.
//!
//! Per device the same split applies to its idle time (span − busy): `idle₀ − idle₁`,
//! `idle₁ − idle₂`, `idle₂`.
//!
//! **memory** ([`memory_part`]) is reported beside the three, not inside: it compares two
//! *schedules*, not two timings of one. For a family that schedules to a memory limit (its
//! registry entry has a `mem-limit` option) run with a limit, it is the cost of that schedule
//! minus the cost of the same family generated with no limit (a limit of `M·P·mem-f`, more
//! than any device can hold), both simulated. A heuristic is not monotone in its limit, so the
//! part can be negative: the limited schedule happened to be better.

use crate::analysis::{analyze, AnalyzeError};
use crate::families::Family;
use crate::params::Costs;
use crate::schedule::Schedule;
use crate::sim::simulate;
use crate::stats::{stats, Stats};
use crate::{Field, ParamError, ScheduleParams, SimError, StageCosts};

/// One split of a bubble (of `cost − ideal`, or of one device's idle time).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
}

/// The split of a schedule's bubble, overall and per device.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribution {
    /// Splits `cost − ideal`.
    pub overall: Parts,
    /// Splits each device's idle time.
    pub per_device: Vec<Parts>,
    /// The two terms the overall imbalance part is the difference of: how much unequal
    /// stages move the cost of these orders (communication 0), and how much they raise the
    /// ideal (the busiest device's work over the mean device's). `imbalance = cost − ideal`.
    pub imbalance_terms: ImbalanceTerms,
}

/// See [`Attribution::imbalance_terms`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ImbalanceTerms {
    /// Cost with these stages less cost with every stage at the mean (communication 0).
    pub cost: f64,
    /// Ideal with these stages less ideal with every stage at the mean.
    pub ideal: f64,
}

/// Splits the bubble of `schedule` (whose stats under `costs` are `measured`).
///
/// # Errors
/// A [`SimError`] if a re-simulation cannot finish (it cannot when the original did: the
/// orders and dependencies are the same).
pub fn attribute(schedule: &Schedule, costs: &Costs, measured: &Stats) -> Result<Attribution, SimError> {
    let (no_comm, even) = variants(costs);
    let run = |c: &Costs| -> Result<Stats, SimError> {
        let timeline = simulate(schedule, &StageCosts::for_schedule(c, schedule))?;
        Ok(stats(schedule, &timeline, c))
    };
    let s1 = if costs.comm == 0.0 { measured.clone() } else { run(&no_comm)? };
    let s2 = if costs.is_uniform() { s1.clone() } else { run(&even)? };
    Ok(split(measured, &s1, &s2))
}

/// The costs of the two re-simulations: without communication, and without communication at
/// the mean stage's cost (every stage equal).
pub fn variants(costs: &Costs) -> (Costs, Costs) {
    (Costs { comm: 0.0, ..costs.clone() }, Costs { comm: 0.0, profile: None, ..costs.clone() })
}

/// The split from the stats of the three simulations: as given (`measured`), without
/// communication (`s1`), and without communication at mean stage costs (`s2`).
pub fn split(measured: &Stats, s1: &Stats, s2: &Stats) -> Attribution {
    let gap = measured.cost - measured.ideal;
    let communication = measured.cost - s1.cost;
    let imbalance_terms = ImbalanceTerms { cost: s1.cost - s2.cost, ideal: measured.ideal - s2.ideal };
    let imbalance = imbalance_terms.cost - imbalance_terms.ideal;
    let overall = Parts { communication, imbalance, schedule: gap - communication - imbalance };
    let per_device = measured
        .per_device
        .iter()
        .zip(&s1.per_device)
        .zip(&s2.per_device)
        .map(|((d0, d1), d2)| {
            let communication = d0.idle - d1.idle;
            let imbalance = d1.idle - d2.idle;
            Parts { communication, imbalance, schedule: d0.idle - communication - imbalance }
        })
        .collect();
    Attribution { overall, per_device, imbalance_terms }
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
    use crate::{run, ScheduleParams};

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
        let parts = attribute(&a.schedule, &Costs::default(), &a.stats).unwrap();
        assert_eq!(parts.overall, Parts { communication: 0.0, imbalance: 0.0, schedule: 9.0 });
        assert_eq!(parts.per_device[0].schedule, a.stats.per_device[0].idle);
    }

    #[test]
    fn communication_is_what_the_hops_cost() {
        let costs = Costs { comm: 1.0, ..Costs::default() };
        let a = run("1f1b", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let parts = attribute(&a.schedule, &costs, &a.stats).unwrap();
        let free = run("1f1b", &ScheduleParams::new(4, 8)).unwrap();
        assert_eq!(parts.overall.communication, a.stats.cost - free.stats.cost);
        assert!(parts.overall.communication > 0.0);
    }

    #[test]
    fn a_heavy_last_stage_shows_as_imbalance() {
        let base = Costs::default();
        let mut profile = CostProfile::uniform(&base, 4);
        profile.f[3] = 3.0;
        profile.b[3] = 3.0;
        let costs = base.with_profile(profile, 4);
        let a = run("1f1b", &ScheduleParams::new(4, 8).with_costs(costs.clone())).unwrap();
        let parts = attribute(&a.schedule, &costs, &a.stats).unwrap();
        // The light devices wait for the heavy one: 8 microbatches × 4 of extra F+B on the
        // last stage, less what they themselves had to spare.
        for d in 0..3 {
            assert!(parts.per_device[d].imbalance > 20.0, "{parts:?}");
        }
        assert_eq!(parts.per_device[3], Parts::default(), "the heavy device never waits");
        // Overall: with mean stages the gap would be 12 (3 slots of 4); it is 9 here.
        assert_eq!(parts.overall.schedule, 12.0);
        assert_eq!(parts.overall.imbalance, -3.0);
        assert!((parts.overall.total() - (a.stats.cost - a.stats.ideal)).abs() < 1e-12);
    }
}
