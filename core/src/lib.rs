//! Bubblescope: pipeline-parallel training schedules, exact.
//!
//! The pipeline, end to end:
//!
//! * [`generate`] turns a family name and [`ScheduleParams`] into a [`Schedule`]: the ordered
//!   passes of every device, never times;
//! * [`validate`] checks a schedule's structure and reports [`Diagnostic`]s like a compiler;
//! * [`simulate`] derives every pass's start and end and every device's memory curve, the only
//!   place time and memory are computed;
//! * [`stats()`] turns a [`Timeline`] into the papers' numbers ([`Stats`]);
//! * [`render`] lays a timeline out as a [`render::Scene`] and draws it through any plotters
//!   backend (SVG for the CLI and export, canvas in the web app).
//!
//! This crate does no IO: formats read `&str` and write `String`.

pub mod attribution;
pub mod bounds;
pub mod cost_lists;
pub mod error;
pub mod families;
pub mod formats;
pub mod gaps;
pub mod model;
pub mod optimal;
pub mod params;
pub mod permalink;
pub mod plan;
pub mod presets;
pub mod render;
pub mod schedule;
pub mod sim;
pub mod stats;
pub mod validate;

pub use cost_lists::CostLists;
pub use error::{Diagnostic, Field, ParamError, Severity, SimError};
pub use families::{
    family, generate, BubbleQuantity, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction, SlowSearch,
    BASELINE, FAMILIES,
};
pub use params::{CostProfile, Costs, ScheduleParams, StageCosts};
pub use schedule::{Op, Pass, PassKind, Placement, PlacementKind, Schedule};
pub use sim::{simulate, Timeline};
pub use stats::{stats, BubbleMeasure, DeviceStats, Stats};
pub use validate::validate;

use std::fmt;

/// A schedule with its simulated timeline and stats.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The per-device orders.
    pub schedule: Schedule,
    /// When every op ran, and memory over time.
    pub timeline: Timeline,
    /// The numbers.
    pub stats: Stats,
}

/// Why a schedule could not be analysed.
#[derive(Clone, Debug, PartialEq)]
pub enum AnalyzeError {
    /// The parameters do not fit the family.
    Param(ParamError),
    /// The schedule's structure is wrong.
    Invalid(Vec<Diagnostic>),
    /// The schedule cannot run to the end.
    Sim(SimError),
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeError::Param(e) => e.fmt(f),
            AnalyzeError::Sim(e) => e.fmt(f),
            AnalyzeError::Invalid(diags) => {
                write!(f, "the schedule is invalid ({} problems)", diags.len())?;
                for d in diags {
                    write!(f, "\n{d}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for AnalyzeError {}

impl From<ParamError> for AnalyzeError {
    fn from(e: ParamError) -> Self {
        AnalyzeError::Param(e)
    }
}

impl From<SimError> for AnalyzeError {
    fn from(e: SimError) -> Self {
        AnalyzeError::Sim(e)
    }
}

/// Validates, simulates and measures `schedule` under `costs`.
///
/// # Errors
/// [`AnalyzeError::Invalid`] with every structural problem, or [`AnalyzeError::Sim`] when the
/// schedule deadlocks.
pub fn analyze(schedule: Schedule, costs: &Costs) -> Result<Analysis, AnalyzeError> {
    let problems: Vec<Diagnostic> = validate(&schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
    if !problems.is_empty() {
        return Err(AnalyzeError::Invalid(problems));
    }
    let stage_costs = StageCosts::for_schedule(costs, &schedule);
    let timeline = simulate(&schedule, &stage_costs)?;
    let stats = stats(&schedule, &timeline, costs);
    Ok(Analysis { schedule, timeline, stats })
}

/// Generates family `name` for `params`, then [`analyze`]s it.
///
/// # Errors
/// As [`generate`] and [`analyze`].
pub fn run(name: &str, params: &ScheduleParams) -> Result<Analysis, AnalyzeError> {
    let schedule = generate(name, params)?;
    analyze(schedule, &params.costs)
}
