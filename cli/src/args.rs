//! The flag groups several commands share, as clap reads them: which family at which sizes,
//! the costs (hand-set, a model, a measured run) with the memory trade, and a schedule file to
//! read; and their values read into core's types. Core resolves the costs
//! ([`bubblescope::settings::resolve_costs`]); each command's own flags live in
//! `commands/<command>.rs`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use bubblescope::model::{self, Calibration, Model, ModelSpec};
use bubblescope::plan::{TradeSearch, TradeSpec};
use bubblescope::settings::{pricing, resolve_costs};
use bubblescope::trade::{self, Pricing, Trade, TradeSettings};
use bubblescope::units::format_number;
use bubblescope::{CostLists, Costs, Field, ScheduleParams};
use clap::Args;

/// Which family, at which sizes.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Schedule")]
pub struct FamilyArgs {
    /// Schedule family (see `bubblescope list`).
    #[arg(long, short = 's', value_name = "NAME")]
    pub schedule: Option<String>,
    /// Devices (pipeline ranks), P.
    #[arg(long, short = 'p', value_name = "P", default_value_t = 4, value_parser = devices)]
    pub devices: u32,
    /// Microbatches per training step, M.
    #[arg(long, short = 'm', value_name = "M", default_value_t = 8, value_parser = microbatches)]
    pub microbatches: u32,
    /// Model chunks per device (interleaved families).
    #[arg(long, value_name = "V", value_parser = positive)]
    pub chunks: Option<u32>,
    /// Microbatches per chunk round (interleaved 1F1B; default P).
    #[arg(long, value_name = "G", value_parser = positive, hide_short_help = true)]
    pub group: Option<u32>,
    /// Waves (Hanayo).
    #[arg(long, value_name = "W", value_parser = positive, hide_short_help = true)]
    pub waves: Option<u32>,
    /// Sequence slices per microbatch (Seq1F1B).
    #[arg(long = "seq-splits", value_name = "K", value_parser = positive, hide_short_help = true)]
    pub seq_splits: Option<u32>,
    /// Megatron's combined 1F1B (1f1b, interleaved-1f1b; an MoE model with EP > 1): one more
    /// warm-up forward, then each steady-state F overlapped with an earlier microbatch's B,
    /// hiding the expert all-to-all.
    #[arg(long = "a2a-overlap", hide_short_help = true)]
    pub a2a_overlap: bool,
}

/// Times and memory, for one microbatch through 1/P of the model. Unset values come from the
/// schedule file (JSON stores costs), or the defaults.
///
/// `--f`, `--b`, `--w`, `--mem-f` and `--mem-w` take one number, or a comma-separated list of
/// exactly P numbers: the costs of each device's share of the model in pipeline order.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Costs")]
pub struct CostArgs {
    /// Forward time, or one per device share: `4` or `4,4,4,6` [default: 1].
    #[arg(long = "f", value_parser = |t: &str| parse_list(t, Field::F), value_name = "F", allow_hyphen_values = true)]
    pub f: Option<CostList>,
    /// Input-gradient backward time; a fused backward takes B+W [default: 1].
    #[arg(long = "b", value_parser = |t: &str| parse_list(t, Field::B), value_name = "B", allow_hyphen_values = true)]
    pub b: Option<CostList>,
    /// Weight-gradient backward time [default: 1].
    #[arg(long = "w", value_parser = |t: &str| parse_list(t, Field::W), value_name = "W", allow_hyphen_values = true)]
    pub w: Option<CostList>,
    /// Communication time per hop between devices [default: 0].
    #[arg(value_parser = number, long, value_name = "C", allow_hyphen_values = true)]
    pub comm: Option<f64>,
    /// Output-layer forward time of one vocabulary shard (S), for the vocabulary-parallel families.
    ///
    /// Output-layer forward time of one vocabulary shard (S): the LM head's GEMM and softmax
    /// statistics over 1/P of the vocabulary, for vocab-1, vocab-2, interlaced-vocab, v-half-vocab and
    /// v-half-vocab-1. Each barrier (all-reduce over the shards) takes --comm. With model flags the
    /// model prices the shards instead.
    #[arg(value_parser = number, long = "s", value_name = "S", allow_hyphen_values = true, hide_short_help = true)]
    pub s: Option<f64>,
    /// Output-layer backward time of one vocabulary shard (T) [default: 2 × S].
    #[arg(value_parser = number, long = "t", value_name = "T", allow_hyphen_values = true, hide_short_help = true)]
    pub t: Option<f64>,
    /// Time of an overlapped F&B pair [default: the sum of its passes, no gain].
    #[arg(value_parser = number, long, value_name = "FB", allow_hyphen_values = true, hide_short_help = true)]
    pub overlap: Option<f64>,
    /// How sends between devices behave: async or blocking [default: async].
    ///
    /// How sends between devices behave. `async` (the default): a result reaches its consumer
    /// one hop after its pass ends, and only the consumer waits. `blocking`: Megatron-LM's
    /// exchanges without overlap_p2p_comm: after each op a device sends its result and
    /// receives the next op's input together and waits for both; a send completes only once
    /// the receiver has finished the op before the consumer, so both sides go on one hop
    /// after the later of the two.
    #[arg(long, value_name = "MODE", value_parser = parse_p2p, hide_short_help = true)]
    pub p2p: Option<bubblescope::P2p>,
    /// F, B, W and the hop fitted from a profiled run, in µs.
    ///
    /// F, B, W (per stage) and the hop fitted from a profiled run (a folder of per-rank
    /// traces, or the files: see `bubblescope trace`), in µs, the runtime's per-pass overhead
    /// included: any family at the costs the run measured.
    #[arg(long = "costs-from", value_name = "DIR|FILE", hide_short_help = true)]
    pub costs_from: Option<std::path::PathBuf>,
    /// The run `--costs-from` names, read once.
    #[arg(skip)]
    pub measured: std::cell::OnceCell<bubblescope::measured::MeasuredRun>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Activation memory one forward leaves on 1/P of the model, or one per share [default: 1].
    #[arg(long = "mem-f", value_parser = |t: &str| parse_list(t, Field::MemF), value_name = "X", allow_hyphen_values = true, help_heading = "Memory")]
    pub mem_f: Option<CostList>,
    /// Memory the weight gradient still needs after B, or one per share [default: mem-f/2].
    #[arg(long = "mem-w", value_parser = |t: &str| parse_list(t, Field::MemW), value_name = "Y", allow_hyphen_values = true, help_heading = "Memory", hide_short_help = true)]
    pub mem_w: Option<CostList>,
    /// Per-device activation memory limit (`80GiB` with a model) [default: none].
    ///
    /// Per-device activation memory limit, in mem-f's unit; with model flags also `80GiB`,
    /// `512MiB` [default: none]. In `plan` the limit holds activations plus static memory
    /// (weights and optimizer state, see --static-memory); elsewhere activations only.
    #[arg(long = "mem-limit", value_name = "L", allow_hyphen_values = true, help_heading = "Memory")]
    pub mem_limit: Option<String>,
    /// Recompute forwards before their backward: none, selective, full, or one per device.
    ///
    /// Recompute each forward before its backward (activation checkpointing): `none`,
    /// `selective` (drop the attention scores; needs a model without FlashAttention), `full`
    /// (keep the stage's input), or one per device: `full,full,none,none` [default: none].
    #[arg(long, value_name = "MODE", help_heading = "Memory", hide_short_help = true)]
    pub recompute: Option<String>,
    /// Offload activations to host memory: a fraction, one per device, or `auto`.
    ///
    /// Offload activations to host memory while they wait for their backward: a fraction of
    /// each device's microbatches (`0.5`, `50%`), one per device (`1,0.5,0,0`), or `auto`
    /// (every one whose wait hides the copies, as PipeOffload), or `pipeoffload` (the authors'
    /// own placement for group-interleaved: devices in pairs on a host link, an even number of
    /// them) [default: none]. Copies run at the GPU's host link (--host-gbps) or take
    /// --copy-time.
    #[arg(long, value_name = "X", help_heading = "Memory", hide_short_help = true)]
    pub offload: Option<String>,
    /// With plain costs: the time one forward's activation (mem-f) takes to copy to the host.
    #[arg(value_parser = number, long, value_name = "T", allow_hyphen_values = true, help_heading = "Memory", hide_short_help = true)]
    pub copy_time: Option<f64>,
    /// With a model: the GPU's host link, GB/s each way [default: the GPU preset's].
    #[arg(value_parser = number, long, value_name = "GBPS", allow_hyphen_values = true, help_heading = "Memory", hide_short_help = true)]
    pub host_gbps: Option<f64>,
}

/// A cost flag's value: one number, or one per device share.
#[derive(Debug, Clone, PartialEq)]
pub struct CostList(pub Vec<f64>);

/// A model size for `field`: read by core's [`ModelSpec::set`], as a permalink reads it, so
/// the message and its hint are the setting's own.
fn model_count(text: &str, field: Field) -> Result<u32, String> {
    let mut spec = ModelSpec::default();
    spec.set(field, text).map_err(|e| e.to_string())?;
    spec.get(field).and_then(|v| v.parse().ok()).ok_or_else(|| {
        format!("expected a whole number ≥ 1, found nothing\n  hint: give --{} a value, e.g. 8", field.name())
    })
}

/// The expert-parallel degrees `--ep` gives: one, or for `sweep` a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpSizes(pub Vec<u32>);

/// Reads `--ep`: one degree, or a comma-separated list of distinct degrees (sweep's).
fn ep_sizes(text: &str) -> Result<EpSizes, String> {
    let mut sizes = Vec::new();
    for part in text.split(',') {
        let size = model_count(part.trim(), Field::Ep)?;
        if sizes.contains(&size) {
            return Err(format!("EP {size} is listed twice\n  hint: give each degree once, e.g. --ep 1,2,4"));
        }
        sizes.push(size);
    }
    Ok(EpSizes(sizes))
}

/// Reads `true`/`false` (or 1/0, on/off, yes/no) for the on/off setting `field` as the
/// permalink does, with its hint and its own name.
fn on_off(text: &str, field: Field) -> Result<bool, String> {
    let mut spec = ModelSpec::default();
    spec.set(field, text).map_err(|e| e.to_string())?;
    let value = match field {
        Field::SequenceParallel => spec.sequence_parallel,
        Field::TpOverlap => spec.tp_overlap,
        _ => spec.flash_attention,
    };
    value.ok_or_else(|| {
        format!("expected true or false, found nothing\n  hint: write --{0} or --{0} false", field.name())
    })
}

/// `--flash-attention`'s value.
fn flash_attention(text: &str) -> Result<bool, String> {
    on_off(text, Field::FlashAttention)
}

/// `--sequence-parallel`'s value.
fn sequence_parallel(text: &str) -> Result<bool, String> {
    on_off(text, Field::SequenceParallel)
}

/// `--tp-overlap`'s value.
fn tp_overlap(text: &str) -> Result<bool, String> {
    on_off(text, Field::TpOverlap)
}

/// A core error as the CLI says it: a message that opens with the setting's name opens with
/// its flag (`f lists 3 numbers` → `--f lists 3 numbers`).
pub(crate) fn flag_error(mut e: bubblescope::ParamError) -> anyhow::Error {
    if e.message.starts_with(&format!("{} ", e.field.name())) {
        e.message = format!("--{}", e.message);
    }
    anyhow::anyhow!("{e}")
}

/// Reads `4` or `4,4.5,5,6` for `field`: every item a number (the core's reader; clap prints
/// the message and its hint).
fn parse_list(text: &str, field: Field) -> Result<CostList, String> {
    bubblescope::cost_lists::parse_list(text, field).map(CostList).map_err(|e| e.to_string())
}

/// `--p2p`'s value.
fn parse_p2p(text: &str) -> std::result::Result<bubblescope::P2p, String> {
    bubblescope::P2p::from_name(text.trim()).ok_or_else(|| {
        let names: Vec<&str> = bubblescope::P2p::ALL.iter().map(|p| p.name()).collect();
        format!("unknown send mode `{text}`\n  hint: --p2p takes {}", names.join(" or "))
    })
}

/// A transformer config and its hardware, in place of --f --b --w --comm --mem-f --mem-w.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Model")]
pub struct ModelArgs {
    /// Costs from a model preset (`bubblescope costs --list`).
    ///
    /// Costs from a model preset (`bubblescope costs --list`); other model flags override it.
    #[arg(long, value_name = "PRESET")]
    pub model: Option<String>,
    /// Transformer layers.
    #[arg(long, value_name = "L", value_parser = |t: &str| model_count(t, Field::Layers), hide_short_help = true)]
    pub layers: Option<u32>,
    /// Hidden size.
    #[arg(long, value_name = "H", value_parser = |t: &str| model_count(t, Field::Hidden), hide_short_help = true)]
    pub hidden: Option<u32>,
    /// Attention heads.
    #[arg(long, value_name = "A", value_parser = |t: &str| model_count(t, Field::Heads), hide_short_help = true)]
    pub heads: Option<u32>,
    /// Key/value heads of grouped-query attention [default: heads; 8 for the Llama presets].
    #[arg(long = "kv-heads", value_name = "G", value_parser = |t: &str| model_count(t, Field::KvHeads), hide_short_help = true)]
    pub kv_heads: Option<u32>,
    /// Sequence length in tokens.
    #[arg(long, value_name = "S", value_parser = |t: &str| model_count(t, Field::Seq), hide_short_help = true)]
    pub seq: Option<u32>,
    /// Sequences per microbatch.
    #[arg(long = "micro-batch", value_name = "B", value_parser = |t: &str| model_count(t, Field::MicroBatch), hide_short_help = true)]
    pub micro_batch: Option<u32>,
    /// Vocabulary size.
    #[arg(long, value_name = "V", value_parser = |t: &str| model_count(t, Field::Vocab), hide_short_help = true)]
    pub vocab: Option<u32>,
    /// The MLP's size as the model card gives it: GELU's width, SwiGLU's intermediate size
    /// [default: 4 × hidden; SwiGLU 8/3 × hidden].
    #[arg(long, value_name = "FFN", value_parser = |t: &str| model_count(t, Field::Ffn), hide_short_help = true)]
    pub ffn: Option<u32>,
    /// The MLP's kind: gelu (two matrices of width --ffn) or swiglu (three of intermediate
    /// size --ffn, as Llama) [default: the preset's; gelu].
    #[arg(long, value_name = "KIND", value_parser = mlp_kind, hide_short_help = true)]
    pub mlp: Option<bubblescope::model::Mlp>,
    /// GPU the model runs on [default: the preset's; h100-sxm].
    ///
    /// GPU the model runs on (`bubblescope costs --list`) [default: the preset's; h100-sxm].
    /// Its peak FLOP/s, HBM bandwidth and links price the work.
    #[arg(long, value_name = "GPU", value_parser = gpu_key)]
    pub gpu: Option<String>,
    /// GPUs per node: a hop between devices on different nodes crosses the network
    /// [default: 8].
    #[arg(long = "gpus-per-node", value_name = "N", value_parser = |t: &str| model_count(t, Field::GpusPerNode), hide_short_help = true)]
    pub gpus_per_node: Option<u32>,
    /// Fraction of the GPU's peak FLOP/s the matrix multiplications reach [default: 0.8].
    #[arg(long = "gemm-efficiency", value_name = "X", value_parser = |t: &str| fraction(t, Field::GemmEfficiency), hide_short_help = true)]
    pub gemm_efficiency: Option<f64>,
    /// Fraction of the GPU's HBM bandwidth the memory-bound kernels reach (the forward's
    /// reach 0.62 of it) [default: 0.64].
    #[arg(long = "memory-efficiency", value_name = "X", value_parser = |t: &str| fraction(t, Field::MemoryEfficiency), hide_short_help = true)]
    pub memory_efficiency: Option<f64>,
    /// Fit --gemm-efficiency and --memory-efficiency to measured F,B,W of one microbatch
    /// through the median device's transformer layers (no embedding or LM head), in µs or with
    /// a unit: `18.5ms,18.1ms,9.3ms`; or to a profiled run (its traces' folder or files, as
    /// `trace` reads them): its middle stage's fitted F, B, W, the runtime's overhead taken
    /// off. Other microbatch sizes, sequence lengths and layouts then follow.
    #[arg(long, value_name = "F,B,W|RUN", value_parser = calibrate_times, allow_hyphen_values = true, hide_short_help = true)]
    pub calibrate: Option<Calibrate>,
    /// The calibration `--calibrate` asked for, done once: the devices it was done on, the
    /// fitted spec and what the fit gave.
    #[arg(skip)]
    pub calibration: std::cell::OnceCell<(u32, ModelSpec, Calibration)>,
    /// Achieved TFLOP/s of the matrix multiplications per GPU, in place of the GPU's peak ×
    /// --gemm-efficiency.
    #[arg(value_parser = number, long, value_name = "T", hide_short_help = true)]
    pub tflops: Option<f64>,
    /// Achieved GB/s of every hop between devices, in place of the GPU's links.
    #[arg(value_parser = number, long, value_name = "GBPS", hide_short_help = true)]
    pub bandwidth: Option<f64>,
    /// Latency of one hop, µs [default: 5].
    #[arg(value_parser = number, long, value_name = "US", hide_short_help = true)]
    pub latency: Option<f64>,
    /// Stages: Megatron's layout (`Et*3|t*4|t*4|t*3L`) or layers per share (`3,4,4,3`)
    /// [default: as even as possible, earlier shares taking the extra layer].
    #[arg(long, value_name = "SPEC", hide_short_help = true)]
    pub layout: Option<String>,
    /// FlashAttention: no attention score matrices kept, scores recomputed in B
    /// [default: on for the Llama presets, off otherwise].
    #[arg(long = "flash-attention", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = flash_attention, hide_short_help = true)]
    pub flash_attention: Option<bool>,
    /// Tensor-parallel size of each stage, with sequence parallelism: F, B, W, activations,
    /// hops and parameters per GPU are 1/T [default: 1].
    #[arg(long, value_name = "T", value_parser = |t: &str| model_count(t, Field::Tp), hide_short_help = true)]
    pub tp: Option<u32>,
    /// Sequence parallelism beside --tp: all-gather and reduce-scatter in place of all-reduce,
    /// and the activations outside the matmuls split too [default: on; off for the SC21 presets].
    #[arg(long = "sequence-parallel", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = sequence_parallel, hide_short_help = true)]
    pub sequence_parallel: Option<bool>,
    /// Overlap the tensor-parallel collectives with the matmuls, as Megatron's
    /// --tp-comm-overlap (only what the matmuls cannot hide stays) [default: off].
    #[arg(long = "tp-overlap", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = tp_overlap, hide_short_help = true)]
    pub tp_overlap: Option<bool>,
    /// Number format of the matmuls: bf16, fp16 or fp8 (FP8 matmuls at the GPU's FP8 peak)
    /// [default: bf16].
    #[arg(long, value_name = "P", value_parser = precision, hide_short_help = true)]
    pub precision: Option<bubblescope::model::Precision>,
    /// Data-parallel replicas of the pipeline: which GPUs share a node, and the gradient
    /// reduction of the step [default: 1].
    #[arg(long, value_name = "D", value_parser = |t: &str| model_count(t, Field::Dp), hide_short_help = true)]
    pub dp: Option<u32>,
    /// How ranks fill nodes after TP: tp-dp-pp (Megatron's: a stage's replicas side by side)
    /// or tp-pp-dp (a pipeline's devices side by side) [default: tp-dp-pp].
    #[arg(long = "rank-order", value_name = "ORDER", value_parser = rank_order, hide_short_help = true)]
    pub rank_order: Option<bubblescope::model::RankOrder>,
    /// Width of one attention head [default: hidden / heads; the Qwen3 preset 128].
    #[arg(long = "head-dim", value_name = "D", value_parser = |t: &str| model_count(t, Field::HeadDim), hide_short_help = true)]
    pub head_dim: Option<u32>,
    /// Routed experts of each MoE layer: a mixture-of-experts model [default: the preset's; none].
    #[arg(long = "experts", value_name = "E", value_parser = |t: &str| model_count(t, Field::Experts), hide_short_help = true)]
    pub experts: Option<u32>,
    /// Routed experts each token uses [default: the preset's; 1].
    #[arg(long = "top-k", value_name = "K", value_parser = |t: &str| model_count(t, Field::TopK), hide_short_help = true)]
    pub top_k: Option<u32>,
    /// Shared experts every token uses in each MoE layer, each of --expert-ffn [default: the preset's; 0].
    #[arg(long = "shared-experts", value_name = "S", value_parser = |t: &str| model_count(t, Field::SharedExperts), hide_short_help = true)]
    pub shared_experts: Option<u32>,
    /// Each expert's intermediate size (SwiGLU with --mlp swiglu) [default: the preset's; --ffn].
    #[arg(long = "expert-ffn", value_name = "F", value_parser = |t: &str| model_count(t, Field::ExpertFfn), hide_short_help = true)]
    pub expert_ffn: Option<u32>,
    /// The first N layers stay dense, of MLP size --ffn [default: the preset's; 0].
    #[arg(long = "dense-layers", value_name = "N", value_parser = |t: &str| model_count(t, Field::DenseLayers), hide_short_help = true)]
    pub dense_layers: Option<u32>,
    /// Expert-parallel degree: the routed experts split over EP data-parallel replicas; its all-to-all is timed in F and B [default: 1]. `sweep` takes a list (`1,2,4,8`).
    #[arg(long = "ep", value_name = "EP", value_parser = ep_sizes, hide_short_help = true)]
    pub ep: Option<EpSizes>,
    /// Multi-head latent attention: the query's low rank [default: none, a direct query projection].
    #[arg(long = "q-lora-rank", value_name = "R", value_parser = |t: &str| model_count(t, Field::QLoraRank), hide_short_help = true)]
    pub q_lora_rank: Option<u32>,
    /// Multi-head latent attention: the key/value latent's rank; sets MLA on (DeepSeek-V3 512).
    #[arg(long = "kv-lora-rank", value_name = "R", value_parser = |t: &str| model_count(t, Field::KvLoraRank), hide_short_help = true)]
    pub kv_lora_rank: Option<u32>,
    /// Multi-head latent attention: rotary query/key width per head [default: half --head-dim].
    #[arg(long = "qk-rope-dim", value_name = "D", value_parser = |t: &str| model_count(t, Field::QkRopeDim), hide_short_help = true)]
    pub qk_rope_dim: Option<u32>,
    /// Multi-head latent attention: non-rotary query/key width per head [default: --head-dim].
    #[arg(long = "qk-nope-dim", value_name = "D", value_parser = |t: &str| model_count(t, Field::QkNopeDim), hide_short_help = true)]
    pub qk_nope_dim: Option<u32>,
    /// Multi-head latent attention: value width per head [default: --head-dim].
    #[arg(long = "v-head-dim", value_name = "D", value_parser = |t: &str| model_count(t, Field::VHeadDim), hide_short_help = true)]
    pub v_head_dim: Option<u32>,
    /// Multi-token-prediction layers, counted apart in params (a --layout `m` places one on a stage) [default: the preset's; 0].
    #[arg(long = "mtp", value_name = "N", value_parser = |t: &str| model_count(t, Field::Mtp), hide_short_help = true)]
    pub mtp: Option<u32>,
    /// Expert capacity factor: routed work and all-to-all bytes times X (tokens padded to
    /// each expert's capacity) [default: none, dropless].
    #[arg(value_parser = number, long = "capacity-factor", value_name = "X", hide_short_help = true)]
    pub capacity_factor: Option<f64>,
}

/// A `--precision` value (core's reader).
fn precision(text: &str) -> Result<bubblescope::model::Precision, String> {
    bubblescope::model::Precision::parse(text).map_err(|e| e.to_string())
}

/// The whole training step around the pipeline: data parallelism, ZeRO, the GPUs in all.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Step")]
pub struct StepArgs {
    /// ZeRO stage: 0 replicated, 1 distributed optimizer, 2 sharded gradients, 3 fully
    /// sharded (FSDP) [default: 0].
    #[arg(long, value_name = "Z", value_parser = zero_stage, hide_short_help = true)]
    pub zero: Option<u32>,
    /// GPUs in all: tp · pp · dp.
    #[arg(long, value_name = "N", value_parser = positive, hide_short_help = true)]
    pub gpus: Option<u32>,
    /// Sequences per step over every replica: sets the microbatches to global-batch /
    /// (dp · micro-batch).
    #[arg(long = "global-batch", value_name = "N", value_parser = positive, hide_short_help = true)]
    pub global_batch: Option<u32>,
}

/// A `--zero` value: a whole number, then core's rule (0 to 3), so `-1` gets the real range.
pub(crate) fn zero_stage(text: &str) -> Result<u32, String> {
    let value: i128 = text.trim().parse().map_err(|_| {
        format!(
            "expected a whole number, found `{}`\n  hint: --zero is the ZeRO stage: 0, 1, 2 or 3",
            bubblescope::formats::sanitize(text)
        )
    })?;
    bubblescope::step::check_zero(value).map_err(|e| e.to_string())
}

/// A `--rank-order` value (core's reader).
fn rank_order(text: &str) -> Result<bubblescope::model::RankOrder, String> {
    bubblescope::model::RankOrder::parse(text).map_err(|e| e.to_string())
}

impl StepArgs {
    /// The flags as core's step settings.
    pub fn spec(&self) -> bubblescope::step::StepSpec {
        bubblescope::step::StepSpec { zero: self.zero, gpus: self.gpus, global_batch: self.global_batch }
    }
}

/// A `--gpu` value: a GPU preset's key (core's reader, with its suggestion).
fn gpu_key(text: &str) -> Result<String, String> {
    let mut spec = ModelSpec::default();
    spec.set(Field::Gpu, text).map_err(|e| e.to_string())?;
    spec.gpu.ok_or_else(|| "expected a gpu, found nothing\n  hint: see `bubblescope costs --list`".to_string())
}

/// An efficiency: a number above 0 and at most 1 (core's reader).
/// Reads a flag that takes one number (`0.5`, `2e-3`, `-1`; its range is checked where it is
/// used), saying a text that is none in words rather than the float parser's ("invalid float
/// literal", "cannot parse float from empty string").
pub(crate) fn number(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("expected a number, found nothing\n  hint: give a number, e.g. 0.5 or 2e-3".to_string());
    }
    trimmed.parse().map_err(|_| {
        format!(
            "expected a number, found `{}`\n  hint: write it in digits with a decimal point or an exponent, e.g. 0.5 or 2e-3 (no fractions, units or percent signs)",
            bubblescope::formats::sanitize(trimmed)
        )
    })
}

fn fraction(text: &str, field: Field) -> Result<f64, String> {
    let mut spec = ModelSpec::default();
    spec.set(field, text).map_err(|e| e.to_string())?;
    spec.get(field).and_then(|v| v.parse().ok()).ok_or_else(|| {
        format!(
            "expected a number above 0 and at most 1, found nothing\n  hint: give --{} a value, e.g. 0.7",
            field.name()
        )
    })
}

/// What `--calibrate` fits to.
#[derive(Clone, Debug, PartialEq)]
pub enum Calibrate {
    /// F, B and W µs of the median device's layers, given by hand.
    Times([f64; 3]),
    /// A profiled run: its middle stage's fitted times.
    Run(std::path::PathBuf),
}

/// A `--calibrate` value: three times (core's reader), or a profiled run's path.
fn calibrate_times(text: &str) -> Result<Calibrate, String> {
    let path = std::path::Path::new(text);
    if !text.contains(',') && path.exists() {
        return Ok(Calibrate::Run(path.to_path_buf()));
    }
    // One item that reads as no time: a path, most likely, that is not there.
    let looks_like_path = text.contains(['/', '\\']) || text.ends_with(".json") || text.ends_with(".gz");
    if !text.contains(',') && looks_like_path {
        return Err(format!(
            "calibrate found no profiled run at {text}: no such file or folder\n  hint: give the run's per-rank traces' folder or files, as `bubblescope trace` reads them\n  hint: or three times F,B,W of one microbatch, e.g. 18.5ms,18.1ms,9.3ms"
        ));
    }
    model::calibrate::parse_times(text).map(Calibrate::Times).map_err(|e| {
        format!("{e}\n  hint: or give a profiled run: its per-rank traces' folder or files, as `bubblescope trace` reads them")
    })
}

impl ModelArgs {
    /// Whether any model flag is given.
    pub fn given(&self) -> bool {
        self.spec() != ModelSpec::default() || self.calibrate.is_some()
    }

    /// The flags as a model spec (the same type the permalink reads).
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            preset: self.model.clone(),
            layers: self.layers,
            hidden: self.hidden,
            heads: self.heads,
            kv_heads: self.kv_heads,
            seq: self.seq,
            micro_batch: self.micro_batch,
            vocab: self.vocab,
            ffn: self.ffn,
            mlp: self.mlp,
            tflops: self.tflops,
            bandwidth: self.bandwidth,
            latency: self.latency,
            layout: self.layout.clone(),
            flash_attention: self.flash_attention,
            tp: self.tp,
            gpu: self.gpu.clone(),
            gpus_per_node: self.gpus_per_node,
            gemm_efficiency: self.gemm_efficiency,
            memory_efficiency: self.memory_efficiency,
            sequence_parallel: self.sequence_parallel,
            tp_overlap: self.tp_overlap,
            precision: self.precision,
            dp: self.dp,
            rank_order: self.rank_order,
            head_dim: self.head_dim,
            experts: self.experts,
            top_k: self.top_k,
            shared_experts: self.shared_experts,
            expert_ffn: self.expert_ffn,
            dense_layers: self.dense_layers,
            ep: self.ep.as_ref().and_then(|e| e.0.first().copied()),
            capacity_factor: self.capacity_factor,
            q_lora_rank: self.q_lora_rank,
            kv_lora_rank: self.kv_lora_rank,
            qk_rope_dim: self.qk_rope_dim,
            qk_nope_dim: self.qk_nope_dim,
            v_head_dim: self.v_head_dim,
            mtp: self.mtp,
        }
    }

    /// The flags with --calibrate done on `devices` devices: the fitted efficiencies in place
    /// of it, and the calibration (none without --calibrate). The fit is done once (a profiled
    /// run is read once) and kept for later calls on as many devices.
    pub fn calibrated(&self, devices: u32) -> Result<(ModelArgs, Option<Calibration>)> {
        let (spec, calibration) = match (&self.calibrate, self.calibration.get()) {
            (None, _) => return Ok((self.clone(), None)),
            (Some(_), Some((d, spec, calibration))) if *d == devices => (spec.clone(), calibration.clone()),
            (Some(_), _) => {
                let (spec, calibration) = self.calibrate(devices)?;
                let _ = self.calibration.set((devices, spec.clone(), calibration.clone()));
                (spec, calibration)
            }
        };
        let args = ModelArgs {
            gemm_efficiency: spec.gemm_efficiency,
            memory_efficiency: spec.memory_efficiency,
            calibrate: None,
            ..self.clone()
        };
        Ok((args, Some(calibration)))
    }

    /// Fits the spec's efficiencies as --calibrate asks, on `devices` devices.
    fn calibrate(&self, devices: u32) -> Result<(ModelSpec, Calibration)> {
        Ok(match &self.calibrate {
            None => bail!("--calibrate is not given\n  hint: give --calibrate F,B,W or a profiled run"),
            Some(Calibrate::Times(times)) => self.spec().calibrated(devices, *times).map_err(flag_error)?,
            Some(Calibrate::Run(path)) => {
                let run = crate::input::load_run(std::slice::from_ref(path), None)?;
                let (stage, times) = run.fitted().calibration_stage().map_err(|e| {
                    anyhow::anyhow!("--calibrate {}: {e}", bubblescope::formats::sanitize(&path.display().to_string()))
                })?;
                let (stages, _, _) = run.sizes();
                let model = self.spec().resolve().map_err(flag_error)?;
                let layout = model.layout(stages).map_err(flag_error)?;
                let layers = layout.pieces.get(stage).map_or(0, |p| p.layers);
                if layers == 0 {
                    bail!(
                        "--calibrate: the model cut into the run's {stages} stages puts no transformer layer on stage {stage}\n  \
                         hint: give the model the run profiled (its layers and --layout), or calibrate by hand with F,B,W"
                    );
                }
                eprintln!(
                    "note: calibrating to the run's stage {stage} ({layers} layer{}): F {}, B {}, W {} (the runtime's overhead taken off)",
                    if layers == 1 { "" } else { "s" },
                    bubblescope::units::format_micros(times[0]),
                    bubblescope::units::format_micros(times[1]),
                    bubblescope::units::format_micros(times[2]),
                );
                self.spec().calibrated_layers(layers, times).map_err(flag_error)?
            }
        })
    }

    /// The model the flags describe on `devices` devices: a preset's, then each flag over it,
    /// calibrated when --calibrate is given.
    pub fn model(&self, devices: u32) -> Result<Model> {
        self.refuse_ep_list()?;
        self.calibrated(devices)?.0.spec().resolve().map_err(flag_error)
    }

    /// The EP degrees to run: each of `--ep`'s (a sweep's list), or the one the model has.
    pub fn ep_sizes(&self) -> Vec<Option<u32>> {
        match &self.ep {
            Some(e) => e.0.iter().copied().map(Some).collect(),
            None => vec![None],
        }
    }

    /// The flags with `--ep` set to `ep` alone (one of a sweep's degrees).
    pub fn with_ep(&self, ep: Option<u32>) -> ModelArgs {
        ModelArgs { ep: ep.map(|e| EpSizes(vec![e])), ..self.clone() }
    }

    /// A list of EP degrees is a sweep's: every other command runs one.
    fn refuse_ep_list(&self) -> Result<()> {
        match &self.ep {
            Some(e) if e.0.len() > 1 => Err(crate::output::user_error(
                &format!(
                    "--ep {} lists {} degrees, but this command runs one",
                    e.0.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                    e.0.len()
                ),
                &["give one degree, e.g. --ep 8, or compare them with `bubblescope sweep … --ep 1,2,4,8` (or `plan -p …`)"],
            )),
            _ => Ok(()),
        }
    }
}

/// Says on standard error when `--mtp` places no layer: no `m` in the layout
/// ([`ModelSpec::unplaced_mtp_note`]).
pub fn note_unplaced_mtp(spec: &ModelSpec, derived: &bubblescope::model::Derived) {
    if let Some(note) = spec.unplaced_mtp_note(derived) {
        eprintln!("note: --{note}");
    }
}

/// What a calibration gave, as the one note every command prints.
pub fn calibration_note(c: &Calibration) -> String {
    let pct = |r: f64| format!("{}%", bubblescope::units::format_signed(r * 100.0, 1));
    let mut note = format!(
        "calibrated to F, B, W of {} layer{}: --gemm-efficiency {} --memory-efficiency {} (the model then gives F {}, B {}, W {})",
        c.layers,
        if c.layers == 1 { "" } else { "s" },
        format_number(c.efficiency.gemm, 4),
        format_number(c.efficiency.memory, 4),
        pct(c.residuals[0]),
        pct(c.residuals[1]),
        pct(c.residuals[2]),
    );
    if !c.determined {
        note.push_str("; every operator is memory-bound at this size, so the gemm efficiency is not determined: calibrate a larger microbatch to predict others");
    }
    note
}

impl CostArgs {
    /// The hand-set cost flags that were given, by name.
    fn hand_set(&self) -> Vec<&'static str> {
        let given = [
            ("--f", self.f.is_some()),
            ("--b", self.b.is_some()),
            ("--w", self.w.is_some()),
            ("--comm", self.comm.is_some()),
            ("--s", self.s.is_some()),
            ("--t", self.t.is_some()),
            ("--mem-f", self.mem_f.is_some()),
            ("--mem-w", self.mem_w.is_some()),
        ];
        given.into_iter().filter(|(_, g)| *g).map(|(n, _)| n).collect()
    }

    /// The files and folders these flags read (`--costs-from`, `--calibrate RUN`): no output
    /// may overwrite them.
    pub fn inputs(&self) -> Vec<&std::path::Path> {
        let run = match &self.model.calibrate {
            Some(Calibrate::Run(path)) => Some(path.as_path()),
            _ => None,
        };
        self.costs_from.as_deref().into_iter().chain(run).collect()
    }

    /// Refuses `output` when it would overwrite a file these flags read.
    pub fn refuse_overwrite(&self, output: &std::path::Path) -> Result<()> {
        self.inputs().into_iter().try_for_each(|input| crate::output::refuse_overwrite(input, output))
    }

    /// Whether a recompute, offload or copy flag was given.
    pub fn trades(&self) -> bool {
        self.recompute.is_some() || self.offload.is_some() || self.copy_time.is_some() || self.host_gbps.is_some()
    }

    /// The cost flags given, by name, that a measured run's own times leave nothing to set:
    /// the hand-set costs, `--overlap`, `--p2p` (its waits are in its times), the model's flags
    /// and `--costs-from` (empty when none).
    pub fn measured_conflicts(&self) -> Vec<&'static str> {
        let mut given = self.hand_set();
        if self.overlap.is_some() {
            given.push("--overlap");
        }
        if self.p2p.is_some() {
            given.push("--p2p");
        }
        if self.model.given() {
            given.push("the model's flags");
        }
        if self.costs_from.is_some() {
            given.push("--costs-from");
        }
        given
    }

    /// Refuses the cost flags [`CostArgs::measured_conflicts`] names for `what` (a measured
    /// run, said in the message): its times are measured, so they would contradict them.
    pub fn refuse_on_measured(&self, what: &str) -> Result<()> {
        let given = self.measured_conflicts();
        if given.is_empty() {
            return Ok(());
        }
        Err(crate::output::user_error(
            &format!(
                "{what} is a measured run: its times are measured, so cost flags do not apply ({} given)",
                given.join(", ")
            ),
            &["remove the cost flags; to run another family at this run's costs use --schedule NAME --costs-from DIR"],
        ))
    }

    /// The model spec these flags derive costs from, if any model flag is given (checked, not
    /// yet calibrated: a calibration needs the devices).
    ///
    /// # Errors
    /// When model flags are mixed with hand-set costs, or the model is incomplete.
    pub fn model(&self) -> Result<Option<ModelSpec>> {
        if !self.model.given() {
            return Ok(None);
        }
        self.model.refuse_ep_list()?;
        self.refuse_beside_costs_from()?;
        let hand = self.hand_set();
        if !hand.is_empty() {
            bail!(
                "{} cannot be combined with model flags (--model, --layers, --hidden, …)\n  hint: give either a model, from which F, B, W, comm and memory are derived, or the costs by hand",
                hand.join(", ")
            );
        }
        let spec = self.model.spec();
        spec.resolve().map_err(flag_error)?;
        Ok(Some(spec))
    }

    /// Refuses the cost flags `--costs-from` sets itself (F, B, W, comm, the vocabulary's and
    /// a model's), when it is given: one rule for every command.
    fn refuse_beside_costs_from(&self) -> Result<()> {
        if self.costs_from.is_none() {
            return Ok(());
        }
        let mut given = self.hand_set();
        given.retain(|f| !["--mem-f", "--mem-w"].contains(f));
        if self.model.given() {
            given.push("model flags");
        }
        if !given.is_empty() {
            bail!(
                "{} cannot be combined with --costs-from\n  hint: --costs-from sets F, B, W and comm from the run; --mem-f and --mem-w may still set memory",
                given.join(", ")
            );
        }
        Ok(())
    }

    /// The run `--costs-from` names, if given (read on first use).
    pub fn measured(&self) -> Result<Option<&bubblescope::measured::MeasuredRun>> {
        let Some(path) = &self.costs_from else { return Ok(None) };
        if let Some(run) = self.measured.get() {
            return Ok(Some(run));
        }
        self.refuse_beside_costs_from()?;
        let run = crate::input::load_run(std::slice::from_ref(path), None)?;
        note_disturbed(&run, path);
        Ok(Some(self.measured.get_or_init(|| run)))
    }

    /// The costs: a measured run's, model flags, or hand-set flags over `base` (from a file)
    /// over the defaults, with the recompute and offload flags priced in them: core's one
    /// path ([`resolve_costs`]), which the playground and its worker take too. Lists must have
    /// one number per device (`devices`). Says the calibration and the model's notes.
    pub fn costs(&self, base: Option<&Costs>, devices: u32) -> Result<Costs> {
        let hand = self.hand_costs(base, devices)?;
        let model = match self.model()? {
            Some(_) => {
                let (flags, calibration) = self.model.calibrated(devices)?;
                if let Some(c) = &calibration {
                    eprintln!("note: {}", calibration_note(c));
                }
                flags.spec()
            }
            None => ModelSpec::default(),
        };
        let mut resolved = resolve_costs(&hand, &model, &self.trade_settings()?, devices).map_err(flag_error)?;
        // A file's send mode (Bubblescope JSON's `costs.p2p`) stays unless --p2p is given.
        if let Some(p2p) = self.p2p {
            resolved.costs.p2p = p2p;
        }
        for note in resolved.derived.iter().flat_map(|d| &d.notes) {
            crate::output::note_once(note);
        }
        if let Some(derived) = &resolved.derived {
            note_unplaced_mtp(&model, derived);
        }
        Ok(resolved.costs)
    }

    /// The recompute and offload flags, read (core prices them).
    fn trade_settings(&self) -> Result<TradeSettings> {
        let mut settings =
            TradeSettings { copy_time: self.copy_time, host_gbps: self.host_gbps, ..TradeSettings::default() };
        if let Some(text) = &self.recompute {
            settings.recompute = trade::parse_recompute(text).map_err(flag_error)?;
        }
        if let Some(text) = &self.offload {
            settings.offload = trade::parse_offload(text).map_err(flag_error)?;
        }
        Ok(settings)
    }

    /// What prices a trade on `devices` devices: the model's layers and host link, or the
    /// hand-set costs' mem-f (core's [`pricing`]).
    fn pricing(&self, devices: u32) -> Result<Pricing> {
        let model = if self.model()?.is_some() { Some(self.model.model(devices)?) } else { None };
        let hand = match model {
            Some(_) => Costs::default(),
            None => self.hand_costs(None, devices)?,
        };
        Ok(pricing(model.as_ref(), &hand))
    }

    /// The settings of a sweep's `--trades` list, each priced as --recompute and --offload
    /// would be (`None` for `none`).
    pub fn trade_list(&self, text: &str, devices: u32) -> Result<Vec<Option<std::sync::Arc<Trade>>>> {
        let pricing = self.pricing(devices)?;
        trade::parse_trade_list(text)
            .map_err(flag_error)?
            .into_iter()
            .map(|mut s| {
                (s.copy_time, s.host_gbps) = (self.copy_time, self.host_gbps);
                // A setting of the list that cannot run names --trades, where it was given.
                let in_list = |e: bubblescope::ParamError| match e.field {
                    bubblescope::Field::Recompute => anyhow::anyhow!("--trades: {e}"),
                    _ => flag_error(e),
                };
                let t = s.trade(&pricing, devices).map_err(in_list)?;
                Ok(t.filter(|t| !t.is_none()).map(std::sync::Arc::new))
            })
            .collect()
    }

    /// Refuses --copy-time or --host-gbps for a run that copies nothing.
    pub fn check_copy_rate(&self, schedule: &bubblescope::Schedule) -> Result<()> {
        self.check_copy_rate_unless(schedule.has_copies())
    }

    /// Refuses --copy-time or --host-gbps when neither --offload nor anything else (`copies`:
    /// a file's copies, a sweep's offloading --trades) offloads.
    pub fn check_copy_rate_unless(&self, copies: bool) -> Result<()> {
        match self.trade_settings()?.unused_rate_unless(copies) {
            Some(e) => Err(flag_error(e)),
            None => Ok(()),
        }
    }

    /// What `plan` does with recompute and offload: the flags' one setting when given, else a
    /// search priced by the plan's `model` (or by --copy-time with plain costs).
    pub fn plan_trade(&self, model: Option<&Model>, devices: u32) -> Result<TradeSpec> {
        let settings = self.trade_settings()?;
        let hand = match model {
            Some(_) => Costs::default(),
            None => self.hand_costs(None, devices)?,
        };
        let pricing = pricing(model, &hand);
        if self.recompute.is_some() || self.offload.is_some() {
            return Ok(match settings.trade(&pricing, devices).map_err(flag_error)? {
                Some(t) => TradeSpec::Fixed(std::sync::Arc::new(t)),
                None => TradeSpec::None,
            });
        }
        Ok(TradeSpec::Search(TradeSearch::priced(&settings, &pricing).map_err(flag_error)?))
    }

    /// The costs before the model and the trade: a measured run's (`--mem-f` and `--mem-w`
    /// over them), or the hand-set flags over `base` (from a file) over the defaults; with
    /// model flags only `--overlap`, the model giving the rest.
    pub fn hand_costs(&self, base: Option<&Costs>, devices: u32) -> Result<Costs> {
        let list = |l: &Option<CostList>| l.as_ref().map(|l| l.0.clone());
        if let Some(run) = self.measured()? {
            let mut costs = run.fitted().costs(devices);
            let pieces = costs.profile.as_ref().map_or(0, |p| p.pieces());
            if pieces % devices as usize != 0 {
                let from = self.costs_from.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
                let mut fits: Vec<String> = (1..=pieces).filter(|d| pieces % d == 0).map(|d| d.to_string()).collect();
                let last = fits.pop().unwrap_or_default();
                let fits = if fits.is_empty() { last } else { format!("{} or {last}", fits.join(", ")) };
                return Err(crate::output::user_error(
                    &format!(
                        "--costs-from {}: the run fits costs for its {pieces} stages, which do not split over {devices} devices",
                        bubblescope::formats::sanitize(&from)
                    ),
                    &[&format!("give a device count that divides its {pieces} stages: --devices {fits}")],
                ));
            }
            // The run's own overlapped pairs fit an overlap time; --overlap replaces it.
            costs.overlap = self.overlap.or(costs.overlap);
            let lists = CostLists { f: None, b: None, w: None, mem_f: list(&self.mem_f), mem_w: list(&self.mem_w) };
            return lists.apply(&costs, devices).map_err(flag_error);
        }
        if self.model()?.is_some() {
            return Ok(Costs { overlap: self.overlap, ..Costs::default() });
        }
        let mut d = base.cloned().unwrap_or_default();
        if self.comm.is_some() {
            d.links = None;
        }
        d.comm = self.comm.unwrap_or(d.comm);
        d.overlap = self.overlap.or(d.overlap);
        d.vocab = bubblescope::VocabCosts::from_shards(self.s, self.t, d.vocab, d.comm);
        let lists = CostLists {
            f: list(&self.f),
            b: list(&self.b),
            w: list(&self.w),
            mem_f: list(&self.mem_f),
            mem_w: list(&self.mem_w),
        };
        lists.apply(&d, devices).map_err(flag_error)
    }

    /// What the numbers mean: µs and bytes with model flags, µs with --costs-from, cost units
    /// otherwise.
    pub fn units(&self) -> bubblescope::units::Units {
        if self.costs_from.is_some() {
            bubblescope::units::Units::Measured
        } else {
            self.model.spec().units()
        }
    }

    /// The memory limit: a number in mem-f's unit, or with model flags a size with a unit.
    pub fn mem_limit(&self) -> Result<Option<f64>> {
        let Some(text) = &self.mem_limit else { return Ok(None) };
        self.limit(text).map(Some)
    }

    /// `--mem-limit` as a comma-separated list of limits, each read as [`CostArgs::mem_limit`]
    /// reads one (empty when not given).
    pub fn mem_limits(&self) -> Result<Vec<f64>> {
        let Some(text) = &self.mem_limit else { return Ok(Vec::new()) };
        text.split(',')
            .enumerate()
            .map(|(i, item)| {
                if item.trim().is_empty() {
                    bail!(
                        "item {} of --mem-limit is empty, expected a limit\n  hint: write e.g. --mem-limit 4,8 (or 40GiB,80GiB with a model)",
                        i + 1
                    );
                }
                self.limit(item)
            })
            .collect()
    }

    /// One limit: a number, or with model flags a size with a unit.
    fn limit(&self, text: &str) -> Result<f64> {
        model::parse_limit(text, self.model.spec().units()).map_err(|e| match e {
            model::LimitError::NeedsModel => anyhow::anyhow!(
                "--mem-limit must be a number in mem-f's unit, found `{}`\n  hint: sizes with units (80GiB, 512MiB) need costs from a model (--model or --layers …), where memory is in bytes",
                bubblescope::formats::sanitize(text)
            ),
            model::LimitError::Bad(e) => anyhow::anyhow!("{e}"),
        })
    }
}

/// Reading a schedule from a file instead of generating one.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Schedule")]
pub struct FileArgs {
    /// Read the schedule from FILE instead of --schedule.
    ///
    /// Read the schedule from FILE (PyTorch CSV or Bubblescope JSON; `-` for standard input)
    /// instead of --schedule. The file sets the devices and microbatches.
    #[arg(long, value_name = "FILE", conflicts_with = "schedule")]
    pub from: Option<PathBuf>,
    /// Format of --from: pytorch-csv, pytorch-csv-comms or json [default: from the extension].
    #[arg(long = "from-format", value_name = "FORMAT", hide_short_help = true)]
    pub from_format: Option<String>,
    /// PyTorch CSV dialect: current (I input grad, B full backward) or legacy (B input grad,
    /// BW full backward) [default: detected from the file].
    #[arg(long, value_name = "DIALECT", hide_short_help = true)]
    pub dialect: Option<String>,
    /// Read an I directly followed on its row (empty and communication cells aside) by the W of
    /// the same stage and microbatch as one full backward B, which costs B+W as one pass. This is
    /// PyTorch's `_merge_bw`, which its runtime never calls in 2.14 or 2.15: PyTorch runs such a
    /// pair as two actions, as Bubblescope reads it without this flag. Only with --from: a
    /// generated schedule has no file to merge.
    #[arg(long = "merge-bw", requires = "from", conflicts_with = "schedule", hide_short_help = true)]
    pub merge_bw: bool,
}

/// Builds the parameters of a family from flags.
pub fn params(family: &FamilyArgs, costs: &CostArgs) -> Result<ScheduleParams> {
    Ok(ScheduleParams {
        devices: family.devices,
        microbatches: family.microbatches,
        chunks: family.chunks,
        group: family.group,
        waves: family.waves,
        seq_splits: family.seq_splits,
        a2a_overlap: family.a2a_overlap,
        costs: costs.costs(None, family.devices)?,
        mem_limit: costs.mem_limit()?,
        units: costs.units(),
    })
}

/// What `simulate` and `render` read: a family built from flags or a schedule file, and the
/// costs to run it at.
#[derive(Debug, Args)]
pub struct InputArgs {
    #[command(flatten)]
    pub family: FamilyArgs,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub file: FileArgs,
}

/// A `--devices` value: a whole number between 1 and core's limit (read signed, so `-1` gets
/// the real range).
pub(crate) fn devices(text: &str) -> Result<u32, String> {
    count(text, "devices", bubblescope::params::MAX_DEVICES, "--devices is the number of pipeline ranks, e.g. 8")
}

/// A `--microbatches` value, as [`devices`].
pub(crate) fn microbatches(text: &str) -> Result<u32, String> {
    count(
        text,
        "microbatches",
        bubblescope::params::MAX_MICROBATCHES,
        "--microbatches is how many microbatches one iteration runs, e.g. 32",
    )
}

/// A count with no limit of its own (chunks, group, waves, sequence splits, the global batch,
/// plans to print): at least 1; the families and the pass cap bound it.
pub(crate) fn positive(text: &str) -> Result<u32, String> {
    count(text, "a count", u32::MAX, "give a whole number of at least 1")
}

/// An `--optimal-nodes` value: a whole number from 1 to 10^10 (about a day of search).
pub(crate) fn search_nodes(text: &str) -> Result<u64, String> {
    whole(
        text,
        "search nodes",
        10_000_000_000,
        &format!(
            "without it the search spends about a second natively ({} million units of work, about 330,000 nodes at P = 4, M = 8 with one chunk); digits may be grouped, e.g. 1_000_000",
            bubblescope::optimal::DEFAULT_WORK / 1_000_000
        ),
    )
}

/// A [`whole`] number that fits `u32`.
fn count(text: &str, what: &str, max: u32, hint: &str) -> Result<u32, String> {
    whole(text, what, u64::from(max), hint).map(|v| u32::try_from(v).unwrap_or(max))
}

/// A whole number from 1 to `max` (`_` may group digits; read wide, so `-1` and huge values get
/// the real range), or the message clap prints, with `hint` on its own line.
fn whole(text: &str, what: &str, max: u64, hint: &str) -> Result<u64, String> {
    let fail = |message: String| format!("{message}\n  hint: {hint}");
    let value: i128 = text
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| fail(format!("expected a whole number, found `{}`", bubblescope::formats::sanitize(text))))?;
    match u64::try_from(value) {
        Ok(v) if (1..=max).contains(&v) => Ok(v),
        _ if max == u64::from(u32::MAX) && value < 1 => Err(fail(format!("{what} must be at least 1, found {value}"))),
        _ if max == u64::from(u32::MAX) => Err(fail(format!("{what} must be at most {max}, found {value}"))),
        _ => Err(fail(format!("{what} must be between 1 and {max}, found {value}"))),
    }
}

/// Says on standard error when the run `--costs-from` read was disturbed: its passes far from
/// their stage's median, and why the replay at its fitted costs misses its step.
fn note_disturbed(run: &bubblescope::measured::MeasuredRun, path: &std::path::Path) {
    let fitted = run.fitted();
    if let Some(note) = fitted.outlier_note() {
        eprintln!("note: {}: {note}; `bubblescope trace {}` lists them", path.display(), path.display());
    }
    if let Ok(replay) = run.replay_fitted() {
        for note in &replay.notes {
            eprintln!("note: {}: {note}", path.display());
        }
    }
}

/// A `--mlp` value: gelu or swiglu (the core's reader; clap prints the message and its hint).
fn mlp_kind(text: &str) -> Result<bubblescope::model::Mlp, String> {
    bubblescope::model::Mlp::parse(text).map_err(|e| e.to_string())
}
