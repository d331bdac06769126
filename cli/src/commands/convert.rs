//! `bubblescope convert`: a schedule file (or a measured run's traces) written in another
//! format: PyTorch CSV (compute only, or with PyTorch's communication for one version),
//! Bubblescope JSON or a Perfetto trace.

use std::path::PathBuf;

use anyhow::Result;
use bubblescope::formats;
use clap::Args;

use crate::args::CostArgs;
use crate::export;
use crate::input::{import, is_trace, load_run, refuse_file_flags_on_run};
use crate::output::{is_std, refuse_overwrite};

/// What `convert -h` ends with: the options it leaves out, by name.
pub const CONVERT_MORE: &str = "\
More options (--merge-bw, --overlap, --mem-w, the model's --layers … --tp, the GPU's
--gpus-per-node … --calibrate, --costs-from): --help";

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, after_help = CONVERT_MORE)]
pub struct ConvertArgs {
    /// The schedule to read (`-` for standard input).
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
    /// PyTorch CSV dialect of IN [default: detected]; --to-dialect sets OUT's.
    #[arg(long, value_name = "DIALECT")]
    pub dialect: Option<String>,
    /// PyTorch CSV dialect to write: current or legacy [default: current].
    #[arg(long = "to-dialect", value_name = "DIALECT")]
    pub to_dialect: Option<String>,
    /// The PyTorch version a pytorch-csv-comms file is for: 2.15 or 2.14 [default: 2.15].
    ///
    /// The PyTorch version a pytorch-csv-comms file is for: 2.15 (WAIT_SEND and WAIT_REDUCE_GRAD
    /// after every send and reduction) or 2.14 [default: 2.15, the newest verified].
    #[arg(long, value_name = "VERSION")]
    pub torch: Option<String>,
    /// Read an I directly followed by its W as one full backward B (PyTorch's `_merge_bw`).
    ///
    /// Read an I directly followed on its row (empty and communication cells aside) by the W of
    /// the same stage and microbatch as one full backward B (PyTorch's `_merge_bw`, which its
    /// runtime never calls in 2.14 or 2.15: it runs the pair as two actions). The file written
    /// then has one full backward where the input had I, W.
    #[arg(long = "merge-bw", hide_short_help = true)]
    pub merge_bw: bool,
    #[command(flatten)]
    pub costs: CostArgs,
}

pub fn run(args: &ConvertArgs) -> Result<()> {
    refuse_overwrite(&args.input, &args.output)?;
    if args.costs.trades() {
        return Err(crate::output::user_error(
            "convert writes a schedule's orders as they are: --recompute, --offload, --copy-time and --host-gbps do not apply",
            &["add recompute and offload where the schedule runs, and write it from there: simulate --from IN --recompute full --export OUT"],
        ));
    }
    if args.costs.mem_limit.is_some() {
        return Err(crate::output::user_error(
            "convert writes a schedule and its costs, and checks no memory: --mem-limit does not apply",
            &["check a limit where the schedule runs: simulate --from IN --mem-limit L"],
        ));
    }
    args.costs.refuse_overwrite(&args.output)?;
    let target = export::Target::new(
        &args.output,
        args.to_format.as_deref(),
        args.torch.as_deref(),
        export::dialect(args.to_dialect.as_deref())?,
    )?;
    let is_run = !is_std(&args.input) && is_trace(&args.input);
    if is_run {
        // A run's costs are its measured times: flags that set others would contradict them.
        refuse_file_flags_on_run(&args.input, args.from_format.is_some(), args.dialect.is_some(), args.merge_bw)?;
        args.costs.refuse_on_measured(&args.input.display().to_string())?;
    }
    let measured = is_run.then(|| load_run(std::slice::from_ref(&args.input), None)).transpose()?;
    let (schedule, file_costs, times) = match &measured {
        Some(run) => (run.schedule.clone(), Some(run.fitted().costs(run.schedule.devices())), Some(run.op_times())),
        None => import(&args.input, args.from_format.as_deref(), args.dialect.as_deref(), args.merge_bw)?,
    };
    if measured.is_none() && times.is_some() {
        // A measured run's JSON: its times stay, so its costs do too.
        args.costs.refuse_on_measured(&args.input.display().to_string())?;
    }
    let costs = args.costs.costs(file_costs.as_ref(), schedule.devices())?;
    costs.check().map_err(|e| anyhow::anyhow!("{e}"))?;
    // Under blocking sends an order can deadlock: checked before any format is written, as
    // simulate checks it (a JSON file carries the send mode, and would read back to a deadlock).
    if !costs.p2p.is_async() && times.is_none() {
        bubblescope::analyze(schedule.clone(), &costs).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
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
