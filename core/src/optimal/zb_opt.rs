//! ZB-opt: the best order of the Zero Bubble passes that the exact search finds, under
//! `--mem-limit`. Not a published schedule: it answers "how much better than the published
//! heuristics can the same passes do?".
//!
//! The problem is the automatic Zero Bubble heuristic's: F, B and W of every microbatch on a
//! linear pipeline, the same dependencies and costs, per-device activation memory within the
//! limit (default `3·M·mem-f`, as zb-auto: no limit). The search ([`crate::optimal`]) starts
//! from the best of the published orders of these passes that fit the limit — zb-auto at the
//! limit, zb-1p, zb-2p, ZB-H1, ZB-H2 — so ZB-opt is never worse than any of them, and keeps a
//! better order when it finds one. It searches at most [`BUDGET`] nodes (0.2 to 0.5 s
//! natively at P = 4, M = 8, so the playground runs it in its worker) and only problems of at
//! most 256 passes; beyond that, or when the budget runs out, the answer is the best order
//! found so far (at worst the best heuristic), which `simulate --optimal` reports as not
//! proven.

use super::{optimize, Budget, OptimalError};
use crate::error::{Field, ParamError};
use crate::families::{
    per_device_microbatch, zb_auto, zb_h1, zb_h2, Family, FamilyGroup, FamilyOption, OptionDefault, SlowSearch,
};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The search budget of the family's generator.
pub const BUDGET: Budget = Budget::of_nodes(50_000);

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-opt",
    title: "ZB-opt",
    group: FamilyGroup::ZeroBubble,
    summary: "the best order of the Zero Bubble passes under --mem-limit that a bounded exact search finds; never worse than the published heuristics",
    reference: "branch and bound over the Zero Bubble heuristics' problem (Bubblescope)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[FamilyOption { field: Field::MemLimit, default: OptionDefault::Derived(zb_auto::default_limit) }],
    constraints: "mem-limit ≥ mem-f (default 3·M·mem-f, no limit); searched up to 256 passes",
    passes: per_device_microbatch::<3>,
    slow_search: Some(SlowSearch {
        what: "the zb-opt search",
        size: searched_passes,
        live_limit: BUDGET.max_ops as u64,
        unit: "passes searched",
        hint: "past 256 passes zb-opt is its best heuristic; use zb-auto for large schedules",
    }),
    generate,
    ..Family::DEFAULTS
};

/// The passes the search orders (it runs to its node budget, up to about half a second
/// natively), or `None` past [`BUDGET`]'s size, where the family is its best heuristic and
/// fast. Any searched size counts as slow, so the playground runs it off the page.
fn searched_passes(params: &ScheduleParams) -> Option<u64> {
    let passes = per_device_microbatch::<3>(params);
    (passes <= BUDGET.max_ops as u64).then_some(passes)
}

/// The published orders of the same passes, the first of them zb-auto at the limit.
fn heuristics(params: &ScheduleParams, limit: f64) -> Result<Vec<Schedule>, ParamError> {
    let at_limit = ScheduleParams { mem_limit: Some(limit), ..params.clone() };
    let mut out = vec![zb_auto::FAMILY.generate(&at_limit)?];
    let plain = ScheduleParams { mem_limit: None, ..params.clone() };
    for family in [&zb_auto::ZB_1P, &zb_auto::ZB_2P, &zb_h1::FAMILY, &zb_h2::FAMILY] {
        if let Ok(s) = family.generate(&plain) {
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(feature = "full")]
fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let limit = params.mem_limit.unwrap_or_else(|| zb_auto::default_limit(params));
    let mut published = heuristics(params, limit)?;
    let base = published.remove(0);
    match optimize(&base, &params.costs, Some(limit), &published, BUDGET) {
        Ok(best) => Ok(best.schedule),
        // zb-auto meets any limit it accepts, so this is only reached if it cannot run.
        Err(OptimalError::NoneFits | OptimalError::Sim(_)) => Ok(base),
    }
}

/// Without the search (the playground's page module), the family is listed but computed
/// where the search is: [`crate::registry::computes_here`] says so, and this is never called.
#[cfg(not(feature = "full"))]
fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let _ = (heuristics, optimize, OptimalError::NoneFits);
    Err(ParamError::new(
        Field::Schedule,
        format!("zb-opt is searched in the background worker ({} devices)", params.devices),
    )
    .hint("the page computes it as soon as its worker has started"))
}

#[cfg(test)]
mod tests {
    use crate::{run, Costs, ScheduleParams};

    #[test]
    fn beats_every_published_heuristic_where_they_leave_room() {
        // With communication, at 1F1B's memory, the heuristics lose 17 and 41 − 24.
        let p = ScheduleParams::new(4, 8).with_costs(Costs { comm: 1.0, ..Costs::default() }).with_mem_limit(4.0);
        let opt = run("zb-opt", &p).unwrap();
        assert!(opt.stats.peak_memory <= 4.0);
        for h in ["zb-auto", "zb-h1"] {
            let a = run(h, &p).unwrap();
            assert!(opt.stats.cost < a.stats.cost, "{h}: {} vs {}", opt.stats.cost, a.stats.cost);
        }
    }
}
