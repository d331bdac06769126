//! The whole step for the commands that show it: core's [`bubblescope::step::compose`] on a
//! run with costs from a model, as JSON (`step`) and as the text's first lines.

use anyhow::{bail, Result};
use bubblescope::step::Step;
use bubblescope::units::{format_micros, format_number};
use bubblescope::Analysis;
use serde_json::{json, Value};

use crate::args::{flag_error, CostArgs, StepArgs};

/// Refuses step flags without a model: the step needs sizes, bytes and links.
pub fn check(costs: &CostArgs, step: &StepArgs) -> Result<()> {
    if step.spec().given() && !costs.model.given() {
        bail!(
            "--zero, --gpus and --global-batch need costs from a model\n  hint: add --model PRESET (`bubblescope costs --list`) or the model's --layers, --hidden, … flags"
        );
    }
    Ok(())
}

/// The microbatches `--global-batch` asks for on `devices` devices, if given; `given`: the
/// microbatches `-m` gave on the command line, which must agree.
pub fn microbatches(costs: &CostArgs, step: &StepArgs, devices: u32, given: Option<u32>) -> Result<Option<u32>> {
    check(costs, step)?;
    if step.global_batch.is_none() {
        return Ok(None);
    }
    let model = costs.model.model(devices)?;
    step.spec().microbatches_given(&model, devices, given).map_err(flag_error)
}

/// The microbatches `-m` gave on the command line (`matches`: the command's), not its
/// default.
pub fn given_microbatches(matches: Option<&clap::ArgMatches>, microbatches: u32) -> Option<u32> {
    let given = matches?.value_source("microbatches") == Some(clap::parser::ValueSource::CommandLine);
    given.then_some(microbatches)
}

/// The whole step of `analysis` (run on `devices` devices, `microbatches` microbatches), when
/// costs come from a model.
pub fn compute(costs: &CostArgs, step: &StepArgs, analysis: &Analysis, devices: u32) -> Result<Option<Step>> {
    check(costs, step)?;
    if !costs.model.given() {
        return Ok(None);
    }
    let model = costs.model.model(devices)?;
    let recompute = match &costs.recompute {
        Some(text) => bubblescope::trade::parse_recompute(text).map_err(flag_error)?,
        None => Vec::new(),
    };
    let whole = bubblescope::step::whole(&model, &step.spec(), analysis, &recompute).map_err(flag_error)?;
    // Flags that change nothing at this setting are said, as other unused settings are.
    note_without_effect(costs, &model, &step.spec(), devices, whole.dp_degree);
    Ok(Some(whole))
}

/// Says the model and step flags that change nothing on `devices` devices with `dp` replicas
/// (core's one rule, [`bubblescope::step::without_effect`]).
pub fn note_without_effect(
    costs: &CostArgs,
    model: &bubblescope::model::Model,
    step: &bubblescope::step::StepSpec,
    devices: u32,
    dp: u32,
) {
    for note in bubblescope::step::without_effect(&costs.model.spec(), model, step, devices, dp) {
        eprintln!("note: --{note}");
    }
}

/// The step as JSON: its times in µs, throughput, utilisation, and the strips.
pub fn json(s: &Step) -> Value {
    let span = |x: &bubblescope::step::Span| json!({ "start": x.start, "end": x.end });
    json!({
        "time": s.time,
        "pipeline": s.pipeline,
        "tp": s.tp,
        "dp": s.dp,
        "optimizer": s.optimizer,
        "tokens_per_gpu_s": s.tokens_per_gpu_s,
        "samples_per_gpu_s": s.samples_per_gpu_s,
        "mfu": s.mfu,
        "hfu": s.hfu,
        "gpus": s.gpus,
        "dp_degree": s.dp_degree,
        "zero": s.zero,
        "global_batch": s.global_batch,
        "reductions": s.reductions.iter().map(span).collect::<Vec<_>>(),
        "gathers": s.gathers.iter().map(|g| json!({ "count": g.count, "time": g.time, "exposed": g.exposed })).collect::<Vec<_>>(),
        "optimizer_span": span(&s.optimizer_span),
        "static_memory": s.static_memory,
    })
}

/// The lines the text output leads with: step time, tokens/s/GPU and MFU, then what the step
/// is made of.
pub fn lead(s: &Step) -> String {
    let mut out = format!(
        "step {} · {} tokens/s/GPU · MFU {}% (HFU {}%) · {} GPUs, dp {}, zero {}, global batch {}\n",
        format_micros(s.time),
        format_number(s.tokens_per_gpu_s, 1),
        format_number(s.mfu * 100.0, 1),
        format_number(s.hfu * 100.0, 1),
        s.gpus,
        s.dp_degree,
        s.zero,
        s.global_batch,
    );
    out.push_str(&format!(
        "  = pipeline {} + TP {} + DP {} + optimizer {}",
        format_micros(s.pipeline),
        format_micros(s.tp),
        format_micros(s.dp),
        format_micros(s.optimizer),
    ));
    let gathers: u32 = s.gathers.iter().map(|g| g.count).sum();
    if gathers > 0 {
        let most = s.gathers.iter().map(|g| g.count).max().unwrap_or(0);
        out.push_str(&format!(" · ZeRO-3 gathers {gathers} in all, up to {most} per device"));
    }
    out.push_str("\n\n");
    out
}
