//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-v-handcrafted",
    title: "ZB-V (handcrafted)",
    group: FamilyGroup::VShape,
    summary: "the fixed ZB-V pattern: zero bubble when F = B = W, at 1F1B's memory",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (arXiv v2, §6)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
