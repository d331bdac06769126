//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "1f1b-v",
    title: "1F1B-V",
    group: FamilyGroup::VShape,
    summary: "1F1B in V placement without split backward",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), App. I",
    url: "https://arxiv.org/abs/2405.15362",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
