//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "dualpipe-v",
    title: "DualPipeV",
    group: FamilyGroup::TwoDirectional,
    summary: "DualPipe cut in half: V placement on P devices, overlapped F&B pairs",
    reference: "Sea AI Lab, Cut-in-half DualPipe (2025); deepseek-ai/DualPipe",
    url: "https://github.com/deepseek-ai/DualPipe",
    options: &[Field::Overlap],
    constraints: "microbatches ≥ 2·devices",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
