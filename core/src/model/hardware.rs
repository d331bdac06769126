//! What a model's GPU achieves: the matmul and memory rates the roofline prices work at, and
//! the time of a hop between devices, within a node or across nodes.
//!
//! Rates are the GPU's ceilings times achieved efficiencies: matmuls at `gemm_efficiency` of
//! peak (or `--tflops`), memory-bound kernels at `memory_efficiency` of HBM bandwidth. A hop
//! sends one microbatch's activation, `2·B·S·H/t` bytes per GPU, at the link's achieved
//! bandwidth plus a latency; `--bandwidth` sets every hop's bandwidth instead. Devices fill
//! nodes of `gpus_per_node` GPUs in order, `t` GPUs each. Uses [`super::gpu`] and the
//! model's sizes.

use super::gpu::{gpu, unknown_gpu, Gpu, DEFAULT_GPU};
use super::roofline::Rates;
use super::Model;
use crate::error::ParamError;

/// Achieved fractions of the GPU's ceilings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Efficiency {
    /// Fraction of peak FLOP/s in matrix multiplications.
    pub gemm: f64,
    /// Fraction of HBM bandwidth in the backward's memory-bound kernels (the forward's reach
    /// [`super::roofline::FORWARD_MEMORY_SHARE`] of it).
    pub memory: f64,
}

/// The default efficiencies: those that reproduce the Zero Bubble paper's profiles on A100
/// (21 rows, every pass within 6%; `docs/cost-model.md`). A100's weight-gradient matmuls ran
/// at 0.80 of peak; memory-bound kernels at 0.64 of HBM bandwidth in the backward.
pub const DEFAULT_EFFICIENCY: Efficiency = Efficiency { gemm: 0.80, memory: 0.64 };

/// Achieved share of an NVLink switch fabric's per-direction bandwidth in pipeline sends:
/// NCCL send/recv between two GPUs use two channels per peer by default. The Zero Bubble
/// paper measured 28 MB in 0.60 ms between A100s (47 GB/s of 300); nccl-tests reports 72 of
/// 300 on A100 (nccl-tests#331) and 80 of 450 on H100 at default settings (nccl-tests#268).
pub const SWITCHED_LINK_EFFICIENCY: f64 = 0.16;
/// Achieved share of a direct link (PCIe, one Infinity Fabric link), which NCCL's channels
/// fill.
pub const DIRECT_LINK_EFFICIENCY: f64 = 0.7;
/// Achieved share of a NIC's line rate in pipeline sends between nodes.
pub const NETWORK_EFFICIENCY: f64 = 0.8;

/// The time of a hop between neighbouring devices, within a node and across nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Hops {
    /// µs of a hop between two GPUs of one node.
    pub within: f64,
    /// µs of a hop between nodes.
    pub across: f64,
    /// Nodes the devices span.
    pub nodes: u32,
    /// The boundaries that cross nodes: `k` for the hop from device `k` to device `k + 1`.
    pub crossings: Vec<u32>,
    /// The node of each device (its first GPU).
    pub node: Vec<u32>,
}

impl Hops {
    /// µs of the slowest hop the pipeline takes: the one time the simulator uses for every hop.
    pub fn slowest(&self) -> f64 {
        if self.spans_nodes() {
            self.within.max(self.across)
        } else {
            self.within
        }
    }

    /// Whether the pipeline's devices sit on more than one node.
    pub fn spans_nodes(&self) -> bool {
        self.node.windows(2).any(|w| w[0] != w[1])
    }

    /// Whether some hops take longer than others.
    pub fn differ(&self) -> bool {
        self.spans_nodes() && self.within != self.across
    }

    /// Each hop at its own link, for the simulator (`None` when every hop takes as long).
    pub fn links(&self) -> Option<std::sync::Arc<crate::params::Links>> {
        self.differ().then(|| {
            std::sync::Arc::new(crate::params::Links {
                node: self.node.clone(),
                within: self.within,
                across: self.across,
            })
        })
    }
}

impl Model {
    /// The GPU the model runs on.
    ///
    /// # Errors
    /// An unknown GPU key.
    pub fn gpu(&self) -> Result<&'static Gpu, ParamError> {
        let key = self.gpu.as_deref().unwrap_or(DEFAULT_GPU);
        gpu(key).ok_or_else(|| unknown_gpu(key))
    }

    /// The efficiencies given or the defaults; `--tflops` shows as the gemm efficiency it
    /// amounts to.
    pub fn efficiency(&self) -> Result<Efficiency, ParamError> {
        let peak = self.gpu()?.peak_tflops;
        Ok(Efficiency {
            gemm: self.tflops.map_or(self.gemm_efficiency.unwrap_or(DEFAULT_EFFICIENCY.gemm), |t| t / peak),
            memory: self.memory_efficiency.unwrap_or(DEFAULT_EFFICIENCY.memory),
        })
    }

    /// The achieved rates at efficiencies `e`.
    pub fn rates(&self, e: Efficiency) -> Result<Rates, ParamError> {
        let g = self.gpu()?;
        let rates = Rates::new(g.peak_tflops * 1e12 * e.gemm, g.hbm_gbps * 1e9 * e.memory);
        Ok(Rates { matmul_speedup: self.matmul_speedup(g), ..rates })
    }

    /// GPUs between a pipeline device and the next: `t·dp` when the replicas of a stage sit
    /// side by side (tp-dp-pp), `t` when a pipeline's devices do (tp-pp-dp).
    pub fn pipeline_stride(&self) -> u64 {
        let t = u64::from(self.tp.max(1));
        match self.rank_order {
            super::RankOrder::TpDpPp => t * u64::from(self.dp.max(1)),
            super::RankOrder::TpPpDp => t,
        }
    }

    /// The node of each pipeline device (its first GPU, replica 0).
    pub fn device_nodes(&self, devices: u32) -> Vec<u32> {
        let per_node = u64::from(self.gpus_per_node.max(1));
        let stride = self.pipeline_stride();
        (0..u64::from(devices)).map(|k| u32::try_from(k * stride / per_node).unwrap_or(u32::MAX)).collect()
    }

    /// Bytes one GPU sends per hop: one microbatch's activation, `2·B·S·H/t`.
    pub fn hop_bytes(&self) -> f64 {
        2.0 * f64::from(self.micro_batch) * f64::from(self.seq) * f64::from(self.hidden) * self.per_gpu()
    }

    /// The hops of a pipeline of `devices` devices.
    pub fn hops(&self, devices: u32) -> Result<Hops, ParamError> {
        let g = self.gpu()?;
        let bytes = self.hop_bytes();
        let time = |gbps: f64| bytes / (gbps * 1e9) * 1e6 + self.latency;
        let (within, across) = match self.bandwidth {
            Some(bw) => (time(bw), time(bw)),
            None => {
                let share = if g.switched { SWITCHED_LINK_EFFICIENCY } else { DIRECT_LINK_EFFICIENCY };
                (time(g.link_gbps * share), time(g.network_gbps * NETWORK_EFFICIENCY))
            }
        };
        let per_node = u64::from(self.gpus_per_node.max(1));
        let t = u64::from(self.tp.max(1));
        // Device k's TP rank j is GPU k·stride + j of replica 0 (TP innermost; the replicas
        // of a stage between neighbouring stages under tp-dp-pp); it sends to GPU j of k + 1.
        let stride = self.pipeline_stride();
        let node = |gpu: u64| gpu / per_node;
        let crosses = |k: u64| (0..t).any(|j| node(k * stride + j) != node((k + 1) * stride + j));
        let crossings = (0..u64::from(devices.saturating_sub(1))).filter(|&k| crosses(k)).map(|k| k as u32).collect();
        // The nodes replica 0's GPUs sit on.
        let mut used: Vec<u64> =
            (0..u64::from(devices)).flat_map(|k| (0..t).map(move |j| node(k * stride + j))).collect();
        used.dedup();
        let nodes = used.len().max(1) as u64;
        let node = self.device_nodes(devices);
        Ok(Hops { within, across, nodes: u32::try_from(nodes).unwrap_or(u32::MAX), crossings, node })
    }
}
