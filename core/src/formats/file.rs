//! What every front end does with a schedule file: tell its format (from a forced name, its
//! file name, or its content) and analyse what it holds at its own sizes. The CLI and the app
//! both call these, so a file reads and measures the same everywhere.

use crate::error::ParamError;
use crate::params::{check_mem_limit, Costs, ScheduleParams};
use crate::schedule::Schedule;
use crate::sim::PerOpTimes;
use crate::{analysis::analyze, analysis::Analysis, analysis::AnalyzeError};

use super::{sanitize, Format, FormatError};

/// The format `text` looks like, from its first characters: `{` opens Bubblescope JSON, a
/// first row whose cells start with a digit or `(` (or are empty) is a PyTorch CSV. A UTF-8
/// byte-order mark and leading white space are skipped. `None` when it looks like neither.
pub fn sniff(text: &str) -> Option<Format> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let first_line = text.lines().next()?;
    if first_line.starts_with('{') {
        return Some(Format::Json);
    }
    let cells: Vec<&str> = first_line.split(',').map(|c| c.trim().trim_matches('"')).collect();
    let csv_cell = |c: &&str| c.is_empty() || c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '(');
    (cells.iter().any(|c| !c.is_empty()) && cells.iter().all(csv_cell)).then_some(Format::PytorchCsv)
}

/// The format to read a file named `name` with: `forced` (a format name) when given, else its
/// extension ([`Format::from_extension`]), else what its content looks like ([`sniff`]).
///
/// # Errors
/// When `forced` is not a format name, or neither the name nor the content tells.
pub fn detect(name: &str, text: &str, forced: Option<&str>) -> Result<Format, FormatError> {
    if let Some(forced) = forced {
        return Format::from_name(forced);
    }
    Format::from_extension(name).or_else(|| sniff(text)).ok_or_else(|| {
        if text.trim_start_matches('\u{feff}').trim().is_empty() {
            return FormatError::new(format!("{} is empty: it holds no schedule", super::text::quote(name))).hint(
                "give a PyTorch schedule CSV or a Bubblescope JSON schedule, e.g. one `simulate --export FILE` writes",
            );
        }
        FormatError::new(format!("cannot tell the format of {} from its name or its content", super::text::quote(name)))
            .hint("name it .csv or .json, or pass --from-format pytorch-csv|pytorch-csv-comms|json")
    })
}

/// A hint for a file read as `format` whose content looks like another format, if it does.
pub(super) fn mismatch_hint(text: &str, format: Format) -> Option<String> {
    let looks = sniff(text)?;
    let same = looks == format || (looks.extension() == "csv" && format.extension() == "csv");
    (!same && format.can_import()).then(|| {
        let what = if looks == Format::Json { "Bubblescope JSON" } else { "a PyTorch CSV" };
        format!(
            "the content looks like {what}: read it with --from-format {} (or name it .{})",
            looks.name(),
            looks.extension()
        )
    })
}

/// A schedule from a file, analysed at the sizes it has.
#[derive(Clone, Debug)]
pub struct FileAnalysis {
    /// Heading for figures and tables: the file's name and the schedule's sizes.
    pub label: String,
    /// The parameters it ran with: the file's devices and microbatches, `costs`, `mem_limit`.
    pub params: ScheduleParams,
    /// The analysis, or why the costs or the schedule cannot be used.
    pub analysis: Result<Analysis, AnalyzeError>,
}

/// Analyses `schedule`, read from the file called `name`, under `costs` and `mem_limit`:
/// checks the costs and the limit, then [`analyze`]s it at its own sizes. `name` is
/// [`sanitize`]d for the label.
pub fn analyze_file(name: &str, schedule: Schedule, costs: Costs, mem_limit: Option<f64>) -> FileAnalysis {
    analyze_file_timed(name, schedule, costs, mem_limit, None)
}

/// [`analyze_file`] for a file that holds a measured run: at its times per op when given.
pub fn analyze_file_timed(
    name: &str,
    schedule: Schedule,
    costs: Costs,
    mem_limit: Option<f64>,
    times: Option<&PerOpTimes>,
) -> FileAnalysis {
    let mut params = ScheduleParams::new(schedule.devices(), schedule.microbatches).with_costs(costs.clone());
    params.mem_limit = mem_limit;
    let label = schedule.file_label(&sanitize(name));
    let checked: Result<(), ParamError> = costs.check().and_then(|()| mem_limit.map_or(Ok(()), check_mem_limit));
    let analysis = checked.map_err(AnalyzeError::Param).and_then(|()| match times {
        Some(times) => crate::analysis::analyze_timed(schedule, &costs, times),
        // A file of compute orders takes the recompute and offload the costs ask for, as a
        // generated schedule does; one that has its own keeps them.
        None if !schedule.trades_memory() => analyze(crate::passes::apply(schedule, &costs)?, &costs),
        None => {
            crate::passes::check_no_second_trade(&schedule, &costs)?;
            crate::passes::check_copy_rate(&schedule, &costs)?;
            analyze(schedule, &costs)
        }
    });
    FileAnalysis { label, params, analysis }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_tells_csv_from_json() {
        assert_eq!(sniff("0F0,0F1,0I0\n1F0\n"), Some(Format::PytorchCsv));
        assert_eq!(sniff(",1F0,(1F1;1B0)OVERLAP_F_B\n"), Some(Format::PytorchCsv));
        assert_eq!(sniff("\u{feff}  {\"format\": 1}"), Some(Format::Json));
        assert_eq!(sniff("hello, world"), None);
        assert_eq!(sniff(""), None);
        assert_eq!(detect("-", "0F0\n", None), Ok(Format::PytorchCsv));
        assert_eq!(detect("x.json", "0F0\n", None), Ok(Format::Json));
        assert_eq!(detect("x.json", "0F0\n", Some("pytorch-csv")), Ok(Format::PytorchCsv));
        assert!(detect("notes", "hello", None).is_err());
    }
}
