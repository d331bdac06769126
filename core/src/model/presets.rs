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

/// A mixture-of-experts model as its config gives it: SwiGLU experts (and dense MLP of size
/// `ffn`), FlashAttention, on H100 SXM, one sequence of 4096 tokens per microbatch, EP 1.
fn moe_model(
    (layers, hidden, heads, vocab): (u32, u32, u32, u32),
    ffn: u32,
    (experts, top_k, shared, expert_ffn, dense_layers): (u32, u32, u32, u32, u32),
) -> Model {
    Model {
        ffn: Some(ffn),
        mlp: super::Mlp::Swiglu,
        flash_attention: true,
        gpu: Some(super::DEFAULT_GPU.to_string()),
        moe: super::Moe {
            experts,
            top_k: Some(top_k),
            shared_experts: shared,
            expert_ffn: Some(expert_ffn),
            dense_layers,
            ep: 1,
            capacity_factor: None,
        },
        ..Model::new(layers, hidden, heads, 4096, 1, vocab)
    }
}

/// The mixture-of-experts presets: each value from `tests/fixtures/moe/configs.json`, which
/// names the file and commit it was read from; the parallelism is the deployment's where it
/// is published (DeepSeek-V3), else a choice of ours, said so in the source.
fn moe_presets() -> Vec<ModelPreset> {
    vec![
        ModelPreset {
            key: "deepseek-v3",
            title: "DeepSeek-V3 671B (61 layers, 3 dense; 256 experts top-8 + 1 shared; MLA; MTP 1)",
            source: "deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json and config.json (via NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/deepseek/test_deepseek_bridges.py @067f987): 61 layers, first 3 dense (intermediate 18432), H 7168, 128 heads, MLA (q rank 1536, kv rank 512, rope 64, nope 128, v 128), 256 routed experts top-8 + 1 shared of 2048, vocabulary 129280, 1 MTP layer; \
                     deployment from the DeepSeek-V3 report (arXiv 2412.19437 §3.1-3.3): PP 16, EP 64 over DP 128, FP8, sequence 4096; H100 SXM in place of the H800; micro-batch 1 is ours (unstated)",
            model: Model {
                mla: super::Mla {
                    q_lora_rank: Some(1536),
                    kv_lora_rank: Some(512),
                    qk_rope_dim: Some(64),
                    qk_nope_dim: Some(128),
                    v_head_dim: Some(128),
                },
                mtp: 1,
                precision: super::Precision::Fp8,
                dp: 128,
                moe: super::Moe { ep: 64, ..moe_model((61, 7168, 128, 129_280), 18_432, (256, 8, 1, 2048, 3)).moe },
                ..moe_model((61, 7168, 128, 129_280), 18_432, (256, 8, 1, 2048, 3))
            },
            devices: 16,
            microbatches: 120,
            run: None,
        },
        ModelPreset {
            key: "qwen3-235b-a22b",
            title: "Qwen3-235B-A22B (94 layers; 128 experts top-8; GQA 64/4, head 128)",
            source: "Qwen3-235B-A22B config (NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/qwen/test_qwen3_moe_bridge.py @067f987; head dim 128 from yanring/Megatron-MoE-ModelZoo model_configs/benchmarking/Qwen3-235B-A22B.yaml @e865051): 94 layers, H 4096, 64 heads (4 key/value) of 128, 128 experts top-8 of 1536, vocabulary 151936; \
                     PP 8, EP 8 over DP 8, sequence 4096, H100 SXM are ours",
            model: Model {
                head_dim: Some(128),
                kv_heads: Some(4),
                dp: 8,
                moe: super::Moe { ep: 8, ..moe_model((94, 4096, 64, 151_936), 12_288, (128, 8, 0, 1536, 0)).moe },
                ..moe_model((94, 4096, 64, 151_936), 12_288, (128, 8, 0, 1536, 0))
            },
            devices: 8,
            microbatches: 32,
            run: None,
        },
        ModelPreset {
            key: "mixtral-8x7b",
            title: "Mixtral 8x7B (32 layers; 8 experts top-2; GQA 32/8)",
            source: "huggingface/transformers src/transformers/models/mixtral/configuration_mixtral.py @008e574 (the defaults are mistralai/Mixtral-8x7B-v0.1's) and yanring/Megatron-MoE-ModelZoo Mixtral-8x7B.yaml @e865051: 32 layers, H 4096, 32 heads (8 key/value), 8 experts top-2 of 14336, vocabulary 32000; \
                     PP 4, EP 1, sequence 4096, H100 SXM are ours",
            model: Model { kv_heads: Some(8), ..moe_model((32, 4096, 32, 32_000), 14_336, (8, 2, 0, 14_336, 0)) },
            devices: 4,
            microbatches: 16,
            run: None,
        },
        ModelPreset {
            key: "olmoe-1b-7b",
            title: "OLMoE-1B-7B (16 layers; 64 experts top-8): a small MoE",
            source: "allenai/OLMoE-1B-7B-0924 config (NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/olmoe/test_olmoe_bridge.py @067f987): 16 layers, H 2048, 16 heads, 64 experts top-8 of 1024, vocabulary 50304; \
                     PP 4, EP 1, sequence 4096, H100 SXM are ours",
            model: moe_model((16, 2048, 16, 50_304), 1024, (64, 8, 0, 1024, 0)),
            devices: 4,
            microbatches: 8,
            run: None,
        },
    ]
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
    .into_iter()
    .chain(moe_presets())
    .collect()
}

/// The model preset called `key`.
pub fn model_preset(key: &str) -> Option<ModelPreset> {
    model_presets().into_iter().find(|p| p.key == key)
}
