//! Import and export formats: PyTorch CSV, Bubblescope JSON and Perfetto traces.
//!
//! Schedules do not live only in Bubblescope. PyTorch's `torch.distributed.pipelining` (and
//! torchtitan on top of it) loads and dumps schedules as CSV files, and performance engineers
//! read traces in Perfetto. Like the rest of the crate this module does no IO: importers take
//! `&str`, exporters return `String`.
//!
//! | [`Format`] | name (CLI `--from-format`/`--to-format`) | import | export | lossless |
//! |---|---|---|---|---|
//! | [`Format::PytorchCsv`] | `pytorch-csv` | yes (both forms) | compute only | one pipeline, no sequence slices |
//! | [`Format::PytorchCsvComms`] | `pytorch-csv-comms` | yes | PyTorch's lowering, per [`TorchVersion`] | same |
//! | [`Format::Json`] | `json` | yes | yes | everything, costs included |
//! | [`Format::Perfetto`] | `perfetto` | no | yes | no (a picture of one run) |
//!
//! A Bubblescope JSON file is one object:
//!
//! ```json
//! {
//!   "format": "bubblescope-schedule",
//!   "version": 1,
//!   "placement": {"kind": "v", "devices": 2, "stages_per_pipeline": 4, "stage_device": [0, 1, 1, 0]},
//!   "microbatches": 2,
//!   "slices": 1,
//!   "costs": {"f": 1.0, "b": 1.0, "w": 1.0, "comm": 0.0, "overlap": null, "mem_f": 1.0, "mem_w": null},
//!   "orders": [
//!     ["0F0", "0F1", "3F0", "(3F1;3BW0)", "3BW1", "0BW0", "0BW1"],
//!     ["1F0", "1F1", "2F0", "2F1", "2BW0", "1BW0", "2BW1", "1BW1"]
//!   ]
//! }
//! ```
//!
//! The details — each format's grammar, dialects and forms, placement and sizes, the JSON
//! fields, the Perfetto export, and how bad input is checked — are in `docs/formats.md`.

mod check;
mod convert;
mod csv;
mod file;
mod format;
mod json;
pub(crate) mod perfetto;
mod pytorch;
mod text;

pub use convert::{export, export_analysis, import};
pub use file::{analyze_file, analyze_file_timed, detect, sniff, FileAnalysis};
pub use format::{Dialect, ExportOptions, Format, FormatError, ImportOptions, Imported, TorchVersion, MAX_FILE_BYTES};
pub use json::{export_json, export_json_timed, JSON_FORMAT, JSON_VERSION};
pub use perfetto::{export_perfetto, MAX_TRACE_BYTES};
pub use pytorch::{compute_action, export_pytorch_csv, export_pytorch_csv_with, CsvForm};
pub use text::{sanitize, MAX_QUOTED_CHARS};
