//! The registry: every family by name ([`FAMILIES`], [`family`], PyTorch's class names and
//! other [`ALIASES`]), the hint for a name that does not exist, and what needs every family at
//! once: the exact search seeded with each published heuristic of the same passes
//! ([`optimize_run`]). It sits above the generators and the search, so neither depends on the
//! other.

use crate::analysis::{analyze, Analysis, AnalyzeError};
use crate::error::{Field, ParamError};
use crate::families::{
    chimera, dualpipe, dualpipe_v, gpipe, group_interleaved, hanayo, interlaced_vocab, interleaved, interleaved_zb,
    one_f_one_b, one_f_one_b_v, seq1f1b, v_auto, v_half_min, v_half_vocab, vocab_1, vocab_2, zb_auto, zb_h1, zb_h2,
    zb_v, zb_v_handcrafted, Family,
};
use crate::optimal::{optimize_with_progress, same_problem, zb_opt, Budget, OptimalError, Optimum, Progress};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;
use crate::units::names::{self, normal};

/// Whether this build computes `family` itself. Builds without the `full` feature (the
/// playground's page module) list zb-opt but leave its search to the module that has it.
pub fn computes_here(family: &Family) -> bool {
    cfg!(feature = "full") || family.name != zb_opt::FAMILY.name
}

/// Every family, in picker order.
pub static FAMILIES: &[Family] = &[
    gpipe::FAMILY,
    one_f_one_b::FAMILY,
    vocab_1::FAMILY,
    vocab_2::FAMILY,
    interlaced_vocab::FAMILY,
    v_half_vocab::FAMILY,
    v_half_vocab::TWO_BARRIERS,
    interleaved::FAMILY,
    interleaved::LOOPED_BFS,
    group_interleaved::FAMILY,
    zb_h1::FAMILY,
    zb_h2::FAMILY,
    zb_auto::FAMILY,
    zb_auto::ZB_1P,
    zb_auto::ZB_2P,
    interleaved_zb::FAMILY,
    zb_opt::FAMILY,
    zb_v::FAMILY,
    zb_v_handcrafted::FAMILY,
    v_half_min::V_HALF,
    v_half_min::V_MIN,
    v_auto::FAMILY,
    one_f_one_b_v::FAMILY,
    hanayo::FAMILY,
    dualpipe::FAMILY,
    dualpipe_v::FAMILY,
    chimera::FAMILY,
    seq1f1b::FAMILY,
];

/// The family other schedules are measured against (speedup): 1F1B.
pub static BASELINE: &Family = &one_f_one_b::FAMILY;

/// The family called `name`, if any: its registry name, or the same name in other case or
/// with other separators (`ZB-V`, `zbv`, `dualpipe_v`, `DualPipeV`), PyTorch's class name
/// (`ScheduleInterleaved1F1B`, `ScheduleZBVZeroBubble`), or an alias from [`ALIASES`].
pub fn family(name: &str) -> Option<&'static Family> {
    if let Some(f) = FAMILIES.iter().find(|f| f.name == name) {
        return Some(f);
    }
    let typed = normal(name);
    let typed = typed.strip_prefix("schedule").filter(|rest| !rest.is_empty()).unwrap_or(&typed);
    FAMILIES.iter().find(|f| normal(f.name) == typed).or_else(|| {
        let (_, canonical) = ALIASES.iter().find(|(alias, _)| *alias == typed)?;
        FAMILIES.iter().find(|f| f.name == *canonical)
    })
}

/// Other names of families, as papers and PyTorch write them, in [`normal`] form: `(alias,
/// registry name)`. Spellings that differ from a registry name only in case or separators
/// need no entry.
pub const ALIASES: &[(&str, &str)] = &[
    ("interleaved", "interleaved-1f1b"),
    ("1f1binterleaved", "interleaved-1f1b"),
    ("vzb", "zb-v"),
    ("zbvzerobubble", "zb-v"),
    ("zerobubblev", "zb-v"),
    ("interleavedzerobubble", "interleaved-zb"),
    ("zb1pinterleaved", "interleaved-zb"),
    ("interleavedzb1p", "interleaved-zb"),
];

/// Generates the schedule of family `name` for `params`.
///
/// # Errors
/// A [`ParamError`] naming the setting to change when the family is unknown or cannot take
/// these parameters.
pub fn generate(name: &str, params: &ScheduleParams) -> Result<Schedule, ParamError> {
    family(name).ok_or_else(|| unknown_family(name))?.generate(params)
}

/// The error for a family name that does not exist, with the closest name
/// ([`names::closest`]) as a hint.
pub fn unknown_family(name: &str) -> ParamError {
    let names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
    let mut err = ParamError::new(Field::Schedule, format!("unknown schedule `{name}`"));
    if let Some(best) = names::closest(name, &names) {
        err = err.hint(format!("did you mean `{best}`?"));
    }
    err.hint(format!("expected one of: {}", names.join(", ")))
}

/// Generates family `name` for `params`, then [`analyze`]s it.
///
/// # Errors
/// As [`generate`] and [`analyze`].
pub fn run(name: &str, params: &ScheduleParams) -> Result<Analysis, AnalyzeError> {
    let schedule = generate(name, params)?;
    analyze(schedule, &params.costs)
}

/// The best order of the problem a run of `family` at `params` solves (its `schedule`, the
/// limit [`crate::bounds::problem_limit`] names), seeded with every registry family whose
/// schedule at the same parameters runs the same ops (the published heuristics of that
/// problem; zb-opt, which runs this search itself, excepted). The other families are only
/// generated when the problem is small enough to search.
///
/// # Errors
/// As [`crate::optimal::optimize`].
pub fn optimize_run(
    family: Option<&Family>,
    params: &ScheduleParams,
    schedule: &Schedule,
    limit: f64,
    budget: Budget,
) -> Result<Optimum, OptimalError> {
    optimize_run_with_progress(family, params, schedule, limit, budget, &mut |_| {})
}

/// [`optimize_run`], reporting the search's [`Progress`] to `progress`.
///
/// # Errors
/// As [`crate::optimal::optimize`].
pub fn optimize_run_with_progress(
    family: Option<&Family>,
    params: &ScheduleParams,
    schedule: &Schedule,
    limit: f64,
    budget: Budget,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Optimum, OptimalError> {
    let mut incumbents = Vec::new();
    if schedule.op_count() <= budget.max_ops {
        for f in FAMILIES.iter().filter(|f| f.name != "zb-opt" && family.is_none_or(|g| g.name != f.name)) {
            let mut p = f.own_params(params);
            if !f.uses(Field::MemLimit) {
                p.mem_limit = None;
            } else {
                p.mem_limit = Some(limit);
            }
            if let Ok(s) = f.generate(&p) {
                if same_problem(schedule, &s) {
                    incumbents.push(s);
                }
            }
        }
    }
    optimize_with_progress(schedule, &params.costs, Some(limit), &incumbents, budget, progress)
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
