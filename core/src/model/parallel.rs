//! Tensor parallelism timed, and the collectives every parallelism pays: the ring costs of
//! all-reduce, all-gather and reduce-scatter over a group's link, the tensor-parallel
//! collectives inside each layer, and the number format the matmuls run in.
//!
//! Ring costs (NCCL's own "bus bandwidth" convention, `nccl-tests` `doc/PERFORMANCE.md`): an
//! all-reduce of `n` bytes over `k` GPUs moves `2(k−1)/k · n` bytes per GPU, an all-gather or a
//! reduce-scatter `(k−1)/k · n`; each at the group's achieved bus bandwidth, plus one latency
//! per ring step.
//!
//! Megatron's collectives per layer and microbatch (`B·S·H` activations of 16 bits): without
//! sequence parallelism two all-reduces in F (after attention and after the MLP) and two in B;
//! with it an all-gather and a reduce-scatter in their place, the same bytes. A recompute
//! repeats F's. With `--tp-overlap` (Megatron's `--tp-comm-overlap`) they run beside the
//! matmuls and only what the matmuls cannot hide is exposed. Uses the model's sizes and its
//! GPU's links; no schedule.

use super::gpu::Gpu;
use super::Model;
use crate::error::{Field, ParamError};

/// Achieved share of an NVLink switch fabric's per-direction bandwidth in NCCL collectives
/// (bus bandwidth): all-reduce of large messages reaches about 230 of 300 GB/s on DGX A100
/// and about 360 of 450 on DGX H100 (nccl-tests results as NVIDIA and users publish them).
/// An assumption, not fitted.
pub const COLLECTIVE_LINK_EFFICIENCY: f64 = 0.77;
/// Achieved share of a NIC's line rate in collectives between nodes.
pub const COLLECTIVE_NETWORK_EFFICIENCY: f64 = 0.8;

/// The number format of the matmuls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Precision {
    /// bfloat16 (the default).
    #[default]
    Bf16,
    /// float16, with loss scaling: priced as bf16.
    Fp16,
    /// FP8 matmuls (Transformer Engine, torchao's Float8Linear) at the GPU's FP8 peak; every
    /// other operator, the attention scores and the LM head stay 16-bit.
    Fp8,
}

impl Precision {
    /// Every precision, in menu order.
    pub const ALL: [Precision; 3] = [Precision::Bf16, Precision::Fp16, Precision::Fp8];

    /// The name the CLI and the URL use.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
        }
    }

    /// The precision called `text`.
    ///
    /// # Errors
    /// A [`ParamError`] naming the precisions there are.
    pub fn parse(text: &str) -> Result<Precision, ParamError> {
        let t = text.trim().to_ascii_lowercase();
        Precision::ALL.into_iter().find(|p| p.name() == t).ok_or_else(|| {
            let shown: String = crate::units::clean_text(text).chars().take(20).collect();
            ParamError::new(Field::Precision, format!("unknown precision `{shown}`"))
                .hint("expected one of: bf16, fp16, fp8")
        })
    }
}

/// The kind of a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collective {
    /// Every GPU ends with the sum: `2(k−1)/k` of the bytes per GPU.
    AllReduce,
    /// Every GPU ends with every GPU's part: `(k−1)/k`.
    AllGather,
    /// Every GPU ends with its part of the sum: `(k−1)/k`.
    ReduceScatter,
}

/// µs of `kind` of `bytes` bytes (the whole tensor, as every GPU holds it after an all-gather)
/// over `group` GPUs at `gbps` GB/s of bus bandwidth with `latency` µs per ring step.
pub fn ring_time(kind: Collective, bytes: f64, group: u32, gbps: f64, latency: f64) -> f64 {
    if group <= 1 || bytes <= 0.0 {
        return 0.0;
    }
    let k = f64::from(group);
    let (share, steps) = match kind {
        Collective::AllReduce => (2.0 * (k - 1.0) / k, 2.0 * (k - 1.0)),
        Collective::AllGather | Collective::ReduceScatter => ((k - 1.0) / k, k - 1.0),
    };
    share * bytes / (gbps * 1e9) * 1e6 + steps * latency
}

/// The achieved bus bandwidth of a collective group, GB/s: the NVLink fabric within a node,
/// the NIC across nodes (`--bandwidth`, when set, for both).
pub fn collective_gbps(gpu: &Gpu, bandwidth: Option<f64>, crosses_nodes: bool) -> f64 {
    match (bandwidth, crosses_nodes) {
        (Some(bw), _) => bw,
        (None, false) => {
            let share = if gpu.switched { COLLECTIVE_LINK_EFFICIENCY } else { super::hardware::DIRECT_LINK_EFFICIENCY };
            gpu.link_gbps * share
        }
        (None, true) => gpu.network_gbps * COLLECTIVE_NETWORK_EFFICIENCY,
    }
}

impl Model {
    /// µs of one layer's tensor-parallel collectives in F, B and W for one microbatch, before
    /// any overlap: two all-reduces of the layer's `B·S·H` 16-bit activation in F and two in B
    /// (with sequence parallelism an all-gather and a reduce-scatter each, the same bytes),
    /// none in W; within a node (a TP group wider than a node is refused by the checks).
    ///
    /// # Errors
    /// An unknown GPU.
    pub fn tp_collectives(&self) -> Result<[f64; 3], ParamError> {
        if self.tp <= 1 {
            return Ok([0.0; 3]);
        }
        let gpu = self.gpu()?;
        let gbps = collective_gbps(gpu, self.bandwidth, false);
        let bytes = 2.0 * f64::from(self.micro_batch) * f64::from(self.seq) * f64::from(self.hidden);
        let lat = crate::model::COLLECTIVE_LATENCY_US;
        let pair = if self.sequence_parallel {
            ring_time(Collective::AllGather, bytes, self.tp, gbps, lat)
                + ring_time(Collective::ReduceScatter, bytes, self.tp, gbps, lat)
        } else {
            2.0 * ring_time(Collective::AllReduce, bytes, self.tp, gbps, lat)
        };
        // Two of them per pass: after attention and after the MLP.
        let per_pass = if self.sequence_parallel { 2.0 * pair } else { pair };
        Ok([per_pass, per_pass, 0.0])
    }

    /// The achieved FLOP/s of the weight matmuls at this precision, against `flops` at 16 bits:
    /// FP8 scales them by the GPU's FP8 peak over its 16-bit peak.
    pub(crate) fn matmul_speedup(&self, gpu: &Gpu) -> f64 {
        match self.precision {
            Precision::Fp8 if gpu.fp8_tflops > 0.0 => gpu.fp8_tflops / gpu.peak_tflops,
            _ => 1.0,
        }
    }

    /// The precision runs on this GPU, and the TP group fits in one node.
    pub(crate) fn check_parallel(&self) -> Result<(), ParamError> {
        let gpu = self.gpu()?;
        if self.precision == Precision::Fp8 && gpu.fp8_tflops <= 0.0 {
            return Err(ParamError::new(
                Field::Precision,
                format!("precision fp8 needs FP8 tensor cores, and {} has none", gpu.key),
            )
            .hint("use --precision bf16 (or fp16) on this GPU, or an FP8 GPU: h100-sxm, h100-pcie, h100-96gb, h200, b200, mi300x"));
        }
        if self.tp > self.gpus_per_node {
            return Err(ParamError::new(
                Field::Tp,
                format!(
                    "tp {} is wider than a node of {} GPUs: its collectives in every layer would cross the network",
                    self.tp, self.gpus_per_node
                ),
            )
            .hint(format!(
                "keep tp within a node (at most {}), or say the node is larger with --gpus-per-node {}",
                self.gpus_per_node, self.tp
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_costs_follow_the_bus_bandwidth_convention() {
        // 1 GB over 8 GPUs at 100 GB/s: all-reduce moves 1.75 GB per GPU, 17.5 ms.
        let t = ring_time(Collective::AllReduce, 1e9, 8, 100.0, 0.0);
        assert!((t - 17_500.0).abs() < 1e-6, "{t}");
        let g = ring_time(Collective::AllGather, 1e9, 8, 100.0, 0.0);
        let r = ring_time(Collective::ReduceScatter, 1e9, 8, 100.0, 0.0);
        assert!((g + r - t).abs() < 1e-6, "an all-reduce is a reduce-scatter and an all-gather");
        assert_eq!(ring_time(Collective::AllReduce, 1e9, 1, 100.0, 5.0), 0.0, "one GPU sends nothing");
    }

    #[test]
    fn sequence_parallelism_moves_the_same_bytes_and_w_none() {
        let m = Model { tp: 8, gpu: Some("a100-80gb".into()), ..Model::new(8, 4096, 32, 2048, 1, 51_200) };
        let sp = m.tp_collectives().unwrap();
        let plain = Model { sequence_parallel: false, ..m.clone() }.tp_collectives().unwrap();
        assert!((sp[0] - plain[0]).abs() < 1e-6 * plain[0], "{sp:?} vs {plain:?}");
        assert_eq!(sp[2], 0.0);
        assert!(sp[0] > 0.0 && sp[0] == sp[1]);
        assert_eq!(Model { tp: 1, ..m }.tp_collectives().unwrap(), [0.0; 3]);
    }

    #[test]
    fn fp8_needs_a_gpu_with_fp8_and_tp_a_node() {
        let m = Model {
            precision: Precision::Fp8,
            gpu: Some("a100-80gb".into()),
            ..Model::new(8, 4096, 32, 2048, 1, 51_200)
        };
        let e = m.check_parallel().unwrap_err();
        assert_eq!(e.field, Field::Precision);
        assert!(!e.hints.is_empty());
        let wide = Model { tp: 16, ..Model::new(8, 4096, 32, 2048, 1, 51_200) };
        assert_eq!(wide.check_parallel().unwrap_err().field, Field::Tp);
        assert!(Model { gpus_per_node: 16, ..wide }.check_parallel().is_ok());
        assert_eq!(Precision::parse("FP8").unwrap(), Precision::Fp8);
        assert!(Precision::parse("int4").unwrap_err().hints[0].contains("bf16"));
    }
}
