//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "dualpipe",
    title: "DualPipe",
    group: FamilyGroup::TwoDirectional,
    summary: "DeepSeek's bidirectional pipeline: two model replicas, overlapped F&B pairs",
    reference: "DeepSeek-AI, DeepSeek-V3 Technical Report (2024); deepseek-ai/DualPipe",
    url: "https://github.com/deepseek-ai/DualPipe",
    options: &[Field::Overlap],
    constraints: "devices even; microbatches even and ≥ 2·devices",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
