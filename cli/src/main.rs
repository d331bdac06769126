//! `bubblescope`: the same schedules and stats as the playground, as JSON and SVG figures.

mod args;
mod costs;
mod export;
mod output;
mod plan;
mod report;
mod sweep;
mod trace;

use std::io::Write as _;

/// A short-lived process that allocates many small vectors: mimalloc asks the OS for less
/// and faults in fewer pages than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use bubblescope::formats::{self, ImportOptions};
use bubblescope::params::MAX_PASSES;
use bubblescope::render::{
    figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions, Theme, DURATION_RANGE,
};
use bubblescope::units::short_number;
use bubblescope::units::Units;
use bubblescope::{analyze, family, generate, Analysis, Costs, ScheduleParams, FAMILIES};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory as _, FromArgMatches as _};

use args::{Cli, Command, ConvertArgs, CostArgs, FamilyArgs, FileArgs, InputArgs, ListArgs, RenderArgs, SimulateArgs};
use output::{
    check_svg_output, is_std, note_proportional_cuts, read_input, refuse_overwrite, user_error, write_output,
};

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return clap_failure(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_failure(&e),
    };
    let sub = matches.subcommand().map(|(_, m)| m);
    match run(cli, sub) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&format!("{err:#}")),
    }
}

/// Bad input of any kind: one `error:` line, hints on their own lines (a generic one when
/// the message has none), exit status 2, nothing on standard output.
fn fail(message: &str) -> ExitCode {
    let mut text = message.trim_end().to_string();
    if !text.lines().any(|l| l.trim_start().starts_with("hint:")) {
        text.push_str("\n  hint: `bubblescope help` lists the commands, `bubblescope <command> --help` every flag");
    }
    let _ = writeln!(std::io::stderr(), "error: {text}");
    ExitCode::from(2)
}

/// A clap error: help and version print as clap prints them; usage errors take the shape of
/// every other error ([`output::usage_error`]).
fn clap_failure(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => e.exit(),
        _ => fail(&output::usage_error(e, &<args::Cli as clap::CommandFactory>::command())),
    }
}

fn run(cli: Cli, matches: Option<&ArgMatches>) -> Result<()> {
    match cli.command {
        Command::Simulate(args) => simulate(&args, matches),
        Command::Render(args) => render(&args, matches),
        Command::Convert(args) => convert(&args),
        Command::List(args) => list(&args),
        Command::Costs(args) => costs::run(&args, matches),
        Command::Sweep(args) => sweep::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Trace(args) => trace::run(&args),
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

/// Generates family `name` (any spelling [`family`] accepts) at `params`.
fn generated(name: &str, params: ScheduleParams, units: Units) -> Result<Subject> {
    let schedule = generate(name, &params).map_err(|e| anyhow::anyhow!("{e}"))?;
    analyzed(name, schedule, params, units)
}

/// Simulates `schedule` of family `name`, labelled with its sizes (a limit in `units`).
fn analyzed(name: &str, schedule: bubblescope::Schedule, params: ScheduleParams, units: Units) -> Result<Subject> {
    let analysis = analyze(schedule, &params.costs).map_err(|e| anyhow::anyhow!("{e}"))?;
    let family = family(name);
    let label = family.map_or_else(|| name.to_string(), |f| f.label(&params, units));
    let name = family.map_or(name, |f| f.name).to_string();
    Ok(Subject { name, label, params, family, analysis })
}

/// Reads a schedule file; prints its warnings, fails on its errors.
fn import(
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

fn from_file(file: &FileArgs, path: &Path, costs: &CostArgs) -> Result<Subject> {
    if !is_std(path) && trace::is_trace(path) {
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
    if times.is_some() && (costs.model.given() || !costs.hand_set_empty() || costs.costs_from.is_some()) {
        return Err(user_error(
            &format!("{} is a measured run: its times are measured, so cost flags do not apply", path.display()),
            &["remove the cost flags; to run another family at this run's costs use --schedule NAME --costs-from DIR"],
        ));
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
fn measured_subject(file: &FileArgs, path: &Path, costs: &CostArgs) -> Result<Subject> {
    if file.from_format.is_some() || file.dialect.is_some() || file.merge_bw {
        return Err(user_error(
            &format!(
                "{} holds profiler traces: --from-format, --dialect and --merge-bw read schedule files",
                path.display()
            ),
            &["remove them; a trace's actions are PyTorch's current dialect as the runtime ran them"],
        ));
    }
    if costs.costs_from.is_some() || costs.model.given() || !costs.hand_set_empty() {
        return Err(user_error(
            &format!("{} is a measured run: its times are measured, so cost flags do not apply", path.display()),
            &["remove the cost flags; to run another family at this run's costs use --schedule NAME --costs-from DIR"],
        ));
    }
    let run = trace::load(&[path.to_path_buf()], None)?;
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
fn reject_family_flags(matches: Option<&ArgMatches>, comparing: bool) -> Result<()> {
    let Some(matches) = matches else { return Ok(()) };
    let flags = [
        ("devices", "devices", true),
        ("microbatches", "microbatches", true),
        ("chunks", "chunks", false),
        ("group", "group", false),
        ("waves", "waves", false),
        ("seq_splits", "seq-splits", false),
    ];
    for (id, flag, sized_by_file) in flags {
        let given = matches.value_source(id) == Some(ValueSource::CommandLine);
        if !given || (comparing && !sized_by_file) {
            continue;
        }
        let hint = if sized_by_file {
            format!("remove --{flag}: the file sets the {flag} of its schedule (and of any --compare)")
        } else {
            format!("remove --{flag}; it shapes generated families only (e.g. with --compare)")
        };
        return Err(user_error(&format!("--{flag} does not apply to a schedule read with --from"), &[hint]));
    }
    Ok(())
}

/// Without `--from`, the flags that say how to read a file (`--from-format`, `--dialect`)
/// must not be given: nothing would read them.
fn reject_file_flags(file: &FileArgs) -> Result<()> {
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

fn required_schedule(fam: &FamilyArgs) -> Result<&str> {
    match fam.schedule.as_deref() {
        Some(name) => Ok(name),
        None => Err(user_error(
            "--schedule (or --from FILE) is required",
            &["pick one of the families `bubblescope list` prints, e.g. --schedule 1f1b"],
        )),
    }
}

fn simulate(args: &SimulateArgs, matches: Option<&ArgMatches>) -> Result<()> {
    let InputArgs { family, costs, file } = &args.input;
    // The export's format and options are checked before any work.
    let target = match &args.export.export {
        Some(path) => {
            if let Some(from) = &file.from {
                refuse_overwrite(from, path)?;
            }
            Some(export::Target::export(&args.export, path)?)
        }
        None => None,
    };
    let subject = match &file.from {
        Some(path) => {
            reject_family_flags(matches, false)?;
            from_file(file, path, costs)?
        }
        None => {
            reject_file_flags(file)?;
            generated(required_schedule(family)?, args::params(family, costs)?, costs.units())?
        }
    };
    costs.check_copy_rate(&subject.analysis.schedule)?;
    let offloads = subject.params.costs.trade.as_deref().is_some_and(bubblescope::trade::Trade::offloads);
    if offloads && !subject.analysis.schedule.has_copies() {
        eprintln!("note: {}", bubblescope::passes::NOTHING_OFFLOADED);
    }
    if let Some(target) = &target {
        let a = &subject.analysis;
        target.write(&target.text(&a.schedule, &subject.params.costs, Some(a))?)?;
        if is_std(&target.path) {
            // Standard output holds the file alone, so it can be piped.
            return Ok(());
        }
    }
    warn_over_limit(&subject.analysis, subject.params.mem_limit, costs.units());
    if costs.model.given() {
        let derived =
            costs.model.model(subject.params.devices)?.derive(subject.params.devices).map_err(args::flag_error)?;
        note_proportional_cuts(
            &derived,
            [(subject.name.as_str(), subject.analysis.schedule.placement.stages_per_pipeline())],
        );
    }
    let searched = args.optimal || args.optimal_nodes.is_some();
    if searched && subject.analysis.schedule.trades_memory() {
        anyhow::bail!("--optimal searches orders of F, B and W, but this schedule recomputes or offloads\n  hint: drop --recompute and --offload to search the orders, then add them back to the order it finds");
    }
    let optimum = searched.then(|| optimum(&subject, args.optimal_nodes));
    let cost = subject.analysis.stats.cost;
    let out = if args.json {
        let mut value = report::json(&subject.name, subject.family, &subject.params, &subject.analysis);
        if let Some(o) = &optimum {
            report::add_optimal(&mut value, cost, o.as_ref());
        }
        let mut s = serde_json::to_string_pretty(&value)?;
        s.push('\n');
        s
    } else {
        // With costs from a model: figures in µs and bytes, and why the bottleneck is one.
        let derived = match costs.model.given() {
            true => Some(
                costs.model.model(subject.params.devices)?.derive(subject.params.devices).map_err(args::flag_error)?,
            ),
            false => None,
        };
        let mut s = report::table(&subject.label, subject.family, &subject.params, &subject.analysis, derived.as_ref());
        if let Some(o) = &optimum {
            // Under the summary rows, before the per-device table.
            let a = &subject.analysis;
            let limit = bubblescope::bounds::problem_limit(subject.family, &subject.params, &a.stats);
            let fits = a.stats.peak_memory <= limit + 1e-9 * limit.abs().max(1.0);
            let (limit, time): (String, &dyn Fn(f64) -> String) = match derived {
                Some(_) => (bubblescope::units::format_bytes(limit), &bubblescope::units::format_micros),
                None => (bubblescope::units::format_number(limit, 4), &|v| bubblescope::units::format_number(v, 4)),
            };
            let line = report::optimal_line(cost, o.as_ref(), &limit, a.schedule.op_count(), fits, time);
            match s.find("\n\n").and_then(|i| s[i + 2..].find("\n\n").map(|j| i + 2 + j + 1)) {
                Some(at) => s.insert_str(at, &line),
                None => s.push_str(&line),
            }
        }
        s
    };
    std::io::stdout().write_all(out.as_bytes()).context("writing to standard output")?;
    Ok(())
}

/// The best order of the subject's passes under its problem's memory limit (`None` when no
/// order within the limit is known), searching `nodes` nodes at most (the default budget
/// without). Its cost is the simulator's: the order is re-simulated.
///
/// A search that runs long says on stderr, every few seconds, how far it has come.
fn optimum(subject: &Subject, nodes: Option<u64>) -> Option<bubblescope::optimal::Optimum> {
    use bubblescope::optimal::{Budget, Progress};
    use bubblescope::registry::optimize_run_with_progress;
    let a = &subject.analysis;
    let limit = bubblescope::bounds::problem_limit(subject.family, &subject.params, &a.stats);
    let budget = nodes.map_or(Budget::default(), Budget::of_nodes);
    let start = std::time::Instant::now();
    let mut shown = start;
    let mut report = |p: &Progress| {
        let now = std::time::Instant::now();
        if now.duration_since(shown).as_secs_f64() >= PROGRESS_SECONDS {
            shown = now;
            eprintln!("{}", progress_line(now.duration_since(start).as_secs_f64(), p));
        }
    };
    optimize_run_with_progress(subject.family, &subject.params, &a.schedule, limit, budget, &mut report).ok()
}

/// Seconds between two progress lines of a long search.
const PROGRESS_SECONDS: f64 = 5.0;

/// One progress line of the search: time, nodes, the best order and the proven bound.
fn progress_line(seconds: f64, p: &bubblescope::optimal::Progress) -> String {
    use bubblescope::units::format_number;
    let best = if p.best.is_finite() { format_number(p.best, 4) } else { "none yet".to_string() };
    let mut line = format!(
        "note: searching for --optimal: {} s, {} nodes, best order {best}, every order at least {}",
        format_number(seconds, 0),
        p.nodes,
        format_number(p.bound, 4)
    );
    line.push_str(&format!(", {} MiB of states remembered", p.memo_bytes >> 20));
    if p.memo_dropped > 0 {
        line.push_str(&format!(" (the cap: {} more not kept)", p.memo_dropped));
    }
    line
}

/// The families `--compare` (or `--schedule`) names, each once, by registry name.
fn compared_names(args: &RenderArgs, have_file: bool) -> Result<Vec<String>> {
    let typed: Vec<String> = if args.compare.is_empty() {
        match (&args.input.family.schedule, have_file) {
            (Some(name), _) => vec![name.clone()],
            (None, true) => vec![],
            (None, false) => vec![required_schedule(&args.input.family)?.to_string()],
        }
    } else {
        args.compare.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    };
    let mut names: Vec<String> = Vec::new();
    for name in typed {
        let name = family(&name).map_or(name, |f| f.name.to_string());
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// The error for compared schedules over [`MAX_PASSES`] in total.
fn too_many_passes(total: u64) -> anyhow::Error {
    user_error(
        &format!(
            "the compared schedules would have at least {total} passes in total, more than the {MAX_PASSES} supported"
        ),
        &["compare fewer families, or use fewer devices or microbatches"],
    )
}

fn render(args: &RenderArgs, matches: Option<&ArgMatches>) -> Result<()> {
    let InputArgs { costs, file, .. } = &args.input;
    let theme = Theme::named(&args.theme).ok_or_else(|| {
        user_error(&format!("unknown theme `{}`", formats::sanitize(&args.theme)), &["use light or dark"])
    })?;
    if !(args.width.is_finite() && (240.0..=20_000.0).contains(&args.width)) {
        return Err(user_error(
            &format!("--width must be between 240 and 20000 pixels, found {}", short_number(args.width)),
            &["leave --width out for 960 pixels, or give e.g. --width 1600"],
        ));
    }
    if !(args.row_height.is_finite() && (4.0..=80.0).contains(&args.row_height)) {
        return Err(user_error(
            &format!("--row-height must be between 4 and 80 pixels, found {}", short_number(args.row_height)),
            &["leave --row-height out for 22 pixels per device, or give e.g. --row-height 12"],
        ));
    }
    let (shortest, longest) = DURATION_RANGE;
    if !(args.duration.is_finite() && (shortest..=longest).contains(&args.duration)) {
        return Err(user_error(
            &format!(
                "--duration must be between {shortest} and {longest} seconds, found {}",
                short_number(args.duration)
            ),
            &["leave --duration out for 6 seconds, or give e.g. --duration 20"],
        ));
    }
    if let Some(path) = &file.from {
        refuse_overwrite(path, &args.output)?;
    }
    check_svg_output(&args.output, "render")?;
    reject_file_flags(file)?;
    let mut subjects = Vec::new();
    let mut family_args = args.input.family.clone();
    if let Some(path) = &file.from {
        reject_family_flags(matches, !args.compare.is_empty())?;
        let read = from_file(file, path, costs)?;
        // Compared families run at the file's sizes.
        family_args.devices = read.params.devices;
        family_args.microbatches = read.params.microbatches;
        subjects.push(read);
    }
    let params = args::params(&family_args, costs)?;
    let names = compared_names(args, !subjects.is_empty())?;
    // The pass cap holds for everything drawn: every family's exact pass count comes from
    // the registry, so the total is checked before anything is generated.
    let planned: u64 =
        names.iter().filter_map(|n| family(n)).map(|f| f.pass_count(&f.with_defaults(&f.own_params(&params)))).sum();
    let total: u64 = subjects.iter().map(|s| s.analysis.schedule.pass_count() as u64).sum();
    if total + planned > MAX_PASSES {
        return Err(too_many_passes(total + planned));
    }
    for name in &names {
        let in_context = |e: anyhow::Error| e.context(format!("schedule `{}`", formats::sanitize(name)));
        let schedule = generate(name, &params).map_err(|e| in_context(anyhow::anyhow!("{e}")))?;
        subjects.push(analyzed(name, schedule, params.clone(), costs.units()).map_err(in_context)?);
    }
    if subjects.is_empty() {
        return Err(user_error("nothing to draw", &["pass --schedule NAME, --compare A,B or --from FILE"]));
    }
    for s in &subjects {
        costs.check_copy_rate(&s.analysis.schedule)?;
        warn_over_limit(&s.analysis, s.params.mem_limit, costs.units());
    }
    if costs.model.given() {
        let derived = costs.model.model(params.devices)?.derive(params.devices).map_err(args::flag_error)?;
        note_proportional_cuts(
            &derived,
            subjects.iter().map(|s| (s.name.as_str(), s.analysis.schedule.placement.stages_per_pipeline())),
        );
    }
    let causes = if args.causes {
        subjects
            .iter()
            .map(|s| bubblescope::gaps::causes(&s.analysis, &s.params.costs).map(Some))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("{e}"))?
    } else {
        vec![None; subjects.len()]
    };
    let items: Vec<FigureItem<'_>> = subjects
        .iter()
        .zip(&causes)
        .map(|(s, c)| FigureItem { label: &s.label, analysis: &s.analysis, causes: c.as_ref() })
        .collect();
    let opts = FigureOptions {
        width: args.width,
        row_height: args.row_height,
        memory: args.memory,
        causes: args.causes,
        mem_limit: costs.mem_limit()?,
        theme,
        // A measured run's times are µs whatever the cost flags say.
        units: if subjects.iter().any(|s| s.params.units == Units::Measured) { Units::Measured } else { costs.units() },
        ..FigureOptions::default()
    };
    let svg = if args.animate {
        figure_animated_svg(&items, &opts, &AnimateOptions { duration: args.duration, looping: args.looping })
    } else {
        figure_svg(&items, &opts)
    };
    write_output(&args.output, svg.as_bytes())
}

fn convert(args: &ConvertArgs) -> Result<()> {
    refuse_overwrite(&args.input, &args.output)?;
    let target = export::Target::new(
        &args.output,
        args.to_format.as_deref(),
        args.torch.as_deref(),
        export::dialect(args.to_dialect.as_deref())?,
    )?;
    let measured = (!is_std(&args.input) && trace::is_trace(&args.input))
        .then(|| trace::load(std::slice::from_ref(&args.input), None))
        .transpose()?;
    let (schedule, file_costs, times) = match &measured {
        Some(run) => (run.schedule.clone(), Some(run.fitted().costs(run.schedule.devices())), Some(run.op_times())),
        None => import(&args.input, args.from_format.as_deref(), args.dialect.as_deref(), args.merge_bw)?,
    };
    let costs = args.costs.costs(file_costs.as_ref(), schedule.devices())?;
    costs.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = match (&times, target.format) {
        // A measured run keeps its times: JSON carries them, a trace shows them.
        (Some(times), formats::Format::Json) => formats::export_json_timed(&schedule, Some(&costs), Some(times)),
        (Some(times), formats::Format::Perfetto) => {
            let analysis = bubblescope::analyze_timed(schedule, &costs, times).map_err(|e| anyhow::anyhow!("{e}"))?;
            target.text(&analysis.schedule, &costs, Some(&analysis))?
        }
        _ => target.text(&schedule, &costs, None)?,
    };
    target.write(&text)
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

/// Says on stderr when a device's peak activation memory is above `--mem-limit` (in GiB and
/// the like when costs come from a model).
fn warn_over_limit(analysis: &Analysis, limit: Option<f64>, units: Units) {
    let Some(shown) = limit else { return };
    let memory = |v: f64| units.memory_detail(v);
    for d in analysis.stats.per_device.iter().filter(|d| d.over_limit(limit)) {
        let _ = writeln!(
            std::io::stderr(),
            "warning: device {} peaks at {} activation memory, above the limit {}",
            d.device,
            memory(d.peak_memory),
            memory(shown)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_search_reports_time_nodes_best_and_bound() {
        let p = bubblescope::optimal::Progress {
            nodes: 1_234_567,
            work: 0,
            best: 31.0,
            bound: 28.5,
            memo_bytes: 256 << 20,
            memo_dropped: 42,
        };
        assert_eq!(
            progress_line(12.4, &p),
            "note: searching for --optimal: 12 s, 1234567 nodes, best order 31, every order at least 28.5, 256 MiB of states remembered (the cap: 42 more not kept)"
        );
        let early = bubblescope::optimal::Progress { best: f64::INFINITY, memo_dropped: 0, ..p };
        assert!(progress_line(5.0, &early).contains("best order none yet, every order at least 28.5"));
    }
}
