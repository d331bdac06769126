//! What a run reports beside its stats, composed once for `simulate` and the playground: the
//! memory part of its bubble and the lower bound of its problem, with how the run stands
//! against it. (The bubble by cause is [`crate::attribution::attribute`], or with every gap
//! [`crate::gaps::causes`].)

use crate::analysis::Analysis;
use crate::bounds::{problem_limit, LowerBound, Standing};
use crate::families::Family;
use crate::optimal::run_lower_bound;
use crate::params::ScheduleParams;

/// The lower bound of a run's problem and how the run stands against it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// The bound: the closed form, raised by the device relaxation on problems the search
    /// takes ([`run_lower_bound`]).
    pub lower: LowerBound,
    /// The problem's memory limit ([`problem_limit`]).
    pub limit: f64,
    /// How the run stands against the bound.
    pub standing: Standing,
}

/// The lower bound of the problem of `analysis` (a run of `family`, if any, at `params`): the
/// same passes, dependencies, costs and memory limit. A run that recomputes or offloads is
/// bounded without its memory limit: the bound does not model what those passes hold.
pub fn bound(family: Option<&Family>, params: &ScheduleParams, analysis: &Analysis) -> Bound {
    let limit = match analysis.schedule.trades_memory() {
        true => f64::INFINITY,
        false => problem_limit(family, params, &analysis.stats),
    };
    let lower = run_lower_bound(&analysis.schedule, &params.costs, limit, &analysis.stats);
    let standing = lower.standing(&analysis.stats, limit);
    Bound { lower, limit, standing }
}

/// The memory part of a run whose cost is `cost` ([`crate::attribution::memory_part`]): `None`
/// without a family, for families that do not schedule to a limit, without a limit, or when
/// the family cannot run without it.
pub fn memory_part(family: Option<&Family>, params: &ScheduleParams, cost: f64) -> Option<f64> {
    crate::attribution::memory_part(family?, params, cost)?.ok()
}
