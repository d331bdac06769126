//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "seq1f1b",
    title: "Seq1F1B",
    group: FamilyGroup::SequenceSplit,
    summary: "1F1B over --seq-splits sequence slices per microbatch: forwards in order, backwards in reverse",
    reference: "Sun et al., Seq1F1B (NAACL 2025)",
    url: "https://arxiv.org/abs/2406.03488",
    options: &[Field::SeqSplits],
    constraints: "seq-splits ≥ 1",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
