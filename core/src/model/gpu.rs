//! GPUs as their vendors' datasheets describe them: the ceilings the roofline model prices
//! work against (peak dense BF16 FLOP/s, HBM bandwidth), the memory a device holds, and the
//! links a pipeline hop or an offload crosses.
//!
//! Every figure is the datasheet's, cited beside it. Link figures are per direction: a
//! datasheet's NVLink, Infinity Fabric or PCIe number counts both directions and is halved
//! here. Network figures are a typical server's NIC per GPU (the vendor's reference system
//! where there is one). Nothing here is an achieved rate: the efficiencies of
//! [`super::roofline`] turn ceilings into times. Uses only errors and units.

use crate::error::{Field, ParamError};

/// One GPU model: its ceilings, its memory and its links.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpu {
    /// Stable key (URL `gpu=`, CLI `--gpu`).
    pub key: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Peak dense BF16 (and FP16) tensor FLOP/s, in TFLOP/s (without sparsity).
    pub peak_tflops: f64,
    /// Peak dense FP8 tensor FLOP/s, in TFLOP/s (without sparsity); 0 for a GPU without FP8.
    pub fp8_tflops: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// HBM capacity, bytes (the datasheet's GB, 10⁹ bytes each).
    pub hbm_bytes: f64,
    /// What links two GPUs of a node.
    pub link: &'static str,
    /// Whether a switch gives every pair of GPUs of a node the full link bandwidth (NVLink
    /// with NVSwitch), rather than one direct link per pair (PCIe, Infinity Fabric).
    pub switched: bool,
    /// Bandwidth between two GPUs of a node, GB/s each way.
    pub link_gbps: f64,
    /// Typical network bandwidth per GPU between nodes, GB/s each way.
    pub network_gbps: f64,
    /// What links the GPU to its host (for offloading).
    pub host_link: &'static str,
    /// Host link bandwidth, GB/s each way.
    pub host_gbps: f64,
    /// Where the figures come from.
    pub source: &'static str,
}

/// The GPU of a model that names none (and of the Llama presets).
pub const DEFAULT_GPU: &str = "h100-sxm";

/// NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf, 2021): BF16
/// tensor 312 TFLOPS (624 with sparsity); NVLink 600 GB/s (12 third-generation links, 25 GB/s
/// each way); PCIe Gen4 64 GB/s. NVIDIA DGX A100 datasheet: eight single-port ConnectX-6
/// 200 Gb/s HDR InfiniBand adapters for eight GPUs, 25 GB/s per GPU.
const A100: Gpu = Gpu {
    key: "",
    name: "",
    peak_tflops: 312.0,
    // Ampere has no FP8 tensor cores.
    fp8_tflops: 0.0,
    hbm_gbps: 0.0,
    hbm_bytes: 0.0,
    link: "NVLink 3 (600 GB/s both ways)",
    switched: true,
    link_gbps: 300.0,
    network_gbps: 25.0,
    host_link: "PCIe Gen4 x16 (64 GB/s both ways)",
    host_gbps: 32.0,
    source: "NVIDIA A100 datasheet (2021); DGX A100 datasheet: one 200 Gb/s HDR adapter per GPU",
};

/// NVIDIA H100 datasheet (h100-datasheet, 2022), H100 SXM column: BF16 tensor 1,979 TFLOPS
/// with sparsity (989 dense); 80 GB HBM3 at 3.35 TB/s; NVLink 900 GB/s; PCIe Gen5 128 GB/s.
/// NVIDIA DGX H100 datasheet: eight single-port ConnectX-7 400 Gb/s adapters, 50 GB/s per GPU.
const H100_SXM: Gpu = Gpu {
    key: "h100-sxm",
    name: "NVIDIA H100 SXM 80GB",
    peak_tflops: 989.4,
    // FP8 tensor 3,958 TFLOPS with sparsity.
    fp8_tflops: 1978.9,
    hbm_gbps: 3350.0,
    hbm_bytes: 80e9,
    link: "NVLink 4 (900 GB/s both ways)",
    switched: true,
    link_gbps: 450.0,
    network_gbps: 50.0,
    host_link: "PCIe Gen5 x16 (128 GB/s both ways)",
    host_gbps: 64.0,
    source: "NVIDIA H100 datasheet (2022), SXM; DGX H100 datasheet: one 400 Gb/s ConnectX-7 per GPU",
};

/// Every GPU preset, in menu order.
pub const GPUS: [Gpu; 8] = [
    Gpu {
        key: "a100-40gb",
        name: "NVIDIA A100 SXM 40GB",
        // A100 datasheet, A100 40GB SXM column: 40 GB HBM2 at 1,555 GB/s.
        hbm_gbps: 1555.0,
        hbm_bytes: 40e9,
        ..A100
    },
    Gpu {
        key: "a100-80gb",
        name: "NVIDIA A100 SXM 80GB",
        // A100 datasheet, A100 80GB SXM column: 80 GB HBM2e at 2,039 GB/s.
        hbm_gbps: 2039.0,
        hbm_bytes: 80e9,
        ..A100
    },
    H100_SXM,
    Gpu {
        key: "h100-pcie",
        name: "NVIDIA H100 PCIe 80GB",
        // H100 datasheet (2022), H100 PCIe column: BF16 tensor 1,513 TFLOPS with sparsity
        // (756 dense); 80 GB HBM2e at 2 TB/s; NVLink bridge 600 GB/s, joining GPUs in pairs
        // only, so a pipeline across more than two GPUs hops over PCIe Gen5 (128 GB/s both
        // ways). No reference system: a common PCIe server has one 400 Gb/s NIC per two GPUs.
        peak_tflops: 756.5,
        // FP8 tensor 3,026 TFLOPS with sparsity.
        fp8_tflops: 1513.0,
        hbm_gbps: 2000.0,
        hbm_bytes: 80e9,
        link: "PCIe Gen5 x16 (128 GB/s both ways; the 600 GB/s NVLink bridge joins pairs only)",
        switched: false,
        link_gbps: 64.0,
        network_gbps: 25.0,
        source: "NVIDIA H100 datasheet (2022), PCIe; network typical (one 400 Gb/s NIC per two GPUs), no vendor figure",
        ..H100_SXM
    },
    Gpu {
        key: "h200",
        name: "NVIDIA H200 SXM 141GB",
        // NVIDIA H200 datasheet (2024), H200 SXM column: BF16 tensor 1,979 TFLOPS with
        // sparsity (989 dense); 141 GB HBM3e at 4.8 TB/s; NVLink 900 GB/s; PCIe Gen5 128 GB/s.
        // DGX H200 datasheet: eight single-port ConnectX-7 400 Gb/s adapters.
        hbm_gbps: 4800.0,
        hbm_bytes: 141e9,
        source: "NVIDIA H200 datasheet (2024), SXM; DGX H200 datasheet: one 400 Gb/s ConnectX-7 per GPU",
        ..H100_SXM
    },
    Gpu {
        key: "b200",
        name: "NVIDIA B200 180GB",
        // NVIDIA DGX B200 datasheet (2024): eight B200 with 1,440 GB HBM3e in all at 64 TB/s,
        // fifth-generation NVLink at 1.8 TB/s per GPU (14.4 TB/s in all), eight single-port
        // ConnectX-7 400 Gb/s adapters, PCIe Gen5. NVIDIA HGX B200 specifications: FP16/BF16
        // tensor 36 PFLOPS for eight GPUs with sparsity, 2.25 PFLOPS dense per GPU.
        peak_tflops: 2250.0,
        // FP8 tensor 72 PFLOPS for eight GPUs with sparsity.
        fp8_tflops: 4500.0,
        hbm_gbps: 8000.0,
        hbm_bytes: 180e9,
        link: "NVLink 5 (1.8 TB/s both ways)",
        link_gbps: 900.0,
        network_gbps: 50.0,
        source: "NVIDIA DGX B200 datasheet (2024); HGX B200 specifications (36 PFLOPS BF16 with sparsity per 8 GPUs)",
        ..H100_SXM
    },
    Gpu {
        key: "h100-96gb",
        name: "NVIDIA H100 SXM 96GB HBM2e (Grand Teton, 500 W)",
        // torchtitan's benchmark host (benchmarks/llama3_h100_202412_torchtitan.md): eight
        // H100 fully connected with NVLink, 96 GB HBM2e at 2.4 TB/s, 400 Gb/s RDMA per GPU,
        // 500 W power limit. Its peak lies between SXM and NVL and is not published: the SXM
        // figures are kept.
        hbm_gbps: 2400.0,
        hbm_bytes: 96e9,
        source: "torchtitan benchmarks/llama3_h100_202412_torchtitan.md (96 GB HBM2e at 2.4 TB/s, 400 Gb/s per GPU); peak FLOP/s of the H100 SXM datasheet",
        ..H100_SXM
    },
    Gpu {
        key: "mi300x",
        name: "AMD Instinct MI300X 192GB",
        // AMD Instinct MI300X data sheet (2023): peak BF16 1,307.4 TFLOPS (2,614.9 with
        // sparsity); 192 GB HBM3 at 5.3 TB/s; seven Infinity Fabric links of 128 GB/s (both
        // ways; 896 GB/s in all), one to each other GPU of the platform, so a hop between
        // two GPUs crosses one link; PCIe Gen5 x16. No AMD network figure: typical MI300X
        // servers carry one 400 Gb/s NIC per GPU.
        peak_tflops: 1307.4,
        // Peak FP8 2,614.9 TFLOPS (5,229.8 with sparsity).
        fp8_tflops: 2614.9,
        hbm_gbps: 5300.0,
        hbm_bytes: 192e9,
        link: "Infinity Fabric, one link per GPU pair (128 GB/s both ways)",
        switched: false,
        link_gbps: 64.0,
        network_gbps: 50.0,
        source: "AMD Instinct MI300X data sheet (2023); network typical (one 400 Gb/s NIC per GPU), no vendor figure",
        ..H100_SXM
    },
];

/// The GPU called `key`.
pub fn gpu(key: &str) -> Option<&'static Gpu> {
    GPUS.iter().find(|g| g.key == key)
}

/// The error for a GPU key that does not exist: the closest key as a hint, then every key.
pub fn unknown_gpu(key: &str) -> ParamError {
    let keys: Vec<&str> = GPUS.iter().map(|g| g.key).collect();
    let shown: String = crate::units::clean_text(key).chars().take(40).collect();
    let mut err = ParamError::new(Field::Gpu, format!("unknown gpu `{shown}`"));
    if let Some(close) = crate::units::names::closest(key, &keys) {
        err = err.hint(format!("did you mean `{close}`?"));
    }
    err.hint(format!("expected one of: {}", keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_every_figure_is_positive() {
        crate::error::assert_names_round_trip(&GPUS, |g| g.key, |k| gpu(k).copied());
        for g in GPUS {
            let figures = [g.peak_tflops, g.hbm_gbps, g.hbm_bytes, g.link_gbps, g.network_gbps, g.host_gbps];
            assert!(figures.iter().all(|v| v.is_finite() && *v > 0.0), "{g:?}");
            assert!(!g.name.is_empty() && !g.source.is_empty(), "{}", g.key);
        }
        assert!(gpu(DEFAULT_GPU).is_some());
    }

    #[test]
    fn unknown_keys_get_the_closest_one() {
        let text = unknown_gpu("a100-80").to_string();
        assert!(text.starts_with("unknown gpu `a100-80`\n  hint: did you mean `a100-80gb`?"), "{text}");
        assert!(unknown_gpu("h100").to_string().contains("did you mean `h100-sxm`?"));
        assert!(unknown_gpu("mi300").to_string().contains("did you mean `mi300x`?"));
        let far = unknown_gpu("tpu-v5").to_string();
        assert!(!far.contains("did you mean") && far.contains("expected one of: a100-40gb"), "{far}");
    }
}
