//! `bubblescope`: the same schedules and stats as the playground, as JSON and SVG figures.

mod args;
mod report;

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use bubblescope::formats::{self, Dialect, ExportOptions, Format, ImportOptions};
use bubblescope::render::{
    figure_animated_svg, figure_svg, format_number, AnimateOptions, FigureItem, FigureOptions, Theme, DURATION_RANGE,
};
use bubblescope::{analyze, family, Analysis, Costs, ScheduleParams, FAMILIES};
use clap::Parser as _;

use args::{Cli, Command, ConvertArgs, CostArgs, FamilyArgs, FileArgs, ListArgs, RenderArgs, SimulateArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // Bad input of any kind: a message, hints on their own lines, exit status 2.
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Simulate(args) => simulate(&args),
        Command::Render(args) => render(&args),
        Command::Convert(args) => convert(&args),
        Command::List(args) => list(&args),
    }
}

/// A schedule to report on: generated from a family, or read from a file.
struct Subject {
    /// The family name, or the file's path.
    name: String,
    /// Heading for figures and tables.
    label: String,
    /// The parameters it ran with (sizes from the schedule for files).
    params: ScheduleParams,
    /// The family, when generated.
    family: Option<&'static bubblescope::Family>,
    analysis: Analysis,
}

fn generated(name: &str, fam: &FamilyArgs, costs: &CostArgs) -> Result<Subject> {
    let params = args::params(fam, costs);
    let analysis = bubblescope::run(name, &params).map_err(|e| anyhow::anyhow!("{e}"))?;
    let family = family(name);
    let label = family.map_or_else(|| name.to_string(), |f| f.label(&params));
    Ok(Subject { name: name.to_string(), label, params, family, analysis })
}

fn read_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() > formats::MAX_FILE_BYTES {
        bail!(
            "{} has {} bytes, more than the {} an import reads\n  hint: cut the schedule into smaller files",
            path.display(),
            bytes.len(),
            formats::MAX_FILE_BYTES
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not UTF-8 text (byte {} is invalid)\n  hint: schedule files are PyTorch CSV or Bubblescope JSON",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

fn input_format(path: &Path, forced: Option<&str>) -> Result<Format> {
    match forced {
        Some(name) => Format::from_name(name).map_err(|e| anyhow::anyhow!("{e}")),
        None => Format::from_extension(&path.to_string_lossy()).with_context(|| {
            format!(
                "cannot tell the format of {} from its extension\n  hint: name it .csv or .json, or pass --from-format pytorch-csv|pytorch-csv-comms|json",
                path.display()
            )
        }),
    }
}

fn dialect(name: Option<&str>) -> Result<Option<Dialect>> {
    match name {
        None => Ok(None),
        Some("current") => Ok(Some(Dialect::Current)),
        Some("legacy") => Ok(Some(Dialect::Legacy)),
        Some(other) => bail!(
            "unknown dialect `{}`\n  hint: use current (I = input grad, B = full backward) or legacy (B = input grad, BW = full backward)",
            formats::sanitize(other)
        ),
    }
}

/// Reads a schedule file; prints its warnings, fails on its errors.
fn import(
    path: &Path,
    format: Option<&str>,
    dialect_name: Option<&str>,
    merge_bw: bool,
) -> Result<(bubblescope::Schedule, Option<Costs>)> {
    let text = read_file(path)?;
    let format = input_format(path, format)?;
    let options = ImportOptions { dialect: dialect(dialect_name)?, merge_bw, source: Some(path.display().to_string()) };
    let imported = formats::import(&text, format, &options);
    if imported.has_errors() {
        bail!("{} cannot be used:\n{}", path.display(), imported.report());
    }
    if !imported.diagnostics.is_empty() {
        let _ = writeln!(std::io::stderr(), "{}", imported.report());
    }
    let schedule = imported.schedule.with_context(|| format!("{} holds no schedule", path.display()))?;
    Ok((schedule, imported.costs))
}

fn from_file(file: &FileArgs, path: &Path, costs: &CostArgs) -> Result<Subject> {
    let (schedule, file_costs) = import(path, file.from_format.as_deref(), file.dialect.as_deref(), file.merge_bw)?;
    let costs_value = costs.costs(file_costs.as_ref());
    costs_value.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut params = ScheduleParams::new(schedule.devices(), schedule.microbatches).with_costs(costs_value);
    params.mem_limit = costs.mem_limit;
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let label = schedule.file_label(&formats::sanitize(&name));
    let analysis = analyze(schedule, &params.costs).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(Subject { name: path.display().to_string(), label, params, family: None, analysis })
}

fn required_schedule(fam: &FamilyArgs) -> Result<&str> {
    match fam.schedule.as_deref() {
        Some(name) => Ok(name),
        None => bail!("--schedule (or --from FILE) is required\n  hint: pick one of the families `bubblescope list` prints, e.g. --schedule 1f1b"),
    }
}

fn simulate(args: &SimulateArgs) -> Result<()> {
    let subject = match &args.file.from {
        Some(path) => from_file(&args.file, path, &args.costs)?,
        None => generated(required_schedule(&args.family)?, &args.family, &args.costs)?,
    };
    warn_over_limit(&subject.analysis, subject.params.mem_limit);
    let out = if args.json {
        let value = report::json(&subject.name, subject.family, &subject.params, &subject.analysis);
        let mut s = serde_json::to_string_pretty(&value)?;
        s.push('\n');
        s
    } else {
        report::table(&subject.label, subject.family, &subject.params, &subject.analysis)
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

fn render(args: &RenderArgs) -> Result<()> {
    let theme = Theme::named(&args.theme)
        .with_context(|| format!("unknown theme `{}`\n  hint: use light or dark", formats::sanitize(&args.theme)))?;
    if !(args.width.is_finite() && (240.0..=20_000.0).contains(&args.width)) {
        bail!("--width must be between 240 and 20000 pixels, found {}", args.width);
    }
    if !(args.row_height.is_finite() && (4.0..=80.0).contains(&args.row_height)) {
        bail!("--row-height must be between 4 and 80 pixels, found {}", args.row_height);
    }
    let (shortest, longest) = DURATION_RANGE;
    if !(args.duration.is_finite() && (shortest..=longest).contains(&args.duration)) {
        bail!("--duration must be between {shortest} and {longest} seconds, found {}", args.duration);
    }
    let mut subjects = Vec::new();
    if let Some(path) = &args.file.from {
        subjects.push(from_file(&args.file, path, &args.costs)?);
    }
    let names: Vec<String> = if args.compare.is_empty() {
        match (&args.family.schedule, subjects.is_empty()) {
            (Some(name), _) => vec![name.clone()],
            (None, true) => vec![required_schedule(&args.family)?.to_string()],
            (None, false) => vec![],
        }
    } else {
        args.compare.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    for name in &names {
        subjects.push(
            generated(name, &args.family, &args.costs)
                .with_context(|| format!("schedule `{}`", formats::sanitize(name)))?,
        );
    }
    if subjects.is_empty() {
        bail!("nothing to draw\n  hint: pass --schedule NAME, --compare A,B or --from FILE");
    }
    for s in &subjects {
        warn_over_limit(&s.analysis, s.params.mem_limit);
    }
    let items: Vec<FigureItem<'_>> =
        subjects.iter().map(|s| FigureItem { label: &s.label, analysis: &s.analysis }).collect();
    let opts = FigureOptions {
        width: args.width,
        row_height: args.row_height,
        memory: args.memory,
        mem_limit: args.costs.mem_limit,
        theme,
        time_range: None,
    };
    let svg = if args.animate {
        figure_animated_svg(&items, &opts, &AnimateOptions { duration: args.duration, looping: args.looping })
    } else {
        figure_svg(&items, &opts)
    };
    write_output(&args.output, svg.as_bytes())
}

fn convert(args: &ConvertArgs) -> Result<()> {
    let (schedule, file_costs) =
        import(&args.input, args.from_format.as_deref(), args.dialect.as_deref(), args.merge_bw)?;
    let to = match args.to_format.as_deref() {
        Some(name) => Format::from_name(name).map_err(|e| anyhow::anyhow!("{e}"))?,
        None => Format::from_extension(&args.output.to_string_lossy()).with_context(|| {
            format!(
                "cannot tell the output format of {} from its extension\n  hint: name it .csv or .json, or pass --to-format pytorch-csv|pytorch-csv-comms|json|perfetto",
                args.output.display()
            )
        })?,
    };
    let costs = args.costs.costs(file_costs.as_ref());
    costs.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    let options = ExportOptions { dialect: dialect(args.to_dialect.as_deref())?.unwrap_or_default() };
    let text = formats::export(&schedule, Some(&costs), to, &options).map_err(|e| anyhow::anyhow!("{e}"))?;
    write_output(&args.output, text.as_bytes())
}

fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if path.as_os_str() == "-" {
        std::io::stdout().write_all(bytes).context("writing to standard output")?;
        return Ok(());
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn list(args: &ListArgs) -> Result<()> {
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report::families_json())?;
        s.push('\n');
        s
    } else {
        report::families_text(FAMILIES)
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

/// Says on stderr when a device's peak activation memory is above `--mem-limit`.
fn warn_over_limit(analysis: &Analysis, limit: Option<f64>) {
    let Some(limit) = limit else { return };
    for d in &analysis.stats.per_device {
        if d.peak_memory > limit + 1e-9 {
            let _ = writeln!(
                std::io::stderr(),
                "warning: device {} peaks at {} activation memory, above the limit {}",
                d.device,
                format_number(d.peak_memory, 4),
                format_number(limit, 4)
            );
        }
    }
}
