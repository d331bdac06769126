//! The commands, one room each: `commands/<command>.rs` holds a command's flags and its run.
//! This file holds the command line's shape (every command, its summary and help) and sends a
//! parsed command to its room.

pub mod convert;
pub mod costs;
pub mod explain;
pub mod list;
pub mod plan;
pub mod render;
pub mod simulate;
pub mod sweep;
pub mod trace;

use anyhow::Result;
use clap::{ArgMatches, Parser, Subcommand};

use convert::ConvertArgs;
use costs::CostsArgs;
use explain::{ExplainArgs, EXPLAIN_EXAMPLES};
use list::ListArgs;
use plan::PlanArgs;
use render::RenderArgs;
use simulate::{SimulateArgs, SIMULATE_EXAMPLES, SIMULATE_MORE};
use sweep::SweepArgs;

/// Pipeline-parallel training schedules: exact bubble and memory, as JSON and SVG figures.
#[derive(Debug, Parser)]
#[command(name = "bubblescope", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate (or read) and simulate a schedule; print its cost, bubble and memory.
    ///
    /// Cost is the longest device span; ideal is the mean device's work (the sum of its
    /// passes, an overlapped F&B pair counted at its --overlap time), so the bubble rate
    /// (cost − ideal) / cost is the share of GPU time idle: the Zero Bubble papers' rate with
    /// equal stages, which is also printed against the busiest device's work.
    ///
    /// --export FILE also writes the schedule in any format `convert` writes: a PyTorch CSV for
    /// `_PipelineScheduleRuntime._load_csv` (compute only, or with communication for the
    /// PyTorch version --torch names), Bubblescope JSON or a Perfetto trace.
    #[command(after_long_help = SIMULATE_EXAMPLES, after_help = SIMULATE_MORE)]
    Simulate(SimulateArgs),
    /// Explain a family's bubble and peak activation memory: its closed forms term by term,
    /// their sources, their values at the settings, the simulated values, and the
    /// assumptions each checked (which one breaks when the values differ).
    #[command(after_long_help = EXPLAIN_EXAMPLES)]
    Explain(ExplainArgs),
    /// Draw schedules on one time axis as an SVG figure.
    Render(RenderArgs),
    /// Convert a schedule file between formats (PyTorch CSV, Bubblescope JSON, Perfetto trace).
    ///
    /// A PyTorch CSV (pytorch-csv, compute only) is for
    /// `_PipelineScheduleRuntime._load_csv(path, format="compute_only")`, which adds the
    /// communication; pytorch-csv-comms is that lowering, written for one PyTorch version
    /// (--torch), for `format="compute_comms"`. Neither is for `PipelineScheduleMulti`, which
    /// runs every rank in lock-step and needs idle cells.
    Convert(ConvertArgs),
    /// List every schedule family: name, summary, parameters and constraints.
    List(ListArgs),
    /// Derive per-device costs (F, B, W in µs, memory in bytes) from a transformer config.
    Costs(CostsArgs),
    /// Run every combination of schedules, microbatch counts, chunks and memory limits; mark
    /// the memory/time Pareto front.
    ///
    /// The runs spread over all cores; one row per run, the front marked. Lists are
    /// comma-separated; --microbatches also takes inclusive ranges, `8..64` (every
    /// value) or `8..64:8` (a step of 8). A family that reads --mem-limit plans under each
    /// limit; for the others a limit is a check, and runs above it are listed as invalid with
    /// the reason, like every combination a family cannot take.
    Sweep(SweepArgs),
    /// Search families × microbatch counts × chunks × layouts for the fastest plans whose
    /// memory (activations plus static memory) fits --mem-limit on every device.
    ///
    /// With --global-batch N, microbatch counts M divide N (micro-batch size N / M, so a
    /// model's costs change with M); without it, M is P, 2P, 4P and 8P at the model's
    /// micro-batch. A model without --layout also tries layers moved off the last share (the LM
    /// head) and the first (the embedding). Static memory defaults, with a model, to 18 bytes
    /// per parameter of each device's share (mixed-precision Adam: 16-bit weights 2, fp32
    /// gradients 4, fp32 master weights 4, Adam's two fp32 moments 8, as Megatron-Core counts
    /// without a distributed optimizer), and to 0 without one.
    Plan(PlanArgs),
    /// Read a profiled PyTorch pipeline run (one Chrome trace per rank): the executed orders,
    /// each device's compute, communication, waiting and overhead, the costs fitted from it,
    /// and the same orders replayed at those costs.
    Trace(trace::TraceArgs),
}

/// Runs the command `cli` names (`matches`: its own arguments, to tell given flags from
/// defaults).
pub fn run(cli: Cli, matches: Option<&ArgMatches>) -> Result<()> {
    match cli.command {
        Command::Simulate(args) => simulate::run(&args, matches),
        Command::Explain(args) => explain::run(&args),
        Command::Render(args) => render::run(&args, matches),
        Command::Convert(args) => convert::run(&args),
        Command::List(args) => list::run(&args),
        Command::Costs(args) => costs::run(&args, matches),
        Command::Sweep(args) => sweep::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Trace(args) => trace::run(&args),
    }
}
