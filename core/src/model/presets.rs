//! Real models: the Zero Bubble paper's four and today's common shapes.

use super::Model;

/// A named model on a named number of devices.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelPreset {
    /// Stable key (URL `model=` and CLI `--model`).
    pub key: &'static str,
    /// Display name.
    pub title: &'static str,
    /// Where the shape comes from, and what was assumed.
    pub source: &'static str,
    /// The model and hardware.
    pub model: Model,
    /// Pipeline devices it is usually run on.
    pub devices: u32,
    /// Microbatches per step it is usually run with.
    pub microbatches: u32,
    /// The measured run it reproduces, for presets that are one.
    pub run: Option<PresetRun>,
}

/// A published run's whole configuration beside its model: what it ran and what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct PresetRun {
    /// The schedule family.
    pub schedule: &'static str,
    /// Chunks per device (interleaved), if any.
    pub chunks: Option<u32>,
    /// Data-parallel replicas.
    pub dp: u32,
    /// ZeRO stage.
    pub zero: u32,
    /// Sequences per step over every replica.
    pub global_batch: u32,
    /// Recompute (`full`, `selective`), if any.
    pub recompute: Option<&'static str>,
    /// The measured step, µs.
    pub measured_step: f64,
}

/// The Zero Bubble paper's Table 3 models (sequence 1024, GPT-2's 50,257-token vocabulary,
/// layers padded to the count their efficiency script uses) on the A100 SXM 80GB they were
/// profiled on. (The runs had two layers fewer, one fewer on the first and on the last stage;
/// zb-v's heuristic cannot schedule stages that unequal, so the presets keep the padded count.
/// `docs/cost-model.md`'s fidelity rows give the runs' own layouts.)
fn zero_bubble(layers: u32, heads: u32, hidden: u32, micro_batch: u32) -> Model {
    Model { gpu: Some("a100-80gb".to_string()), ..Model::new(layers, hidden, heads, 1024, micro_batch, 50_257) }
}

/// A Llama 3 model: SwiGLU of the model card's intermediate size (three `H × intermediate`
/// matrices, costed as two of width `1.5 × intermediate`, [`super::Mlp::width`]); 8 key/value heads
/// (grouped-query attention); trained with FlashAttention; on H100 SXM.
fn llama(layers: u32, hidden: u32, heads: u32, intermediate: u32, seq: u32, vocab: u32) -> Model {
    Model {
        ffn: Some(intermediate),
        mlp: super::Mlp::Swiglu,
        kv_heads: Some(8),
        flash_attention: true,
        gpu: Some(super::DEFAULT_GPU.to_string()),
        ..Model::new(layers, hidden, heads, seq, 1, vocab)
    }
}

/// A Megatron-LM SC21 Table 1 model (Narayanan et al. 2021; `examples/academic_paper_scripts/
/// sc21/run_table_1.sh`): GPT, sequence 2048, vocabulary 51,200, fp16, TP 8 without sequence
/// parallelism (which came later), A100 SXM 80GB.
fn sc21(layers: u32, hidden: u32, heads: u32, micro_batch: u32) -> Model {
    Model {
        gpu: Some("a100-80gb".to_string()),
        tp: 8,
        sequence_parallel: false,
        precision: super::Precision::Fp16,
        ..Model::new(layers, hidden, heads, 2048, micro_batch, 51_200)
    }
}

/// The step SC21's eq. (3) gives from a measured TFLOP/s per GPU: `96·B·s·l·h²·(1 + s/6h +
/// V/16lh)` FLOPs over the GPUs.
fn sc21_step(layers: u32, hidden: u32, batch: u32, gpus: u32, tflops: f64) -> f64 {
    let (l, h, b) = (f64::from(layers), f64::from(hidden), f64::from(batch));
    let (s, v) = (2048.0, 51_200.0);
    let flops = 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
    flops / (f64::from(gpus) * tflops * 1e12) * 1e6
}

/// One SC21 Table 1 row with pipeline parallelism.
#[allow(clippy::too_many_arguments)]
fn sc21_preset(
    key: &'static str,
    title: &'static str,
    (layers, hidden, heads, micro_batch): (u32, u32, u32, u32),
    (pp, chunks, dp, global_batch): (u32, Option<u32>, u32, u32),
    tflops: f64,
) -> ModelPreset {
    let gpus = 8 * pp * dp;
    ModelPreset {
        key,
        title,
        source: "Narayanan et al. SC21, Table 1; Megatron-LM examples/academic_paper_scripts/sc21/run_table_1.sh (TP 8, fp16, sequence 2048, vocabulary 51,200, full uniform recompute, A100 80GB)",
        model: Model { dp, ..sc21(layers, hidden, heads, micro_batch) },
        devices: pp,
        microbatches: global_batch / (dp * micro_batch),
        run: Some(PresetRun {
            schedule: if chunks.is_some() { "interleaved-1f1b" } else { "1f1b" },
            chunks,
            dp,
            zero: 0,
            global_batch,
            recompute: Some("full"),
            measured_step: sc21_step(layers, hidden, global_batch, gpus, tflops),
        }),
    }
}

/// Every model preset, in menu order.
pub fn model_presets() -> Vec<ModelPreset> {
    vec![
        ModelPreset {
            key: "zb-1.5b",
            title: "Zero Bubble 1.5B (24 layers, H 2304)",
            source: "Qi et al. ICLR 2024, Table 3: 22 layers padded to 24, 24 heads, microbatch 6, A100 SXM 80GB",
            model: zero_bubble(24, 24, 2304, 6),
            devices: 8,
            microbatches: 24,
            run: None,
        },
        ModelPreset {
            key: "zb-6.2b",
            title: "Zero Bubble 6.2B (32 layers, H 4096)",
            source: "Qi et al. ICLR 2024, Table 3: 30 layers padded to 32, 32 heads, microbatch 3, A100 SXM 80GB",
            model: zero_bubble(32, 32, 4096, 3),
            devices: 8,
            microbatches: 24,
            run: None,
        },
        ModelPreset {
            key: "zb-14.6b",
            title: "Zero Bubble 14.6B (48 layers, H 5120)",
            source: "Qi et al. ICLR 2024, Table 3: 46 layers padded to 48, 40 heads, microbatch 1, A100 SXM 80GB",
            model: zero_bubble(48, 40, 5120, 1),
            devices: 16,
            microbatches: 48,
            run: None,
        },
        ModelPreset {
            key: "zb-28.3b",
            title: "Zero Bubble 28.3B (64 layers, H 6144)",
            source: "Qi et al. ICLR 2024, Table 3: 62 layers padded to 64, 48 heads, microbatch 1, A100 SXM 80GB",
            model: zero_bubble(64, 48, 6144, 1),
            devices: 32,
            microbatches: 96,
            run: None,
        },
        ModelPreset {
            key: "llama-3-8b",
            title: "Llama 3 8B (32 layers, H 4096, 128k vocabulary)",
            source: "Meta Llama 3: 32 layers, 32 heads (8 key/value), SwiGLU 14336, vocabulary 128256, sequence 8192, FlashAttention, H100 SXM",
            model: llama(32, 4096, 32, 14_336, 8192, 128_256),
            devices: 8,
            microbatches: 32,
            run: None,
        },
        ModelPreset {
            key: "llama-3-70b",
            title: "Llama 3 70B (80 layers, H 8192)",
            source: "Meta Llama 3: 80 layers, 64 heads (8 key/value), SwiGLU 28672, vocabulary 128256, sequence 8192, FlashAttention, H100 SXM",
            model: llama(80, 8192, 64, 28_672, 8192, 128_256),
            devices: 16,
            microbatches: 64,
            run: None,
        },
        ModelPreset {
            key: "llama-3.2-1b",
            title: "Llama 3.2 1B (16 layers, H 2048): the LM head dominates",
            source:
                "Meta Llama 3.2: 16 layers, 32 heads (8 key/value), SwiGLU 8192, vocabulary 128256, sequence 8192, FlashAttention, H100 SXM; \
                     on 8 devices the last share holds 2 layers and a head worth 3.4 more: over twice the mean work",
            model: llama(16, 2048, 32, 8192, 8192, 128_256),
            devices: 8,
            microbatches: 32,
            run: None,
        },
        sc21_preset("sc21-39.1b", "SC21 39.1B (48 layers, H 8192): TP 8, PP 2, DP 32", (48, 8192, 64, 4), (2, None, 32, 1536), 138.0),
        sc21_preset("sc21-76.1b", "SC21 76.1B (60 layers, H 10240): TP 8, PP 4 ×3 chunks, DP 32", (60, 10_240, 80, 2), (4, Some(3), 32, 1792), 140.0),
        sc21_preset("sc21-145.6b", "SC21 145.6B (80 layers, H 12288): TP 8, PP 8 ×2 chunks, DP 24", (80, 12_288, 96, 2), (8, Some(2), 24, 2304), 148.0),
        sc21_preset("sc21-310.1b", "SC21 310.1B (96 layers, H 16384): TP 8, PP 16 ×2 chunks, DP 15", (96, 16_384, 128, 1), (16, Some(2), 15, 2160), 155.0),
        sc21_preset("sc21-529.6b", "SC21 529.6B (105 layers, H 20480): TP 8, PP 35 ×3 chunks, DP 9", (105, 20_480, 128, 1), (35, Some(3), 9, 2520), 163.0),
        sc21_preset("sc21-1t", "SC21 1T (128 layers, H 25600): TP 8, PP 64, DP 6", (128, 25_600, 160, 1), (64, None, 6, 3072), 163.0),
        ModelPreset {
            key: "llama-3.1-405b-titan",
            title: "Llama 3.1 405B as torchtitan ran it: TP 8 (async), PP 8, FSDP 8, FP8",
            source: "torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 5 (512 H100 96GB, FSDP 8, TP 8, PP 8, local batch 32, global batch 256, sequence 8192, full activation checkpointing, Float8, async TP; 1F1B 100 and interleaved 128 tokens/s/GPU); microbatches: torchtitan's default, the PP degree (8, so 4 sequences each); 126 layers, 128 heads (8 key/value), SwiGLU 53248, vocabulary 128256",
            model: Model {
                gpu: Some("h100-96gb".to_string()),
                tp: 8,
                tp_overlap: true,
                precision: super::Precision::Fp8,
                micro_batch: 4,
                dp: 8,
                ..llama(126, 16_384, 128, 53_248, 8192, 128_256)
            },
            devices: 8,
            microbatches: 8,
            run: Some(PresetRun {
                schedule: "1f1b",
                chunks: None,
                dp: 8,
                zero: 3,
                global_batch: 256,
                recompute: Some("full"),
                // 256 × 8192 tokens over 512 GPUs at 100 tokens/s/GPU.
                measured_step: 256.0 * 8192.0 / 512.0 / 100.0 * 1e6,
            }),
        },
    ]
}

/// The model preset called `key`.
pub fn model_preset(key: &str) -> Option<ModelPreset> {
    model_presets().into_iter().find(|p| p.key == key)
}
