//! A schedule measured: validated, simulated and turned into stats ([`analyze`]). The one
//! path every run takes after its schedule exists; [`crate::registry::run`] puts a family's
//! generator in front of it.

use std::fmt;
use std::sync::Arc;

use crate::error::{Diagnostic, ParamError, Severity, SimError};
use crate::params::{Costs, StageCosts};
use crate::schedule::Schedule;
use crate::sim::{simulate, simulate_timed, OpTimes, PerOpTimes, Timeline};
use crate::stats::{measured_stats, stats, Stats};
use crate::validate::validate;

/// A schedule with its simulated timeline and stats.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Analysis {
    /// The per-device orders.
    pub schedule: Schedule,
    /// When every op ran, and memory over time.
    pub timeline: Timeline,
    /// The numbers.
    pub stats: Stats,
    /// The times measured per op, when this is a measured run: the timeline replays them, and
    /// every analysis of it (work, attribution, gap causes) reads them instead of the costs.
    pub times: Option<Arc<PerOpTimes>>,
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

/// Validates, simulates and measures `schedule` at the times measured per op (`times`, a
/// profiled run's), memory from `costs`.
///
/// # Errors
/// As [`analyze`].
pub fn analyze_timed(schedule: Schedule, costs: &Costs, times: &PerOpTimes) -> Result<Analysis, AnalyzeError> {
    let problems: Vec<Diagnostic> = validate(&schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
    if !problems.is_empty() {
        return Err(AnalyzeError::Invalid(problems));
    }
    let memory = StageCosts::for_schedule(costs, &schedule);
    let timeline = simulate_timed(&schedule, &OpTimes { times: times.clone(), memory })?;
    let stats = measured_stats(&schedule, &timeline, costs, times);
    Ok(Analysis { schedule, timeline, stats, times: Some(Arc::new(times.clone())) })
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
    // A schedule that splits the vocabulary runs at the costs with it split (a model's).
    let split;
    let costs = if schedule.vocab.is_some() && costs.split_vocab.is_some() {
        split = costs.vocabulary_parallel();
        &split
    } else {
        costs
    };
    let stage_costs = StageCosts::for_schedule(costs, &schedule);
    let timeline = simulate(&schedule, &stage_costs)?;
    let mut stats = stats(&schedule, &timeline, costs);
    stats.peak_without_trade = crate::stats::peak_without_trade(&schedule, costs);
    Ok(Analysis { schedule, timeline, stats, times: None })
}
