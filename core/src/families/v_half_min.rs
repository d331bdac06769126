//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const V_HALF: Family = Family {
    name: "v-half",
    title: "V-Half",
    group: FamilyGroup::VShape,
    summary: "V-shape building block at about half of 1F1B's activation memory, about half its bubble",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024)",
    url: "https://arxiv.org/abs/2405.15362",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

/// The registry entry.
pub const V_MIN: Family = Family {
    name: "v-min",
    title: "V-Min",
    group: FamilyGroup::VShape,
    summary: "V-shape building block at about a third of 1F1B's activation memory",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024)",
    url: "https://arxiv.org/abs/2405.15362",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
