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
//! # PyTorch CSV
//!
//! One row per rank (device), one cell per action, in the order the rank runs them. Rows and
//! columns are numbered **from 0** in every message, so row `r` is device `r` (PyTorch's rank
//! `r`), as in PyTorch's own error grids; a [`Diagnostic`] from an import carries the row as
//! `device` and the column (the cell's index in its row, empty cells included) as `position`.
//!
//! A cell is `<stage><type><microbatch>` (`0F1`, `7I0`, `2BW0`, `5SEND_F2`, `4RECV_B0`,
//! `5WAIT_SEND_F2`), an overlapped pair `(<forward>;<backward>)OVERLAP_F_B`, a per-stage action
//! without microbatch (`1UNSHARD`, `1RESHARD`, `2REDUCE_GRAD`, `2WAIT_REDUCE_GRAD`), or empty;
//! an action type no PyTorch version writes is an error at its cell, with the types as a hint. Cells are trimmed; a cell in
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
//!   `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B` cells, torch 2.15's `WAIT_SEND_F`/`WAIT_SEND_B`, the
//!   per-stage `UNSHARD`, `RESHARD`, `REDUCE_GRAD` and (2.15) `WAIT_REDUCE_GRAD`, and in legacy
//!   files the fused `<s>SEND_F<m>_<s'>RECV_B<m'>` and `SEND_B_RECV_F`. Both are read by either
//!   CSV format; a file with any SEND, RECV or WAIT_SEND cell is read as compute+comms, whose
//!   communication must then be complete. Only the compute cells are ops; the others are
//!   checked and dropped: each SEND needs exactly one matching RECV on the peer's row, a SEND
//!   comes after the action that computes what it sends, a RECV before the action that uses it,
//!   and two rows exchange messages in the same order on both sides (point-to-point messages
//!   between two ranks are matched in the order they are posted; a mismatch is a warning). A
//!   file with any wait is torch 2.15's: every send must be waited for once, after it, and every
//!   REDUCE_GRAD by its WAIT_REDUCE_GRAD, one reduction pending at a time, or the file is
//!   refused as PyTorch refuses it, naming the missing pair, before it is simulated. A per-stage
//!   action must be on its stage's row; a stage without REDUCE_GRAD (PyTorch then leaves its
//!   gradients M times too large), a misplaced or repeated one, a torch 2.14 file (2.15 refuses
//!   its unwaited sends) and a wait that could hold its row up are warnings. A file that mixes
//!   torch 2.15's waits with the legacy dialect is an error. In a compute-only file per-stage
//!   actions are ignored with a warning (PyTorch refuses them there), and a stage numbering its
//!   forwards 1 to M and the rest 0 to M−1 — `Schedule1F1B`'s `pipeline_order` — is read with
//!   its forwards from 0, with a warning. How a compute+comms file is timed is in
//!   `docs/pytorch.md`: its compute order at the same times as its compute-only form.
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
//! * **Merging.** PyTorch defines `_merge_bw` (an `I` directly followed, idle cells aside, by
//!   the `W` of the same stage and microbatch becomes one full backward) but, in 2.14 and 2.15,
//!   does not call it: its lowering runs `I, W` as two actions. The importer keeps the file as
//!   written; [`ImportOptions::merge_bw`] applies the merge. Under Bubblescope's cost model a
//!   merged pair takes the same time and reaches the same memory peak.
//! * **Export.** The compute-only form writes one cell per op. The compute+comms form is
//!   PyTorch's own lowering of the order for [`ExportOptions::torch`] (`_add_unshard_reshard`,
//!   `_add_reduce_grad`, `_add_send_recv`, and for 2.15 `_add_wait_send`), action for action,
//!   so the file loads with `_load_csv(format="compute_comms")` and runs with one process's
//!   gradients; the tests compare it with PyTorch's lowering of every family and of PyTorch's
//!   own classes. In the legacy dialect (PyTorch before 2.14) it has SEND/RECV cells only, as
//!   PyTorch then wrote; for PyTorch's `zb1p` test schedule that is its file byte for byte.
//!   [`Format::loader`] says which runtime loads a file. A two-directional schedule (two model
//!   replicas) and a sequence-split schedule cannot be written in PyTorch's grammar: export them
//!   as JSON.
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
pub use format::{Dialect, ExportOptions, Format, FormatError, ImportOptions, Imported, TorchVersion, MAX_FILE_BYTES};
pub use json::{export_json, export_json_timed, JSON_FORMAT, JSON_VERSION};
pub use perfetto::{export_perfetto, MAX_TRACE_BYTES};
pub use pytorch::{compute_action, export_pytorch_csv, export_pytorch_csv_with, CsvForm};
pub use text::{sanitize, MAX_QUOTED_CHARS};
