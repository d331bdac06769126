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
}

/// The Zero Bubble paper's Table 3 models (sequence 1024, GPT-2's 50,257-token vocabulary,
/// layers padded to the count their efficiency script uses) on the A100 SXM 80GB they were
/// profiled on.
fn zero_bubble(layers: u32, heads: u32, hidden: u32, micro_batch: u32) -> Model {
    Model { gpu: Some("a100-80gb".to_string()), ..Model::new(layers, hidden, heads, 1024, micro_batch, 50_257) }
}

/// A Llama 3 model: SwiGLU, three `H × intermediate` matrices, so the MLP counts as two of
/// width `1.5 × intermediate` (Megatron's FLOP count does the same); 8 key/value heads
/// (grouped-query attention); trained with FlashAttention; on H100 SXM.
fn llama(layers: u32, hidden: u32, heads: u32, intermediate: u32, seq: u32, vocab: u32) -> Model {
    Model {
        ffn: Some(intermediate / 2 * 3),
        kv_heads: Some(8),
        flash_attention: true,
        gpu: Some(super::DEFAULT_GPU.to_string()),
        ..Model::new(layers, hidden, heads, seq, 1, vocab)
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
        },
        ModelPreset {
            key: "zb-6.2b",
            title: "Zero Bubble 6.2B (32 layers, H 4096)",
            source: "Qi et al. ICLR 2024, Table 3: 30 layers padded to 32, 32 heads, microbatch 3, A100 SXM 80GB",
            model: zero_bubble(32, 32, 4096, 3),
            devices: 8,
            microbatches: 24,
        },
        ModelPreset {
            key: "zb-14.6b",
            title: "Zero Bubble 14.6B (48 layers, H 5120)",
            source: "Qi et al. ICLR 2024, Table 3: 46 layers padded to 48, 40 heads, microbatch 1, A100 SXM 80GB",
            model: zero_bubble(48, 40, 5120, 1),
            devices: 16,
            microbatches: 48,
        },
        ModelPreset {
            key: "zb-28.3b",
            title: "Zero Bubble 28.3B (64 layers, H 6144)",
            source: "Qi et al. ICLR 2024, Table 3: 62 layers padded to 64, 48 heads, microbatch 1, A100 SXM 80GB",
            model: zero_bubble(64, 48, 6144, 1),
            devices: 32,
            microbatches: 96,
        },
        ModelPreset {
            key: "llama-3-8b",
            title: "Llama 3 8B (32 layers, H 4096, 128k vocabulary)",
            source: "Meta Llama 3: 32 layers, 32 heads (8 key/value), SwiGLU 14336, vocabulary 128256, sequence 8192, FlashAttention, H100 SXM",
            model: llama(32, 4096, 32, 14_336, 8192, 128_256),
            devices: 8,
            microbatches: 32,
        },
        ModelPreset {
            key: "llama-3-70b",
            title: "Llama 3 70B (80 layers, H 8192)",
            source: "Meta Llama 3: 80 layers, 64 heads (8 key/value), SwiGLU 28672, vocabulary 128256, sequence 8192, FlashAttention, H100 SXM",
            model: llama(80, 8192, 64, 28_672, 8192, 128_256),
            devices: 16,
            microbatches: 64,
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
        },
    ]
}

/// The model preset called `key`.
pub fn model_preset(key: &str) -> Option<ModelPreset> {
    model_presets().into_iter().find(|p| p.key == key)
}
