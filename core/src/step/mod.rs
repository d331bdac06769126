//! The whole training step around a simulated pipeline: tensor-parallel collectives (timed
//! inside the passes by the model), data-parallel gradient reduction per device after its last
//! weight gradient, ZeRO-3's parameter gathers in the schedule's chunk order, the optimizer
//! step, and what they make of throughput and MFU ([`compose`]).
//!
//! `time = pipeline + tp + dp + optimizer`: the pipeline's cost (the longest device span)
//! holds the exposed TP time of its busiest device's passes (`tp`), taken out of `pipeline`;
//! `dp` is what of the reductions (and ZeRO-3's gathers, and ZeRO-1/2's parameter all-gather)
//! sticks out past the pipeline's end; the optimizer runs after the last reduction. Uses the
//! model, the schedule, its timeline and stats; no generator.

mod spec;
pub mod sync;

pub use crate::model::RankOrder;
pub use spec::{check_zero, without_effect, StepPlan, StepSpec, MAX_DP};
pub use sync::{Gathers, Span};

use crate::analysis::Analysis;
use crate::error::ParamError;
use crate::model::parallel::{collective_gbps, Collective};
use crate::model::{Derived, Model, Precision, COLLECTIVE_LATENCY_US};
use crate::schedule::PassKind;
use crate::trade::Recompute;
use sync::Link;

/// Bytes Adam reads and writes per parameter of the device's share: the fp32 gradient,
/// master weight and two moments read (16), the master weight and moments written (12), the
/// 16-bit weight written (2).
pub const OPTIMIZER_BYTES_PER_PARAM: f64 = 30.0;

/// A whole step: its time and what it is made of (µs), its throughput, and the strips a chart
/// draws.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Step {
    /// µs of the whole step.
    pub time: f64,
    /// µs of the pipeline without its exposed TP time.
    pub pipeline: f64,
    /// µs of exposed tensor-parallel collectives on the busiest device.
    pub tp: f64,
    /// µs of exposed data-parallel reduction, gathers and parameter all-gather.
    pub dp: f64,
    /// µs of the optimizer step.
    pub optimizer: f64,
    /// Tokens per second per GPU.
    pub tokens_per_gpu_s: f64,
    /// Sequences per second per GPU.
    pub samples_per_gpu_s: f64,
    /// Model FLOPs (no recompute) per second over the GPUs' 16-bit peak.
    pub mfu: f64,
    /// Hardware FLOPs (with recompute) per second over the GPUs' 16-bit peak.
    pub hfu: f64,
    /// Data-parallel replicas, ZeRO stage, GPUs, global batch.
    pub dp_degree: u32,
    /// ZeRO stage.
    pub zero: u32,
    /// GPUs in all.
    pub gpus: u32,
    /// Sequences per step.
    pub global_batch: u32,
    /// Each device's gradient reduction.
    pub reductions: Vec<Span>,
    /// Each device's ZeRO-3 gathers (empty below ZeRO-3).
    pub gathers: Vec<Gathers>,
    /// The optimizer step (after the last reduction).
    pub optimizer_span: Span,
    /// Bytes of weights, gradients and optimizer state per device, by the ZeRO stage.
    pub static_memory: Vec<f64>,
}

/// One device's part of the model: its parameters and transformer layers per GPU.
fn device_shares(derived: &Derived, schedule: &crate::schedule::Schedule) -> Vec<(f64, f64)> {
    let p = schedule.devices() as usize;
    let placement = &schedule.placement;
    let pieces = &derived.pieces;
    let mut out = vec![(0.0, 0.0); p];
    if pieces.len() == p {
        for (d, piece) in pieces.iter().enumerate() {
            out[d] = (piece.params, f64::from(piece.piece.layers + piece.piece.mtp));
        }
    } else if pieces.len() == placement.stages_per_pipeline() as usize {
        for (s, piece) in pieces.iter().enumerate() {
            let d = placement.device_of(s as u32).unwrap_or(0) as usize;
            if let Some(o) = out.get_mut(d) {
                o.0 += piece.params;
                o.1 += f64::from(piece.piece.layers + piece.piece.mtp);
            }
        }
    } else {
        let params: f64 = pieces.iter().map(|x| x.params).sum();
        let layers: f64 = pieces.iter().map(|x| f64::from(x.piece.layers + x.piece.mtp)).sum();
        out = vec![(params / p as f64, layers / p as f64); p];
    }
    out
}

/// The whole step of `analysis`, a pipeline run of `model`'s costs on its devices with
/// recompute `recompute` per device, under the step settings `spec`: what the CLI and the
/// playground show.
///
/// # Errors
/// A [`ParamError`] naming the model or step setting that is wrong.
pub fn whole(model: &Model, spec: &StepSpec, analysis: &Analysis, recompute: &[Recompute]) -> Result<Step, ParamError> {
    let devices = analysis.schedule.devices();
    let plan = spec.resolve(model, devices, analysis.schedule.microbatches)?;
    let derived = model.derive(devices)?;
    compose(model, &derived, &plan, analysis, recompute)
}

/// The whole step of `analysis` (a pipeline run of `model`'s costs, `derived`, with recompute
/// `recompute` per device) under `plan`.
///
/// # Errors
/// An unknown GPU.
pub fn compose(
    model: &Model,
    derived: &Derived,
    plan: &StepPlan,
    analysis: &Analysis,
    recompute: &[Recompute],
) -> Result<Step, ParamError> {
    let schedule = &analysis.schedule;
    let timeline = &analysis.timeline;
    let gpu = model.gpu()?;
    let p = schedule.devices() as usize;
    let shares = device_shares(derived, schedule);
    let chunks = f64::from(schedule.placement.chunks_per_device().max(1));
    let end = timeline.end();

    // Tensor parallelism: the exposed collectives of each device's passes.
    let tp_layer = derived.layer.term(crate::model::Term::TpCollectives);
    let tp_of = |d: usize| -> f64 {
        let layers = shares.get(d).map_or(0.0, |s| s.1) / chunks;
        schedule.orders[d]
            .iter()
            .flat_map(|op| op.passes())
            .map(|pass| match pass.kind {
                PassKind::F | PassKind::R => tp_layer[0],
                PassKind::B | PassKind::BW => tp_layer[1],
                PassKind::W => tp_layer[2],
                // Vocabulary shards are no transformer layer: their all-reduces are the barriers.
                PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => 0.0,
            })
            .sum::<f64>()
            * layers
    };
    let tp = (0..p).map(tp_of).fold(0.0, f64::max).min(analysis.stats.cost);

    // Data parallelism: each device's reduction from its last weight gradient on.
    let grad_bytes = if model.precision == Precision::Fp16 { 2.0 } else { 4.0 };
    let crosses = plan.dp_crosses_nodes(model.tp, model.gpus_per_node);
    let link =
        Link { gbps: collective_gbps(gpu, model.bandwidth, crosses), latency: COLLECTIVE_LATENCY_US, group: plan.dp };
    let reduce_kind = if plan.zero == 0 { Collective::AllReduce } else { Collective::ReduceScatter };
    let reductions: Vec<Span> = (0..p)
        .map(|d| {
            let start = sync::last_weight_gradient(schedule, timeline, d);
            let bytes = shares[d].0 * grad_bytes;
            Span { start, end: start + link.bucketed(reduce_kind, bytes, grad_bytes) }
        })
        .collect();
    let reduced = reductions.iter().map(|r| r.end).fold(end, f64::max);
    let mut dp = reduced - end;

    // ZeRO-3: the gathers the passes wait for.
    let weight_bytes = if model.precision == Precision::Fp8 { 1.0 } else { 2.0 };
    let gathers: Vec<Gathers> = if plan.zero >= 3 && plan.dp > 1 {
        (0..p)
            .map(|d| {
                let chunk_bytes = shares[d].0 / chunks * weight_bytes;
                sync::zero3_gathers(schedule, timeline, d, &|_| link.time(Collective::AllGather, chunk_bytes))
            })
            .collect()
    } else {
        Vec::new()
    };
    dp += gathers.iter().map(|g| g.exposed).fold(0.0, f64::max);

    // The optimizer, on the device's share, then ZeRO-1/2's all-gather of the new weights.
    let efficiency = model.efficiency()?;
    let hbm = gpu.hbm_gbps * 1e9 * efficiency.memory;
    let shard = if plan.zero >= 1 { f64::from(plan.dp) } else { 1.0 };
    let largest = shares.iter().map(|s| s.0).fold(0.0, f64::max);
    let optimizer = largest / shard * OPTIMIZER_BYTES_PER_PARAM / hbm * 1e6;
    if (1..=2).contains(&plan.zero) {
        dp += link.bucketed(Collective::AllGather, largest * 2.0, 2.0);
    }
    let optimizer_span = Span { start: end + dp, end: end + dp + optimizer };

    let pipeline = analysis.stats.cost - tp;
    let time = pipeline + tp + dp + optimizer;

    // Throughput and FLOP utilisation.
    let seconds = time / 1e6;
    let gpus = f64::from(plan.gpus);
    let samples = f64::from(plan.global_batch);
    let tokens = samples * f64::from(model.seq);
    let per_second = |x: f64| if seconds > 0.0 { x / seconds / gpus } else { 0.0 };
    let (model_flops, recompute_flops) = step_flops(model, plan, schedule, recompute, &shares);
    let peak = gpu.peak_tflops * 1e12;
    Ok(Step {
        time,
        pipeline,
        tp,
        dp,
        optimizer,
        tokens_per_gpu_s: per_second(tokens),
        samples_per_gpu_s: per_second(samples),
        mfu: per_second(model_flops) / peak,
        hfu: per_second(model_flops + recompute_flops) / peak,
        dp_degree: plan.dp,
        zero: plan.zero,
        gpus: plan.gpus,
        global_batch: plan.global_batch,
        reductions,
        gathers,
        optimizer_span,
        static_memory: shares.iter().map(|s| static_bytes(model, plan.zero, plan.dp, s.0, chunks)).collect(),
    })
}

/// Bytes a device keeps besides activations when it holds `params` parameters in `chunks`
/// chunks: weights, gradients and optimizer state as ZeRO stage `zero` shards them over `dp`
/// replicas ([`sync::static_bytes_per_param`]), and under ZeRO-3 one chunk's weights gathered.
/// What `plan` fits under a limit and what `step.static_memory` reports.
pub fn static_bytes(model: &Model, zero: u32, dp: u32, params: f64, chunks: f64) -> f64 {
    let grad_bytes = if model.precision == Precision::Fp16 { 2.0 } else { 4.0 };
    let weight_bytes = if model.precision == Precision::Fp8 { 1.0 } else { 2.0 };
    let gathered = if zero >= 3 { params / chunks.max(1.0) * weight_bytes } else { 0.0 };
    params * sync::static_bytes_per_param(zero, dp, grad_bytes) + gathered
}

/// FLOPs of the whole step over every GPU: the model's (Megatron's count: three times the
/// forward's matmuls, attention scores and LM head, no recompute), and what recompute adds
/// (each R pass runs its share of its stage's forward again).
fn step_flops(
    model: &Model,
    plan: &StepPlan,
    schedule: &crate::schedule::Schedule,
    recompute: &[Recompute],
    shares: &[(f64, f64)],
) -> (f64, f64) {
    let t = f64::from(model.tp.max(1));
    // Per GPU: F of one (mean) layer, one microbatch; the LM head's.
    let layer_f = model.mean_layer_forward_flops();
    let head_f = model.head_flops();
    let layers: f64 = shares.iter().map(|s| s.1).sum();
    let per_microbatch = 3.0 * (layers * layer_f + head_f) * t;
    let replicas = f64::from(plan.dp);
    let model_flops = per_microbatch * f64::from(plan.microbatches) * replicas;
    let (full, selective) = model.recompute_shapes();
    let chunks = f64::from(schedule.placement.chunks_per_device().max(1));
    let mut redo = 0.0;
    for (d, order) in schedule.orders.iter().enumerate() {
        let kind = recompute.get(d).or_else(|| recompute.first()).copied().unwrap_or_default();
        let share = match kind {
            Recompute::None => 0.0,
            Recompute::Selective => selective.redo,
            Recompute::Full => full.redo,
        };
        let rs = order.iter().flat_map(|op| op.passes()).filter(|p| p.kind == PassKind::R).count() as f64;
        redo += rs * share * layer_f * shares.get(d).map_or(0.0, |s| s.1) / chunks * t;
    }
    (model_flops, redo * replicas)
}
