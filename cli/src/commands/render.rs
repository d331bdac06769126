//! `bubblescope render`: schedules drawn on one time axis as an SVG figure (a file's, and
//! families compared at its sizes), still or animated, with the memory chart and the idle
//! gaps' causes on request.

use std::path::PathBuf;

use anyhow::Result;
use bubblescope::formats;
use bubblescope::params::MAX_PASSES;
use bubblescope::render::{
    figure_animated_svg, figure_svg, AnimateOptions, FigureItem, FigureOptions, Theme, DURATION_RANGE,
};
use bubblescope::units::{short_number, Units};
use bubblescope::{family, generate};
use clap::{ArgMatches, Args};

use crate::args::{self, InputArgs};
use crate::output::{
    check_svg_output, note_proportional_cuts, refuse_overwrite, user_error, warn_over_limit, write_output,
};
use crate::subject::{analyzed, from_file, reject_family_flags, reject_file_flags, required_schedule};

/// What `render -h` ends with: the options it leaves out, by name.
pub const RENDER_MORE: &str = "\
More options (--group … --seq-splits, --overlap, --costs-from, --mem-w, --layers … --tp,
--gpus-per-node … --calibrate, --recompute, --offload, --from-format … --merge-bw, --width,
--row-height, --theme, --duration, --loop, --zero … --global-batch): --help";

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, after_help = RENDER_MORE)]
pub struct RenderArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Draw several families on one time axis, e.g. `1f1b,zb-h1,zb-v`.
    ///
    /// Draw several families on one time axis, e.g. `1f1b,zb-h1,zb-v` (after --from's file,
    /// at the file's devices and microbatches).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', conflicts_with = "schedule")]
    pub compare: Vec<String>,
    /// Where to write the SVG (`-`: standard output).
    ///
    /// Where to write the SVG (`-` for standard output); the name ends in .svg or has no
    /// extension.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Draw each step of a lesson to its own file (`-o step.svg`: step-1.svg, step-2.svg, …).
    ///
    /// Draw each step of a lesson to its own file: a built-in's name (why-pipelines-idle,
    /// zero-bubble, memory-versus-bubble), a lesson's text as a link's `lesson` carries it, or
    /// a file holding that text.
    /// `-o step.svg` writes step-1.svg, step-2.svg, … The steps' settings are the lesson's.
    #[arg(long, value_name = "LESSON", conflicts_with_all = ["schedule", "compare"], hide_short_help = true)]
    pub lesson: Option<String>,
    /// Add the activation-memory chart below the Gantt chart.
    #[arg(long)]
    pub memory: bool,
    /// Shade every idle gap by its cause.
    ///
    /// Shade every idle gap by its causes (communication, imbalance, schedule), with a legend.
    #[arg(long)]
    pub causes: bool,
    /// Figure width in pixels.
    #[arg(value_parser = crate::args::number, long, value_name = "PX", default_value_t = 960.0, hide_short_help = true)]
    pub width: f64,
    /// Height of one device row in pixels.
    #[arg(value_parser = crate::args::number, long = "row-height", value_name = "PX", default_value_t = 22.0, hide_short_help = true)]
    pub row_height: f64,
    /// Colour theme: light or dark.
    #[arg(long, value_name = "THEME", default_value = "light", hide_short_help = true)]
    pub theme: String,
    /// Write an animated SVG of the schedule filling and draining.
    ///
    /// Write an animated SVG that plays the schedule filling and draining (CSS, no script);
    /// its last frame is the still figure.
    #[arg(long)]
    pub animate: bool,
    /// Seconds the animation takes from the first pass to the last (0.5 to 600).
    #[arg(value_parser = crate::args::number, long, value_name = "SECONDS", default_value_t = 6.0, requires = "animate", hide_short_help = true)]
    pub duration: f64,
    /// Play the animation in a loop instead of once.
    #[arg(long = "loop", requires = "animate", hide_short_help = true)]
    pub looping: bool,
    #[command(flatten)]
    pub step: crate::args::StepArgs,
}

/// The families `--compare` (or `--schedule`) names, each once, by registry name.
fn compared_names(args: &RenderArgs, have_file: bool) -> Result<Vec<String>> {
    let typed: Vec<String> = if args.compare.is_empty() {
        match (&args.input.family.schedule, have_file) {
            (Some(name), _) => vec![name.clone()],
            (None, true) => vec![],
            (None, false) => vec![required_schedule(&args.input.family, true)?.to_string()],
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

pub fn run(args: &RenderArgs, matches: Option<&ArgMatches>) -> Result<()> {
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
    // A lesson's steps carry their own settings; it writes a file per step.
    if let Some(lesson) = &args.lesson {
        return render_lesson(args, lesson, theme, matches);
    }
    if let Some(path) = &file.from {
        refuse_overwrite(path, &args.output)?;
    }
    costs.refuse_overwrite(&args.output)?;
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
    let mut params = args::params(&family_args, costs)?;
    if subjects.is_empty() {
        if let Some(m) = crate::step::microbatches(
            costs,
            &args.step,
            params.devices,
            crate::step::given_microbatches(matches, args.input.family.microbatches),
        )? {
            params.microbatches = m;
        }
    }
    let names = compared_names(args, !subjects.is_empty())?;
    // Vocabulary costs with no family that reads them (a file's own schedule may).
    let compared: Vec<&bubblescope::Family> = names.iter().filter_map(|n| family(n)).collect();
    if let Some(e) = bubblescope::families::unused_vocabulary(&compared, &params.costs).filter(|_| file.from.is_none())
    {
        return Err(anyhow::anyhow!("{e}"));
    }
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
        for s in &subjects {
            let stages = s.analysis.schedule.placement.stages_per_pipeline();
            if let Some(e) = derived.layout_stage_error(costs.model.layout.is_some(), stages) {
                return Err(args::flag_error(e));
            }
        }
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
    // With a model, the first schedule drawn gets the whole step's strips, as the
    // playground draws them for its chosen schedule; a file's run has no step.
    let step = match subjects.first() {
        Some(s) if file.from.is_none() => crate::step::compute(costs, &args.step, &s.analysis, s.params.devices)?,
        _ => {
            crate::step::check(costs, &args.step)?;
            None
        }
    };
    let items: Vec<FigureItem<'_>> = subjects
        .iter()
        .zip(&causes)
        .enumerate()
        .map(|(i, (s, c))| FigureItem {
            label: &s.label,
            analysis: &s.analysis,
            causes: c.as_ref(),
            step: step.as_ref().filter(|_| i == 0),
        })
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

/// The flags `render --lesson` reads besides the lesson: where and how to draw.
const LESSON_FLAGS: &[&str] =
    &["lesson", "output", "memory", "animate", "duration", "looping", "width", "row_height", "theme"];

/// `render --lesson`: each step of the lesson at its own settings, to `stem-k.svg`.
fn render_lesson(args: &RenderArgs, value: &str, theme: Theme, matches: Option<&ArgMatches>) -> Result<()> {
    use bubblescope::lessons::Lesson;
    // Every other flag sets what the steps already set: refused, not silently overridden.
    if let Some(m) = matches {
        let given = m.ids().map(|id| id.as_str()).find(|id| {
            !LESSON_FLAGS.contains(id) && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        });
        if let Some(id) = given {
            let flag = id.replace('_', "-");
            return Err(user_error(
                &format!("--{flag} does not apply with --lesson: each step carries its own settings"),
                &[&format!(
                    "leave out --{flag}, or put it in the lesson's settings lines (e.g. `schedule=zb-v&devices=8`)"
                )],
            ));
        }
    }
    // A file's name (no built-in is one) gives the lesson's text from the file.
    let path = std::path::Path::new(value);
    let text = match !value.contains('\n') && path.is_file() {
        true => crate::output::read_input(path)?,
        false => value.to_string(),
    };
    if text.trim().is_empty() && path.is_file() {
        return Err(user_error(
            &format!("{} is empty: it holds no lesson", bubblescope::formats::sanitize(value)),
            &["a lesson's text is a title line, then a caption line and a settings line per step"],
        ));
    }
    let lesson = Lesson::parse(&text).map_err(|e| {
        let (what, hint) = e.split_once("\nhint: ").unwrap_or((e.as_str(), "give a built-in lesson's name"));
        user_error(what, &[hint])
    })?;
    let out = &args.output;
    // An existing -o that is not a file (/dev/full, a pipe) names no stem: step-k.svg would
    // land beside it, in /dev.
    let special = std::fs::metadata(out).is_ok_and(|m| !m.is_file() && !m.is_dir());
    if out.as_os_str() == "-" || out.is_dir() || out.to_string_lossy().ends_with('/') || special {
        return Err(user_error(
            &format!(
                "a lesson of {} steps writes one figure per step; -o {} is not a file name",
                lesson.steps.len(),
                out.display()
            ),
            &["give a file name: -o step.svg writes step-1.svg, step-2.svg, …"],
        ));
    }
    if !matches!(out.extension().and_then(|e| e.to_str()), None | Some("svg")) {
        return Err(user_error(
            &format!("-o {} does not end in .svg", out.display()),
            &["give e.g. -o step.svg (step-1.svg, step-2.svg, …)"],
        ));
    }
    let stem = out.with_extension("");
    let mut replaced = Vec::new();
    for (i, step) in lesson.steps.iter().enumerate() {
        let at = format!("step {} of the lesson", i + 1);
        if let Some(key) = repeated_key(&step.settings) {
            return Err(user_error(
                &format!("{at}: {} is given twice", formats::sanitize(&key)),
                &["give each key once (a flag is given once on the command line)"],
            ));
        }
        let (link, warnings) = bubblescope::permalink::parse(&step.settings);
        let unknown = bubblescope::permalink::unknown_keys(&link, &[]);
        if let Some(w) = warnings.iter().chain(&unknown).next() {
            let w = w.strip_prefix("ignored ").unwrap_or(w);
            return Err(user_error(
                &format!("{at}: {w}"),
                &["fix the step's settings line (the keys are the CLI's flag names)"],
            ));
        }
        let settings = link.settings();
        let params = settings.effective_params().map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
        let mut names = vec![link.schedule.clone()];
        names.extend(link.compare.iter().cloned());
        let mut runs = Vec::with_capacity(names.len());
        for name in &names {
            let fam = family(name).ok_or_else(|| {
                user_error(
                    &format!("{at}: no schedule `{}`", formats::sanitize(name)),
                    &["bubblescope list names the schedules"],
                )
            })?;
            let analysis = bubblescope::registry::run(name, &params).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
            runs.push((fam.label(&params, params.units), analysis));
        }
        let items: Vec<FigureItem<'_>> =
            runs.iter().map(|(label, a)| FigureItem { label, analysis: a, causes: None, step: None }).collect();
        let opts = FigureOptions {
            width: args.width,
            row_height: args.row_height,
            memory: args.memory,
            theme: theme.clone(),
            units: params.units,
            ..FigureOptions::default()
        };
        let svg = if args.animate {
            figure_animated_svg(&items, &opts, &AnimateOptions { duration: args.duration, looping: args.looping })
        } else {
            figure_svg(&items, &opts)
        };
        let path = PathBuf::from(format!("{}-{}.svg", stem.display(), i + 1));
        if path.exists() {
            replaced.push(path.display().to_string());
        }
        write_output(&path, svg.as_bytes())?;
        eprintln!("step {}: {} → {}", i + 1, step.caption, path.display());
    }
    if !replaced.is_empty() {
        eprintln!("note: replaced {}, written before", replaced.join(", "));
    }
    Ok(())
}

/// The first key a lesson step's settings line gives twice (`devices=4&devices=8`, where the
/// link's reader would keep the last without a word).
fn repeated_key(settings: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    settings.trim().trim_start_matches('?').split('&').find_map(|part| {
        let key = part.split('=').next().unwrap_or("").trim();
        (!key.is_empty() && !seen.insert(key)).then(|| key.to_string())
    })
}
