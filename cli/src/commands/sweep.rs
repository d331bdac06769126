//! `bubblescope sweep`: every combination, run on all cores, as a table, JSON or CSV, and the
//! Pareto chart as SVG.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use bubblescope::plan::{
    describe_trade, parse_counts, parse_microbatches, parse_schedules, run_one, InvalidRun, RunSpec, StepInputs, Sweep,
    SweepRun, SweepSpec,
};
use bubblescope::render::{pareto_svg, AxisUnit, ParetoOptions, Theme};
use bubblescope::units::format_bytes;
use bubblescope::units::format_number;
use bubblescope::Field;
use serde_json::{json, Value};

use clap::Args;

use crate::args::{devices, positive, CostArgs};
use crate::parallel::run_parallel;

/// What `sweep -h` ends with: the options it leaves out, by name.
pub const SWEEP_MORE: &str = "\
More options (--group, --overlap, --costs-from, --mem-w, --layers … --tp, --gpus-per-node …
--calibrate, --recompute, --offload, --copy-time, --zero, --gpus, --theme): --help";

/// `bubblescope sweep`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, after_help = SWEEP_MORE)]
pub struct SweepArgs {
    /// Families to compare: `all`, or a list such as `1f1b,zb-h1,zb-v`.
    #[arg(long, value_name = "LIST|all")]
    pub schedules: String,
    /// Number of devices (pipeline ranks), P.
    #[arg(long, short = 'p', value_name = "P", value_parser = devices)]
    pub devices: u32,
    /// Microbatch counts: a list (`8,16,32`) or an inclusive range (`8..64`, `8..64:8`).
    #[arg(long, short = 'm', value_name = "LIST|RANGE")]
    pub microbatches: String,
    /// Chunks per device of the families that read it (a list or range).
    ///
    /// Chunks per device for the families that read --chunks (a list or range like
    /// --microbatches) [default: each family's own].
    #[arg(long, value_name = "LIST")]
    pub chunks: Option<String>,
    /// Microbatches per chunk round for the swept families that read it (interleaved 1F1B;
    /// default P each)
    #[arg(long, value_name = "G", value_parser = positive, hide_short_help = true)]
    pub group: Option<u32>,
    /// Also run 1f1b and interleaved-1f1b as Megatron's combined 1F1B, beside their plain runs.
    ///
    /// Also run the families that can pair F and B (1f1b, interleaved-1f1b) as Megatron's
    /// combined 1F1B (`--overlap-moe-expert-parallel-comm`), beside their plain runs: rows
    /// `NAME+a2a`. Needs an MoE model with --ep 2 or more; compare EP sizes with --ep 1,2,4,8.
    #[arg(long = "a2a-overlap", hide_short_help = true)]
    pub a2a_overlap: bool,
    /// Recompute and offload settings to sweep: none, selective, full, offload, full+offload.
    ///
    /// Recompute and offload settings to sweep, each on every device: `none`, `selective`,
    /// `full`, `offload` (automatic), `selective+offload`, `full+offload`. Runs that trade are
    /// hollow on the Pareto chart [default: --recompute and --offload as given].
    #[arg(long, value_name = "LIST", conflicts_with_all = ["recompute", "offload"])]
    pub trades: Option<String>,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub step: crate::args::StepArgs,
    /// Print one JSON object (`runs` and `invalid`) instead of a table.
    #[arg(long, conflicts_with = "csv", help_heading = "Output")]
    pub json: bool,
    /// Print CSV instead of a table.
    ///
    /// Print CSV (one row per run, then the invalid combinations) instead of a table.
    #[arg(long, help_heading = "Output")]
    pub csv: bool,
    /// Also write the memory/time Pareto chart as SVG (`-`: standard output).
    ///
    /// Also write the Pareto chart (peak memory against time per iteration) as SVG; the name
    /// ends in .svg or has no extension (`-`: the chart alone on standard output).
    #[arg(long, short = 'o', value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Colour theme of the chart: light or dark.
    #[arg(long, value_name = "THEME", default_value = "light", help_heading = "Output", hide_short_help = true)]
    pub theme: String,
}

pub fn run(args: &SweepArgs) -> Result<()> {
    let theme = Theme::named(&args.theme).ok_or_else(|| {
        crate::output::user_error(
            &format!("unknown theme `{}`", bubblescope::formats::sanitize(&args.theme)),
            &["use light or dark"],
        )
    })?;
    // One output per stream: `-o -` puts the chart alone on standard output.
    let chart_to_stdout = args.output.as_deref().is_some_and(crate::output::is_std);
    if let (true, Some(flag)) = (chart_to_stdout, [(args.json, "--json"), (args.csv, "--csv")].iter().find(|f| f.0)) {
        return Err(crate::output::user_error(
            &format!("-o - and {} both write to standard output", flag.1),
            &[
                format!("write the chart to a file (-o pareto.svg) and keep {}", flag.1),
                format!("or leave out {} for the chart alone on standard output", flag.1),
            ],
        ));
    }
    if let Some(path) = &args.output {
        args.costs.refuse_overwrite(path)?;
        crate::output::check_svg_output(path, "sweep")?;
    }
    let err = |e: bubblescope::ParamError| anyhow::anyhow!("{e}");
    crate::step::check(&args.costs, &args.step)?;
    if args.step.global_batch.is_some() {
        return Err(crate::output::user_error(
            "sweep varies the microbatches, so --global-batch cannot fix them",
            &["leave out --global-batch and give -m as global-batch / (dp · micro-batch), or a list of such counts"],
        ));
    }
    // One sweep per EP degree (`--ep 1,2,4,8`), their runs together: the costs follow EP.
    let eps = args.costs.model.ep_sizes();
    let mut specs = Vec::new();
    let mut first = None;
    for &ep in &eps {
        let mut costs = args.costs.clone();
        costs.model = costs.model.with_ep(ep);
        let spec = sweep_spec(args, &costs, first.is_none())?;
        specs.extend(spec.expand().map_err(err)?);
        first.get_or_insert(spec);
    }
    let Some(spec) = first else { return Ok(()) };
    if specs.len() > bubblescope::plan::MAX_SWEEP_RUNS {
        return Err(crate::output::user_error(
            &format!(
                "the sweep has {} runs over {} EP degrees, more than {}",
                specs.len(),
                eps.len(),
                bubblescope::plan::MAX_SWEEP_RUNS
            ),
            &["sweep fewer EP degrees, schedules, microbatch counts, chunks or memory limits"],
        ));
    }
    let sweep = Sweep::collect(run_parallel(specs, run_one));
    let model = args.costs.model.given();
    if model {
        let derived = args
            .costs
            .model
            .with_ep(eps[0])
            .model(args.devices)?
            .derive(args.devices)
            .map_err(crate::args::flag_error)?;
        crate::output::note_proportional_cuts(&derived, sweep.runs.iter().map(|r| (r.spec.family.name, r.stages)));
    }
    let out = if args.json {
        crate::output::json_text(&json(&sweep))
    } else if args.csv {
        csv(&sweep)
    } else {
        table(&sweep, model)
    };
    if let Some(path) = &args.output {
        let svg = chart(&sweep, &spec.mem_limits, model, theme);
        crate::output::write_output(path, svg.as_bytes())?;
    }
    if chart_to_stdout {
        return Ok(());
    }
    crate::output::print(&out)
}

/// The sweep of `args` at `costs` (the model flags with one EP degree).
/// Notes on flags without effect are said once (`notes`), not per EP degree.
fn sweep_spec(args: &SweepArgs, costs: &CostArgs, notes: bool) -> Result<SweepSpec> {
    let err = |e: bubblescope::ParamError| anyhow::anyhow!("{e}");
    let step = match costs.model.given() {
        true => {
            // What every run shares is checked once, and refused as simulate refuses it.
            let model = costs.model.model(args.devices)?;
            let spec = args.step.spec();
            let (dp, _) = spec.check(&model, args.devices).map_err(crate::args::flag_error)?;
            if notes {
                crate::step::note_without_effect(costs, &model, &spec, args.devices, dp);
            }
            Some(std::sync::Arc::new(StepInputs { model, spec }))
        }
        false => None,
    };
    let spec = SweepSpec {
        families: parse_schedules(&args.schedules).map_err(err)?,
        devices: args.devices,
        microbatches: parse_microbatches(&args.microbatches).map_err(err)?,
        chunks: match &args.chunks {
            Some(text) => parse_counts(text, Field::Chunks, bubblescope::params::MAX_CHUNKS).map_err(err)?,
            None => Vec::new(),
        },
        group: args.group,
        mem_limits: costs.mem_limits()?,
        costs: costs.costs(None, args.devices)?,
        bytes: costs.model.given(),
        trades: match &args.trades {
            Some(text) => costs.trade_list(text, args.devices)?,
            None => Vec::new(),
        },
        step,
        a2a: args.a2a_overlap,
    };
    // A copy time with nothing that offloads would price no copy: said, not ignored.
    costs.check_copy_rate_unless(spec.trades.iter().flatten().any(|t| t.offloads()))?;
    Ok(spec)
}

/// The Pareto chart of a sweep.
pub fn chart(sweep: &Sweep, limits: &[f64], model: bool, theme: Theme) -> String {
    let points = sweep.pareto_points();
    let devices = sweep.runs.first().map_or(0, |r| r.spec.params.devices);
    let opts = ParetoOptions {
        theme,
        mem_limits: limits.to_vec(),
        memory_unit: if model { AxisUnit::Bytes } else { AxisUnit::Plain },
        time_unit: if model { AxisUnit::Micros } else { AxisUnit::Plain },
        title: format!("Peak memory against time per iteration · {devices} devices · {} runs", points.len()),
        ..ParetoOptions::default()
    };
    pareto_svg(&points, &opts)
}

/// The expert-parallel degree a run's model has, for a mixture-of-experts model.
fn ep_of(spec: &RunSpec) -> Option<u32> {
    spec.step.as_ref().map(|s| &s.model.moe).filter(|m| m.experts > 0).map(|m| m.ep.max(1))
}

/// How the table names a run: its family, `+a2a` when it pairs F and B as combined 1F1B, and
/// its EP degree when the sweep compares several (`eps`).
fn label(spec: &RunSpec, eps: bool) -> String {
    let mut out = spec.family.name.to_string();
    if spec.params.a2a_overlap {
        out.push_str("+a2a");
    }
    if let (true, Some(ep)) = (eps, ep_of(spec)) {
        let _ = write!(out, " ep {ep}");
    }
    out
}

/// The fields naming a run (its schedule and options), shared by runs and invalid rows: `ep`
/// with a mixture-of-experts model, `a2a_overlap` on the runs that pair F and B.
fn key(spec: &RunSpec, chunks: Option<u32>) -> Value {
    let mut v = json!({
        "schedule": spec.family.name,
        "devices": spec.params.devices,
        "microbatches": spec.params.microbatches,
        "chunks": chunks,
        "mem_limit": spec.params.mem_limit,
        "trade": spec.trade().map(|t| describe_trade(t, spec.params.devices)),
    });
    if let Some(ep) = ep_of(spec) {
        v["ep"] = json!(ep);
    }
    if spec.params.a2a_overlap {
        v["a2a_overlap"] = json!(true);
    }
    v
}

fn run_json(r: &SweepRun) -> Value {
    let mut v = key(&r.spec, Some(r.chunks));
    v["cost"] = json!(r.stats.cost);
    v["bubble_rate"] = json!(r.stats.bubble_rate);
    v["bubble_rate_paper"] = json!(r.stats.bubble_rate_paper);
    v["peak_memory"] = json!(r.stats.peak_memory);
    v["attribution"] = r.attribution.map_or(Value::Null, |p| {
        json!({"communication": p.communication, "imbalance": p.imbalance, "schedule": p.schedule, "memory": r.memory})
    });
    v["pareto"] = json!(r.pareto);
    v["offloaded"] = json!(r.offloaded);
    if let Some(step) = &r.step {
        v["step"] = crate::step::json(step);
    }
    v
}

fn invalid_json(i: &InvalidRun) -> Value {
    let mut v = key(&i.spec, i.spec.chunks());
    v["error"] = json!(i.error);
    v
}

/// `sweep --json`: `{runs: [...], invalid: [...]}`, numbers exact (the output drops only float
/// noise).
pub fn json(sweep: &Sweep) -> Value {
    json!({
        "runs": sweep.runs.iter().map(run_json).collect::<Vec<_>>(),
        "invalid": sweep.invalid.iter().map(invalid_json).collect::<Vec<_>>(),
    })
}

/// A CSV field: quoted when it holds a comma, quote or line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A run's recompute and offload in words (empty when it trades nothing).
fn trade_text(spec: &RunSpec) -> String {
    spec.trade().map(|t| describe_trade(t, spec.params.devices)).unwrap_or_default()
}

/// [`key`] as the first five CSV columns.
fn key_csv(spec: &RunSpec, chunks: Option<u32>) -> String {
    let p = &spec.params;
    format!("{},{},{},{},{}", spec.family.name, p.devices, p.microbatches, opt(chunks), opt(p.mem_limit))
}

/// `sweep --csv`: the runs, then the invalid combinations (numbers empty, `error` set on one
/// line, its hints after ` — hint: `). Columns are only ever added at the end
/// (`bubble_rate_paper` came after `error`, then `attribution_memory`).
pub fn csv(sweep: &Sweep) -> String {
    let mut out = String::from(
        "schedule,devices,microbatches,chunks,mem_limit,cost,bubble_rate,peak_memory,\
         attribution_communication,attribution_imbalance,attribution_schedule,pareto,error,bubble_rate_paper,\
         attribution_memory,trade,step_time,tokens_per_gpu_s,mfu,ep,a2a_overlap\n",
    );
    // Every number as --json gives it: without float noise (8.2, not 8.199999999999998).
    let n = |v: f64| bubblescope::units::without_noise(v) + 0.0;
    for r in &sweep.runs {
        let a = r.attribution;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},,{},{},{},{},{},{},{},{}",
            key_csv(&r.spec, Some(r.chunks)),
            n(r.stats.cost),
            n(r.stats.bubble_rate),
            n(r.stats.peak_memory),
            opt(a.map(|a| n(a.communication))),
            opt(a.map(|a| n(a.imbalance))),
            opt(a.map(|a| n(a.schedule))),
            r.pareto,
            n(r.stats.bubble_rate_paper),
            opt(r.memory.map(n)),
            field(&trade_text(&r.spec)),
            opt(r.step.as_ref().map(|s| n(s.time))),
            opt(r.step.as_ref().map(|s| n(s.tokens_per_gpu_s))),
            opt(r.step.as_ref().map(|s| n(s.mfu))),
            opt(ep_of(&r.spec)),
            r.spec.params.a2a_overlap
        );
    }
    for i in &sweep.invalid {
        let _ = writeln!(
            out,
            "{},,,,,,,,{},,,{},,,,{},{}",
            key_csv(&i.spec, i.spec.chunks()),
            field(&i.error.replace("\n  hint: ", " — hint: ")),
            field(&trade_text(&i.spec)),
            opt(ep_of(&i.spec)),
            i.spec.params.a2a_overlap
        );
    }
    out
}

/// The readable table: runs by microbatch count, fastest first (by the whole step's time with
/// a model, which gets a column of its own), the Pareto front marked `*`; then the invalid
/// combinations with their reasons.
pub fn table(sweep: &Sweep, model: bool) -> String {
    // With a model, milliseconds throughout (as `plan` prints them), with the same decimals in
    // every row (four significant digits of the slowest run): a column compares at a glance.
    let slowest = sweep.runs.iter().map(|r| r.stats.cost / 1e3).fold(0.0, f64::max);
    let decimals = bubblescope::units::significant_decimals(slowest, 4);
    let time = |v: f64| {
        if model {
            format!("{} ms", bubblescope::units::format_fixed(v / 1e3, decimals))
        } else {
            format_number(v, 4)
        }
    };
    let memory = |v: f64| if model { format_bytes(v) } else { format_number(v, 4) };
    let mut rows: Vec<&SweepRun> = sweep.runs.iter().collect();
    rows.sort_by(|a, b| {
        (a.spec.params.microbatches.cmp(&b.spec.params.microbatches))
            .then(a.time().total_cmp(&b.time()))
            .then(a.stats.cost.total_cmp(&b.stats.cost))
            .then(a.stats.peak_memory.total_cmp(&b.stats.peak_memory))
    });
    let steps = sweep.runs.iter().any(|r| r.step.is_some());
    // Several EP degrees: each row names its own; the name column widens to the longest.
    let eps = {
        let mut seen: Vec<u32> = sweep.runs.iter().filter_map(|r| ep_of(&r.spec)).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len() > 1
    };
    let width = sweep.runs.iter().map(|r| label(&r.spec, eps).chars().count()).fold(18, usize::max);
    let step_cell = |r: &SweepRun| match &r.step {
        Some(s) => {
            format!(" {:>10} {:>8.0}", bubblescope::units::format_micros(s.time), s.tokens_per_gpu_s)
        }
        None if steps => format!(" {:>10} {:>8}", "—", "—"),
        None => String::new(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<1} {:<width$} {:>6} {:>6} {:>12}{} {:>14} {:>8} {:>12}  bubble = comm + imbalance + schedule",
        "",
        "schedule",
        "M",
        "chunks",
        "mem limit",
        if steps { format!(" {:>10} {:>8}", "step", "tok/s/GPU") } else { String::new() },
        "cost",
        "bubble",
        "peak memory"
    );
    for r in rows {
        let mut parts = r.attribution.map_or_else(String::new, |p| {
            let memory = r.memory.map(|m| format!(" · memory {}", time(m))).unwrap_or_default();
            format!("{} + {} + {}{memory}", time(p.communication), time(p.imbalance), time(p.schedule))
        });
        if let Some(t) = r.spec.trade() {
            parts.push_str(&format!(" · trades {}", describe_trade(t, r.spec.params.devices)));
            if t.offloads() && r.offloaded == 0 {
                // Asked for, but no wait hid a copy: the row is the plain run.
                parts.push_str(", nothing offloaded");
            }
        }
        let _ = writeln!(
            out,
            "{:<1} {:<width$} {:>6} {:>6} {:>12}{} {:>14} {:>7}% {:>12}  {}",
            if r.pareto { "*" } else { "" },
            label(&r.spec, eps),
            r.spec.params.microbatches,
            r.chunks,
            r.spec.params.mem_limit.map_or_else(|| "—".to_string(), memory),
            step_cell(r),
            time(r.stats.cost),
            format_number(r.stats.bubble_rate * 100.0, 2),
            memory(r.stats.peak_memory),
            parts
        );
    }
    let front = sweep.runs.iter().filter(|r| r.pareto).count();
    let _ = writeln!(out, "\n* on the memory/time Pareto front ({front} of {} runs)", sweep.runs.len());
    if !sweep.invalid.is_empty() {
        let _ = writeln!(out, "\ninvalid combinations ({}):", sweep.invalid.len());
        for i in &sweep.invalid {
            let chunks = i.spec.chunks().map(|c| format!(" chunks {c}")).unwrap_or_default();
            let limit = i.spec.params.mem_limit.map(|l| format!(" limit {}", memory(l))).unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} M {}{chunks}{limit}: {}",
                label(&i.spec, eps),
                i.spec.params.microbatches,
                i.error.replace('\n', "\n    ")
            );
        }
    }
    out
}
