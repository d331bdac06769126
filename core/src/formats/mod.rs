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
//! | [`Format::PytorchCsvComms`] | `pytorch-csv-comms` | yes | compute + SEND/RECV | same |
//! | [`Format::Json`] | `json` | yes | yes | everything, costs included |
//! | [`Format::Perfetto`] | `perfetto` | no | yes | no (a picture of one run) |
//!
//! # PyTorch CSV
//!
//! One row per rank (device), one cell per action, in the order the rank runs them. Rows and
//! columns are numbered **from 0** in every message, so row `r` is device `r` (PyTorch's rank
//! `r`), as in PyTorch's own error grids; a [`Diagnostic`] from an import carries the row as
//! `device` and the column (the cell's index in its row, empty cells included) as `position`.
//!
//! A cell is `<stage><type><microbatch>` (`0F1`, `7I0`, `2BW0`, `5SEND_F2`, `4RECV_B0`), an
//! overlapped pair `(<forward>;<backward>)OVERLAP_F_B`, a bookkeeping action without
//! microbatch (`1UNSHARD`, `1RESHARD`, `2REDUCE_GRAD`), or empty. Cells are trimmed; a cell in
//! double quotes is unquoted first, as Python's `csv` module does.
//!
//! The details — each format's grammar, dialects and forms, placement and sizes, the JSON
//! fields, the Perfetto export, and how bad input is checked — are in `docs/formats.md`.

mod check;
mod convert;
mod csv;
mod file;
mod format;
mod json;
mod perfetto;
mod pytorch;
mod text;

pub use convert::{export, export_analysis, import};
pub use file::{analyze_file, analyze_file_timed, detect, sniff, FileAnalysis};
pub use format::{Dialect, ExportOptions, Format, FormatError, ImportOptions, Imported, MAX_FILE_BYTES};
pub use json::{export_json, export_json_timed, JSON_FORMAT, JSON_VERSION};
pub use perfetto::{export_perfetto, MAX_TRACE_BYTES};
pub use pytorch::{compute_action, export_pytorch_csv, CsvForm};
pub use text::{sanitize, MAX_QUOTED_CHARS};
