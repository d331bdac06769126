//! `bubblescope`: the same schedules and stats as the playground, as JSON and SVG figures.

mod args;
mod report;

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};
use bubblescope::render::{figure_svg, FigureItem, FigureOptions, Theme};
use bubblescope::{family, Analysis, FAMILIES};
use clap::Parser as _;

use args::{Cli, Command, ListArgs, RenderArgs, ScheduleArgs, SimulateArgs};

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
        Command::List(args) => list(&args),
    }
}

/// Generates and analyses the family named by `--schedule`.
fn analyse(args: &ScheduleArgs, name: &str) -> Result<Analysis> {
    let params = args.params();
    let analysis = bubblescope::run(name, &params).map_err(|e| anyhow::anyhow!("{e}"))?;
    warn_over_limit(&analysis, params.mem_limit);
    Ok(analysis)
}

fn required_schedule(args: &ScheduleArgs) -> Result<&str> {
    match args.schedule.as_deref() {
        Some(name) => Ok(name),
        None => bail!("--schedule is required\n  hint: pick one of the families `bubblescope list` prints, e.g. --schedule 1f1b"),
    }
}

fn simulate(args: &SimulateArgs) -> Result<()> {
    let name = required_schedule(&args.schedule)?;
    let analysis = analyse(&args.schedule, name)?;
    let params = args.schedule.params();
    let out = if args.json {
        let mut s = serde_json::to_string_pretty(&report::json(name, &params, &analysis))?;
        s.push('\n');
        s
    } else {
        report::table(name, &params, &analysis)
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

fn render(args: &RenderArgs) -> Result<()> {
    let names: Vec<String> = if args.compare.is_empty() {
        vec![required_schedule(&args.schedule)?.to_string()]
    } else {
        args.compare.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    if names.is_empty() {
        bail!("--compare needs at least one schedule name\n  hint: e.g. --compare 1f1b,zb-h1");
    }
    let theme = Theme::named(&args.theme)
        .with_context(|| format!("unknown theme `{}`\n  hint: use light or dark", args.theme))?;
    if !(args.width.is_finite() && (240.0..=20_000.0).contains(&args.width)) {
        bail!("--width must be between 240 and 20000 pixels, found {}", args.width);
    }
    if !(args.row_height.is_finite() && (4.0..=80.0).contains(&args.row_height)) {
        bail!("--row-height must be between 4 and 80 pixels, found {}", args.row_height);
    }
    let params = args.schedule.params();
    let mut analyses = Vec::new();
    for name in &names {
        let a = analyse(&args.schedule, name).with_context(|| format!("schedule `{name}`"))?;
        let label = family(name).map_or_else(|| name.clone(), |f| f.label(&params));
        analyses.push((label, a));
    }
    let items: Vec<FigureItem<'_>> =
        analyses.iter().map(|(label, analysis)| FigureItem { label, analysis }).collect();
    let opts = FigureOptions {
        width: args.width,
        row_height: args.row_height,
        memory: args.memory,
        mem_limit: params.mem_limit,
        theme,
        time_range: None,
    };
    let svg = figure_svg(&items, &opts);
    write_output(&args.output, svg.as_bytes())
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
                bubblescope::render::format_number(d.peak_memory, 4),
                bubblescope::render::format_number(limit, 4)
            );
        }
    }
}
