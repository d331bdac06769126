//! `bubblescope trace`: a profiled PyTorch pipeline run, read from its per-rank traces and set
//! beside its replay at the costs fitted from it.

use std::path::PathBuf;

use anyhow::Result;
use bubblescope::measured::{against_median, BackwardSplit, Fitted, MeasuredRun};
use bubblescope::units::{format_micros, format_number};
use clap::Args;
use serde_json::json;

use crate::input::load_run;
use crate::output::print;

/// Read per-rank profiler traces of a pipeline run.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A folder of per-rank traces, or the files (`.json` or `.json.gz`), one per rank.
    #[arg(required = true, value_name = "DIR|FILE")]
    pub paths: Vec<PathBuf>,
    /// The profiler step to read (`ProfilerStep#N`); default: the last step every rank completed.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = step_number)]
    pub step: Option<u64>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// A `--step` value: a profiler step's number, 0 or more (read signed, so `-1` gets this
/// message rather than clap's advice on dashes).
fn step_number(text: &str) -> Result<u64, String> {
    let hint = "\n  hint: N of ProfilerStep#N, as the trace names its steps; leave --step out for the last step every rank completed";
    match text.trim().parse::<i128>() {
        Ok(n) => {
            u64::try_from(n).map_err(|_| format!("--step must be a profiler step number, 0 or more, found {n}{hint}"))
        }
        Err(_) => Err(format!(
            "--step must be a profiler step number, found `{}`{hint}",
            bubblescope::formats::sanitize(text)
        )),
    }
}

/// `bubblescope trace`.
pub fn run(args: &TraceArgs) -> Result<()> {
    let run = load_run(&args.paths, args.step)?;
    let text = if args.json { crate::output::json_text(&report_json(&run)?) } else { report_text(&run)? };
    print(&text)
}

/// The run as JSON (times in µs).
pub fn report_json(run: &MeasuredRun) -> Result<serde_json::Value> {
    let (stages, microbatches, passes) = run.sizes();
    let fitted = run.fitted();
    let replay = run.replay_fitted().map_err(|e| anyhow::anyhow!("{e}"))?;
    let per_device: Vec<serde_json::Value> = run
        .devices
        .iter()
        .zip(&run.ops)
        .map(|(d, ops)| {
            let passes: Vec<serde_json::Value> = ops
                .iter()
                .map(|o| json!({ "action": o.label, "start": o.span_start, "work": o.work_start, "end": o.end, "wait": o.waited }))
                .collect();
            json!({
                "device": d.device,
                "start": d.start,
                "end": d.end,
                "compute": d.compute,
                "communication": d.communication,
                "wait": d.wait,
                "overhead": d.overhead,
                "order": d.order,
                "passes": passes,
            })
        })
        .collect();
    Ok(json!({
        "sources": run.sources,
        "step": run.step,
        "devices": run.schedule.devices(),
        "stages": stages,
        "microbatches": microbatches,
        "passes": passes,
        "step_time": run.step_time,
        "per_device": per_device,
        "fitted": fitted_json(&fitted),
        "replay": {
            "step_time": replay.step_time,
            "error": replay.error,
            "deviations": replay.deviations.iter().map(|d| json!({
                "device": d.device, "action": d.label, "measured": d.measured, "predicted": d.predicted,
            })).collect::<Vec<_>>(),
        },
        "notes": run.notes.iter().chain(&fitted.notes).chain(&replay.notes).collect::<Vec<_>>(),
    }))
}

/// The fitted costs as JSON (µs): the medians per stage, their spread, and the passes far
/// from them.
pub fn fitted_json(fitted: &Fitted) -> serde_json::Value {
    json!({
        "f": fitted.f,
        "b": fitted.b,
        "w": fitted.w,
        "comm": fitted.comm,
        "overlap": fitted.overlap,
        "overhead": fitted.overhead,
        "backward": match fitted.backward {
            BackwardSplit::Split => "split",
            BackwardSplit::FullOnly => "full",
        },
        "spread": { "f": fitted.spread.f, "b": fitted.spread.b, "w": fitted.spread.w },
        "outliers": fitted.outliers.iter().map(|o| json!({
            "device": o.device,
            "action": o.label,
            "stage": o.stage,
            "kind": o.kind.name(),
            "time": o.time,
            "work": o.work,
            "median": o.median,
            "ratio": o.ratio(),
            "work_median": o.work_median,
            "work_ratio": o.work_ratio(),
        })).collect::<Vec<_>>(),
    })
}

/// How many outlying passes the text lists.
const OUTLIERS_LISTED: usize = 8;

/// The run as tables.
fn report_text(run: &MeasuredRun) -> Result<String> {
    let (stages, microbatches, passes) = run.sizes();
    let fitted = run.fitted();
    let replay = run.replay_fitted().map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut out = String::new();
    let step = run.step.map_or_else(String::new, |n| format!(", profiler step {n}"));
    out.push_str(&format!(
        "measured run: {} devices, {stages} stages, {microbatches} microbatches, {passes} passes{step}\n",
        run.schedule.devices()
    ));
    out.push_str(&format!("step time {}\n\n", format_micros(run.step_time)));
    out.push_str("device  start      end        compute    comm       wait       overhead\n");
    for d in &run.devices {
        let cell = |v: f64| format!("{:<11}", format_micros(v));
        out.push_str(&format!(
            "{:<8}{}{}{}{}{}{}\n",
            d.device,
            cell(d.start),
            cell(d.end),
            cell(d.compute),
            cell(d.communication),
            cell(d.wait),
            cell(d.overhead)
        ));
    }
    out.push_str(&format!(
        "\nfitted costs per stage (µs, median ± spread; the runtime's {} per pass included)\nstage   F                 B                 W\n",
        format_micros(fitted.overhead)
    ));
    let cell = |median: f64, spread: f64| format!("{} ± {}", format_number(median, 1), format_number(spread, 1));
    for s in 0..fitted.f.len() {
        let w = match fitted.backward {
            BackwardSplit::Split => cell(fitted.w[s], fitted.spread.w[s]),
            BackwardSplit::FullOnly => "0".to_string(),
        };
        out.push_str(&format!(
            "{:<8}{:<18}{:<18}{}\n",
            s,
            cell(fitted.f[s], fitted.spread.f[s]),
            cell(fitted.b[s], fitted.spread.b[s]),
            w
        ));
    }
    out.push_str(&format!("hop {}\n", format_micros(fitted.comm)));
    if let Some(o) = fitted.overlap {
        out.push_str(&format!(
            "overlapped F&B pair {} (on a mean device share; each stage's scales with its work)\n",
            format_micros(o)
        ));
    }
    out.push_str(&outliers_text(&fitted));
    out.push_str(&format!(
        "\nreplay at the fitted costs: {} ({:+}% of the measured step)\n",
        format_micros(replay.step_time),
        format_number(replay.error * 100.0, 1)
    ));
    if replay.error.abs() > 0.01 {
        out.push_str("the passes that differ most (measured: work and the device's time after it):\n");
        for d in &replay.deviations {
            out.push_str(&format!(
                "  device {} {:<22} measured {:<10} predicted {}\n",
                d.device,
                d.label,
                format_micros(d.measured),
                format_micros(d.predicted)
            ));
        }
    }
    for note in run.notes.iter().chain(&fitted.notes).chain(&replay.notes) {
        out.push_str(&format!("note: {note}\n"));
    }
    Ok(out)
}

/// The passes far from their stage's median, farthest first, and by how much.
fn outliers_text(fitted: &Fitted) -> String {
    let Some(summary) = fitted.outlier_note() else { return String::new() };
    let mut out = format!("{summary}:\n");
    for o in fitted.outliers.iter().take(OUTLIERS_LISTED) {
        // A pass flagged by its work alone says how far its work lies from the median work.
        let work = if o.ratio() == o.time_ratio() {
            format_micros(o.work)
        } else {
            let median = format!("the median work {}", format_micros(o.work_median));
            format!("{}, {}", format_micros(o.work), against_median(o.work_ratio(), &median))
        };
        out.push_str(&format!(
            "  device {} {:<22} {:<10} {} (work {work})\n",
            o.device,
            o.label,
            format_micros(o.time),
            against_median(o.time_ratio(), &format!("the median {}", format_micros(o.median))),
        ));
    }
    if fitted.outliers.len() > OUTLIERS_LISTED {
        out.push_str(&format!("  … and {} more (--json lists them all)\n", fitted.outliers.len() - OUTLIERS_LISTED));
    }
    out
}
