//! Bubblescope: pipeline-parallel training schedules, exact.
//!
//! The pipeline, end to end:
//!
//! * [`generate`] turns a family name and [`ScheduleParams`] into a [`Schedule`]: the ordered
//!   passes of every device, never times;
//! * [`validate`] checks a schedule's structure and reports [`Diagnostic`]s like a compiler;
//! * [`simulate`] derives every pass's start and end and every device's memory curve, the only
//!   place time and memory are computed;
//! * [`stats()`] turns a [`Timeline`] into the papers' numbers ([`Stats`]);
//! * [`render`] lays a timeline out as a [`render::Scene`] and draws it through any plotters
//!   backend (SVG for the CLI and export, canvas in the web app).
//!
//! This crate does no IO: formats read `&str` and write `String`.

pub mod analysis;
pub mod attribution;
pub mod bounds;
pub mod cost_lists;
pub mod derive;
pub mod error;
pub mod families;
pub mod findings;
pub mod formats;
pub mod gaps;
pub mod lessons;
pub mod live;
pub mod measured;
pub mod model;
pub mod optimal;
pub mod params;
pub mod passes;
pub mod permalink;
pub mod plan;
pub mod presets;
pub mod registry;
pub mod render;
pub mod schedule;
pub mod settings;
pub mod sim;
pub mod stats;
pub mod step;
pub mod trade;
pub mod units;
pub mod validate;

pub use analysis::{analyze, analyze_timed, Analysis, AnalyzeError};
pub use cost_lists::CostLists;
pub use error::{Diagnostic, Field, ParamError, Severity, SimError};
pub use families::{BubbleQuantity, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction, SlowSearch};
pub use params::{CostProfile, Costs, P2p, ScheduleParams, StageCosts, VocabCosts};
pub use registry::{family, generate, run, BASELINE, FAMILIES};
pub use schedule::{CopyKind, CopyOp, CopySlot, Op, Pass, PassKind, Placement, PlacementKind, Schedule, VocabSplit};
pub use sim::{simulate, Timeline};
pub use stats::{stats, BubbleMeasure, DeviceStats, Stats};
pub use trade::{Offload, Recompute, Trade};
pub use units::Units;
pub use validate::validate;

/// The cases a proptest runs: `PROPTEST_CASES` when set to a number (so a long soak or a
/// quick check can change it), else `default`. `ProptestConfig::with_cases(n)` alone ignores
/// the variable.
#[cfg(test)]
pub(crate) fn proptest_cases(default: u32) -> proptest::prelude::ProptestConfig {
    proptest::prelude::ProptestConfig::with_cases(cases_from(std::env::var("PROPTEST_CASES").ok().as_deref(), default))
}

/// `PROPTEST_CASES`'s value (`env`) when it is a number, else `default`.
#[cfg(test)]
fn cases_from(env: Option<&str>, default: u32) -> u32 {
    env.and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

#[cfg(test)]
mod proptest_cases_tests {
    /// `PROPTEST_CASES=1000 cargo test` runs 1000 cases, not each test's own count.
    #[test]
    fn the_environment_sets_the_cases() {
        assert_eq!(super::cases_from(Some("1000"), 24), 1000);
        assert_eq!(super::cases_from(None, 24), 24);
        assert_eq!(super::cases_from(Some("many"), 24), 24);
    }
}
