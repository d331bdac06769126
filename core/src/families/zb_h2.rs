//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-h2",
    title: "ZB-H2",
    group: FamilyGroup::ZeroBubble,
    summary: "more warm-up forwards and W reordered to the tail: near-zero bubble at about twice 1F1B's memory",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[],
    constraints: "microbatches ≥ 2(devices − 1)",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
