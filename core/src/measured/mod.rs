//! Measured runs: a PyTorch profiler trace of a pipeline, read back as a schedule with the
//! times each pass really took.
//!
//! [`read_rank`] streams one rank's Chrome trace and keeps the pipeline's spans;
//! [`assemble`] puts the ranks together: the executed orders, each pass's measured times,
//! each device's time split into compute, communication, waiting and overhead, and the costs
//! fitted from them ([`Fitted`]). [`MeasuredRun::replay`] runs the same orders through the one
//! simulator, at the measured times (which reproduce the step) or at the fitted costs (a
//! prediction to compare with it). The labels are PyTorch's action grammar, read by
//! [`crate::formats::compute_action`]. Uses formats, sim, stats and the layers below; no IO:
//! the caller hands over readers. How-to and definitions: `docs/measured-runs.md`.

mod damage;
mod error;
mod fit;
mod label;
mod miss;
mod replay;
mod run;
mod trace;

pub use error::TraceError;
pub use fit::{against_median, format_ratio, BackwardSplit, Fitted, Outlier, Spread};
pub use miss::{miss_note, MISS_NOTED};
pub use replay::{Deviation, Replay};
pub use run::{assemble, DeviceSplit, MeasuredOp, MeasuredRun};
pub use trace::{read_rank, read_rank_capped, RankTrace, Span, Step, Track, MAX_TRACE_BYTES};
