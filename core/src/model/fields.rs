//! What each model setting is: the hint its errors give and the largest value it takes.

use crate::error::{Field, ParamError};

/// What `field` of a model is, as the hint of its errors.
pub(crate) fn field_hint(field: Field) -> &'static str {
    match field {
        Field::Tflops => "tflops is the achieved TFLOP/s of the matmuls per GPU, in place of the GPU's peak × gemm-efficiency",
        Field::Bandwidth => "bandwidth is the achieved GB/s of every hop, in place of the GPU's links",
        Field::Gpu => "gpu is a GPU preset (`bubblescope costs --list`), default h100-sxm",
        Field::GpusPerNode => "gpus-per-node decides which hops cross nodes (default 8)",
        Field::GemmEfficiency => "gemm-efficiency is the fraction of the GPU's peak FLOP/s the matmuls reach (default 0.8; 0.5 to 0.8 is usual)",
        Field::MemoryEfficiency => "memory-efficiency is the fraction of HBM bandwidth the memory-bound kernels reach (default 0.64)",
        Field::Calibrate => "calibrate takes measured F,B,W of the median device's layers, in µs or with a unit: 18.5ms,18.1ms,9.3ms",
        Field::Latency => "latency is one hop's µs (default 5)",
        Field::Ffn => "ffn is the MLP's size as the model card gives it: with mlp gelu its width (default 4 × hidden), with mlp swiglu its intermediate size (default 8/3 × hidden)",
        Field::Mlp => "mlp is gelu (two matrices of width ffn, GPT-2) or swiglu (three of intermediate size ffn, Llama)",
        Field::KvHeads => "kv-heads is the key/value heads of grouped-query attention (default: heads; 8 for Llama 3); it must divide heads",
        Field::Tp => "tp is the tensor-parallel size of each pipeline stage (default 1), e.g. 8 for one node",
        Field::Dp => "dp is the number of data-parallel replicas of the pipeline (default 1)",
        Field::HeadDim => "head-dim is one attention head's width (default hidden / heads; Qwen3 128)",
        Field::Experts => "experts is the routed experts of each MoE layer (DeepSeek-V3 256, Mixtral 8)",
        Field::TopK => "top-k is how many routed experts each token uses (DeepSeek-V3 8, Mixtral 2); at most experts",
        Field::SharedExperts => "shared-experts is the experts every token uses beside its routed ones (DeepSeek-V3 1)",
        Field::ExpertFfn => "expert-ffn is each expert's intermediate size (DeepSeek-V3 2048; default ffn)",
        Field::DenseLayers => "dense-layers is how many leading layers stay dense (DeepSeek-V3 3)",
        Field::Ep => "ep is the expert-parallel degree: the routed experts split over ep data-parallel replicas (default 1); it divides experts and dp",
        Field::CapacityFactor => "capacity-factor multiplies the routed work (tokens padded to each expert's capacity); leave it out for dropless routing",
        Field::QLoraRank | Field::KvLoraRank | Field::QkRopeDim | Field::QkNopeDim | Field::VHeadDim => "multi-head latent attention: --kv-lora-rank sets it on (DeepSeek-V3: --q-lora-rank 1536 --kv-lora-rank 512 --qk-rope-dim 64 --qk-nope-dim 128 --v-head-dim 128)",
        Field::Mtp => "mtp is the multi-token-prediction layers beside the model, counted apart (DeepSeek-V3 1); a layout's `m` places one on a stage",
        _ => "give the model's real shape, or start from a preset (`bubblescope costs --list`)",
    }
}

/// The largest value a model size may take: far above any real model, low enough that every
/// derived number stays finite and meaningful.
pub(crate) fn model_size_limit(field: Field) -> u32 {
    match field {
        Field::Layers | Field::Heads | Field::KvHeads => 100_000,
        Field::Tp | Field::GpusPerNode => 1024,
        Field::Dp => 1_000_000,
        Field::Experts | Field::Ep => 100_000,
        Field::TopK | Field::SharedExperts | Field::Mtp => 1024,
        Field::DenseLayers => 100_000,
        Field::HeadDim
        | Field::QLoraRank
        | Field::KvLoraRank
        | Field::QkRopeDim
        | Field::QkNopeDim
        | Field::VHeadDim => 1_000_000,
        Field::ExpertFfn => 10_000_000,
        Field::Hidden | Field::MicroBatch => 1_000_000,
        Field::Ffn => 10_000_000,
        _ => 100_000_000,
    }
}

/// An efficiency is a fraction of a ceiling: above 0, at most 1.
///
/// # Errors
/// A [`ParamError`] on `field` otherwise.
pub(crate) fn check_efficiency(field: Field, value: f64) -> Result<(), ParamError> {
    if value > 0.0 && value <= 1.0 {
        return Ok(());
    }
    Err(ParamError::new(
        field,
        format!("{} must be above 0 and at most 1, found {}", field.name(), crate::units::short_number(value)),
    )
    .hint(field_hint(field)))
}
