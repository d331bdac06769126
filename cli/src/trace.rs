//! `bubblescope trace`: a profiled PyTorch pipeline run, read from its per-rank traces and set
//! beside its replay at the costs fitted from it.

use std::path::PathBuf;

use anyhow::Result;
use bubblescope::measured::{assemble, read_rank, MeasuredRun};
use bubblescope::units::{format_micros, format_number};
use clap::Args;
use serde_json::json;

use crate::output::{print, user_error};

/// Read per-rank profiler traces of a pipeline run.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A folder of per-rank traces, or the files (`.json` or `.json.gz`), one per rank.
    #[arg(required = true, value_name = "DIR|FILE")]
    pub paths: Vec<PathBuf>,
    /// The profiler step to read (`ProfilerStep#N`); default: the last step every rank completed.
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
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

/// The trace files `paths` name: files as given, and in a folder its `*.pt.trace.json[.gz]`
/// files (every `.json[.gz]` when it has none of those), by name.
fn trace_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let entries =
            std::fs::read_dir(path).map_err(|e| crate::output::file_error("read", &path.display().to_string(), &e))?;
        let mut files: Vec<PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        files.sort();
        let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        let traces: Vec<PathBuf> = files
            .iter()
            .filter(|p| name(p).ends_with(".pt.trace.json") || name(p).ends_with(".pt.trace.json.gz"))
            .cloned()
            .collect();
        let chosen = if traces.is_empty() {
            files.into_iter().filter(|p| name(p).ends_with(".json") || name(p).ends_with(".json.gz")).collect()
        } else {
            traces
        };
        if chosen.is_empty() {
            return Err(user_error(
                &format!("{} holds no trace files (.json or .json.gz)", path.display()),
                &["give the folder torch.profiler wrote, with one trace per rank, or a schedule file (.csv or .json)"],
            ));
        }
        out.extend(chosen);
    }
    Ok(out)
}

/// Reads and assembles the run `paths` name.
pub fn load(paths: &[PathBuf], step: Option<u64>) -> Result<MeasuredRun> {
    let mut ranks = Vec::new();
    for file in trace_files(paths)? {
        let shown = file.display().to_string();
        let reader = std::fs::File::open(&file).map_err(|e| crate::output::file_error("read", &shown, &e))?;
        ranks.push(read_rank(&shown, reader).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    assemble(ranks, step).map_err(|e| anyhow::anyhow!("{e}"))
}

/// `bubblescope trace`.
pub fn run(args: &TraceArgs) -> Result<()> {
    let run = load(&args.paths, args.step)?;
    let text = if args.json { format!("{:#}\n", report_json(&run)?) } else { report_text(&run)? };
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
        "fitted": {
            "f": fitted.f,
            "b": fitted.b,
            "w": fitted.w,
            "comm": fitted.comm,
            "overhead": fitted.overhead,
            "backward": match fitted.backward {
                bubblescope::measured::BackwardSplit::Split => "split",
                bubblescope::measured::BackwardSplit::FullOnly => "full",
            },
        },
        "replay": {
            "step_time": replay.step_time,
            "error": replay.error,
            "deviations": replay.deviations.iter().map(|d| json!({
                "device": d.device, "action": d.label, "measured": d.measured, "predicted": d.predicted,
            })).collect::<Vec<_>>(),
        },
        "notes": run.notes.iter().chain(&fitted.notes).collect::<Vec<_>>(),
    }))
}

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
        "\nfitted costs per stage (µs; the runtime's {} per pass included)\nstage   F          B          W\n",
        format_micros(fitted.overhead)
    ));
    for s in 0..fitted.f.len() {
        out.push_str(&format!(
            "{:<8}{:<11}{:<11}{}\n",
            s,
            format_number(fitted.f[s], 1),
            format_number(fitted.b[s], 1),
            format_number(fitted.w[s], 1)
        ));
    }
    out.push_str(&format!("hop {}\n", format_micros(fitted.comm)));
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
    for note in run.notes.iter().chain(&fitted.notes) {
        out.push_str(&format!("note: {note}\n"));
    }
    Ok(out)
}
