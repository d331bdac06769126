//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "v-auto",
    title: "Adaptive V",
    group: FamilyGroup::VShape,
    summary: "the adaptive V scheduler: the best building block for any --mem-limit, up to V-ZB's zero bubble",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), App. A",
    url: "https://arxiv.org/abs/2405.15362",
    options: &[Field::MemLimit],
    constraints: "V-Min's memory ≤ mem-limit ≤ 2P·mem-f (default P·mem-f)",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
