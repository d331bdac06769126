//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "interleaved-1f1b",
    title: "Interleaved 1F1B",
    group: FamilyGroup::Classic,
    summary: "Megatron's virtual pipeline: V chunks per device cut the bubble by V at more communication",
    reference: "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters (SC 2021)",
    url: "https://arxiv.org/abs/2104.04473",
    options: &[Field::Chunks, Field::Group],
    constraints: "chunks ≥ 1; devices ≤ group ≤ microbatches; microbatches mod group is 0 or ≥ devices",
    generate: not_yet,
    predict: no_prediction,
};

/// The registry entry.
pub const LOOPED_BFS: Family = Family {
    name: "looped-bfs",
    title: "Looped BFS",
    group: FamilyGroup::Classic,
    summary: "breadth-first looping: each chunk runs every microbatch before the next chunk (interleaved with group = M)",
    reference: "Lamy-Poirier, Breadth-First Pipeline Parallelism (MLSys 2023)",
    url: "https://arxiv.org/abs/2211.05953",
    options: &[Field::Chunks],
    constraints: "chunks ≥ 1",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
