//! The format names, options, results and errors every reader and writer shares.

use std::fmt;

use super::text;
use crate::error::{Diagnostic, Severity};
use crate::params::Costs;
use crate::schedule::Schedule;
use crate::sim::PerOpTimes;

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

/// The PyTorch version a compute+comms file is written for: what its lowering adds differs
/// (see the module docs). The compute-only form is the same for every version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TorchVersion {
    /// torch 2.14: SEND/RECV, UNSHARD/RESHARD and REDUCE_GRAD; sends are waited for at the end
    /// of the step.
    V2_14,
    /// torch 2.15: also a WAIT_SEND_F/WAIT_SEND_B for every send and a WAIT_REDUCE_GRAD after
    /// every REDUCE_GRAD; it refuses a file whose sends are not all waited for.
    #[default]
    V2_15,
}

impl TorchVersion {
    /// Every version a file can be written for, oldest first.
    pub const ALL: [TorchVersion; 2] = [TorchVersion::V2_14, TorchVersion::V2_15];

    /// The newest verified version: the default.
    pub const NEWEST: TorchVersion = TorchVersion::V2_15;

    /// `2.14` or `2.15`: what the CLI's `--torch` takes.
    pub fn name(self) -> &'static str {
        match self {
            TorchVersion::V2_14 => "2.14",
            TorchVersion::V2_15 => "2.15",
        }
    }

    /// The release the files were checked against in PyTorch itself (`tools/pytorch-check.sh`).
    pub fn verified(self) -> &'static str {
        match self {
            TorchVersion::V2_14 => "2.14.1",
            TorchVersion::V2_15 => "2.15.0",
        }
    }

    /// The version `text` names: `2.15`, or a release such as `2.15.0` (surrounding spaces and
    /// a leading `v` or `torch` ignored).
    ///
    /// # Errors
    /// A [`FormatError`] listing the versions.
    pub fn from_name(text: &str) -> Result<TorchVersion, FormatError> {
        let t = text.trim();
        let t = t.strip_prefix("torch").unwrap_or(t).trim_start_matches(['=', ' ', 'v']);
        let minor = t.split('+').next().unwrap_or(t);
        let minor = match minor.split('.').collect::<Vec<_>>().as_slice() {
            [major, minor] | [major, minor, _] => format!("{major}.{minor}"),
            _ => String::new(),
        };
        if let Some(v) = TorchVersion::ALL.into_iter().find(|v| v.name() == minor) {
            return Ok(v);
        }
        let names: Vec<&str> = TorchVersion::ALL.iter().map(|v| v.name()).collect();
        Err(FormatError::new(format!("unknown PyTorch version {}", text::quote(text)))
            .hint(format!("expected one of: {} (the files of each are checked in that release)", names.join(", ")))
            .hint(
                "files for torch 2.15 and later carry WAIT_SEND and WAIT_REDUCE_GRAD actions, which 2.14 cannot read",
            ))
    }
}

impl fmt::Display for TorchVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How to read a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The PyTorch CSV dialect; `None` decides from the file (see the module docs). CSV only.
    pub dialect: Option<Dialect>,
    /// Merge an input-gradient action directly followed by the weight-gradient action of the
    /// same stage and microbatch into one full backward (PyTorch's `_merge_bw`, which PyTorch's
    /// runtime does not call in 2.14 or 2.15: it runs the pair as two actions). Off by default:
    /// the file is read as written. CSV only.
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
    /// Times measured per op, when the file holds a measured run (JSON only).
    pub times: Option<PerOpTimes>,
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

    /// Why a file (`name`) with errors cannot be used, as one error's text: a lone error as
    /// it is, several under a line that counts them, each indented with its hints and no
    /// `error:` label of its own (the caller's opens the message once).
    pub fn failure(&self, name: &str) -> String {
        let label = |d: &Diagnostic| {
            let text = d.to_string();
            match d.severity {
                Severity::Error => text.strip_prefix("error: ").map(str::to_string).unwrap_or(text),
                Severity::Warning => text,
            }
        };
        let errors = self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        if let ([only], 1) = (self.diagnostics.as_slice(), errors) {
            return label(only);
        }
        let mut out = format!("{name} cannot be used: {errors} error{}", if errors == 1 { "" } else { "s" });
        let warnings = self.diagnostics.len() - errors;
        if warnings > 0 {
            out.push_str(&format!(" and {warnings} warning{}", if warnings == 1 { "" } else { "s" }));
        }
        for d in &self.diagnostics {
            for line in label(d).lines() {
                out.push_str("\n  ");
                out.push_str(line);
            }
        }
        out
    }

    pub(super) fn failed(diagnostic: Diagnostic) -> Imported {
        Imported { schedule: None, costs: None, times: None, diagnostics: vec![diagnostic] }
    }
}

/// How to write a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportOptions {
    /// The PyTorch CSV dialect (current by default).
    pub dialect: Dialect,
    /// The PyTorch version a compute+comms file is lowered for (the newest by default). The
    /// legacy dialect is older PyTorch's, so a legacy compute+comms file has only SEND/RECV
    /// actions, whatever this says.
    pub torch: TorchVersion,
}

impl ExportOptions {
    /// The options for torch `version`, current dialect.
    pub fn torch(version: TorchVersion) -> ExportOptions {
        ExportOptions { torch: version, ..ExportOptions::default() }
    }
}

impl Format {
    /// Which PyTorch runtime loads a file of this format written with `options`, and how, in
    /// one sentence (`None` for Bubblescope's own formats). A CSV has no room for a comment, so
    /// the CLI prints this when it writes one, and the docs and `--help` say the same.
    pub fn loader(self, options: &ExportOptions) -> Option<String> {
        let lockstep = "not for PipelineScheduleMulti, which runs every rank in lock-step";
        match (self, options.dialect) {
            (Format::PytorchCsv, Dialect::Current) => Some(format!(
                "for _PipelineScheduleRuntime._load_csv(path, format=\"compute_only\") in torch 2.14 or 2.15, \
                 which adds the communication; {lockstep}"
            )),
            (Format::PytorchCsvComms, Dialect::Current) => Some(format!(
                "for _PipelineScheduleRuntime._load_csv(path, format=\"compute_comms\") in torch {}, \
                 which runs it as written; {lockstep}",
                options.torch
            )),
            (Format::PytorchCsv | Format::PytorchCsvComms, Dialect::Legacy) => Some(
                "in the legacy dialect (B input gradient, BW full backward) of PyTorch before 2.14, which torch 2.14 \
                 and 2.15 cannot read"
                    .to_string(),
            ),
            (Format::Json | Format::Perfetto, _) => None,
        }
    }
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
