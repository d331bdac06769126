//! Command-line arguments: raw flags in, validated core parameters out.

use std::path::PathBuf;

use bubblescope::{Costs, ScheduleParams};
use clap::{Args, Parser, Subcommand};

/// Pipeline-parallel training schedules: exact bubble and memory, as JSON and SVG figures.
#[derive(Debug, Parser)]
#[command(name = "bubblescope", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate and simulate a schedule; print its cost, bubble and memory.
    Simulate(SimulateArgs),
    /// Draw a schedule (or several, on one time axis) as an SVG figure.
    Render(RenderArgs),
    /// List every schedule family: name, summary, parameters and constraints.
    List(ListArgs),
}

/// Which schedule and under which costs: shared by `simulate` and `render`.
#[derive(Debug, Args, Clone)]
pub struct ScheduleArgs {
    /// Schedule family (see `bubblescope list`).
    #[arg(long, short = 's', value_name = "NAME")]
    pub schedule: Option<String>,
    /// Number of devices (pipeline ranks), P.
    #[arg(long, short = 'p', value_name = "P", default_value_t = 4)]
    pub devices: u32,
    /// Number of microbatches per training step, M.
    #[arg(long, short = 'm', value_name = "M", default_value_t = 8)]
    pub microbatches: u32,
    /// Model chunks per device (interleaved families).
    #[arg(long, value_name = "V")]
    pub chunks: Option<u32>,
    /// Microbatches per chunk round (interleaved 1F1B; default P).
    #[arg(long, value_name = "G")]
    pub group: Option<u32>,
    /// Waves (Hanayo).
    #[arg(long, value_name = "W")]
    pub waves: Option<u32>,
    /// Sequence slices per microbatch (Seq1F1B).
    #[arg(long = "seq-splits", value_name = "K")]
    pub seq_splits: Option<u32>,
    /// Forward time of one microbatch on 1/P of the model.
    #[arg(long = "f", value_name = "F", default_value_t = 1.0)]
    pub f: f64,
    /// Input-gradient backward time (a fused backward takes B+W).
    #[arg(long = "b", value_name = "B", default_value_t = 1.0)]
    pub b: f64,
    /// Weight-gradient backward time.
    #[arg(long = "w", value_name = "W", default_value_t = 1.0)]
    pub w: f64,
    /// Communication time per hop between devices.
    #[arg(long, value_name = "C", default_value_t = 0.0)]
    pub comm: f64,
    /// Time of an overlapped F&B pair (default: F+B+W, no overlap gain).
    #[arg(long, value_name = "FB")]
    pub overlap: Option<f64>,
    /// Activation memory one forward leaves on 1/P of the model.
    #[arg(long = "mem-f", value_name = "X", default_value_t = 1.0)]
    pub mem_f: f64,
    /// Memory the weight gradient still needs after B (default mem-f/2).
    #[arg(long = "mem-w", value_name = "Y")]
    pub mem_w: Option<f64>,
    /// Per-device activation memory limit, in mem-f's unit.
    #[arg(long = "mem-limit", value_name = "L")]
    pub mem_limit: Option<f64>,
}

impl ScheduleArgs {
    /// The core parameters these flags describe.
    pub fn params(&self) -> ScheduleParams {
        ScheduleParams {
            devices: self.devices,
            microbatches: self.microbatches,
            chunks: self.chunks,
            group: self.group,
            waves: self.waves,
            seq_splits: self.seq_splits,
            costs: Costs {
                f: self.f,
                b: self.b,
                w: self.w,
                comm: self.comm,
                overlap: self.overlap,
                mem_f: self.mem_f,
                mem_w: self.mem_w,
            },
            mem_limit: self.mem_limit,
        }
    }
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// Draw several families on one time axis, e.g. `1f1b,zb-h1,zb-v`.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', conflicts_with = "schedule")]
    pub compare: Vec<String>,
    /// Where to write the SVG (`-` for standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Add the activation-memory chart below the Gantt chart.
    #[arg(long)]
    pub memory: bool,
    /// Figure width in pixels.
    #[arg(long, value_name = "PX", default_value_t = 960.0)]
    pub width: f64,
    /// Height of one device row in pixels.
    #[arg(long = "row-height", value_name = "PX", default_value_t = 22.0)]
    pub row_height: f64,
    /// Colour theme: light or dark.
    #[arg(long, value_name = "THEME", default_value = "light")]
    pub theme: String,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
