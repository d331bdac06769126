//! Mixture-of-experts layers and multi-head latent attention (MLA): which layers are MoE, the
//! attention's weight shapes (MHA/GQA or MLA's down- and up-projections), the parameter counts
//! (total, active per token, MTP apart), the expert-parallel all-to-all's time, and the checks
//! of these settings. The roofline ([`super::roofline`]) prices the GEMMs these shapes give.
//!
//! Per MoE layer and microbatch of `T = B·S` tokens (hidden `H`, `E` routed experts of which a
//! token uses `k`, `s` shared experts, each expert of intermediate size `f`, MLP width `w =`
//! [`super::Mlp::width`]`(f)`, capacity factor `c`, 1 when dropless):
//!
//! | GEMM | tokens | weights (per EP rank) |
//! |---|---|---|
//! | router `H → E` | `T` | `H·E` |
//! | routed experts, up and down | `c·k·T` | `E/EP` experts of `2·H·w` |
//! | shared experts, up and down | `T` | `2·H·s·w` |
//!
//! With balanced routing every EP rank computes `c·k·T` routed tokens whatever EP is, so the
//! FLOPs per GPU do not depend on EP; the routed experts' weights (and their gradients and
//! optimizer state) do: `1/EP` of them per GPU. The all-to-all sends each routed token's
//! hidden vector out (dispatch) and back (combine): `c·k·T·H` elements each way, of which
//! `(EP−1)/EP` leave the GPU, in F and again in B ([`Model::a2a_micros`]).

use super::parallel::{collective_gbps, Precision};
use super::{Model, RankOrder};
use crate::error::{Field, ParamError};

/// The mixture-of-experts settings of a model; `experts == 0` is a dense model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Moe {
    /// Routed experts per MoE layer `E`; 0 means every layer is dense.
    pub experts: u32,
    /// Routed experts each token uses `k`; `None` is 1 with experts, and refused without.
    pub top_k: Option<u32>,
    /// Shared experts every token uses, each of the expert's size.
    pub shared_experts: u32,
    /// Each expert's intermediate size (as `ffn` is the dense MLP's); `None` is the dense `ffn`.
    pub expert_ffn: Option<u32>,
    /// The first layers that are dense (DeepSeek-V3: 3).
    pub dense_layers: u32,
    /// Expert-parallel degree: the routed experts split over this many GPUs.
    pub ep: u32,
    /// Routed work times this (tokens padded to each expert's capacity); `None` is dropless.
    pub capacity_factor: Option<f64>,
}

/// Multi-head latent attention's sizes as the user gave them; MLA is on when `kv_lora_rank`
/// is set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mla {
    /// The query's low-rank size; `None` projects the query directly from the hidden state.
    pub q_lora_rank: Option<u32>,
    /// The shared key/value latent's size.
    pub kv_lora_rank: Option<u32>,
    /// Each head's rotary query/key width; default half the head width.
    pub qk_rope_dim: Option<u32>,
    /// Each head's non-rotary query/key width; default the head width.
    pub qk_nope_dim: Option<u32>,
    /// Each head's value width; default the head width.
    pub v_head_dim: Option<u32>,
}

/// Parameters of the whole model (every GPU's together), as a model card counts them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamCount {
    /// Every weight of the main model: the embedding, the layers, the LM head.
    pub total: f64,
    /// Weights one token passes through: the embedding and head, attention, the dense MLPs,
    /// the router, its top-k routed experts and the shared experts.
    pub active: f64,
    /// The MTP layers' own weights (projection, norms, one layer each), apart from `total`.
    pub mtp_total: f64,
    /// The MTP layers' weights a token passes through, apart from `active`.
    pub mtp_active: f64,
}

impl Model {
    /// Whether any layer is a mixture of experts.
    pub fn is_moe(&self) -> bool {
        self.moe.experts > 0
    }

    /// Whether attention is multi-head latent attention.
    pub fn is_mla(&self) -> bool {
        self.mla.kv_lora_rank.is_some()
    }

    /// MoE layers among the `n` layers from layer `first` (0-based): those past the dense ones.
    pub fn moe_layers_in(&self, first: u32, n: u32) -> u32 {
        if !self.is_moe() {
            return 0;
        }
        let end = first.saturating_add(n);
        end.saturating_sub(first.max(self.moe.dense_layers))
    }

    /// Whether an MTP layer is an MoE layer (DeepSeek-V3's is: it repeats the main model's
    /// layer): when the model's last layer is.
    pub fn mtp_is_moe(&self) -> bool {
        self.is_moe() && self.moe.dense_layers < self.layers
    }

    /// Width of one attention head: `--head-dim`, or `H/A`.
    pub fn head_dim(&self) -> u32 {
        self.head_dim.unwrap_or(self.hidden / self.heads.max(1))
    }

    /// `A·d`: the query's width (the hidden size unless `--head-dim` says otherwise).
    pub(crate) fn attention_width(&self) -> f64 {
        match self.head_dim {
            None => f64::from(self.hidden),
            Some(d) => f64::from(d) * f64::from(self.heads),
        }
    }

    /// MLA's per-head widths: rotary and non-rotary query/key, and value.
    fn mla_dims(&self) -> (f64, f64, f64) {
        let d = self.head_dim();
        let m = &self.mla;
        let rope = m.qk_rope_dim.unwrap_or((d / 2).max(1));
        (f64::from(rope), f64::from(m.qk_nope_dim.unwrap_or(d)), f64::from(m.v_head_dim.unwrap_or(d)))
    }

    /// The attention's score and context widths over all heads: `A·d_qk` and `A·d_v`.
    pub(crate) fn score_widths(&self) -> (f64, f64) {
        if self.is_mla() {
            let (rope, nope, v) = self.mla_dims();
            let a = f64::from(self.heads);
            (a * (rope + nope), a * v)
        } else {
            (self.attention_width(), self.attention_width())
        }
    }

    /// The attention's weight matrices `(k, n)` (input × output width), one layer's, whole:
    /// QKV and out-projection; MLA's query down and up (or a plain query), key/value down
    /// (the latent and the shared rotary key), key/value up, out-projection.
    pub(crate) fn attention_shapes(&self) -> Vec<(f64, f64)> {
        let h = f64::from(self.hidden);
        if !self.is_mla() {
            let hd = self.attention_width();
            return vec![(h, hd * (1.0 + 2.0 * self.kv_ratio())), (hd, h)];
        }
        let (rope, nope, v) = self.mla_dims();
        let a = f64::from(self.heads);
        let kv = f64::from(self.mla.kv_lora_rank.unwrap_or(0));
        let mut shapes = match self.mla.q_lora_rank {
            Some(q) => vec![(h, f64::from(q)), (f64::from(q), a * (nope + rope))],
            None => vec![(h, a * (nope + rope))],
        };
        shapes.extend([(h, kv + rope), (kv, a * (nope + v)), (a * v, h)]);
        shapes
    }

    /// Parameters of the attention's weights in one layer, whole; MLA adds its two latent norms.
    pub(crate) fn attention_params(&self) -> f64 {
        let norms = if self.is_mla() {
            f64::from(self.mla.q_lora_rank.unwrap_or(0)) + f64::from(self.mla.kv_lora_rank.unwrap_or(0))
        } else {
            0.0
        };
        self.attention_shapes().iter().map(|(k, n)| k * n).sum::<f64>() + norms
    }

    /// Routed experts a token uses (`--top-k`, default 1).
    pub fn top_k(&self) -> u32 {
        self.moe.top_k.unwrap_or(1)
    }

    /// One expert's two-matrix MLP width ([`super::Mlp::width`] of `--expert-ffn`).
    pub(crate) fn expert_width(&self) -> f64 {
        self.mlp.width(self.moe.expert_ffn.unwrap_or_else(|| self.ffn()))
    }

    /// Routed tokens per token on each GPU: `c·k` (the capacity factor, 1 when dropless).
    pub(crate) fn routed_share(&self) -> f64 {
        self.moe.capacity_factor.unwrap_or(1.0) * f64::from(self.top_k())
    }

    /// The MLP width an MoE layer's token passes through: its routed experts (times the
    /// capacity factor) and the shared experts; what the activation memory follows.
    pub(crate) fn moe_active_width(&self) -> f64 {
        (self.routed_share() + f64::from(self.moe.shared_experts)) * self.expert_width()
    }

    /// An MoE layer's MLP parameters, whole: the router, `experts` routed experts and the
    /// shared ones (per GPU the caller takes `E/EP` routed experts and `1/t`).
    fn moe_mlp_params(&self, routed: f64) -> f64 {
        let (h, w) = (f64::from(self.hidden), self.expert_width());
        h * f64::from(self.moe.experts) + (routed + f64::from(self.moe.shared_experts)) * 2.0 * h * w
    }

    /// Parameters of one MoE layer one GPU holds: attention, norms, router and shared experts
    /// at `1/t`, the routed experts at `1/(t·EP)`.
    pub fn moe_layer_params(&self) -> f64 {
        let h = f64::from(self.hidden);
        let routed = f64::from(self.moe.experts) / f64::from(self.moe.ep.max(1));
        (self.attention_params() + 2.0 * h + self.moe_mlp_params(routed)) * self.per_gpu()
    }

    /// One layer's parameters as a model card counts them (RMSNorm, no biases): all of them,
    /// or those a token uses.
    pub(crate) fn card_layer_params(&self, moe: bool, active: bool) -> f64 {
        let h = f64::from(self.hidden);
        let mlp = if moe {
            let routed = if active { f64::from(self.top_k()) } else { f64::from(self.moe.experts) };
            self.moe_mlp_params(routed)
        } else {
            2.0 * h * self.mlp_width()
        };
        self.attention_params() + 2.0 * h + mlp
    }

    /// The whole model's parameters: total and active per token, the MTP layers apart.
    pub fn param_count(&self) -> ParamCount {
        let (h, v) = (f64::from(self.hidden), f64::from(self.vocab));
        let moe_layers = f64::from(self.moe_layers_in(0, self.layers));
        let dense_layers = f64::from(self.layers) - moe_layers;
        // Embedding, LM head (untied) and the final norm.
        let outside = 2.0 * v * h + h;
        let main = |active| {
            outside
                + dense_layers * self.card_layer_params(false, active)
                + moe_layers * self.card_layer_params(true, active)
        };
        // Each MTP layer: its 2H → H projection, three norms and one layer like the last.
        let mtp =
            |active| f64::from(self.mtp) * (2.0 * h * h + 3.0 * h + self.card_layer_params(self.mtp_is_moe(), active));
        ParamCount { total: main(false), active: main(true), mtp_total: mtp(false), mtp_active: mtp(true) }
    }

    /// Whether the EP group crosses nodes: its ranks are `EP` data-parallel replicas, spaced
    /// `t` apart under tp-dp-pp and `t·devices` apart under tp-pp-dp.
    pub fn ep_crosses_nodes(&self, devices: u32) -> bool {
        let t = u64::from(self.tp.max(1));
        let stride = match self.rank_order {
            RankOrder::TpDpPp => t,
            RankOrder::TpPpDp => t * u64::from(devices.max(1)),
        };
        let span = stride * u64::from(self.moe.ep.max(1));
        let per_node = u64::from(self.gpus_per_node.max(1));
        span > per_node || (self.moe.ep > 1 && per_node % span != 0)
    }

    /// µs of one MoE layer's expert-parallel all-to-all for one microbatch, in F, B and W:
    /// dispatch and combine in F and in B, each `c·k·T·H/t` elements (16-bit; the dispatch in
    /// 8-bit under `--precision fp8`, as DeepSeek-V3 sends it) of which `(EP−1)/EP` leave the
    /// GPU, over the NVLink fabric when the group fits in a node, else the network; 0 for EP 1.
    ///
    /// # Errors
    /// An unknown GPU.
    pub fn a2a_micros(&self, devices: u32) -> Result<[f64; 3], ParamError> {
        let ep = self.moe.ep.max(1);
        if !self.is_moe() || ep <= 1 {
            return Ok([0.0; 3]);
        }
        let gbps = collective_gbps(self.gpu()?, self.bandwidth, self.ep_crosses_nodes(devices));
        let elements = self.routed_share() * f64::from(self.micro_batch) * f64::from(self.seq) * f64::from(self.hidden);
        let out = elements * self.per_gpu() * (f64::from(ep) - 1.0) / f64::from(ep);
        let dispatch_bytes = if self.precision == Precision::Fp8 { 1.0 } else { 2.0 };
        let lat = crate::model::COLLECTIVE_LATENCY_US;
        let time = |bytes: f64| out * bytes / (gbps * 1e9) * 1e6 + lat;
        let pass = time(dispatch_bytes) + time(2.0);
        Ok([pass, pass, 0.0])
    }

    /// The MoE and MLA settings fit together: top-k within the experts, EP dividing the
    /// experts and the replicas, no expert size, dense layers or EP without experts, no MLA
    /// size without `--kv-lora-rank`.
    pub(crate) fn check_moe(&self) -> Result<(), ParamError> {
        let m = &self.moe;
        let e = m.experts;
        let without = |field: Field, given: bool| -> Result<(), ParamError> {
            if e == 0 && given {
                return Err(ParamError::new(field, format!("{} is set but the model has no experts", field.name()))
                    .hint(
                        "give --experts (routed experts per MoE layer), or drop the MoE settings for a dense model",
                    ));
            }
            Ok(())
        };
        without(Field::ExpertFfn, m.expert_ffn.is_some())?;
        without(Field::TopK, m.top_k.is_some())?;
        without(Field::SharedExperts, m.shared_experts > 0)?;
        without(Field::DenseLayers, m.dense_layers > 0)?;
        without(Field::Ep, m.ep > 1)?;
        without(Field::CapacityFactor, m.capacity_factor.is_some())?;
        if e > 0 && self.top_k() > e {
            return Err(ParamError::new(Field::TopK, format!("top-k {} is more than the {e} experts", self.top_k()))
                .hint(format!("a token uses top-k of the routed experts: pick top-k between 1 and {e}")));
        }
        if e > 0 && e % m.ep.max(1) != 0 {
            return Err(ParamError::new(Field::Ep, format!("ep {} does not divide the {e} experts", m.ep)).hint(
                format!("each expert-parallel rank holds an equal share of the experts: pick ep among {}", divisors(e)),
            ));
        }
        if m.ep > 1 && self.dp % m.ep != 0 {
            return Err(ParamError::new(
                Field::Ep,
                format!(
                    "ep {} does not divide the {} data-parallel replicas it splits the experts over",
                    m.ep, self.dp
                ),
            )
            .hint(format!(
                "give --dp a multiple of {} (DeepSeek-V3 trained EP 64 over DP 128), or a smaller --ep",
                m.ep
            )));
        }
        if e > 0 && m.dense_layers == self.layers {
            return Err(ParamError::new(
                Field::DenseLayers,
                format!(
                    "dense-layers {} makes every one of the {} layers dense, so the {e} experts (experts, top-k, …) are never used",
                    m.dense_layers, self.layers
                ),
            )
            .hint(format!(
                "give --dense-layers below {} so the layers after it are MoE layers, or drop --experts and the other MoE settings for a dense model",
                self.layers
            )));
        }
        if m.dense_layers > self.layers {
            return Err(ParamError::new(
                Field::DenseLayers,
                format!("dense-layers {} is more than the {} layers", m.dense_layers, self.layers),
            )
            .hint("dense-layers counts the first layers that stay dense: at most --layers"));
        }
        if let Some(c) = m.capacity_factor {
            if !c.is_finite() || !(1.0..=64.0).contains(&c) {
                return Err(ParamError::new(
                    Field::CapacityFactor,
                    format!("capacity-factor must be between 1 and 64, found {}", crate::units::short_number(c)),
                )
                .hint("leave --capacity-factor out for dropless routing; 1.0 to 1.5 is usual"));
            }
        }
        if !self.is_mla() {
            let given = [
                (Field::QLoraRank, self.mla.q_lora_rank),
                (Field::QkRopeDim, self.mla.qk_rope_dim),
                (Field::QkNopeDim, self.mla.qk_nope_dim),
                (Field::VHeadDim, self.mla.v_head_dim),
            ];
            if let Some((field, _)) = given.iter().find(|(_, v)| v.is_some()) {
                return Err(ParamError::new(
                    *field,
                    format!("{} is a multi-head latent attention size, but --kv-lora-rank is not set", field.name()),
                )
                .hint("MLA is on with --kv-lora-rank (DeepSeek-V3: 512); give it, or drop the MLA sizes"));
            }
        }
        Ok(())
    }
}

/// Up to six divisors of `n`, ascending ("1, 2, 4, 8, 16 or 32").
fn divisors(n: u32) -> String {
    let d: Vec<String> = (1..=n).filter(|d| n % d == 0).take(6).map(|d| d.to_string()).collect();
    d.join(", ")
}

/// Forward FLOPs per token of the main model (the MTP layers apart), counted from the
/// operators the roofline prices: the weight GEMMs (with the LM head) and the attention's
/// score and context products over the whole sequence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenFlops {
    /// Every matmul of the forward.
    pub forward: f64,
    /// The weight GEMMs and the LM head alone (no attention scores).
    pub matmuls: f64,
}

impl Model {
    /// FLOPs of the forward of a mean transformer layer for one microbatch, per GPU: the
    /// dense formula ([`Model::layer_flops`]) for a dense model with plain attention; else the
    /// roofline's operators, dense and MoE layers weighted by their counts.
    pub fn mean_layer_forward_flops(&self) -> f64 {
        if !self.is_moe() && !self.is_mla() && self.head_dim.is_none() {
            return self.layer_flops()[0];
        }
        let forward = |ops: &[super::roofline::Op]| super::roofline::flops(ops)[super::roofline::F];
        let layers = f64::from(self.layers.max(1));
        let moe = f64::from(self.moe_layers_in(0, self.layers));
        let moe_part = if moe > 0.0 { moe * forward(&self.moe_layer_ops()) } else { 0.0 };
        ((layers - moe) * forward(&self.layer_ops()) + moe_part) / layers
    }

    /// Forward FLOPs per token, whole (not per GPU), dense and MoE layers as many as there are.
    pub fn flops_per_token(&self) -> TokenFlops {
        use super::roofline::{Op, Term, F};
        let whole = Model { tp: 1, ..self.clone() };
        let tokens = f64::from(self.micro_batch) * f64::from(self.seq);
        let forward = |ops: &[Op], pick: &dyn Fn(Term) -> bool| -> f64 {
            ops.iter().filter(|o| o.pass == F && pick(o.term)).map(|o| o.flops).sum::<f64>() / tokens
        };
        let moe_layers = f64::from(self.moe_layers_in(0, self.layers));
        let dense_layers = f64::from(self.layers) - moe_layers;
        let (dense, moe, head) = (whole.layer_ops(), whole.moe_layer_ops(), whole.head_ops());
        let count = |pick: &dyn Fn(Term) -> bool| {
            dense_layers * forward(&dense, pick)
                + if moe_layers > 0.0 { moe_layers * forward(&moe, pick) } else { 0.0 }
                + forward(&head, pick)
        };
        TokenFlops { forward: count(&|_| true), matmuls: count(&|t| t != Term::Attention) }
    }
}
