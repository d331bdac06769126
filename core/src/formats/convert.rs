//! Reading and writing by format: [`import`] and [`export`] pick the reader or writer.

use super::file;
use super::format::{ExportOptions, Format, FormatError, ImportOptions, Imported, MAX_FILE_BYTES};
use super::json::{self, export_json};
use super::perfetto::export_perfetto;
use super::pytorch::{self, export_pytorch_csv_with, CsvForm};
use super::text::{self, sanitize};
use crate::error::Severity;
use crate::params::Costs;
use crate::schedule::Schedule;

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
        // What the content looks like says more than what a schedule of the named format holds.
        first.hints.retain(|h| h != json::SHAPE_HINT);
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
    let compute = |s: &Schedule| if s.trades_memory() { s.compute_orders() } else { s.clone() };
    match format {
        Format::PytorchCsv => export_pytorch_csv_with(&compute(schedule), CsvForm::ComputeOnly, options),
        Format::PytorchCsvComms => export_pytorch_csv_with(&compute(schedule), CsvForm::ComputeComms, options),
        Format::Json => Ok(export_json(schedule, costs)),
        Format::Perfetto => {
            let costs = costs.ok_or_else(|| {
                FormatError::new("a perfetto trace needs costs to time the schedule, and none were given")
                    .hint("pass the costs the schedule should run with")
            })?;
            let stage_costs = crate::params::StageCosts::for_schedule(costs, schedule);
            let timeline = crate::sim::simulate(schedule, &stage_costs)
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
    analysis: &crate::analysis::Analysis,
    costs: &Costs,
    format: Format,
    options: &ExportOptions,
) -> Result<String, FormatError> {
    match format {
        Format::Perfetto => export_perfetto(&analysis.schedule, &analysis.timeline),
        _ => export(&analysis.schedule, Some(costs), format, options),
    }
}
