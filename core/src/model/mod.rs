//! Costs from a transformer config and a GPU: what a real pipeline's stages cost. Uses the
//! schedule-free parts of the crate (params, errors); the simulator never reaches in.
//!
//! Per transformer layer and microbatch of `B` sequences of `S` tokens (hidden `H`, `A`
//! heads, `g` key/value heads, MLP width `FFN`; the Zero Bubble paper's Table 1, generalised):
//!
//! | pass | matmul FLOPs |
//! |---|---|
//! | F | `B·S·H·((4 + 4g/A)·H + 4·FFN + 4S)` |
//! | B | `B·S·H·((4 + 4g/A)·H + 4·FFN + 8S)` (`+ 4S` with FlashAttention, which recomputes) |
//! | W | `B·S·H·((4 + 4g/A)·H + 4·FFN)` |
//!
//! Times come from the roofline ([`roofline`]): each operator at the slower of its FLOPs at
//! the GPU's achieved matmul rate and its bytes at the achieved HBM bandwidth ([`gpu`],
//! [`hardware`]), or at efficiencies fitted to measured times ([`calibrate`]). The LM head
//! (`2·B·S·H·V` matmul FLOPs per pass) sits on the last stage, the embedding on the first.
//!
//! Activations (Korthikanti et al., 16-bit, no recompute), per layer: `mem-f = B·S·H·(18 −
//! 4(1 − g/A) + 4·FFN/H + 5·A·S/H)`, of which `mem-w = B·S·H·(16 − 4(1 − g/A) + 4·FFN/H)`
//! stays after B until W; FlashAttention drops the `5·A·S/H`. The LM head holds its input and
//! fp32 logits (`4·B·S·V`), the embedding its dropout mask. Parameters per layer: `(2 +
//! 2g/A)·H² + 2·H·FFN` weights plus biases and norms.
//!
//! Tensor parallelism `t`: every number is one GPU's, `1/t` of the stage's; each layer's
//! collectives take the ring cost on the node's link ([`parallel`]). A hop sends `2·B·S·H/t`
//! bytes per GPU ([`hardware::Hops`]). MTP layers cost a layer plus their projection, lookup
//! and head ([`Model::mtp_extra`]). MoE layers and latent attention go through the same
//! roofline (`moe.rs`). Depth: `docs/cost-model.md`.

pub mod calibrate;
mod derive;
mod fields;
pub(crate) use fields::model_size_limit;
pub mod gpu;
pub mod hardware;
mod holding;
mod layout;
mod mlp;
mod moe;
pub mod parallel;
pub mod presets;
mod rank_order;
pub mod roofline;
mod spec;
mod units;
mod vocab;

pub use calibrate::Calibration;
pub use derive::{Derived, PieceCosts, SplitVocab};
pub use gpu::{Gpu, DEFAULT_GPU, GPUS};
pub use hardware::{Efficiency, Hops, DEFAULT_EFFICIENCY};
pub use holding::{verdict, Holding};
pub use layout::{Layout, Piece, MAX_LAYOUT_STAGES};
pub use mlp::Mlp;
pub use moe::{Mla, Moe, ParamCount, TokenFlops};
pub use parallel::Precision;
pub use rank_order::RankOrder;
pub use roofline::{Breakdown, Term};
pub use spec::{model_field, unknown_preset, ModelSpec, MODEL_FIELDS};
pub use units::{parse_bytes, parse_limit, parse_memory, LimitError};
pub use vocab::{megatron_split, HeadPlacement, StageFlops};

use crate::error::{Field, ParamError};
use crate::trade::RecomputeShape;

/// Up to how many stages per device a model without a layout is also cut at whole layers
/// ([`Derived::finer`]); families with more chunks share pieces in proportion.
pub const MAX_CHUNKS_CUT: u32 = 8;
/// Default GPUs per node.
pub const DEFAULT_GPUS_PER_NODE: u32 = 8;
/// Default latency of one hop, µs.
pub const DEFAULT_LATENCY_US: f64 = 5.0;
/// Latency of one step of a collective's ring, µs.
pub const COLLECTIVE_LATENCY_US: f64 = 5.0;

/// A transformer and the hardware it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// Transformer layers `L`.
    pub layers: u32,
    /// Hidden size `H`.
    pub hidden: u32,
    /// Attention heads `A`.
    pub heads: u32,
    /// Key/value heads `g` (query groups of grouped-query attention); `None` means `A`.
    pub kv_heads: Option<u32>,
    /// Sequence length `S`.
    pub seq: u32,
    /// Sequences per microbatch `B`.
    pub micro_batch: u32,
    /// Vocabulary size `V`.
    pub vocab: u32,
    /// The MLP's size as the model card gives it: a GELU MLP's width, a SwiGLU MLP's
    /// intermediate size; `None` means [`Mlp::default_size`].
    pub ffn: Option<u32>,
    /// The MLP's kind.
    pub mlp: Mlp,
    /// The GPU, a key of [`GPUS`]; `None` means [`DEFAULT_GPU`].
    pub gpu: Option<String>,
    /// GPUs per node: which hops cross nodes.
    pub gpus_per_node: u32,
    /// Achieved TFLOP/s of the matrix multiplications, in place of the GPU's peak times the
    /// gemm efficiency.
    pub tflops: Option<f64>,
    /// Achieved GB/s of every hop, in place of the GPU's links.
    pub bandwidth: Option<f64>,
    /// Hop latency, µs.
    pub latency: f64,
    /// Fraction of peak FLOP/s the matmuls reach; `None` means the default.
    pub gemm_efficiency: Option<f64>,
    /// Fraction of HBM bandwidth the memory-bound kernels reach; `None` means the default.
    pub memory_efficiency: Option<f64>,
    /// How layers are cut into stages; `None` splits them evenly.
    pub layout: Option<String>,
    /// FlashAttention: no score matrices kept, scores recomputed in B.
    pub flash_attention: bool,
    /// Tensor-parallel size of each stage: costs are per GPU.
    pub tp: u32,
    /// Sequence parallelism beside tensor parallelism: the activations outside the matmuls
    /// split too, all-gather and reduce-scatter in place of all-reduce.
    pub sequence_parallel: bool,
    /// Tensor-parallel collectives overlapped with the matmuls (Megatron's
    /// `--tp-comm-overlap`, torchtitan's async TP).
    pub tp_overlap: bool,
    /// Number format of the weight matmuls.
    pub precision: Precision,
    /// Data-parallel replicas: with the rank order, which GPUs share a node.
    pub dp: u32,
    /// How ranks fill nodes after TP.
    pub rank_order: RankOrder,
    /// Width of one attention head; `None` means `H/A`.
    pub head_dim: Option<u32>,
    /// Mixture-of-experts layers ([`Moe`]); no experts is a dense model.
    pub moe: Moe,
    /// Multi-head latent attention's sizes; on when `kv_lora_rank` is set.
    pub mla: Mla,
    /// Multi-token-prediction layers, counted apart from the model's parameters (placed on a
    /// stage by a layout's `m`).
    pub mtp: u32,
}

impl Model {
    /// A model with the default hardware figures and an even split.
    pub fn new(layers: u32, hidden: u32, heads: u32, seq: u32, micro_batch: u32, vocab: u32) -> Model {
        Model {
            layers,
            hidden,
            heads,
            kv_heads: None,
            seq,
            micro_batch,
            vocab,
            ffn: None,
            mlp: Mlp::Gelu,
            gpu: None,
            gpus_per_node: DEFAULT_GPUS_PER_NODE,
            tflops: None,
            bandwidth: None,
            latency: DEFAULT_LATENCY_US,
            gemm_efficiency: None,
            memory_efficiency: None,
            layout: None,
            flash_attention: false,
            tp: 1,
            sequence_parallel: true,
            tp_overlap: false,
            precision: Precision::Bf16,
            dp: 1,
            rank_order: RankOrder::TpDpPp,
            head_dim: None,
            moe: Moe { ep: 1, ..Moe::default() },
            mla: Mla::default(),
            mtp: 0,
        }
    }

    /// The MLP's size as the model card gives it (default [`Mlp::default_size`]).
    pub fn ffn(&self) -> u32 {
        self.ffn.unwrap_or_else(|| self.mlp.default_size(self.hidden))
    }

    /// The width of the two-matrix MLP with this MLP's cost ([`Mlp::width`]): what the cost
    /// formulas take.
    pub fn mlp_width(&self) -> f64 {
        self.mlp.width(self.ffn())
    }

    /// Key/value heads `g` (default `A`: multi-head attention).
    pub fn kv_heads(&self) -> u32 {
        self.kv_heads.unwrap_or(self.heads)
    }

    /// `g/A`: the size of the K and V projections against Q's (1 without grouped-query
    /// attention).
    pub(crate) fn kv_ratio(&self) -> f64 {
        f64::from(self.kv_heads()) / f64::from(self.heads.max(1))
    }

    /// Checks every size is in range, the sizes fit together, and the hardware settings are
    /// known and in range.
    pub fn check(&self) -> Result<(), ParamError> {
        self.check_sizes()?;
        self.check_shape()?;
        self.check_hardware()?;
        self.check_parallel()?;
        self.check_moe()
    }

    /// Every size positive and below its limit.
    fn check_sizes(&self) -> Result<(), ParamError> {
        let sizes = [
            (Field::Layers, self.layers),
            (Field::Hidden, self.hidden),
            (Field::Heads, self.heads),
            (Field::KvHeads, self.kv_heads()),
            (Field::Seq, self.seq),
            (Field::MicroBatch, self.micro_batch),
            (Field::Vocab, self.vocab),
            (Field::Ffn, self.ffn()),
            (Field::Tp, self.tp),
            (Field::GpusPerNode, self.gpus_per_node),
            (Field::Dp, self.dp),
            (Field::Ep, self.moe.ep),
        ];
        // The MoE and MLA sizes, where given (0 experts or MTP layers is allowed: none).
        let optional = [
            (Field::HeadDim, self.head_dim),
            (Field::Experts, (self.moe.experts > 0).then_some(self.moe.experts)),
            (Field::TopK, self.moe.top_k),
            (Field::ExpertFfn, self.moe.expert_ffn),
            (Field::SharedExperts, (self.moe.shared_experts > 0).then_some(self.moe.shared_experts)),
            (Field::DenseLayers, (self.moe.dense_layers > 0).then_some(self.moe.dense_layers)),
            (Field::QLoraRank, self.mla.q_lora_rank),
            (Field::KvLoraRank, self.mla.kv_lora_rank),
            (Field::QkRopeDim, self.mla.qk_rope_dim),
            (Field::QkNopeDim, self.mla.qk_nope_dim),
            (Field::VHeadDim, self.mla.v_head_dim),
            (Field::Mtp, (self.mtp > 0).then_some(self.mtp)),
        ];
        let given = optional.into_iter().filter_map(|(f, v)| v.map(|v| (f, v)));
        for (field, v) in sizes.into_iter().chain(given) {
            let max = fields::model_size_limit(field);
            if v == 0 || v > max {
                return Err(ParamError::new(field, format!("{} must be between 1 and {max}, found {v}", field.name()))
                    .hint(fields::field_hint(field)));
            }
        }
        Ok(())
    }

    /// The sizes fit together: heads divide the hidden size, key/value heads the heads, and
    /// tensor parallelism every split dimension.
    fn check_shape(&self) -> Result<(), ParamError> {
        let (h, a, g, t) = (self.hidden, self.heads, self.kv_heads(), self.tp);
        if h % a != 0 {
            return Err(ParamError::new(
                Field::Heads,
                format!("heads {a} does not divide hidden {h}: each head takes an equal slice of the hidden size"),
            )
            .hint(format!(
                "pick heads that divide hidden {h}, e.g. {}; or a hidden size heads divides, e.g. {}",
                near_divisors(a, h),
                near_multiples(h, a)
            )));
        }
        if g > a || a % g != 0 {
            return Err(ParamError::new(
                Field::KvHeads,
                format!(
                    "kv-heads {g} does not divide heads {a}: each key/value head serves an equal group of query heads"
                ),
            )
            .hint(format!(
                "pick kv-heads among the divisors of heads{}, e.g. {} (a preset sets its own: the Llama presets 8)",
                if t > 1 { " that tp divides" } else { "" },
                divisors_hint(&[a], t)
            )));
        }
        let split = [
            (Field::Heads, a, "each GPU of a stage takes an equal part"),
            (Field::Hidden, h, "each GPU of a stage takes an equal part"),
            (Field::KvHeads, g, "each GPU of a stage takes whole key/value heads"),
            (Field::Ffn, self.ffn(), "each GPU of a stage takes an equal part of the MLP"),
        ];
        for (field, v, why) in split {
            if v % t != 0 {
                let other = if field == Field::Ffn {
                    format!("; or an ffn that tp divides, e.g. {}", near_multiples(v, t))
                } else {
                    String::new()
                };
                return Err(ParamError::new(Field::Tp, format!("tp {t} does not divide {} {v}: {why}", field.name()))
                    .hint(format!(
                        "pick a tp that divides heads, kv-heads, hidden and ffn, e.g. {}{other}",
                        divisors_hint(&[a, h, g, self.ffn()], 1)
                    )));
            }
        }
        Ok(())
    }

    /// The GPU is known; rates, efficiencies and the latency are in range; no two settings
    /// set the same rate.
    fn check_hardware(&self) -> Result<(), ParamError> {
        let gpu = self.gpu()?;
        let number = |v: f64| crate::units::short_number(v);
        let rates = [(Field::Tflops, self.tflops, gpu.peak_tflops), (Field::Bandwidth, self.bandwidth, 1e9)];
        for (field, value, max) in rates {
            let Some(v) = value else { continue };
            if !v.is_finite() || v <= 0.0 || v > max {
                let what = if field == Field::Tflops { format!("{}'s peak", gpu.key) } else { "1e9".to_string() };
                return Err(ParamError::new(
                    field,
                    format!(
                        "{} must be a positive number up to {} ({what}), found {}",
                        field.name(),
                        number(max),
                        number(v)
                    ),
                )
                .hint(fields::field_hint(field)));
            }
        }
        for (field, value) in
            [(Field::GemmEfficiency, self.gemm_efficiency), (Field::MemoryEfficiency, self.memory_efficiency)]
        {
            if let Some(v) = value {
                fields::check_efficiency(field, v)?;
            }
        }
        if self.tflops.is_some() && self.gemm_efficiency.is_some() {
            return Err(ParamError::new(Field::Tflops, "tflops and gemm-efficiency both set the matmul rate")
                .hint("give one: --tflops in TFLOP/s, or --gemm-efficiency as a fraction of the GPU's peak"));
        }
        if !self.latency.is_finite() || self.latency < 0.0 || self.latency > 1e9 {
            return Err(ParamError::new(
                Field::Latency,
                format!("latency must be between 0 and 1e9 µs, found {}", crate::units::short_number(self.latency)),
            )
            .hint("--latency is the time of one hop in µs (default 5)"));
        }
        Ok(())
    }

    /// `B·S·H` as a float.
    fn tokens_hidden(&self) -> f64 {
        f64::from(self.micro_batch) * f64::from(self.seq) * f64::from(self.hidden)
    }

    /// One GPU's part of a stage under tensor parallelism: `1/t`.
    pub(crate) fn per_gpu(&self) -> f64 {
        1.0 / f64::from(self.tp.max(1))
    }

    /// FLOPs of one transformer layer's F, B and W for one microbatch.
    pub fn layer_flops(&self) -> [f64; 3] {
        let (h, s, ffn) = (f64::from(self.hidden), f64::from(self.seq), self.mlp_width());
        let bsh = self.tokens_hidden();
        let weights = (4.0 + 4.0 * self.kv_ratio()) * h + 4.0 * ffn;
        let recompute = if self.flash_attention { 4.0 * s } else { 0.0 };
        let t = self.per_gpu();
        [bsh * (weights + 4.0 * s) * t, bsh * (weights + 8.0 * s + recompute) * t, bsh * weights * t]
    }

    /// Activation bytes one layer's forward stores, and what W still needs after B.
    pub fn layer_memory(&self) -> [f64; 2] {
        self.layer_memory_of(self.mlp_width())
    }

    /// Activation bytes one MoE layer's forward stores, and what W still needs after B: a
    /// layer whose MLP is as wide as what a token passes through, its routed experts (times
    /// the capacity factor) and the shared ones.
    pub fn moe_layer_memory(&self) -> [f64; 2] {
        self.layer_memory_of(self.moe_active_width())
    }

    /// A layer's activation bytes with an MLP of width `ffn`.
    fn layer_memory_of(&self, ffn: f64) -> [f64; 2] {
        let (h, s, a) = (f64::from(self.hidden), f64::from(self.seq), f64::from(self.heads));
        let bsh = self.tokens_hidden();
        let scores = if self.flash_attention { 0.0 } else { 5.0 * a * s / h };
        let t = self.per_gpu();
        // K and V take 4 of attention's 11 bytes per token and hidden unit, scaled by g/A.
        let kv = 4.0 * (1.0 - self.kv_ratio());
        // Without sequence parallelism, 10 of the 34 bytes (the norms' inputs and the
        // dropout masks and outputs around them) stay whole on every GPU (Korthikanti et al.).
        let whole = if self.sequence_parallel || self.tp <= 1 { 0.0 } else { 10.0 * (1.0 - t) };
        [bsh * ((18.0 - kv + 4.0 * ffn / h + scores) * t + whole), bsh * ((16.0 - kv + 4.0 * ffn / h) * t + whole)]
    }

    /// What full and selective recompute keep of a layer's activation and what their R pass
    /// costs, from the layer's sizes (Korthikanti et al.): full keeps the layer's input, 2
    /// bytes per token and hidden unit, and runs the forward again; selective drops the
    /// attention scores (none under FlashAttention, which already recomputes them) and runs
    /// their 4·s of the layer's forward FLOPs again.
    pub fn recompute_shapes(&self) -> (RecomputeShape, RecomputeShape) {
        let (h, s, a, ffn) = (f64::from(self.hidden), f64::from(self.seq), f64::from(self.heads), self.mlp_width());
        let kv = 4.0 * (1.0 - self.kv_ratio());
        let kept = 18.0 - kv + 4.0 * ffn / h;
        let scores = if self.flash_attention { 0.0 } else { 5.0 * a * s / h };
        let full = RecomputeShape { keep: (2.0 / (kept + scores)).min(1.0), redo: 1.0 };
        let selective = if scores > 0.0 {
            let weights = (4.0 + 4.0 * self.kv_ratio()) * h + 4.0 * ffn;
            RecomputeShape { keep: kept / (kept + scores), redo: 4.0 * s / (weights + 4.0 * s) }
        } else {
            RecomputeShape::NOTHING
        };
        (full, selective)
    }

    /// The GPU's host link, GB/s each way (the GPU preset's, or the default GPU's).
    pub fn host_gbps(&self) -> f64 {
        let key = self.gpu.as_deref().unwrap_or(gpu::DEFAULT_GPU);
        gpu::gpu(key).map_or(0.0, |g| g.host_gbps)
    }

    /// What prices recompute and offload on this model: its layers' shapes and host link.
    pub fn trade_pricing(&self) -> crate::trade::Pricing {
        crate::trade::Pricing::Model { shapes: self.recompute_shapes(), host_gbps: self.host_gbps() }
    }

    /// FLOPs of the LM head's F (and of its B, and of its W).
    pub fn head_flops(&self) -> f64 {
        2.0 * self.tokens_hidden() * f64::from(self.vocab) * self.per_gpu()
    }

    /// Bytes the LM head and loss store in F, and what W still needs after B.
    pub fn head_memory(&self) -> [f64; 2] {
        let tokens = f64::from(self.micro_batch) * f64::from(self.seq);
        let input = 2.0 * self.tokens_hidden();
        let t = self.per_gpu();
        [(input + 4.0 * tokens * f64::from(self.vocab)) * t, input * t]
    }

    /// Bytes the embedding stores in F (freed by B).
    pub fn embedding_memory(&self) -> f64 {
        self.tokens_hidden() * self.per_gpu()
    }

    /// Parameters of one transformer layer one GPU holds (`1/t` of them with tensor parallelism).
    pub fn layer_params(&self) -> f64 {
        if self.is_mla() || self.head_dim.is_some() {
            // Counted as the model cards count these models: RMSNorm, no biases.
            return self.card_layer_params(false, false) * self.per_gpu();
        }
        let (h, ffn) = (f64::from(self.hidden), self.mlp_width());
        let attention = 2.0 + 2.0 * self.kv_ratio();
        (attention * h * h + 2.0 * h * ffn + attention * h + ffn + h + 4.0 * h) * self.per_gpu()
    }

    /// What one MTP layer adds to a transformer layer: FLOPs of each of its F, B and W (its
    /// `2H → H` projection, `4·B·S·H²`, and its pass through the shared LM head, `2·B·S·H·V`),
    /// the bytes its F stores (the head's, the projection's `2H`-wide input, `4·B·S·H`, and
    /// its embedding lookup's `B·S·H`), those W still needs (the head's input and the
    /// projection's), and its parameters (the `2H²` projection and two norms). The embedding
    /// and head weights are shared with `E` and `L`, but a stage that runs MTP holds its own
    /// copy of the embedding, and of the head when it has no `L`, as Megatron-Core builds them
    /// there (`pre_process or mtp_process`, `post_process or mtp_process`; counted in
    /// [`Model::derive`]).
    pub(crate) fn mtp_extra(&self) -> [f64; 4] {
        let h = f64::from(self.hidden);
        let bsh = self.tokens_hidden();
        let t = self.per_gpu();
        let [hmf, hmw] = self.head_memory();
        let flops = 4.0 * bsh * h * t + self.head_flops();
        [flops, hmf + (4.0 + 1.0) * bsh * t, hmw + 4.0 * bsh * t, (2.0 * h * h + 2.0 * h) * t]
    }

    /// The layout: parsed from `layout`, or the even split.
    pub fn layout(&self, devices: u32) -> Result<Layout, ParamError> {
        match &self.layout {
            Some(spec) => Layout::parse(spec, self.layers, devices),
            None => Ok(Layout::even(self.layers, devices)),
        }
    }
}

/// The divisors of `of` nearest `value`, up to four, ascending ("8, 10, 20 or 25").
fn near_divisors(value: u32, of: u32) -> String {
    let mut d: Vec<u32> = (1..=of).filter(|d| of % d == 0).collect();
    crate::units::sort::sort_by_key(&mut d, |&x| (x.abs_diff(value), x));
    d.truncate(4);
    d.sort_unstable();
    or_list(&d)
}

/// The multiples of `step` nearest `value` below and above it ("992 or 1008").
fn near_multiples(value: u32, step: u32) -> String {
    let step = step.max(1);
    let below = value / step * step;
    let above = below.saturating_add(step);
    let list: Vec<u32> = [below, above].into_iter().filter(|&x| x > 0).collect();
    or_list(&list)
}

/// `a, b, c or d`.
fn or_list(items: &[u32]) -> String {
    match items {
        [] => "none".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// Up to four tensor-parallel sizes that divide both `heads` and `hidden`, for a hint.
/// The largest few numbers that divide every one of `values` and are multiples of
/// `multiple_of`, largest first ("none" when there is none).
fn divisors_hint(values: &[u32], multiple_of: u32) -> String {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let g = values.iter().fold(0, |a, &v| gcd(a, v));
    let step = multiple_of.max(1);
    let fits: Vec<String> =
        (1..=g).rev().filter(|d| g % d == 0 && d % step == 0).take(4).map(|d| d.to_string()).collect();
    if fits.is_empty() {
        "none: change tp first".to_string()
    } else {
        fits.join(", ")
    }
}

#[cfg(test)]
mod cost_tests;
#[cfg(test)]
mod moe_tests;
#[cfg(test)]
mod tests;
