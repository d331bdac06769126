//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "hanayo",
    title: "Hanayo",
    group: FamilyGroup::VShape,
    summary: "wave-like placement: the V folded --waves times, one model copy",
    reference: "Liu et al., Hanayo: Harnessing Wave-like Pipeline Parallelism (SC 2023)",
    url: "https://arxiv.org/abs/2308.15762",
    options: &[Field::Waves],
    constraints: "waves ≥ 1",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
