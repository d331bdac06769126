//! Writing a schedule to a file, the one path `simulate --export`, `plan --export` and
//! `convert` share: the format from `--to-format` or the file's extension, the dialect and the
//! PyTorch version, the file, and one line on standard error saying what was written and which
//! PyTorch runtime loads it (a CSV has no room for a comment).

use std::path::{Path, PathBuf};

use anyhow::Result;
use bubblescope::formats::{self, Dialect, ExportOptions, Format, TorchVersion};
use bubblescope::{Analysis, Costs, Schedule};
use clap::Args;

use crate::output::{is_std, user_error, write_output};

/// `--export` with its format, dialect and PyTorch version (`simulate` and `plan`).
#[derive(Debug, Args, Clone, Default)]
pub struct ExportArgs {
    /// Also write the schedule to FILE: .csv PyTorch, .json Bubblescope (or --to-format).
    ///
    /// Also write the schedule to FILE (`plan`: the best plan's that the format can hold; `-`:
    /// standard output, instead of the report), in the format its extension names: .csv a
    /// PyTorch schedule CSV (compute only), .json Bubblescope JSON; --to-format for the others.
    /// A PyTorch CSV is for _PipelineScheduleRuntime._load_csv(path, format="compute_only"), a
    /// pytorch-csv-comms file for format="compute_comms"; neither for PipelineScheduleMulti,
    /// which runs in lock-step.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub export: Option<PathBuf>,
    /// Format of --export: pytorch-csv (compute only), pytorch-csv-comms (with PyTorch's
    /// communication, REDUCE_GRAD and FSDP actions, run as written), json or perfetto [default:
    /// from the extension].
    #[arg(long, value_name = "FORMAT", requires = "export", help_heading = "Output", hide_short_help = true)]
    pub to_format: Option<String>,
    /// The PyTorch version a pytorch-csv-comms file is for: 2.15 (WAIT_SEND and WAIT_REDUCE_GRAD
    /// after every send and reduction) or 2.14 [default: 2.15, the newest verified].
    #[arg(long, value_name = "VERSION", requires = "export", help_heading = "Output", hide_short_help = true)]
    pub torch: Option<String>,
    /// PyTorch CSV dialect to write: current (I input gradient, B full backward) or legacy
    /// (B input gradient, BW full backward; PyTorch before 2.14) [default: current].
    #[arg(long, value_name = "DIALECT", requires = "export", help_heading = "Output", hide_short_help = true)]
    pub to_dialect: Option<String>,
}

/// Where and how a schedule is written.
#[derive(Clone, Debug)]
pub struct Target {
    pub path: PathBuf,
    pub format: Format,
    pub options: ExportOptions,
}

/// The dialect `name` names, if any.
pub fn dialect(name: Option<&str>) -> Result<Option<Dialect>> {
    match name {
        None => Ok(None),
        Some("current") => Ok(Some(Dialect::Current)),
        Some("legacy") => Ok(Some(Dialect::Legacy)),
        Some(other) => Err(user_error(
            &format!("unknown dialect `{}`", formats::sanitize(other)),
            &["use current (I = input grad, B = full backward) or legacy (B = input grad, BW = full backward)"],
        )),
    }
}

impl Target {
    /// The target of `--export`: as [`Target::new`], but standard output (`-`) is a PyTorch
    /// schedule CSV unless `to_format` says otherwise.
    pub fn export(args: &ExportArgs, path: &Path) -> Result<Target> {
        let to_format = match (args.to_format.as_deref(), is_std(path)) {
            (None, true) => Some(Format::PytorchCsv.name()),
            (given, _) => given,
        };
        Target::new(path, to_format, args.torch.as_deref(), dialect(args.to_dialect.as_deref())?)
    }

    /// The target of `path` in `to_format` (or the format its extension names), the `dialect`
    /// and the `torch` version.
    pub fn new(path: &Path, to_format: Option<&str>, torch: Option<&str>, dialect: Option<Dialect>) -> Result<Target> {
        let format = match to_format {
            Some(name) => Format::from_name(name).map_err(|e| anyhow::anyhow!("{e}"))?,
            None => Format::from_extension(&path.to_string_lossy()).ok_or_else(|| {
                user_error(
                    &format!("cannot tell the output format of {} from its extension", path.display()),
                    &["name it .csv or .json, or pass --to-format pytorch-csv|pytorch-csv-comms|json|perfetto"],
                )
            })?,
        };
        if let (Some(d), false) = (dialect, matches!(format, Format::PytorchCsv | Format::PytorchCsvComms)) {
            return Err(user_error(
                &format!("--to-dialect applies to PyTorch CSV files, but {} is written as {format}", path.display()),
                &[format!(
                    "remove --to-dialect {}, or write a PyTorch CSV (--to-format pytorch-csv)",
                    match d {
                        Dialect::Current => "current",
                        Dialect::Legacy => "legacy",
                    }
                )],
            ));
        }
        let dialect = dialect.unwrap_or_default();
        let torch = match torch {
            None => TorchVersion::NEWEST,
            Some(text) => {
                let version = TorchVersion::from_name(text).map_err(|e| anyhow::anyhow!("{e}"))?;
                if format != Format::PytorchCsvComms {
                    // A compute-only CSV is the same for every verified PyTorch: only the
                    // lowering of communication differs by version.
                    return Err(user_error(
                        &format!(
                            "--torch applies to PyTorch CSV files with communication (pytorch-csv-comms), but {} is written as {format}",
                            path.display()
                        ),
                        &["remove --torch (torch 2.14 and 2.15 load a compute-only CSV alike), or write pytorch-csv-comms (--to-format pytorch-csv-comms)"],
                    ));
                }
                if dialect == Dialect::Legacy {
                    return Err(user_error(
                        &format!("--torch {version} reads the current dialect, but --to-dialect legacy was asked for"),
                        &["the legacy dialect (B input gradient, BW full backward) is PyTorch's before 2.14; \
                           remove --to-dialect or --torch"],
                    ));
                }
                version
            }
        };
        Ok(Target { path: path.to_path_buf(), format, options: ExportOptions { dialect, torch } })
    }

    /// The file's text: `schedule` at `costs` (a Perfetto trace uses `analysis`'s timeline when
    /// given).
    pub fn text(&self, schedule: &Schedule, costs: &Costs, analysis: Option<&Analysis>) -> Result<String> {
        let pytorch = matches!(self.format, Format::PytorchCsv | Format::PytorchCsvComms);
        if pytorch && schedule.trades_memory() {
            eprintln!("note: {}", bubblescope::passes::PYTORCH_NOTE);
        }
        if pytorch && costs.p2p == bubblescope::P2p::Blocking {
            eprintln!("note: {}", bubblescope::passes::PYTORCH_BLOCKING_NOTE);
        }
        let text = match analysis {
            Some(a) => formats::export_analysis(a, costs, self.format, &self.options),
            None => formats::export(schedule, Some(costs), self.format, &self.options),
        };
        text.map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// What the file is, for messages: `a PyTorch schedule CSV (compute only)`.
    pub fn what(&self) -> String {
        match (self.format, self.options.dialect) {
            (Format::PytorchCsv, Dialect::Current) => "a PyTorch schedule CSV (compute only)".to_string(),
            (Format::PytorchCsvComms, Dialect::Current) => "a PyTorch schedule CSV with communication".to_string(),
            (Format::PytorchCsv, Dialect::Legacy) => "a PyTorch schedule CSV (compute only)".to_string(),
            (Format::PytorchCsvComms, Dialect::Legacy) => "a PyTorch schedule CSV with SEND/RECV".to_string(),
            (Format::Json, _) => "a Bubblescope JSON schedule".to_string(),
            (Format::Perfetto, _) => "a Perfetto trace".to_string(),
        }
    }

    /// Writes `text` and says on standard error what was written and what loads it.
    pub fn write(&self, text: &str) -> Result<()> {
        write_output(&self.path, text.as_bytes())?;
        let what = self.what();
        let loader = self.format.loader(&self.options).map(|l| format!(", {l}")).unwrap_or_default();
        if is_std(&self.path) {
            eprintln!("note: standard output holds {what}{loader}");
        } else {
            let shown = bubblescope::units::shell_word(&self.path.display().to_string());
            eprintln!("wrote {shown}: {what}{loader}");
        }
        Ok(())
    }
}
