//! TODO(family): not yet implemented; the registry entry is final.

use super::{no_prediction, Family, FamilyGroup};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-auto",
    title: "ZB (automatic)",
    group: FamilyGroup::ZeroBubble,
    summary: "the Zero Bubble paper's automatic scheduling heuristic: least bubble under --mem-limit",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024), §3.1",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[Field::MemLimit],
    constraints: "mem-limit ≥ mem-f (default 3·M·mem-f, no limit)",
    generate: not_yet,
    predict: no_prediction,
};

/// The registry entry.
pub const ZB_1P: Family = Family {
    name: "zb-1p",
    title: "ZB-1p",
    group: FamilyGroup::ZeroBubble,
    summary: "automatic Zero Bubble at 1F1B's memory (limit P·mem-f)",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

/// The registry entry.
pub const ZB_2P: Family = Family {
    name: "zb-2p",
    title: "ZB-2p",
    group: FamilyGroup::ZeroBubble,
    summary: "automatic Zero Bubble at twice 1F1B's memory (limit 2P·mem-f): near-zero bubble",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024)",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[],
    constraints: "any devices and microbatches",
    generate: not_yet,
    predict: no_prediction,
};

fn not_yet(_: &ScheduleParams) -> Result<Schedule, ParamError> {
    Err(ParamError::new(Field::Schedule, "this family is not implemented yet"))
}
