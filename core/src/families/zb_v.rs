//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-v",
    title: "ZB-V",
    group: FamilyGroup::VShape,
    summary: "Zero Bubble V: two chunks per device in a V, cost-aware heuristic under --mem-limit (default 1F1B's memory)",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (arXiv v2, §6)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[Field::MemLimit],
    constraints: "mem-limit ≥ mem-f (default P·mem-f)",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
