//! What `simulate` and `render` report on: a schedule generated from a family at the flags'
//! sizes and costs, or read from a schedule file or a measured run's traces, simulated.

use std::path::Path;

use anyhow::Result;
use bubblescope::units::Units;
use bubblescope::{analyze, family, formats, generate, Analysis, ScheduleParams};
use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::args::{CostArgs, FamilyArgs, FileArgs};
use crate::input::{import, is_trace, load_run};
use crate::output::{is_std, user_error};

/// A schedule to report on: generated from a family, or read from a file.
pub struct Subject {
    /// The family name, or the file's path.
    pub name: String,
    /// Heading for figures and tables.
    pub label: String,
    /// The parameters it ran with (sizes from the schedule for files).
    pub params: ScheduleParams,
    /// The family, when generated.
    pub family: Option<&'static bubblescope::Family>,
    pub analysis: Analysis,
}

/// Generates family `name` (any spelling [`family`] accepts) at `params`.
pub fn generated(name: &str, params: ScheduleParams, units: Units) -> Result<Subject> {
    if let Some(e) = family(name).and_then(|f| bubblescope::families::unused_vocabulary(&[f], &params.costs)) {
        return Err(anyhow::anyhow!("{e}"));
    }
    // A vocabulary-parallel family runs, and is reported, at the costs with a model's
    // vocabulary split over every device (the stages without the embedding and the head).
    let params = match family(name) {
        Some(f) => f.at_its_costs(&params).into_owned(),
        None => params,
    };
    let schedule = generate(name, &params).map_err(|e| anyhow::anyhow!("{e}"))?;
    for note in family(name).map(|f| f.notes(&params)).unwrap_or_default() {
        eprintln!("note: {note}");
    }
    analyzed(name, schedule, params, units)
}

/// Simulates `schedule` of family `name`, labelled with its sizes (a limit in `units`).
pub fn analyzed(name: &str, schedule: bubblescope::Schedule, params: ScheduleParams, units: Units) -> Result<Subject> {
    let analysis = analyze(schedule, &params.costs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let family = family(name);
    let label = family.map_or_else(|| name.to_string(), |f| f.label(&params, units));
    let name = family.map_or(name, |f| f.name).to_string();
    Ok(Subject { name, label, params, family, analysis })
}

pub fn from_file(file: &FileArgs, path: &Path, costs: &CostArgs) -> Result<Subject> {
    if !is_std(path) && is_trace(path) {
        return measured_subject(file, path, costs);
    }
    let (schedule, file_costs, times) =
        import(path, file.from_format.as_deref(), file.dialect.as_deref(), file.merge_bw)?;
    let name = match path.file_name() {
        _ if is_std(path) => "standard input".to_string(),
        Some(n) => n.to_string_lossy().into_owned(),
        None => path.display().to_string(),
    };
    let devices = schedule.devices();
    if times.is_some() {
        costs.refuse_on_measured(&path.display().to_string())?;
    }
    let run = formats::analyze_file_timed(
        &name,
        schedule,
        costs.costs(file_costs.as_ref(), devices)?,
        costs.mem_limit()?,
        times.as_ref(),
    );
    let analysis = run.analysis.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut params = run.params;
    if times.is_some() {
        params.units = Units::Measured;
    }
    Ok(Subject { name: path.display().to_string(), label: run.label, params, family: None, analysis })
}

/// A measured run read with `--from DIR`: its executed orders at their measured times.
pub fn measured_subject(file: &FileArgs, path: &Path, costs: &CostArgs) -> Result<Subject> {
    // Read first: a file that is no profiled run (a Perfetto export) is named as such before
    // flags are refused for a run it is not.
    let run = load_run(&[path.to_path_buf()], None)?;
    crate::input::refuse_file_flags_on_run(path, file.from_format.is_some(), file.dialect.is_some(), file.merge_bw)?;
    if costs.trades() {
        return Err(user_error(
            &format!(
                "{} is a measured run: its passes ran as measured, so --recompute, --offload, --copy-time and --host-gbps do not apply",
                path.display()
            ),
            &["remove them; to see what they would do, run the same orders at the run's costs: convert DIR orders.csv, then simulate --from orders.csv --costs-from DIR --recompute …"],
        ));
    }
    costs.refuse_on_measured(&path.display().to_string())?;
    for note in run.notes.iter().chain(&run.fitted().notes) {
        eprintln!("note: {note}");
    }
    let analysis = run.analysis().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut params = run.params();
    params.mem_limit = costs.mem_limit()?;
    Ok(Subject { name: path.display().to_string(), label: run.label(), params, family: None, analysis })
}

/// With `--from`, the family flags that the file decides must not be given: `--devices` and
/// `--microbatches` always, the options unless compared families (`comparing`) use them.
pub fn reject_family_flags(matches: Option<&ArgMatches>, comparing: bool) -> Result<()> {
    let Some(matches) = matches else { return Ok(()) };
    let flags = [
        ("devices", "devices", true),
        ("microbatches", "microbatches", true),
        ("chunks", "chunks", false),
        ("group", "group", false),
        ("waves", "waves", false),
        ("seq_splits", "seq-splits", false),
        ("a2a_overlap", "a2a-overlap", false),
    ];
    for (id, flag, sized_by_file) in flags {
        let given = matches.value_source(id) == Some(ValueSource::CommandLine);
        if !given || (comparing && !sized_by_file) {
            continue;
        }
        let hint = if sized_by_file {
            format!("remove --{flag}: the file sets the {flag} of its schedule (and of any --compare)")
        } else {
            format!("remove --{flag}; it shapes generated families only (-s NAME without --from)")
        };
        return Err(user_error(&format!("--{flag} does not apply to a schedule read with --from"), &[hint]));
    }
    Ok(())
}

/// Without `--from`, the flags that say how to read a file (`--from-format`, `--dialect`)
/// must not be given: nothing would read them.
pub fn reject_file_flags(file: &FileArgs) -> Result<()> {
    if file.from.is_some() {
        return Ok(());
    }
    let given = [("--from-format", file.from_format.is_some()), ("--dialect", file.dialect.is_some())];
    match given.iter().find(|g| g.1) {
        Some((flag, _)) => Err(user_error(
            &format!("{flag} applies to a schedule read with --from, but no --from is given"),
            &[format!("read a file with --from FILE, or remove {flag}")],
        )),
        None => Ok(()),
    }
}

/// The family `--schedule` names, or the error when none is given (`reads_files`: the
/// command also takes `--from FILE`, so the message offers it).
pub fn required_schedule(fam: &FamilyArgs, reads_files: bool) -> Result<&str> {
    match fam.schedule.as_deref() {
        Some(name) => Ok(name),
        None => Err(user_error(
            if reads_files { "--schedule (or --from FILE) is required" } else { "--schedule is required" },
            &["pick one of the families `bubblescope list` prints, e.g. --schedule 1f1b"],
        )),
    }
}
