//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "chimera",
    title: "Chimera",
    group: FamilyGroup::TwoDirectional,
    summary: "two pipelines in opposite directions over the same devices, each 1F1B on half the microbatches",
    reference: "Li and Hoefler, Chimera (SC 2021)",
    url: "https://arxiv.org/abs/2107.06925",
    options: &[],
    constraints: "devices even; microbatches even",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
