//! A model as the user writes it: a preset and settings over it, each optional — the CLI's
//! model flags and the permalink's model keys read into this one type, and it resolves to a
//! [`Model`] in one place.

use std::fmt::Write as _;

use super::fields::field_hint;
use super::presets::{model_preset, model_presets};
use super::Model;
use crate::error::{Field, ParamError};
use crate::units::Units;

/// The longest layout text a spec keeps (a layout of many stages is long, but not unbounded).
pub const MAX_LAYOUT_TEXT: usize = 4096;

/// The model settings the user gave: a preset and any setting over it. Empty means the costs
/// are set by hand.
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct ModelSpec {
    /// Start from this preset (`--model`); the other settings override it.
    pub preset: Option<String>,
    /// Transformer layers (`--layers`).
    pub layers: Option<u32>,
    /// Hidden size (`--hidden`).
    pub hidden: Option<u32>,
    /// Attention heads (`--heads`).
    pub heads: Option<u32>,
    /// Key/value heads of grouped-query attention (`--kv-heads`); `None` keeps the preset's
    /// (every head without one).
    pub kv_heads: Option<u32>,
    /// Sequence length (`--seq`).
    pub seq: Option<u32>,
    /// Sequences per microbatch (`--micro-batch`).
    pub micro_batch: Option<u32>,
    /// Vocabulary size (`--vocab`).
    pub vocab: Option<u32>,
    /// The MLP's kind (`--mlp`); `None` keeps the preset's (GELU without one).
    pub mlp: Option<super::Mlp>,
    /// The MLP's size as the model card gives it (`--ffn`): GELU's width, SwiGLU's
    /// intermediate size.
    pub ffn: Option<u32>,
    /// Achieved TFLOP/s of the matmuls (`--tflops`).
    pub tflops: Option<f64>,
    /// Achieved GB/s of every hop (`--bandwidth`).
    pub bandwidth: Option<f64>,
    /// Hop latency, µs (`--latency`).
    pub latency: Option<f64>,
    /// Megatron layout or layers per share (`--layout`).
    pub layout: Option<String>,
    /// FlashAttention (`--flash-attention`); `None` keeps the preset's (off without one).
    pub flash_attention: Option<bool>,
    /// Tensor-parallel size with sequence parallelism (`--tp`); `None` is 1.
    pub tp: Option<u32>,
    /// The GPU (`--gpu`); `None` keeps the preset's (H100 SXM without one).
    pub gpu: Option<String>,
    /// GPUs per node (`--gpus-per-node`); `None` is 8.
    pub gpus_per_node: Option<u32>,
    /// Fraction of peak FLOP/s the matmuls reach (`--gemm-efficiency`).
    pub gemm_efficiency: Option<f64>,
    /// Fraction of HBM bandwidth the memory-bound kernels reach (`--memory-efficiency`).
    pub memory_efficiency: Option<f64>,
    /// Sequence parallelism (`--sequence-parallel`); `None` keeps the preset's (on without one).
    pub sequence_parallel: Option<bool>,
    /// TP collectives overlapped with the matmuls (`--tp-overlap`); `None` keeps the preset's.
    pub tp_overlap: Option<bool>,
    /// Number format of the matmuls (`--precision`); `None` keeps the preset's (bf16).
    pub precision: Option<super::Precision>,
    /// Data-parallel replicas (`--dp`); `None` keeps the preset's (1).
    pub dp: Option<u32>,
    /// How ranks fill nodes after TP (`--rank-order`); `None` keeps the preset's (tp-dp-pp).
    pub rank_order: Option<super::RankOrder>,
    /// Width of one attention head (`--head-dim`); `None` keeps the preset's (hidden / heads).
    pub head_dim: Option<u32>,
    /// Routed experts per MoE layer (`--experts`); `None` keeps the preset's (dense).
    pub experts: Option<u32>,
    /// Routed experts per token (`--top-k`).
    pub top_k: Option<u32>,
    /// Shared experts per MoE layer (`--shared-experts`).
    pub shared_experts: Option<u32>,
    /// Each expert's intermediate size (`--expert-ffn`).
    pub expert_ffn: Option<u32>,
    /// Leading dense layers of an MoE model (`--dense-layers`).
    pub dense_layers: Option<u32>,
    /// Expert-parallel degree (`--ep`).
    pub ep: Option<u32>,
    /// Expert capacity factor (`--capacity-factor`); `None` keeps the preset's (dropless).
    pub capacity_factor: Option<f64>,
    /// MLA's query rank (`--q-lora-rank`).
    pub q_lora_rank: Option<u32>,
    /// MLA's key/value latent rank (`--kv-lora-rank`): sets MLA on.
    pub kv_lora_rank: Option<u32>,
    /// MLA's rotary query/key width per head (`--qk-rope-dim`).
    pub qk_rope_dim: Option<u32>,
    /// MLA's non-rotary query/key width per head (`--qk-nope-dim`).
    pub qk_nope_dim: Option<u32>,
    /// MLA's value width per head (`--v-head-dim`).
    pub v_head_dim: Option<u32>,
    /// Multi-token-prediction layers, counted apart (`--mtp`).
    pub mtp: Option<u32>,
}

/// The settings a spec holds, as fields: their names are the CLI flags and URL keys. They are
/// the fields from [`Field::Model`] on: [`Field`] declares the model's settings last.
pub const MODEL_FIELDS: &[Field] = Field::ALL.split_at(Field::Model as usize).1;

/// A number setting of a [`ModelSpec`], to read or set.
enum Slot<'a> {
    /// A whole number (layers, sizes, tensor parallelism).
    Count(&'a mut Option<u32>),
    /// A rate (TFLOP/s, bandwidth, latency).
    Rate(&'a mut Option<f64>),
    /// A share above 0 and at most 1 (the efficiencies).
    Fraction(&'a mut Option<f64>),
}

impl ModelSpec {
    /// The spec of preset `key`, with nothing overridden.
    pub fn preset(key: &str) -> ModelSpec {
        ModelSpec { preset: Some(key.to_string()), ..ModelSpec::default() }
    }

    /// Whether any model setting is given (then costs come from the model).
    pub fn given(&self) -> bool {
        *self != ModelSpec::default()
    }

    /// What the numbers mean: µs and bytes when costs come from the model, cost units
    /// otherwise.
    pub fn units(&self) -> Units {
        if self.given() {
            Units::Model
        } else {
            Units::Cost
        }
    }

    /// The value of `field` as text (the URL value and the form's), if set.
    pub fn get(&self, field: Field) -> Option<String> {
        match field {
            Field::Model => self.preset.clone(),
            Field::Layout => self.layout.clone(),
            Field::FlashAttention => self.flash_attention.map(|on| if on { "1" } else { "0" }.to_string()),
            Field::SequenceParallel => self.sequence_parallel.map(|on| if on { "1" } else { "0" }.to_string()),
            Field::TpOverlap => self.tp_overlap.map(|on| if on { "1" } else { "0" }.to_string()),
            Field::Precision => self.precision.map(|p| p.name().to_string()),
            Field::RankOrder => self.rank_order.map(|o| o.name().to_string()),
            Field::Gpu => self.gpu.clone(),
            // Written whenever the size is, so that a link's ffn always says what it is (a
            // link with ffn and no mlp is read as a GELU width, as links were written before).
            Field::Mlp => self.mlp.or_else(|| self.ffn.map(|_| self.preset_mlp())).map(|m| m.name().to_string()),
            _ => {
                let mut spec = self.clone();
                match spec.slot(field)? {
                    Slot::Count(v) => v.map(|v| v.to_string()),
                    Slot::Rate(v) | Slot::Fraction(v) => v.map(|v| v.to_string()),
                }
            }
        }
    }

    /// The number setting `field` names: a whole number, a rate or a share.
    fn slot(&mut self, field: Field) -> Option<Slot<'_>> {
        let rate = match field {
            Field::Tflops => &mut self.tflops,
            Field::Bandwidth => &mut self.bandwidth,
            Field::Latency => &mut self.latency,
            Field::CapacityFactor => &mut self.capacity_factor,
            Field::GemmEfficiency => return Some(Slot::Fraction(&mut self.gemm_efficiency)),
            Field::MemoryEfficiency => return Some(Slot::Fraction(&mut self.memory_efficiency)),
            _ => {
                let count = match field {
                    Field::Layers => &mut self.layers,
                    Field::Hidden => &mut self.hidden,
                    Field::Heads => &mut self.heads,
                    Field::KvHeads => &mut self.kv_heads,
                    Field::Seq => &mut self.seq,
                    Field::MicroBatch => &mut self.micro_batch,
                    Field::Vocab => &mut self.vocab,
                    Field::Ffn => &mut self.ffn,
                    Field::Tp => &mut self.tp,
                    Field::GpusPerNode => &mut self.gpus_per_node,
                    Field::Dp => &mut self.dp,
                    Field::HeadDim => &mut self.head_dim,
                    Field::Experts => &mut self.experts,
                    Field::TopK => &mut self.top_k,
                    Field::SharedExperts => &mut self.shared_experts,
                    Field::ExpertFfn => &mut self.expert_ffn,
                    Field::DenseLayers => &mut self.dense_layers,
                    Field::Ep => &mut self.ep,
                    Field::QLoraRank => &mut self.q_lora_rank,
                    Field::KvLoraRank => &mut self.kv_lora_rank,
                    Field::QkRopeDim => &mut self.qk_rope_dim,
                    Field::QkNopeDim => &mut self.qk_nope_dim,
                    Field::VHeadDim => &mut self.v_head_dim,
                    Field::Mtp => &mut self.mtp,
                    _ => return None,
                };
                return Some(Slot::Count(count));
            }
        };
        Some(Slot::Rate(rate))
    }

    /// Sets `field` from text (`""` unsets it).
    ///
    /// # Errors
    /// A [`ParamError`] on `field` when the text is not what the setting takes; the spec is
    /// left as it was.
    pub fn set(&mut self, field: Field, text: &str) -> Result<(), ParamError> {
        let t = text.trim();
        let count = |t: &str| -> Result<Option<u32>, ParamError> {
            if t.is_empty() {
                return Ok(None);
            }
            // A whole number past `u32` is too large, not malformed: say so.
            let too_large = t.len() > 9 && t.bytes().all(|b| b.is_ascii_digit()) && t.parse::<u32>().is_err();
            if too_large {
                let max = super::fields::model_size_limit(field);
                return Err(ParamError::new(
                    field,
                    format!("{} must be between 1 and {max}, found {}", field.name(), short(t)),
                )
                .hint(field_hint(field)));
            }
            // Counts of things a model may have none of: 0 overrides a preset's.
            let zero_ok = matches!(field, Field::SharedExperts | Field::DenseLayers | Field::Mtp);
            let what = if zero_ok { "a whole number" } else { "a positive integer" };
            t.parse::<u32>().ok().filter(|v| *v > 0 || zero_ok).map(Some).ok_or_else(|| {
                ParamError::new(field, format!("{} must be {what}, found `{}`", field.name(), short(t)))
                    .hint(field_hint(field))
            })
        };
        let rate = |t: &str| -> Result<Option<f64>, ParamError> {
            if t.is_empty() {
                return Ok(None);
            }
            t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).map(Some).ok_or_else(|| {
                ParamError::new(field, format!("{} must be a non-negative number, found `{}`", field.name(), short(t)))
                    .hint(field_hint(field))
            })
        };
        let text_value = |t: &str| (!t.is_empty()).then(|| t.to_string());
        let fraction = |t: &str| -> Result<Option<f64>, ParamError> {
            if t.is_empty() {
                return Ok(None);
            }
            let v = t.parse::<f64>().map_err(|_| {
                ParamError::new(
                    field,
                    format!("{} must be a number above 0 and at most 1, found `{}`", field.name(), short(t)),
                )
                .hint(field_hint(field))
            })?;
            super::fields::check_efficiency(field, v).map(|()| Some(v))
        };
        match field {
            Field::Model => {
                if !t.is_empty() && model_preset(t).is_none() {
                    return Err(unknown_preset(t));
                }
                self.preset = text_value(t);
            }
            Field::Gpu => {
                if !t.is_empty() && super::gpu::gpu(t).is_none() {
                    return Err(super::gpu::unknown_gpu(t));
                }
                self.gpu = text_value(t);
            }
            Field::Mlp => {
                self.mlp = if t.is_empty() { None } else { Some(super::Mlp::parse(t)?) };
            }
            Field::Layout => {
                if t.len() > MAX_LAYOUT_TEXT {
                    return Err(ParamError::new(
                        field,
                        format!("layout is {} characters long, at most {MAX_LAYOUT_TEXT} are read", t.len()),
                    )
                    .hint("use repetition: `Et*3|(t*4|)*6t*3L`"));
                }
                self.layout = text_value(t);
            }
            Field::FlashAttention | Field::SequenceParallel | Field::TpOverlap => {
                let value = match t.to_ascii_lowercase().as_str() {
                    "" => None,
                    "1" | "true" | "on" | "yes" => Some(true),
                    "0" | "false" | "off" | "no" => Some(false),
                    _ => {
                        return Err(ParamError::new(
                            field,
                            format!("{} must be on or off, found `{}`", field.name(), short(t)),
                        )
                        .hint("write on or off (or 1 or 0, true or false)"));
                    }
                };
                match field {
                    Field::SequenceParallel => self.sequence_parallel = value,
                    Field::TpOverlap => self.tp_overlap = value,
                    _ => self.flash_attention = value,
                }
            }
            Field::Precision => {
                self.precision = if t.is_empty() { None } else { Some(super::Precision::parse(t)?) };
            }
            Field::RankOrder => {
                self.rank_order = if t.is_empty() { None } else { Some(super::RankOrder::parse(t)?) };
            }
            _ => match self.slot(field) {
                Some(Slot::Count(v)) => *v = count(t)?,
                Some(Slot::Rate(v)) => *v = rate(t)?,
                Some(Slot::Fraction(v)) => *v = fraction(t)?,
                None => {
                    return Err(ParamError::new(field, format!("{} is not a model setting", field.name()))
                        .hint(format!("model settings: {}", field_names())));
                }
            },
        }
        Ok(())
    }

    /// Refuses settings without a preset that give none of the model's sizes either (only
    /// how it runs: `dp`, `tp`, `gpu` …): the first such setting needs a model, said as such
    /// rather than as the first size missing.
    fn check_names_a_model(&self) -> Result<(), ParamError> {
        const SIZES: [Field; 6] =
            [Field::Layers, Field::Hidden, Field::Heads, Field::Seq, Field::MicroBatch, Field::Vocab];
        if SIZES.iter().any(|f| self.get(*f).is_some()) {
            return Ok(());
        }
        let Some(given) = MODEL_FIELDS.iter().find(|f| self.get(**f).is_some()) else { return Ok(()) };
        Err(ParamError::new(*given, format!("{} needs a model to apply to, but no model is given", given.name()))
            .hint("start from a preset, e.g. model llama-3-8b (`bubblescope costs --list` lists them)")
            .hint("or describe one: layers, hidden, heads, seq, micro-batch and vocab"))
    }

    /// The model: the preset's, then every given setting over it.
    ///
    /// # Errors
    /// A [`ParamError`] for an unknown preset or a size that neither the preset nor the
    /// settings give. The model's own checks run in [`Model::derive`].
    pub fn resolve(&self) -> Result<Model, ParamError> {
        let base = match &self.preset {
            Some(key) => Some(model_preset(key).ok_or_else(|| unknown_preset(key))?.model),
            None => None,
        };
        let b = base.as_ref();
        if b.is_none() {
            self.check_names_a_model()?;
        }
        let required = |field: Field, value: Option<u32>, preset: Option<u32>| {
            value.or(preset).ok_or_else(|| {
                ParamError::new(field, format!("{} is required to derive costs from a model", field.name()))
                    .hint("give layers, hidden, heads, seq, micro-batch and vocab, or start from a preset (`bubblescope costs --list`)")
            })
        };
        let mut m = Model::new(
            required(Field::Layers, self.layers, b.map(|m| m.layers))?,
            required(Field::Hidden, self.hidden, b.map(|m| m.hidden))?,
            required(Field::Heads, self.heads, b.map(|m| m.heads))?,
            required(Field::Seq, self.seq, b.map(|m| m.seq))?,
            required(Field::MicroBatch, self.micro_batch, b.map(|m| m.micro_batch))?,
            required(Field::Vocab, self.vocab, b.map(|m| m.vocab))?,
        );
        if let Some(base) = b {
            m.ffn = base.ffn;
            m.mlp = base.mlp;
            m.kv_heads = base.kv_heads;
            m.tflops = base.tflops;
            m.bandwidth = base.bandwidth;
            m.latency = base.latency;
            m.gpu.clone_from(&base.gpu);
            m.gpus_per_node = base.gpus_per_node;
            m.gemm_efficiency = base.gemm_efficiency;
            m.memory_efficiency = base.memory_efficiency;
            m.layout.clone_from(&base.layout);
            m.flash_attention = base.flash_attention;
            m.tp = base.tp;
            m.sequence_parallel = base.sequence_parallel;
            m.tp_overlap = base.tp_overlap;
            m.precision = base.precision;
            m.dp = base.dp;
            m.rank_order = base.rank_order;
            m.head_dim = base.head_dim;
            m.moe.clone_from(&base.moe);
            m.mla.clone_from(&base.mla);
            m.mtp = base.mtp;
        }
        self.resolve_moe(&mut m);
        m.dp = self.dp.unwrap_or(m.dp);
        m.rank_order = self.rank_order.unwrap_or(m.rank_order);
        m.sequence_parallel = self.sequence_parallel.unwrap_or(m.sequence_parallel);
        m.tp_overlap = self.tp_overlap.unwrap_or(m.tp_overlap);
        m.precision = self.precision.unwrap_or(m.precision);
        m.flash_attention = self.flash_attention.unwrap_or(m.flash_attention);
        m.tp = self.tp.unwrap_or(m.tp);
        m.ffn = self.ffn.or(m.ffn);
        m.mlp = self.mlp.unwrap_or(m.mlp);
        m.kv_heads = self.kv_heads.or(m.kv_heads);
        m.tflops = self.tflops.or(m.tflops);
        m.bandwidth = self.bandwidth.or(m.bandwidth);
        m.latency = self.latency.unwrap_or(m.latency);
        if self.gpu.is_some() {
            m.gpu.clone_from(&self.gpu);
        }
        m.gpus_per_node = self.gpus_per_node.unwrap_or(m.gpus_per_node);
        m.gemm_efficiency = self.gemm_efficiency.or(m.gemm_efficiency);
        m.memory_efficiency = self.memory_efficiency.or(m.memory_efficiency);
        if self.layout.is_some() {
            m.layout.clone_from(&self.layout);
        }
        Ok(m)
    }

    /// The MoE, MLA and MTP settings given, over the preset's.
    fn resolve_moe(&self, m: &mut Model) {
        m.head_dim = self.head_dim.or(m.head_dim);
        m.moe.experts = self.experts.unwrap_or(m.moe.experts);
        m.moe.top_k = self.top_k.or(m.moe.top_k);
        m.moe.shared_experts = self.shared_experts.unwrap_or(m.moe.shared_experts);
        m.moe.expert_ffn = self.expert_ffn.or(m.moe.expert_ffn);
        m.moe.dense_layers = self.dense_layers.unwrap_or(m.moe.dense_layers);
        m.moe.ep = self.ep.unwrap_or(m.moe.ep);
        m.moe.capacity_factor = self.capacity_factor.or(m.moe.capacity_factor);
        let mla = &mut m.mla;
        mla.q_lora_rank = self.q_lora_rank.or(mla.q_lora_rank);
        mla.kv_lora_rank = self.kv_lora_rank.or(mla.kv_lora_rank);
        mla.qk_rope_dim = self.qk_rope_dim.or(mla.qk_rope_dim);
        mla.qk_nope_dim = self.qk_nope_dim.or(mla.qk_nope_dim);
        mla.v_head_dim = self.v_head_dim.or(mla.v_head_dim);
        m.mtp = self.mtp.unwrap_or(m.mtp);
    }

    /// The note for multi-token-prediction layers given (`mtp`) that no stage of `derived`
    /// runs: only a layout's `m` places one, so without it they change no time or memory
    /// (only the parameter count). Opens with the setting's name; `None` when none is given
    /// or a stage runs one.
    pub fn unplaced_mtp_note(&self, derived: &super::Derived) -> Option<String> {
        let n = self.mtp.filter(|n| *n > 0)?;
        if derived.pieces.iter().any(|p| p.piece.mtp > 0) {
            return None;
        }
        let layers = if n == 1 { "layer".to_string() } else { format!("{n} layers") };
        Some(format!(
            "mtp {n} runs on no stage: only a layout's `m` places a multi-token-prediction layer, so the MTP {layers} change no time or memory here (only the parameter count)\n  hint: add {} after the last `t` of --layout (as Megatron-Core's --pipeline-model-parallel-layout), or drop --mtp",
            if n == 1 { "one `m`".to_string() } else { format!("{n} `m`s") }
        ))
    }

    /// The MLP kind of the spec's preset (GELU without one).
    fn preset_mlp(&self) -> super::Mlp {
        self.preset.as_deref().and_then(model_preset).map_or(super::Mlp::Gelu, |p| p.model.mlp)
    }

    /// The spec as URL pairs (`key=value`, in [`MODEL_FIELDS`] order, set values only).
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        MODEL_FIELDS.iter().filter_map(|f| self.get(*f).map(|v| (f.name(), v))).collect()
    }

    /// The spec as CLI flags, for "the same in the CLI" lines.
    pub fn cli_flags(&self) -> String {
        let mut out = String::new();
        for (key, value) in self.query_pairs() {
            if [Field::FlashAttention, Field::SequenceParallel, Field::TpOverlap].iter().any(|f| f.name() == key) {
                let _ = write!(out, " --{key} {}", if value == "1" { "true" } else { "false" });
                continue;
            }
            let _ = write!(out, " --{key} {}", crate::units::shell_word(&value));
        }
        out.trim_start().to_string()
    }
}

/// The model field called `name` (a CLI flag without `--`, a URL key).
pub fn model_field(name: &str) -> Option<Field> {
    Field::from_name(name).filter(|f| MODEL_FIELDS.contains(f))
}

fn field_names() -> String {
    MODEL_FIELDS.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

fn short(t: &str) -> String {
    crate::units::clean_text(t).chars().take(40).collect()
}

/// The error for a preset key that does not exist, listing those that do.
pub fn unknown_preset(key: &str) -> ParamError {
    let keys: Vec<&str> = model_presets().iter().map(|p| p.key).collect();
    ParamError::new(Field::Model, format!("unknown model preset `{}`", short(key)))
        .hint(format!("expected one of: {}", keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_resolves_to_its_model_and_settings_override_it() {
        for p in model_presets() {
            assert_eq!(ModelSpec::preset(p.key).resolve().unwrap(), p.model, "{}", p.key);
        }
        let spec = ModelSpec { seq: Some(2048), layout: Some("2,2".into()), ..ModelSpec::preset("llama-3-8b") };
        let m = spec.resolve().unwrap();
        assert_eq!((m.seq, m.layers, m.layout.as_deref()), (2048, 32, Some("2,2")));
    }

    #[test]
    fn missing_sizes_and_unknown_presets_name_the_setting() {
        let e = ModelSpec { layers: Some(4), ..ModelSpec::default() }.resolve().unwrap_err();
        assert_eq!(e.field, Field::Hidden);
        assert!(e.to_string().contains("hidden is required"), "{e}");
        let e = ModelSpec::preset("gpt-17").resolve().unwrap_err();
        assert_eq!(e.field, Field::Model);
        assert!(e.to_string().contains("llama-3-8b"), "{e}");
    }

    #[test]
    fn set_and_get_round_trip_every_field_and_bad_text_changes_nothing() {
        let mut spec = ModelSpec::default();
        let values = [
            "llama-3-8b",
            "32",
            "4096",
            "32",
            "8",
            "8192",
            "1",
            "128256",
            "swiglu",
            "14336",
            "400",
            "50",
            "5",
            "Et*3|t*4|t*4|t*3L",
            "1",
            "2",
            "a100-80gb",
            "4",
            "0.7",
            "0.6",
            "0",
            "1",
            "fp8",
            "24",
            "tp-pp-dp",
            "128",
            "256",
            "8",
            "1",
            "2048",
            "3",
            "64",
            "1.25",
            "1536",
            "512",
            "64",
            "128",
            "128",
            "1",
        ];
        assert_eq!(values.len(), MODEL_FIELDS.len());
        for (field, v) in MODEL_FIELDS.iter().zip(values) {
            spec.set(*field, v).unwrap();
            assert_eq!(spec.get(*field).as_deref(), Some(v));
        }
        let before = spec.clone();
        for (field, bad) in [
            (Field::Layers, "0"),
            (Field::Hidden, "-1"),
            (Field::Tflops, "NaN"),
            (Field::Model, "x"),
            (Field::Gpu, "a100"),
            (Field::GemmEfficiency, "1.5"),
            (Field::MemoryEfficiency, "0"),
            (Field::GpusPerNode, "0"),
        ] {
            let e = spec.set(field, bad).unwrap_err();
            assert_eq!(e.field, field);
            assert!(!e.hints.is_empty(), "{e}");
        }
        assert!(spec.set(Field::F, "1").is_err());
        assert_eq!(spec, before);
        spec.set(Field::Layers, "").unwrap();
        assert_eq!(spec.layers, None);
        assert!(!ModelSpec::default().given() && spec.given());
    }

    #[test]
    fn every_model_field_is_a_field_by_name() {
        assert_eq!(MODEL_FIELDS.first(), Some(&Field::Model));
        for &f in MODEL_FIELDS {
            assert_eq!(Field::from_name(f.name()), Some(f), "{}", f.name());
            assert_eq!(model_field(f.name()), Some(f));
        }
        assert_eq!(model_field("f"), None);
    }

    #[test]
    fn flash_attention_follows_the_preset_unless_set() {
        assert!(ModelSpec::preset("llama-3-8b").resolve().unwrap().flash_attention);
        assert!(!ModelSpec::preset("zb-1.5b").resolve().unwrap().flash_attention);
        let off = ModelSpec { flash_attention: Some(false), ..ModelSpec::preset("llama-3-8b") };
        assert!(!off.resolve().unwrap().flash_attention);
        let mut spec = ModelSpec::default();
        spec.set(Field::FlashAttention, "true").unwrap();
        assert_eq!(spec.get(Field::FlashAttention).as_deref(), Some("1"));
        assert!(spec.set(Field::FlashAttention, "maybe").is_err());
    }

    #[test]
    fn cli_flags_quote_layouts() {
        let spec = ModelSpec { layout: Some("Et|tL".into()), ..ModelSpec::preset("zb-1.5b") };
        assert_eq!(spec.cli_flags(), "--model zb-1.5b --layout 'Et|tL'");
    }
}
