//! Errors and diagnostics.
//!
//! Messages are lowercase, name the value that was wrong and what was expected, and put
//! suggestions on their own `hint:` lines.

use std::fmt;

use crate::schedule::Pass;

/// Writes `message` followed by one `  hint: …` line per hint: the one place hints are
/// formatted, for every error type of the crate and for the CLI's own errors.
///
/// # Errors
/// Only when `out` fails.
pub fn write_with_hints<H: AsRef<str>>(out: &mut dyn fmt::Write, message: &str, hints: &[H]) -> fmt::Result {
    out.write_str(message)?;
    for hint in hints {
        write!(out, "\n  hint: {}", hint.as_ref())?;
    }
    Ok(())
}

/// `message` with its `hint:` lines, as [`write_with_hints`] writes them.
pub fn with_hints<H: AsRef<str>>(message: &str, hints: &[H]) -> String {
    let mut out = String::new();
    let _ = write_with_hints(&mut out, message, hints);
    out
}

/// A user-facing setting: the CLI flag, URL parameter and app control share these names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Field {
    /// The schedule family.
    Schedule,
    /// Number of devices (`--devices`).
    Devices,
    /// Number of microbatches (`--microbatches`).
    Microbatches,
    /// Chunks per device (`--chunks`).
    Chunks,
    /// Microbatches per chunk round (`--group`).
    Group,
    /// Hanayo waves (`--waves`).
    Waves,
    /// Sequence slices per microbatch (`--seq-splits`).
    SeqSplits,
    /// Forward time (`--f`).
    F,
    /// Input-gradient backward time (`--b`).
    B,
    /// Weight-gradient backward time (`--w`).
    W,
    /// Communication time per hop (`--comm`).
    Comm,
    /// Overlapped F&B pair time (`--overlap`).
    Overlap,
    /// Megatron's combined 1F1B: steady-state F and B of different microbatches run as
    /// overlapped pairs that hide the expert all-to-all (`--a2a-overlap`).
    A2aOverlap,
    /// Output-layer forward time of one vocabulary shard (`--s`).
    S,
    /// Output-layer backward time of one vocabulary shard (`--t`).
    T,
    /// Activation memory of one forward (`--mem-f`).
    MemF,
    /// Memory still held after B until W (`--mem-w`).
    MemW,
    /// Per-device memory limit (`--mem-limit`).
    MemLimit,
    /// Recompute per device: none, selective or full (`--recompute`).
    Recompute,
    /// Microbatches each device offloads to host memory (`--offload`).
    Offload,
    /// Time to copy one forward's activation to the host, with plain costs (`--copy-time`).
    CopyTime,
    /// With a model: bandwidth between the GPU and its host, GB/s each way (`--host-gbps`).
    HostGbps,
    /// Measured F, B and W to fit a model's efficiencies to (`--calibrate`): a command, not a
    /// setting, so no URL key (the fitted efficiencies are).
    Calibrate,
    /// ZeRO stage 0 to 3 (`--zero`).
    Zero,
    /// GPUs in all: tp · pp · dp (`--gpus`).
    Gpus,
    /// Sequences per step over every replica (`--global-batch`).
    GlobalBatch,
    /// A model preset (`--model`).
    Model,
    /// Transformer layers of the model (`--layers`).
    Layers,
    /// Hidden size (`--hidden`).
    Hidden,
    /// Attention heads (`--heads`).
    Heads,
    /// Key/value heads: query groups of grouped-query attention (`--kv-heads`).
    KvHeads,
    /// Sequence length (`--seq`).
    Seq,
    /// Sequences per microbatch (`--micro-batch`).
    MicroBatch,
    /// Vocabulary size (`--vocab`).
    Vocab,
    /// The MLP's kind, GELU or SwiGLU (`--mlp`).
    Mlp,
    /// The MLP's size as the model card gives it: width or intermediate size (`--ffn`).
    Ffn,
    /// Achieved TFLOP/s of the matrix multiplications per device (`--tflops`).
    Tflops,
    /// Achieved bandwidth of every hop between devices, GB/s (`--bandwidth`).
    Bandwidth,
    /// Latency of one hop, µs (`--latency`).
    Latency,
    /// How layers are cut into stages (`--layout`).
    Layout,
    /// FlashAttention on or off (`--flash-attention`).
    FlashAttention,
    /// Tensor-parallel size with sequence parallelism (`--tp`).
    Tp,
    /// The GPU preset (`--gpu`).
    Gpu,
    /// GPUs per node: which hops cross nodes (`--gpus-per-node`).
    GpusPerNode,
    /// Achieved fraction of the GPU's peak FLOP/s in matrix multiplications
    /// (`--gemm-efficiency`).
    GemmEfficiency,
    /// Achieved fraction of the GPU's HBM bandwidth in memory-bound kernels
    /// (`--memory-efficiency`).
    MemoryEfficiency,
    /// Sequence parallelism with tensor parallelism (`--sequence-parallel`).
    SequenceParallel,
    /// Tensor-parallel collectives overlapped with the matmuls (`--tp-overlap`).
    TpOverlap,
    /// Number format of the matmuls: bf16, fp16 or fp8 (`--precision`).
    Precision,
    /// Data-parallel replicas (`--dp`): which GPUs share a node, and the gradient reduction.
    Dp,
    /// How ranks fill nodes after TP: `tp-dp-pp` or `tp-pp-dp` (`--rank-order`).
    RankOrder,
    /// Width of one attention head (`--head-dim`); default hidden / heads.
    HeadDim,
    /// Routed experts of each MoE layer (`--experts`); 0 or unset means dense.
    Experts,
    /// Routed experts each token uses (`--top-k`).
    TopK,
    /// Shared experts every token uses in each MoE layer (`--shared-experts`).
    SharedExperts,
    /// Intermediate size of each expert (`--expert-ffn`).
    ExpertFfn,
    /// Leading layers that stay dense in an MoE model (`--dense-layers`).
    DenseLayers,
    /// Expert-parallel degree: the experts split over this many data-parallel replicas (`--ep`).
    Ep,
    /// Expert capacity factor: routed work times this (`--capacity-factor`); unset is dropless.
    CapacityFactor,
    /// Multi-head latent attention: the query's low-rank size (`--q-lora-rank`).
    QLoraRank,
    /// Multi-head latent attention: the key/value latent's size (`--kv-lora-rank`); sets MLA on.
    KvLoraRank,
    /// Multi-head latent attention: each head's rotary query/key width (`--qk-rope-dim`).
    QkRopeDim,
    /// Multi-head latent attention: each head's non-rotary query/key width (`--qk-nope-dim`).
    QkNopeDim,
    /// Multi-head latent attention: each head's value width (`--v-head-dim`).
    VHeadDim,
    /// Multi-token-prediction layers beside the model, counted apart (`--mtp`).
    Mtp,
}

impl Field {
    /// Every field, in declaration order.
    pub const ALL: [Field; 65] = [
        Field::Schedule,
        Field::Devices,
        Field::Microbatches,
        Field::Chunks,
        Field::Group,
        Field::Waves,
        Field::SeqSplits,
        Field::F,
        Field::B,
        Field::W,
        Field::Comm,
        Field::Overlap,
        Field::A2aOverlap,
        Field::S,
        Field::T,
        Field::MemF,
        Field::MemW,
        Field::MemLimit,
        Field::Recompute,
        Field::Offload,
        Field::CopyTime,
        Field::HostGbps,
        Field::Calibrate,
        Field::Zero,
        Field::Gpus,
        Field::GlobalBatch,
        Field::Model,
        Field::Layers,
        Field::Hidden,
        Field::Heads,
        Field::KvHeads,
        Field::Seq,
        Field::MicroBatch,
        Field::Vocab,
        Field::Mlp,
        Field::Ffn,
        Field::Tflops,
        Field::Bandwidth,
        Field::Latency,
        Field::Layout,
        Field::FlashAttention,
        Field::Tp,
        Field::Gpu,
        Field::GpusPerNode,
        Field::GemmEfficiency,
        Field::MemoryEfficiency,
        Field::SequenceParallel,
        Field::TpOverlap,
        Field::Precision,
        Field::Dp,
        Field::RankOrder,
        Field::HeadDim,
        Field::Experts,
        Field::TopK,
        Field::SharedExperts,
        Field::ExpertFfn,
        Field::DenseLayers,
        Field::Ep,
        Field::CapacityFactor,
        Field::QLoraRank,
        Field::KvLoraRank,
        Field::QkRopeDim,
        Field::QkNopeDim,
        Field::VHeadDim,
        Field::Mtp,
    ];

    /// The field called `name` (see [`Field::name`]).
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name shared by the CLI flag (without `--`), the URL parameter and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Field::Schedule => "schedule",
            Field::Devices => "devices",
            Field::Microbatches => "microbatches",
            Field::Chunks => "chunks",
            Field::Group => "group",
            Field::Waves => "waves",
            Field::SeqSplits => "seq-splits",
            Field::F => "f",
            Field::B => "b",
            Field::W => "w",
            Field::Comm => "comm",
            Field::Overlap => "overlap",
            Field::A2aOverlap => "a2a-overlap",
            Field::MemF => "mem-f",
            Field::MemW => "mem-w",
            Field::MemLimit => "mem-limit",
            Field::Model => "model",
            Field::Layers => "layers",
            Field::Hidden => "hidden",
            Field::Heads => "heads",
            Field::KvHeads => "kv-heads",
            Field::Seq => "seq",
            Field::MicroBatch => "micro-batch",
            Field::Vocab => "vocab",
            Field::Mlp => "mlp",
            Field::Ffn => "ffn",
            Field::Tflops => "tflops",
            Field::Bandwidth => "bandwidth",
            Field::Latency => "latency",
            Field::Layout => "layout",
            Field::FlashAttention => "flash-attention",
            Field::Tp => "tp",
            Field::Gpu => "gpu",
            Field::GpusPerNode => "gpus-per-node",
            Field::GemmEfficiency => "gemm-efficiency",
            Field::MemoryEfficiency => "memory-efficiency",
            Field::Calibrate => "calibrate",
            Field::Recompute => "recompute",
            Field::Offload => "offload",
            Field::CopyTime => "copy-time",
            Field::HostGbps => "host-gbps",
            Field::S => "s",
            Field::T => "t",
            Field::Dp => "dp",
            Field::Zero => "zero",
            Field::Gpus => "gpus",
            Field::GlobalBatch => "global-batch",
            Field::RankOrder => "rank-order",
            Field::SequenceParallel => "sequence-parallel",
            Field::TpOverlap => "tp-overlap",
            Field::Precision => "precision",
            Field::HeadDim => "head-dim",
            Field::Experts => "experts",
            Field::TopK => "top-k",
            Field::SharedExperts => "shared-experts",
            Field::ExpertFfn => "expert-ffn",
            Field::DenseLayers => "dense-layers",
            Field::Ep => "ep",
            Field::CapacityFactor => "capacity-factor",
            Field::QLoraRank => "q-lora-rank",
            Field::KvLoraRank => "kv-lora-rank",
            Field::QkRopeDim => "qk-rope-dim",
            Field::QkNopeDim => "qk-nope-dim",
            Field::VHeadDim => "v-head-dim",
            Field::Mtp => "mtp",
        }
    }
}

/// A parameter that a generator cannot accept, with the setting that causes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamError {
    /// The setting to change.
    pub field: Field,
    /// What was wrong and what was expected, lowercase, no trailing period.
    pub message: String,
    /// Suggestions, one per line.
    pub hints: Vec<String>,
}

impl ParamError {
    /// An error about `field`.
    pub fn new(field: Field, message: impl Into<String>) -> ParamError {
        ParamError { field, message: message.into(), hints: Vec::new() }
    }

    /// Adds a `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> ParamError {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_with_hints(f, &self.message, &self.hints)
    }
}

impl std::error::Error for ParamError {}

/// Where a device is stuck when a schedule cannot finish.
#[derive(Clone, Debug, PartialEq)]
pub struct Stuck {
    /// The device.
    pub device: u32,
    /// Position of the stuck op in the device's order.
    pub position: usize,
    /// The pass the device cannot start.
    pub pass: Pass,
    /// The pass it waits for.
    pub waits_for: Pass,
    /// Where that pass is scheduled (device, position), if anywhere.
    pub waits_on: Option<(u32, usize)>,
    /// Under blocking sends (`--p2p blocking`): the result of the device's previous op it
    /// cannot send, because the receiver has not reached the exchange after `waits_for`.
    pub send: Option<Pass>,
}

/// Why a schedule could not be simulated.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// No device can make progress. One entry per device that did not finish.
    Deadlock(Vec<Stuck>),
    /// The schedule does not fit its placement (a stage, microbatch or slice out of range).
    Malformed(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Deadlock(stuck) => {
                f.write_str("schedule deadlocks: no device can make progress")?;
                for s in stuck {
                    if let Some(send) = s.send {
                        write!(
                            f,
                            "\n  device {} cannot start {} (position {}): its send of {} completes only once the \
                             receiver posts it, after {}",
                            s.device, s.pass, s.position, send, s.waits_for
                        )?;
                        if let Some((d, pos)) = s.waits_on {
                            write!(f, " on device {d} (position {pos})")?;
                        }
                        continue;
                    }
                    write!(
                        f,
                        "\n  device {} is stuck on {} (position {}), waiting for {}",
                        s.device, s.pass, s.position, s.waits_for
                    )?;
                    match s.waits_on {
                        Some((d, pos)) => write!(f, " on device {d} (position {pos})")?,
                        None => f.write_str(", which no device runs")?,
                    }
                }
                if stuck.iter().any(|s| s.send.is_some()) {
                    return write_with_hints(
                        f,
                        "",
                        &["with --p2p blocking a device exchanges after each op and waits until the receiver \
                           reaches its matching exchange; this order's exchanges never meet (it needs \
                           asynchronous sends: --p2p async)"],
                    );
                }
                write_with_hints(
                    f,
                    "",
                    &["a pass can only start after the pass it depends on; \
                       reorder the devices' passes so every dependency comes first"],
                )
            }
            SimError::Malformed(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for SimError {}

/// How serious a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Severity {
    /// Worth knowing; the schedule still runs.
    Warning,
    /// The schedule is wrong.
    Error,
}

/// A finding about a schedule, located at a device and position when it has one.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Diagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// The device (row) it concerns.
    pub device: Option<u32>,
    /// The position (column) in that device's order.
    pub position: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
    /// Suggestions.
    pub hints: Vec<String>,
    /// Whether `message` already names the place in the file it comes from (`zb.csv, row 1,
    /// column 4: …`); then the display adds no `at:` line.
    pub located_in_message: bool,
}

impl Diagnostic {
    /// An error at an optional location.
    pub fn error(device: Option<u32>, position: Option<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            device,
            position,
            message: message.into(),
            hints: Vec::new(),
            located_in_message: false,
        }
    }

    /// Adds a `hint:` line.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{label}: {}", self.message)?;
        match (self.device, self.position, self.located_in_message) {
            (_, _, true) => {}
            (Some(d), Some(p), false) => write!(f, "\n  at: device {d}, position {p}")?,
            (Some(d), None, false) => write!(f, "\n  at: device {d}")?,
            _ => {}
        }
        write_with_hints(f, "", &self.hints)
    }
}

/// Asserts that every value in `all` reads back from its `name`, that no two share a name and
/// that an unknown name reads as nothing: what every key a flag or URL carries promises.
#[cfg(test)]
pub(crate) fn assert_names_round_trip<T: Copy + PartialEq + fmt::Debug>(
    all: &[T],
    name: fn(T) -> &'static str,
    read: fn(&str) -> Option<T>,
) {
    for &value in all {
        assert_eq!(read(name(value)), Some(value));
    }
    let mut names: Vec<&str> = all.iter().map(|&value| name(value)).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert_eq!(read("nope"), None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_reads_back_from_its_name() {
        assert_names_round_trip(&Field::ALL, Field::name, Field::from_name);
    }

    #[test]
    fn param_error_prints_hints_on_their_own_lines() {
        let e = ParamError::new(Field::Devices, "dualpipe needs an even number of devices, found 5")
            .hint("use 4 or 6 devices");
        assert_eq!(e.to_string(), "dualpipe needs an even number of devices, found 5\n  hint: use 4 or 6 devices");
    }

    #[test]
    fn deadlock_names_every_stuck_device() {
        let e = SimError::Deadlock(vec![
            Stuck {
                device: 0,
                position: 1,
                pass: Pass::b(0, 0),
                waits_for: Pass::b(1, 0),
                waits_on: Some((1, 2)),
                send: None,
            },
            Stuck { device: 1, position: 0, pass: Pass::f(1, 1), waits_for: Pass::f(0, 1), waits_on: None, send: None },
        ]);
        let text = e.to_string();
        assert!(text.contains("device 0 is stuck on B(stage 0, mb 0) (position 1), waiting for B(stage 1, mb 0) on device 1 (position 2)"), "{text}");
        assert!(text.contains("device 1 is stuck on F(stage 1, mb 1) (position 0), waiting for F(stage 0, mb 1), which no device runs"), "{text}");
    }
}
