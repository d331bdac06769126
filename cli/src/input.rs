//! What the CLI reads as input: schedule files (PyTorch CSV, Bubblescope JSON; their warnings
//! said, their errors refused) and profiled runs (a folder of per-rank traces, or the files).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use bubblescope::formats::{self, ImportOptions};
use bubblescope::measured::{assemble, read_rank, MeasuredRun};
use bubblescope::Costs;

use crate::export;
use crate::output::read_input;

/// Reads a schedule file; prints its warnings, fails on its errors.
pub fn import(
    path: &Path,
    format: Option<&str>,
    dialect_name: Option<&str>,
    merge_bw: bool,
) -> Result<(bubblescope::Schedule, Option<Costs>, Option<bubblescope::sim::PerOpTimes>)> {
    let text = read_input(path)?;
    let name = path.display().to_string();
    let format = formats::detect(&name, &text, format).map_err(|e| anyhow::anyhow!("{e}"))?;
    let options = ImportOptions { dialect: export::dialect(dialect_name)?, merge_bw, source: Some(name.clone()) };
    let imported = formats::import(&text, format, &options);
    if imported.has_errors() {
        return Err(anyhow::anyhow!("{}", imported.failure(&formats::sanitize(&name))));
    }
    if !imported.diagnostics.is_empty() {
        let _ = writeln!(std::io::stderr(), "{}", imported.report());
    }
    let schedule = imported.schedule.with_context(|| format!("{} holds no schedule", formats::sanitize(&name)))?;
    Ok((schedule, imported.costs, imported.times))
}

/// Whether `path` names profiler traces rather than a schedule file: a folder, a gzipped
/// file, or JSON that starts like a Chrome trace.
pub fn is_trace(path: &std::path::Path) -> bool {
    use std::io::Read as _;
    // A folder can only be a run: one without traces is refused as such, with what it lacks.
    if path.is_dir() || path.to_string_lossy().to_ascii_lowercase().ends_with(".gz") {
        return true;
    }
    let mut head = Vec::new();
    let Ok(file) = std::fs::File::open(path) else { return false };
    if file.take(64 << 10).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    head.contains("\"traceEvents\"") || head.contains("\"schemaVersion\"")
}

/// Reads and assembles the run `paths` name.
pub fn load_run(paths: &[PathBuf], step: Option<u64>) -> Result<MeasuredRun> {
    if let Some(std) = paths.iter().find(|p| crate::output::is_std(p)) {
        return Err(crate::output::user_error(
            &format!("{}: a profiled run is read from its trace files, not standard input", std.display()),
            &[
                "give the folder torch.profiler wrote (one trace per rank), or its *.pt.trace.json[.gz] files",
                "`-` reads a schedule file (CSV or JSON) in simulate --from, render --from and convert",
            ],
        ));
    }
    let mut ranks = Vec::new();
    for file in crate::output::trace_files(paths)? {
        let shown = file.display().to_string();
        let reader = std::fs::File::open(&file).map_err(|e| match e.kind() {
            // A run's traces are files: no hint of standard input here.
            std::io::ErrorKind::NotFound => crate::output::user_error(
                &format!("cannot read {}: no such file", bubblescope::formats::sanitize(&shown)),
                &["check the path: the folder torch.profiler wrote, or its trace files"],
            ),
            _ => crate::output::file_error("read", &shown, &e),
        })?;
        ranks.push(read_rank(&shown, reader).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    assemble(ranks, step).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Refuses the flags that say how to read a schedule file (`--from-format`, `--dialect`,
/// `--merge-bw`) for `path`, a run's traces: they would change nothing.
pub fn refuse_file_flags_on_run(path: &Path, from_format: bool, dialect: bool, merge_bw: bool) -> Result<()> {
    let given: Vec<&str> = [("--from-format", from_format), ("--dialect", dialect), ("--merge-bw", merge_bw)]
        .into_iter()
        .filter_map(|(flag, on)| on.then_some(flag))
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(crate::output::user_error(
        &format!(
            "{} holds profiler traces: {} read{} schedule files",
            path.display(),
            given.join(" and "),
            if given.len() == 1 { "s" } else { "" }
        ),
        &[
            "remove them; a trace's actions are PyTorch's current dialect as the runtime ran them",
            "--to-dialect sets the dialect of a CSV written",
        ],
    ))
}
