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
//! * **Dialects.** PyTorch renamed its backward passes. The *current* dialect writes `F`, `I`
//!   (input gradient: Bubblescope's `B`), `W`, and `B` for the full backward (Bubblescope's
//!   `BW`). The *legacy* dialect writes `F`, `B` (input gradient), `W` and `BW` (full
//!   backward). Unless [`ImportOptions::dialect`] forces one, the file decides: any `I` means
//!   current, any `BW` means legacy; with neither, a file with `W` is legacy (a `W` needs an
//!   input-gradient pass, which then can only be `B`) and a file without is current (its `B`
//!   can only be a full backward). This is exact for every valid file. Export writes the
//!   current dialect unless [`ExportOptions::dialect`] says otherwise.
//! * **Forms.** The *compute-only* form (PyTorch's `compute_only`) has compute cells and empty
//!   cells. The *compute+comms* form (`compute_comms`, what PyTorch runs verbatim) adds
//!   `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B` cells (and, in legacy files, the fused
//!   `<s>SEND_F<m>_<s'>RECV_B<m'>` and `SEND_B_RECV_F`). Both are read by either CSV format;
//!   a file with any SEND/RECV cell is read as compute+comms, whose communication must then be
//!   complete. Empty cells and SEND/RECV cells carry no order information of their own and
//!   are dropped, after SEND/RECV cells are checked: each SEND needs exactly one matching RECV
//!   on the peer's row, a SEND comes after the action that computes what it sends, a RECV
//!   before the action that uses it, and two rows exchange messages in the same order on both
//!   sides (point-to-point messages between two ranks are matched in the order they are
//!   posted; a mismatch is a warning). `UNSHARD`, `RESHARD` and `REDUCE_GRAD` (FSDP and data
//!   parallelism) are ignored with a warning.
//! * **Placement.** PyTorch infers which rank runs which stage from the file, and so does the
//!   importer: a stage runs on the row its actions are on, and a stage on two rows is an
//!   error. When the table equals a known layout the placement gets that kind, tried in this
//!   order: linear (`stage = device`), interleaved (`stage mod P`, 2 or more chunks), V
//!   (PyTorch's `style="v"`), wave (Hanayo, 2 or more waves); anything else is
//!   [`Placement::custom`](crate::Placement::custom). So every export of a one-pipeline
//!   schedule reads back with its own kind, except with one device, where the layouts coincide
//!   (one stage reads back as linear, more as interleaved).
//! * **Sizes.** The number of microbatches is the largest microbatch number plus one, the
//!   number of stages likewise; a stage or microbatch number with no action is an error. As
//!   with every schedule, a stage of an `S`-stage schedule on `P` devices runs at `P/S` of the
//!   given costs ([`crate::StageCosts::for_schedule`]), so an imported schedule is compared
//!   with the families on the same model.
//! * **Merging.** Before running a compute-only file PyTorch merges an `I` directly followed
//!   (idle cells aside) by the `W` of the same stage and microbatch into one full backward
//!   (`_merge_bw`). The importer keeps the file as written, so that `import(export(s)) == s`
//!   also for schedules with such neighbours; [`ImportOptions::merge_bw`] applies PyTorch's
//!   merge. Under Bubblescope's cost model a merged pair takes the same time and reaches the
//!   same memory peak.
//! * **Export.** The compute-only form writes one cell per op. The compute+comms form places
//!   SEND/RECV cells exactly as PyTorch's `_add_send_recv` lowering does (a SEND right after
//!   its producer, the RECV appended to the consumer's row when the producer is placed,
//!   visiting ranks round-robin), so the file loads with
//!   `_load_csv(format="compute_comms")`; for PyTorch's `zb1p` test schedule it reproduces
//!   PyTorch's own file byte for byte. A two-directional schedule (two model replicas) and a
//!   sequence-split schedule cannot be written in PyTorch's grammar: export them as JSON.
//!
//! # Bubblescope JSON
//!
//! Bubblescope's own format: the schedule exactly as the engine holds it, and the costs it was
//! made for. A file is one object:
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
//! * `format` and `version` are required and checked; this is version 1. Unknown top-level
//!   fields are ignored with a warning, so a later addition still loads; inside `placement` and
//!   `costs` an unknown field is an error (it is most likely a misspelt one).
//! * `placement.kind` is one of `linear`, `interleaved`, `v`, `wave`, `two-directional`,
//!   `custom` ([`crate::PlacementKind::name`]); `stage_device[g]` is the device of global stage
//!   `g` and must equal the table the kind builds (for `custom`, any table of one pipeline).
//!   Two-directional placements have `2 × stages_per_pipeline` global stages.
//! * `microbatches` and `slices` (sequence slices per microbatch, 1 unless split) are the
//!   schedule's sizes.
//! * `costs` holds [`Costs`]: per-microbatch times on `1/P` of the model and memory; `overlap`
//!   and `mem_w` may be `null` (their defaults). `costs` itself may be `null` when the schedule
//!   was not made for particular costs. A cost is written as a JSON number, or as a string
//!   holding the number when serde_json's default (fast) float parsing would read the number
//!   back one bit off, which happens for some values that need 17 significant digits; so every
//!   cost reads back bit for bit, with any JSON reader.
//! * `costs.profile`, present only when the model's pieces cost different amounts (per-device
//!   lists like `--f 4,4,4,6`, or a transformer config), holds one list per cost — `f`, `b`,
//!   `w`, `mem_f`, `mem_w` — with one number per piece in pipeline order; the scalars beside it
//!   are then the mean share. Files without it read as before.
//! * `orders[d]` is device `d`'s order. An op is a string: a pass `<stage><kind><microbatch>`
//!   with kind `F`, `B` (input gradient), `W` or `BW` (full backward) — PyTorch's legacy
//!   dialect — followed by `.<slice>` when the schedule has more than one slice (`0F3.1`);
//!   an overlapped pair is `(<forward>;<backward>)`, e.g. `(3F1;3BW0)`.
//!
//! # Perfetto (Chrome trace) export
//!
//! The [Trace Event Format](https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
//! JSON that Perfetto and `chrome://tracing` open: one process (`pid` 0) named after the
//! schedule, one thread track per device (`tid` = device, named `device d` by `thread_name`
//! metadata and sorted by `thread_sort_index`), one complete slice (`ph: "X"`) per op named as
//! the JSON format writes it (`2F0`, `(3F1;3BW0)` for an overlapped pair), with no `args`, a
//! flow arrow (`ph: "s"` at the producer, `ph: "f"` with `bp: "e"` at the consumer, named
//! `dep`, one `id` each) for every dependency that crosses devices, and a counter track
//! (`ph: "C"`, `memory d`) of each device's activation memory, one point per change. Times
//! come from a [`crate::Timeline`]; **one Bubblescope time unit is one microsecond** in the
//! trace (`ts`, `dur`), since the format has no unit of its own; whole times are written as
//! integers. A trace larger than [`MAX_TRACE_BYTES`] (512 MiB) is refused. A trace is about
//! 29 times the size of the compute-only CSV of the same schedule.
//!
//! # Checks and bad input
//!
//! An import is checked like a compiler checks a program, in the file's own terms: every
//! problem names its row and column and the cells as the file writes them (`2I0`, not
//! "B(stage 2, mb 0)"), and says what was expected. Unreadable cells, actions on the wrong
//! row, repeated, missing and misordered actions, SEND/RECV problems, and finally a deadlock
//! (found by [`crate::simulate`]: every stuck device, the cell it is stuck at and the cell it
//! waits for) are all reported; [`crate::validate`] runs last as a safety net. An import never
//! stops at the first problem: it returns the best schedule it can build (an unreadable cell
//! is skipped, a repeated action dropped) with every problem found, at most
//! [`crate::validate::MAX_DIAGNOSTICS`] of them plus a count of the rest.
//!
//! Files larger than [`MAX_FILE_BYTES`], with more than [`crate::params::MAX_PASSES`] cells or
//! ops or more than [`crate::params::MAX_DEVICES`] rows, or naming far more stages and
//! microbatches than they have actions (a mistyped `70000F0`), are refused with one error.
//! Exports are not limited, so a schedule of millions of passes can be written but not read
//! back; up to about half a million passes reads back in every format. File text quoted in
//! messages is passed through [`sanitize`].

mod check;
mod csv;
mod file;
mod json;
mod perfetto;
mod pytorch;
mod text;

use std::fmt;

use crate::error::{Diagnostic, Severity};
use crate::params::Costs;
use crate::schedule::Schedule;

pub use file::{analyze_file, detect, sniff, FileAnalysis};
pub use json::{export_json, JSON_FORMAT, JSON_VERSION};
pub use perfetto::{export_perfetto, MAX_TRACE_BYTES};
pub use pytorch::{export_pytorch_csv, CsvForm};
pub use text::{sanitize, MAX_QUOTED_CHARS};

/// Largest file an importer reads: 16 MiB.
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// A file format. Its [`name`](Format::name) is what the CLI's `--from-format` and
/// `--to-format` take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// PyTorch's schedule CSV, compute-only form on export; either form on import.
    PytorchCsv,
    /// PyTorch's schedule CSV with SEND/RECV actions (`compute_comms`).
    PytorchCsvComms,
    /// Bubblescope's own JSON schedule, costs included.
    Json,
    /// Chrome trace JSON for Perfetto (export only).
    Perfetto,
}

impl Format {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [Format; 4] = [Format::PytorchCsv, Format::PytorchCsvComms, Format::Json, Format::Perfetto];

    /// The name used by the CLI: `pytorch-csv`, `pytorch-csv-comms`, `json`, `perfetto`.
    pub fn name(self) -> &'static str {
        match self {
            Format::PytorchCsv => "pytorch-csv",
            Format::PytorchCsvComms => "pytorch-csv-comms",
            Format::Json => "json",
            Format::Perfetto => "perfetto",
        }
    }

    /// The usual file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::PytorchCsv | Format::PytorchCsvComms => "csv",
            Format::Json | Format::Perfetto => "json",
        }
    }

    /// The name a download of `stem` gets in this format: `stem.json`, `stem.csv`,
    /// `stem-comms.csv`, `stem.trace.json`.
    pub fn file_name(self, stem: &str) -> String {
        match self {
            Format::PytorchCsv => format!("{stem}.csv"),
            Format::PytorchCsvComms => format!("{stem}-comms.csv"),
            Format::Json => format!("{stem}.json"),
            Format::Perfetto => format!("{stem}.trace.json"),
        }
    }

    /// The media (MIME) type of a file in this format.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::PytorchCsv | Format::PytorchCsvComms => "text/csv",
            Format::Json | Format::Perfetto => "application/json",
        }
    }

    /// Whether schedules can be read from this format (all but Perfetto).
    pub fn can_import(self) -> bool {
        self != Format::Perfetto
    }

    /// The format called `name` (ASCII case ignored).
    ///
    /// # Errors
    /// A [`FormatError`] listing the names, with the closest one as a hint.
    pub fn from_name(name: &str) -> Result<Format, FormatError> {
        if let Some(format) = Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(name)) {
            return Ok(format);
        }
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        let mut err = FormatError::new(format!("unknown format {}", text::quote(name)));
        let lower = name.to_ascii_lowercase();
        if let Some(close) = names.iter().find(|n| lower.contains(*n) || n.contains(lower.as_str()) && lower.len() >= 3)
        {
            err = err.hint(format!("did you mean `{close}`?"));
        }
        Err(err.hint(format!("expected one of: {}", names.join(", "))))
    }

    /// The format a file name or extension suggests: `.csv` is `pytorch-csv`, `.json` is
    /// `json` (ASCII case ignored; `"csv"`, `".csv"` and `"runs/zb.csv"` all work). Perfetto
    /// traces are also `.json`, so they are only ever chosen by name.
    pub fn from_extension(path: &str) -> Option<Format> {
        let ext = path.rsplit_once('.').map_or(path, |(_, ext)| ext);
        if ext.eq_ignore_ascii_case("csv") {
            Some(Format::PytorchCsv)
        } else if ext.eq_ignore_ascii_case("json") {
            Some(Format::Json)
        } else {
            None
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The two spellings of PyTorch's backward actions (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `F`, `I` (input gradient), `W`, `B` (full backward), `OVERLAP_F_B`: PyTorch today.
    #[default]
    Current,
    /// `F`, `B` (input gradient), `W`, `BW` (full backward): older PyTorch and its test files.
    Legacy,
}

impl Dialect {
    /// `current` or `legacy`.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Current => "current",
            Dialect::Legacy => "legacy",
        }
    }
}

/// How to read a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The PyTorch CSV dialect; `None` decides from the file (see the module docs). CSV only.
    pub dialect: Option<Dialect>,
    /// Merge an input-gradient action directly followed by the weight-gradient action of the
    /// same stage and microbatch into one full backward, as PyTorch does before running a
    /// compute-only file. Off by default: the file is read as written. CSV only.
    pub merge_bw: bool,
    /// The file's name, put in front of every location in messages.
    pub source: Option<String>,
}

/// What an import found: the schedule it could build, the costs the file holds, and every
/// problem, each located at its row and column when it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The schedule, as complete as the file allows; `None` when nothing usable was found.
    pub schedule: Option<Schedule>,
    /// The costs stored in the file (JSON only).
    pub costs: Option<Costs>,
    /// Errors and warnings, in file order within each check.
    pub diagnostics: Vec<Diagnostic>,
}

impl Imported {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    /// The errors and warnings as text, one diagnostic per paragraph.
    pub fn report(&self) -> String {
        self.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    }

    fn failed(diagnostic: Diagnostic) -> Imported {
        Imported { schedule: None, costs: None, diagnostics: vec![diagnostic] }
    }
}

/// How to write a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The PyTorch CSV dialect (current by default).
    pub dialect: Dialect,
}

/// Why a schedule could not be written, or a format name not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// What was wrong, lowercase, no trailing period.
    pub message: String,
    /// Suggestions, one per line.
    pub hints: Vec<String>,
}

impl FormatError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> FormatError {
        FormatError { message: message.into(), hints: Vec::new() }
    }

    /// Adds a `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> FormatError {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::error::write_with_hints(f, &self.message, &self.hints)
    }
}

impl std::error::Error for FormatError {}

/// Reads `text` as `format`.
///
/// Never panics and never fails outright: problems are in [`Imported::diagnostics`], next to the
/// best schedule the file allows. With [`Format::PytorchCsvComms`] the file must have SEND/RECV
/// cells; [`Format::PytorchCsv`] reads either form. Perfetto traces cannot be read.
pub fn import(text: &str, format: Format, options: &ImportOptions) -> Imported {
    let name = options.source.as_deref().map(sanitize);
    let source = |grid| text::Source { name: name.as_deref(), grid };
    if text.len() > MAX_FILE_BYTES {
        return Imported::failed(
            source(text::Grid::Csv)
                .error(format!(
                    "the file has {} bytes, more than the {MAX_FILE_BYTES} ({} MiB) an import reads",
                    text.len(),
                    MAX_FILE_BYTES >> 20
                ))
                .hint("a schedule this large is beyond what Bubblescope simulates; cut it into smaller files"),
        );
    }
    let mut imported = match format {
        Format::PytorchCsv => pytorch::import(text, false, options, &source(text::Grid::Csv)),
        Format::PytorchCsvComms => pytorch::import(text, true, options, &source(text::Grid::Csv)),
        Format::Json => json::import(text, &source(text::Grid::Json)),
        Format::Perfetto => Imported::failed(
            source(text::Grid::Json)
                .error("perfetto traces can be written but not read: a trace holds times, not a schedule")
                .hint("import the schedule's JSON (--from-format json) or PyTorch CSV instead"),
        ),
    };
    // A file named for one format that holds another: say so on the first error.
    if let (Some(hint), Some(first)) =
        (file::mismatch_hint(text, format), imported.diagnostics.iter_mut().find(|d| d.severity == Severity::Error))
    {
        first.hints.push(hint);
    }
    imported
}

/// Writes `schedule` as `format`.
///
/// JSON stores `costs` when given. Perfetto needs times, so it simulates the schedule under
/// `costs` first (use [`export_perfetto`] to pass a timeline you already have).
///
/// # Errors
/// A [`FormatError`] when the format cannot express the schedule (two pipelines or sequence
/// slices in PyTorch CSV), when SEND/RECV cells cannot be placed or the trace cannot be timed
/// because the schedule deadlocks, or when Perfetto gets no costs.
pub fn export(
    schedule: &Schedule,
    costs: Option<&Costs>,
    format: Format,
    options: &ExportOptions,
) -> Result<String, FormatError> {
    match format {
        Format::PytorchCsv => export_pytorch_csv(schedule, CsvForm::ComputeOnly, options.dialect),
        Format::PytorchCsvComms => export_pytorch_csv(schedule, CsvForm::ComputeComms, options.dialect),
        Format::Json => Ok(export_json(schedule, costs)),
        Format::Perfetto => {
            let costs = costs.ok_or_else(|| {
                FormatError::new("a perfetto trace needs costs to time the schedule, and none were given")
                    .hint("pass the costs the schedule should run with")
            })?;
            let stage_costs = crate::StageCosts::for_schedule(costs, schedule);
            let timeline = crate::simulate(schedule, &stage_costs)
                .map_err(|e| FormatError::new(format!("cannot time the schedule for a trace: {e}")))?;
            export_perfetto(schedule, &timeline)
        }
    }
}

/// Writes an analysed schedule as `format`: like [`export`], but a Perfetto trace uses the
/// timeline the analysis already has instead of simulating again. What the app's export menu
/// and the CLI's `convert` share.
///
/// # Errors
/// As [`export`].
pub fn export_analysis(
    analysis: &crate::Analysis,
    costs: &Costs,
    format: Format,
    options: &ExportOptions,
) -> Result<String, FormatError> {
    match format {
        Format::Perfetto => export_perfetto(&analysis.schedule, &analysis.timeline),
        _ => export(&analysis.schedule, Some(costs), format, options),
    }
}
