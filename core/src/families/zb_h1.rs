//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-h1",
    title: "ZB-H1",
    group: FamilyGroup::ZeroBubble,
    summary: "1F1B with split backward; W delayed so every device keeps 1F1B's memory: a third of its bubble",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[],
    constraints: "microbatches ≥ devices − 1",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
