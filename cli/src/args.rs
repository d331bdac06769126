//! Command-line arguments: raw flags in, core parameters out.

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
    /// Generate (or read) and simulate a schedule; print its cost, bubble and memory.
    Simulate(SimulateArgs),
    /// Draw schedules on one time axis as an SVG figure.
    Render(RenderArgs),
    /// Convert a schedule file between formats (PyTorch CSV, Bubblescope JSON, Perfetto trace).
    Convert(ConvertArgs),
    /// List every schedule family: name, summary, parameters and constraints.
    List(ListArgs),
}

/// Which family, at which sizes.
#[derive(Debug, Args, Clone)]
pub struct FamilyArgs {
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
}

/// Times and memory, for one microbatch through 1/P of the model. Unset values come from the
/// schedule file (JSON stores costs), or the defaults.
#[derive(Debug, Args, Clone, Default)]
pub struct CostArgs {
    /// Forward time [default: 1].
    #[arg(long = "f", value_name = "F")]
    pub f: Option<f64>,
    /// Input-gradient backward time; a fused backward takes B+W [default: 1].
    #[arg(long = "b", value_name = "B")]
    pub b: Option<f64>,
    /// Weight-gradient backward time [default: 1].
    #[arg(long = "w", value_name = "W")]
    pub w: Option<f64>,
    /// Communication time per hop between devices [default: 0].
    #[arg(long, value_name = "C")]
    pub comm: Option<f64>,
    /// Time of an overlapped F&B pair [default: the sum of its passes, no gain].
    #[arg(long, value_name = "FB")]
    pub overlap: Option<f64>,
    /// Activation memory one forward leaves on 1/P of the model [default: 1].
    #[arg(long = "mem-f", value_name = "X")]
    pub mem_f: Option<f64>,
    /// Memory the weight gradient still needs after B [default: mem-f/2].
    #[arg(long = "mem-w", value_name = "Y")]
    pub mem_w: Option<f64>,
    /// Per-device activation memory limit, in mem-f's unit [default: none].
    #[arg(long = "mem-limit", value_name = "L")]
    pub mem_limit: Option<f64>,
}

impl CostArgs {
    /// The costs: flags first, then `base` (from a file), then the defaults.
    pub fn costs(&self, base: Option<&Costs>) -> Costs {
        let d = base.copied().unwrap_or_default();
        Costs {
            f: self.f.unwrap_or(d.f),
            b: self.b.unwrap_or(d.b),
            w: self.w.unwrap_or(d.w),
            comm: self.comm.unwrap_or(d.comm),
            overlap: self.overlap.or(d.overlap),
            mem_f: self.mem_f.unwrap_or(d.mem_f),
            mem_w: self.mem_w.or(d.mem_w),
        }
    }
}

/// Reading a schedule from a file instead of generating one.
#[derive(Debug, Args, Clone, Default)]
pub struct FileArgs {
    /// Read the schedule from FILE (PyTorch CSV or Bubblescope JSON) instead of --schedule.
    #[arg(long, value_name = "FILE", conflicts_with = "schedule")]
    pub from: Option<PathBuf>,
    /// Format of --from: pytorch-csv, pytorch-csv-comms or json [default: from the extension].
    #[arg(long = "from-format", value_name = "FORMAT")]
    pub from_format: Option<String>,
    /// PyTorch CSV dialect: current (I input grad, B full backward) or legacy (B input grad,
    /// BW full backward) [default: detected from the file].
    #[arg(long, value_name = "DIALECT")]
    pub dialect: Option<String>,
    /// Merge an I directly followed by its W into one full backward, as PyTorch does before
    /// running a compute-only file.
    #[arg(long = "merge-bw")]
    pub merge_bw: bool,
}

/// Builds the parameters of a family from flags.
pub fn params(family: &FamilyArgs, costs: &CostArgs) -> ScheduleParams {
    ScheduleParams {
        devices: family.devices,
        microbatches: family.microbatches,
        chunks: family.chunks,
        group: family.group,
        waves: family.waves,
        seq_splits: family.seq_splits,
        costs: costs.costs(None),
        mem_limit: costs.mem_limit,
    }
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub family: FamilyArgs,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub file: FileArgs,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RenderArgs {
    #[command(flatten)]
    pub family: FamilyArgs,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub file: FileArgs,
    /// Draw several families on one time axis, e.g. `1f1b,zb-h1,zb-v` (after --from's file).
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
    /// Write an animated SVG that plays the schedule filling and draining (CSS, no script);
    /// its last frame is the still figure.
    #[arg(long)]
    pub animate: bool,
    /// Seconds the animation takes from the first pass to the last (0.5 to 600).
    #[arg(long, value_name = "SECONDS", default_value_t = 6.0, requires = "animate")]
    pub duration: f64,
    /// Play the animation in a loop instead of once.
    #[arg(long = "loop", requires = "animate")]
    pub looping: bool,
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ConvertArgs {
    /// The schedule to read.
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Where to write (`-` for standard output).
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
    /// Format of IN: pytorch-csv, pytorch-csv-comms or json [default: from the extension].
    #[arg(long = "from-format", value_name = "FORMAT")]
    pub from_format: Option<String>,
    /// Format of OUT: pytorch-csv, pytorch-csv-comms, json or perfetto [default: from the
    /// extension].
    #[arg(long = "to-format", value_name = "FORMAT")]
    pub to_format: Option<String>,
    /// PyTorch CSV dialect of IN (and of OUT with --to-dialect unset) [default: detected].
    #[arg(long, value_name = "DIALECT")]
    pub dialect: Option<String>,
    /// PyTorch CSV dialect to write: current or legacy [default: current].
    #[arg(long = "to-dialect", value_name = "DIALECT")]
    pub to_dialect: Option<String>,
    /// Merge an I directly followed by its W into one full backward when reading.
    #[arg(long = "merge-bw")]
    pub merge_bw: bool,
    #[command(flatten)]
    pub costs: CostArgs,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
