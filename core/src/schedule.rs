//! Schedules: the ordered passes each device runs, and where model stages live.
//!
//! A [`Schedule`] never holds times. Times are derived by [`crate::simulate`].

use std::fmt;
use std::ops::Range;

/// What a pass computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum PassKind {
    /// Forward.
    F,
    /// Input-gradient backward (the Zero Bubble papers' B; PyTorch's `I`).
    B,
    /// Weight-gradient backward.
    W,
    /// Fused full backward: B and W in one pass (PyTorch's `B`).
    BW,
    /// Recompute: the forward run again before its backward, from the input the forward kept
    /// (activation checkpointing; the Zero Bubble code's `R`).
    R,
    /// Output layer forward on one vocabulary shard (Vocabulary Parallelism's S): the LM head
    /// GEMM and the softmax statistics of the shard. Its `stage` is the shard, which lives on the
    /// device of the same number.
    S,
    /// Output layer backward on one vocabulary shard (Vocabulary Parallelism's T).
    T,
    /// Input layer (embedding) forward on one vocabulary shard.
    IF,
    /// Input layer (embedding) backward on one vocabulary shard.
    IB,
}

impl PassKind {
    /// Every kind, in a fixed order.
    pub const ALL: [PassKind; 9] = [
        PassKind::F,
        PassKind::B,
        PassKind::W,
        PassKind::BW,
        PassKind::R,
        PassKind::S,
        PassKind::T,
        PassKind::IF,
        PassKind::IB,
    ];

    /// The kinds that run on a vocabulary shard rather than a model stage.
    pub const VOCAB: [PassKind; 4] = [PassKind::S, PassKind::T, PassKind::IF, PassKind::IB];

    /// Its position in [`PassKind::ALL`], for tables indexed by kind.
    pub fn index(self) -> usize {
        match self {
            PassKind::F => 0,
            PassKind::B => 1,
            PassKind::W => 2,
            PassKind::BW => 3,
            PassKind::R => 4,
            PassKind::S => 5,
            PassKind::T => 6,
            PassKind::IF => 7,
            PassKind::IB => 8,
        }
    }

    /// The short name used in orders and files: `F`, `B`, `W`, `BW`, `R`, `S`, `T`, `IF`, `IB`.
    pub fn name(self) -> &'static str {
        match self {
            PassKind::F => "F",
            PassKind::B => "B",
            PassKind::W => "W",
            PassKind::BW => "BW",
            PassKind::R => "R",
            PassKind::S => "S",
            PassKind::T => "T",
            PassKind::IF => "IF",
            PassKind::IB => "IB",
        }
    }

    /// A human name for tooltips and legends.
    pub fn long_name(self) -> &'static str {
        match self {
            PassKind::F => "forward",
            PassKind::B => "input-gradient backward",
            PassKind::W => "weight-gradient backward",
            PassKind::BW => "full backward",
            PassKind::R => "recompute",
            PassKind::S => "output-layer forward (vocabulary shard)",
            PassKind::T => "output-layer backward (vocabulary shard)",
            PassKind::IF => "input-layer forward (vocabulary shard)",
            PassKind::IB => "input-layer backward (vocabulary shard)",
        }
    }

    /// Whether the pass runs on a vocabulary shard (S, T, IF, IB): its `stage` names the shard.
    pub fn is_vocab(self) -> bool {
        matches!(self, PassKind::S | PassKind::T | PassKind::IF | PassKind::IB)
    }

    /// Whether this pass produces the input gradient that flows to the previous stage.
    pub fn is_input_grad(self) -> bool {
        matches!(self, PassKind::B | PassKind::BW)
    }
}

/// One pass: a kind, a model stage, a microbatch and a sequence slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Pass {
    /// What the pass computes.
    pub kind: PassKind,
    /// Global model stage (see [`Placement`]).
    pub stage: u32,
    /// Microbatch index, `0..microbatches`.
    pub microbatch: u32,
    /// Sequence slice, `0..slices` (always 0 unless the schedule splits sequences).
    pub slice: u32,
}

impl Pass {
    /// A pass of `kind` on `stage` for `microbatch`, slice 0.
    pub const fn new(kind: PassKind, stage: u32, microbatch: u32) -> Pass {
        Pass { kind, stage, microbatch, slice: 0 }
    }

    /// A forward pass.
    pub const fn f(stage: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::F, stage, microbatch)
    }

    /// An input-gradient backward pass.
    pub const fn b(stage: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::B, stage, microbatch)
    }

    /// A weight-gradient backward pass.
    pub const fn w(stage: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::W, stage, microbatch)
    }

    /// A fused full backward pass.
    pub const fn bw(stage: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::BW, stage, microbatch)
    }

    /// A recompute pass.
    pub const fn r(stage: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::R, stage, microbatch)
    }

    /// An output-layer forward on vocabulary shard `shard`.
    pub const fn s(shard: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::S, shard, microbatch)
    }

    /// An output-layer backward on vocabulary shard `shard`.
    pub const fn t(shard: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::T, shard, microbatch)
    }

    /// An input-layer forward on vocabulary shard `shard`.
    pub const fn input_f(shard: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::IF, shard, microbatch)
    }

    /// An input-layer backward on vocabulary shard `shard`.
    pub const fn input_b(shard: u32, microbatch: u32) -> Pass {
        Pass::new(PassKind::IB, shard, microbatch)
    }

    /// The same pass on sequence slice `slice`.
    pub const fn with_slice(self, slice: u32) -> Pass {
        Pass { slice, ..self }
    }
}

impl fmt::Display for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.kind.is_vocab() { "shard" } else { "stage" };
        write!(f, "{}({what} {}, mb {}", self.kind.name(), self.stage, self.microbatch)?;
        if self.slice > 0 {
            write!(f, ", slice {}", self.slice)?;
        }
        f.write_str(")")
    }
}

/// The passes of an op ([`Op::passes`]), first to last.
#[derive(Clone, Debug)]
pub struct Passes {
    next: Option<Pass>,
    then: Option<Pass>,
}

impl Iterator for Passes {
    type Item = Pass;

    #[inline]
    fn next(&mut self) -> Option<Pass> {
        let out = self.next;
        self.next = self.then.take();
        out
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.next.is_some()) + usize::from(self.then.is_some());
        (n, Some(n))
    }
}

impl ExactSizeIterator for Passes {}

impl std::iter::FusedIterator for Passes {}

/// One entry of a device's order: a single pass, or a forward and a backward that run
/// overlapped as one unit (DualPipe's F&B pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Op {
    /// A single pass.
    One(Pass),
    /// A forward (first) overlapped with a backward (second).
    Pair(Pass, Pass),
}

impl Op {
    /// The passes this op runs: one, or the two of a pair.
    pub fn passes(&self) -> Passes {
        match *self {
            Op::One(p) => Passes { next: Some(p), then: None },
            Op::Pair(f, b) => Passes { next: Some(f), then: Some(b) },
        }
    }

    /// The first pass (the forward of a pair).
    pub fn first(&self) -> Pass {
        match *self {
            Op::One(p) | Op::Pair(p, _) => p,
        }
    }

    /// Whether this op is an overlapped pair.
    pub fn is_pair(&self) -> bool {
        matches!(self, Op::Pair(..))
    }
}

impl From<Pass> for Op {
    fn from(pass: Pass) -> Op {
        Op::One(pass)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::One(p) => p.fmt(f),
            Op::Pair(a, b) => write!(f, "{a} overlapped with {b}"),
        }
    }
}

/// An op packed for the wire: a pair flag, then each pass's kind, stage, microbatch and slice
/// (the second pass all zeros for a single one).
#[cfg(feature = "wire")]
impl crate::units::packed::Packed for Op {
    const SIZE: usize = 1 + 2 * 13;

    fn put(&self, out: &mut Vec<u8>) {
        let pass = |out: &mut Vec<u8>, p: Option<Pass>| {
            let p = p.unwrap_or(Pass { kind: PassKind::F, stage: 0, microbatch: 0, slice: 0 });
            out.push(p.kind.index() as u8);
            for v in [p.stage, p.microbatch, p.slice] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        };
        match *self {
            Op::One(p) => {
                out.push(0);
                pass(out, Some(p));
                pass(out, None);
            }
            Op::Pair(f, b) => {
                out.push(1);
                pass(out, Some(f));
                pass(out, Some(b));
            }
        }
    }

    fn take(b: &[u8]) -> Option<Op> {
        use crate::units::packed::u32_at;
        let pass = |at: usize| {
            Some(Pass {
                kind: *PassKind::ALL.get(usize::from(*b.get(at)?))?,
                stage: u32_at(b, at + 1)?,
                microbatch: u32_at(b, at + 5)?,
                slice: u32_at(b, at + 9)?,
            })
        };
        match b.first()? {
            0 => Some(Op::One(pass(1)?)),
            1 => Some(Op::Pair(pass(1)?, pass(14)?)),
            _ => None,
        }
    }
}

/// Which way a copy moves an activation between device and host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum CopyKind {
    /// Device to host, after the forward: the activation leaves device memory when it ends.
    Offload,
    /// Host to device, before the backward: the activation is back when it ends.
    Reload,
}

impl CopyKind {
    /// Both kinds.
    pub const ALL: [CopyKind; 2] = [CopyKind::Offload, CopyKind::Reload];

    /// The name used in files: `offload`, `reload`.
    pub fn name(self) -> &'static str {
        match self {
            CopyKind::Offload => "offload",
            CopyKind::Reload => "reload",
        }
    }
}

/// A copy of one forward's activation on the device's copy stream, which runs beside its
/// compute. It is issued when the device's compute reaches op `at` of its order (it may
/// start later, when the copy stream is free), so it overlaps the ops from `at` on.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct CopyOp {
    /// Which way it copies.
    pub kind: CopyKind,
    /// The forward whose activation it moves: stage, microbatch and slice (its kind is F).
    pub pass: Pass,
    /// The position in the device's order the copy is issued at, `0..=len`.
    pub at: u32,
    /// Its planned slot on a shared host link, when the placement planned one (PipeOffload).
    pub slot: Option<CopySlot>,
}

impl CopyOp {
    /// A copy with no slot: it starts as soon as it can and takes the stage's copy time.
    pub fn new(kind: CopyKind, pass: Pass, at: u32) -> CopyOp {
        CopyOp { kind, pass, at, slot: None }
    }
}

/// A copy's planned slot on a host link that devices share in turns: the copy never starts
/// before `start` (the devices' barrier) and takes `time` (its share of the link).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct CopySlot {
    /// The planned start: the earliest the copy may start.
    pub start: f64,
    /// How long the copy takes.
    pub time: f64,
}

impl fmt::Display for CopyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.pass;
        write!(f, "{}(stage {}, mb {}", self.kind.name(), p.stage, p.microbatch)?;
        if p.slice > 0 {
            write!(f, ", slice {}", p.slice)?;
        }
        f.write_str(")")
    }
}

/// How model stages are laid out on devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum PlacementKind {
    /// Stage `s` on device `s`: one chunk per device.
    Linear,
    /// Stage `s` on device `s mod P`: `chunks` chunks per device (Megatron's virtual pipeline).
    Interleaved,
    /// Chunk 0 runs down the devices, chunk 1 back up: device 0 holds the first and last stage.
    V,
    /// Hanayo's waves: the V folded `waves` times, `2 * waves` chunks per device.
    Wave,
    /// Two model replicas running in opposite directions (Chimera, DualPipe).
    TwoDirectional,
    /// Read from a file: any stage on any device.
    Custom,
}

impl PlacementKind {
    /// Every kind, in a fixed order (the app's wire format numbers them by it).
    pub const ALL: [PlacementKind; 6] = [
        PlacementKind::Linear,
        PlacementKind::Interleaved,
        PlacementKind::V,
        PlacementKind::Wave,
        PlacementKind::TwoDirectional,
        PlacementKind::Custom,
    ];

    /// The lowercase name used in JSON and the UI.
    pub fn name(self) -> &'static str {
        match self {
            PlacementKind::Linear => "linear",
            PlacementKind::Interleaved => "interleaved",
            PlacementKind::V => "v",
            PlacementKind::Wave => "wave",
            PlacementKind::TwoDirectional => "two-directional",
            PlacementKind::Custom => "custom",
        }
    }
}

/// Maps model stages to devices.
///
/// The model is cut into `stages_per_pipeline` stages. A schedule runs one pipeline (one copy of
/// the model) or, for two-directional schedules, two pipelines. Global stage `g` belongs to
/// pipeline `g / stages_per_pipeline`; data flows forward through a pipeline's stages in
/// increasing order. Each pipeline runs an equal, contiguous share of the microbatches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "wire",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "PlacementParts", into = "PlacementParts")
)]
pub struct Placement {
    kind: PlacementKind,
    devices: u32,
    stages_per_pipeline: u32,
    stage_device: Vec<u32>,
}

impl Placement {
    /// One stage per device: stage `s` on device `s`.
    pub fn linear(devices: u32) -> Placement {
        Placement {
            kind: PlacementKind::Linear,
            devices,
            stages_per_pipeline: devices,
            stage_device: (0..devices).collect(),
        }
    }

    /// `chunks` stages per device, stage `s` on device `s mod devices`.
    pub fn interleaved(devices: u32, chunks: u32) -> Placement {
        let stages = devices * chunks;
        Placement {
            kind: PlacementKind::Interleaved,
            devices,
            stages_per_pipeline: stages,
            stage_device: (0..stages).map(|s| s % devices).collect(),
        }
    }

    /// Two chunks per device in a V: stages `0..P` go down the devices, `P..2P` come back up.
    pub fn v_shape(devices: u32) -> Placement {
        let mut placement = Placement::wave(devices, 1);
        placement.kind = PlacementKind::V;
        placement
    }

    /// Hanayo's wave placement: `2 * waves` chunks per device, zig-zagging down and up.
    pub fn wave(devices: u32, waves: u32) -> Placement {
        let stages = 2 * waves * devices;
        let stage_device = (0..stages)
            .map(|s| {
                let (leg, pos) = (s / devices, s % devices);
                if leg % 2 == 0 {
                    pos
                } else {
                    devices - 1 - pos
                }
            })
            .collect();
        Placement { kind: PlacementKind::Wave, devices, stages_per_pipeline: stages, stage_device }
    }

    /// Two replicas: pipeline 0 maps stage `s` to device `s`, pipeline 1 maps its stage `s`
    /// to device `P-1-s`.
    pub fn two_directional(devices: u32) -> Placement {
        let stage_device = (0..devices).chain((0..devices).map(|s| devices - 1 - s)).collect();
        Placement { kind: PlacementKind::TwoDirectional, devices, stages_per_pipeline: devices, stage_device }
    }

    /// A placement read from a file: `stage_device[g]` is the device of stage `g`, one pipeline.
    pub fn custom(devices: u32, stage_device: Vec<u32>) -> Placement {
        let stages = stage_device.len() as u32;
        Placement { kind: PlacementKind::Custom, devices, stages_per_pipeline: stages, stage_device }
    }

    /// The placement of `kind` with this stage table, built by its constructor: the table must
    /// be the one the constructor builds, so nothing can arrive that the core could not make.
    ///
    /// # Errors
    /// A message when the table is not the one `kind` builds for `devices`.
    pub fn rebuild(
        kind: PlacementKind,
        devices: u32,
        per_pipeline: u32,
        stage_device: Vec<u32>,
    ) -> Result<Placement, String> {
        let stages = stage_device.len() as u32;
        let mismatch = || format!("the {} placement of {devices} devices does not match its stage table", kind.name());
        // The table's length is known before any constructor allocates one.
        let expected = match kind {
            PlacementKind::Linear => Some(devices),
            PlacementKind::Interleaved | PlacementKind::Custom => Some(per_pipeline),
            PlacementKind::V => devices.checked_mul(2),
            PlacementKind::Wave => Some(per_pipeline),
            PlacementKind::TwoDirectional => devices.checked_mul(2),
        };
        if expected != Some(stages) || devices == 0 {
            return Err(mismatch());
        }
        let built = match kind {
            PlacementKind::Linear => Placement::linear(devices),
            PlacementKind::Interleaved => Placement::interleaved(devices, per_pipeline / devices),
            PlacementKind::V => Placement::v_shape(devices),
            PlacementKind::Wave => Placement::wave(devices, stages / (2 * devices)),
            PlacementKind::TwoDirectional => Placement::two_directional(devices),
            PlacementKind::Custom => Placement::custom(devices, stage_device.clone()),
        };
        if built.stage_device != stage_device || built.stages_per_pipeline != per_pipeline {
            return Err(mismatch());
        }
        Ok(built)
    }

    /// The kind of layout.
    pub fn kind(&self) -> PlacementKind {
        self.kind
    }

    /// Number of devices.
    pub fn devices(&self) -> u32 {
        self.devices
    }

    /// Number of stages in one pipeline (one copy of the model).
    pub fn stages_per_pipeline(&self) -> u32 {
        self.stages_per_pipeline
    }

    /// Number of pipelines (model copies): 1, or 2 for two-directional schedules.
    pub fn pipelines(&self) -> u32 {
        (self.stage_device.len() as u32).checked_div(self.stages_per_pipeline).unwrap_or(0)
    }

    /// Total number of global stages over all pipelines.
    pub fn stages(&self) -> u32 {
        self.stage_device.len() as u32
    }

    /// The device that runs `stage`, if the stage exists.
    pub fn device_of(&self, stage: u32) -> Option<u32> {
        self.stage_device.get(stage as usize).copied()
    }

    /// The stage-to-device table.
    pub fn stage_devices(&self) -> &[u32] {
        &self.stage_device
    }

    /// Which pipeline (model copy) `stage` belongs to.
    pub fn pipeline_of(&self, stage: u32) -> u32 {
        stage / self.stages_per_pipeline.max(1)
    }

    /// Position of `stage` inside its pipeline, `0..stages_per_pipeline`.
    pub fn local_stage(&self, stage: u32) -> u32 {
        stage % self.stages_per_pipeline.max(1)
    }

    /// Whether `stage` is the first stage of its pipeline (its forward has no predecessor).
    pub fn is_first(&self, stage: u32) -> bool {
        self.local_stage(stage) == 0
    }

    /// Whether `stage` is the last stage of its pipeline (where the loss is computed).
    pub fn is_last(&self, stage: u32) -> bool {
        self.local_stage(stage) + 1 == self.stages_per_pipeline
    }

    /// Index of `stage` among the stages on its device, ordered by stage id: the chunk.
    pub fn chunk_of(&self, stage: u32) -> u32 {
        let Some(device) = self.device_of(stage) else { return 0 };
        self.stage_device[..stage as usize].iter().filter(|&&d| d == device).count() as u32
    }

    /// [`Placement::chunk_of`] for every stage at once (linear time).
    pub fn chunk_table(&self) -> Vec<u32> {
        let mut seen = vec![0u32; self.devices as usize];
        self.stage_device
            .iter()
            .map(|&d| match seen.get_mut(d as usize) {
                Some(n) => {
                    *n += 1;
                    *n - 1
                }
                None => 0,
            })
            .collect()
    }

    /// Number of chunks (stages) each device holds at most.
    pub fn chunks_per_device(&self) -> u32 {
        let mut counts = vec![0u32; self.devices as usize];
        for &d in &self.stage_device {
            if let Some(c) = counts.get_mut(d as usize) {
                *c += 1;
            }
        }
        counts.into_iter().max().unwrap_or(0)
    }

    /// The fraction of a device's plain-1F1B share of the model that one stage holds: the
    /// factor applied to the user's F, B, W and mem-f (`devices / stages_per_pipeline`).
    pub fn stage_scale(&self) -> f64 {
        if self.stages_per_pipeline == 0 {
            1.0
        } else {
            f64::from(self.devices) / f64::from(self.stages_per_pipeline)
        }
    }

    /// The microbatches pipeline `pipeline` runs, out of `microbatches` in total: an equal,
    /// contiguous share.
    pub fn pipeline_microbatches(&self, pipeline: u32, microbatches: u32) -> Range<u32> {
        let n = self.pipelines().max(1);
        let start = (u64::from(microbatches) * u64::from(pipeline) / u64::from(n)) as u32;
        let end = (u64::from(microbatches) * u64::from(pipeline + 1) / u64::from(n)) as u32;
        start..end
    }
}

/// A [`Placement`] as it travels between the playground's threads ([`Placement::rebuild`]
/// checks it on arrival).
#[cfg(feature = "wire")]
#[derive(serde::Serialize, serde::Deserialize)]
struct PlacementParts {
    kind: PlacementKind,
    devices: u32,
    stages_per_pipeline: u32,
    stage_device: Vec<u32>,
}

#[cfg(feature = "wire")]
impl From<Placement> for PlacementParts {
    fn from(p: Placement) -> PlacementParts {
        PlacementParts {
            kind: p.kind,
            devices: p.devices,
            stages_per_pipeline: p.stages_per_pipeline,
            stage_device: p.stage_device,
        }
    }
}

#[cfg(feature = "wire")]
impl TryFrom<PlacementParts> for Placement {
    type Error = String;

    fn try_from(p: PlacementParts) -> Result<Placement, String> {
        Placement::rebuild(p.kind, p.devices, p.stages_per_pipeline, p.stage_device)
    }
}

/// How a schedule splits the vocabulary layers over its devices (Vocabulary Parallelism):
/// shard `k` of the output layer (passes S, T) and of the input layer (IF, IB) lives on device
/// `k`. The barriers are all-reduces over every shard, one set per microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct VocabSplit {
    /// Barriers per microbatch: 1 (after S: Vocab-2, V-Half with backward fusion), or 2 (after
    /// S and after T: Vocab-1, interlaced, V-Half without fusion). With 2, the last stage's B
    /// waits for the T barrier; with 1, for the S barrier.
    pub barriers: u32,
    /// Whether the barriers run on a side stream beside compute (the 1F1B and V-Half loops),
    /// or on the compute stream (interlaced: synchronous collectives).
    pub side_stream: bool,
}

impl VocabSplit {
    /// The split a schedule has when a file names none: one barrier, on a side stream.
    pub const DEFAULT: VocabSplit = VocabSplit { barriers: 1, side_stream: true };
}

/// A pipeline schedule: for each device, the ordered ops it runs. No times.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Schedule {
    /// Where each model stage lives.
    pub placement: Placement,
    /// Number of microbatches in one training step.
    pub microbatches: u32,
    /// Number of sequence slices per microbatch (1 unless sequences are split).
    pub slices: u32,
    /// `orders[d]` is the ordered list of ops device `d` runs.
    #[cfg_attr(feature = "wire", serde(with = "crate::units::packed::lists"))]
    pub orders: Vec<Vec<Op>>,
    /// `copies[d]`: device `d`'s activation copies to and from the host, in issue order
    /// (empty, or one list per device).
    pub copies: Vec<Vec<CopyOp>>,
    /// How the vocabulary layers are split, when the orders hold S, T, IF or IB passes.
    pub vocab: Option<VocabSplit>,
}

impl Schedule {
    /// An empty schedule for `placement`: one empty order per device.
    pub fn new(placement: Placement, microbatches: u32) -> Schedule {
        let orders = vec![Vec::new(); placement.devices() as usize];
        Schedule { placement, microbatches, slices: 1, orders, copies: Vec::new(), vocab: None }
    }

    /// Number of devices.
    pub fn devices(&self) -> u32 {
        self.orders.len() as u32
    }

    /// Total number of passes (a pair counts as two).
    pub fn pass_count(&self) -> usize {
        self.orders.iter().flatten().map(|op| if op.is_pair() { 2 } else { 1 }).sum()
    }

    /// Whether any pass runs on a vocabulary shard (S, T, IF, IB).
    pub fn has_vocab_passes(&self) -> bool {
        self.orders.iter().flatten().flat_map(Op::passes).any(|p| p.kind.is_vocab())
    }

    /// The vocabulary split the simulator applies: the schedule's own, or the default when its
    /// orders hold vocabulary passes but it names none (a file that does not say).
    pub fn vocab_split(&self) -> Option<VocabSplit> {
        self.vocab.or_else(|| self.has_vocab_passes().then_some(VocabSplit::DEFAULT))
    }

    /// Whether any device copies activations to the host.
    pub fn has_copies(&self) -> bool {
        self.copies.iter().any(|c| !c.is_empty())
    }

    /// Whether the schedule trades memory for time: a recompute pass, or a copy to the host.
    pub fn trades_memory(&self) -> bool {
        self.has_copies() || self.orders.iter().flatten().flat_map(Op::passes).any(|p| p.kind == PassKind::R)
    }

    /// The schedule without its R passes and copies: the compute orders a runtime without
    /// recompute or offload actions runs.
    pub fn compute_orders(&self) -> Schedule {
        let orders = self
            .orders
            .iter()
            .map(|order| {
                order.iter().filter(|op| !matches!(op, Op::One(p) if p.kind == PassKind::R)).copied().collect()
            })
            .collect();
        Schedule { orders, copies: Vec::new(), ..self.clone() }
    }

    /// The schedule with its copies' planned slots dropped (borrowed when none has one): what
    /// a counterfactual run at other costs (no communication, mean stage costs, free copies)
    /// simulates, since a slot's start was planned at these costs.
    pub fn without_slots(&self) -> std::borrow::Cow<'_, Schedule> {
        if self.copies.iter().flatten().all(|c| c.slot.is_none()) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut out = self.clone();
        out.copies.iter_mut().flatten().for_each(|c| c.slot = None);
        std::borrow::Cow::Owned(out)
    }

    /// Device `device`'s copies, in issue order.
    pub fn copies_of(&self, device: u32) -> &[CopyOp] {
        self.copies.get(device as usize).map_or(&[], Vec::as_slice)
    }

    /// Total number of ops (a pair counts as one).
    pub fn op_count(&self) -> usize {
        self.orders.iter().map(Vec::len).sum()
    }

    /// Appends `op` to the order of `device`.
    ///
    /// # Panics
    /// If `device` is out of range: generators call this with devices they computed.
    pub fn push(&mut self, device: u32, op: impl Into<Op>) {
        self.orders[device as usize].push(op.into());
    }

    /// Appends `pass` to the device its placement names.
    ///
    /// # Panics
    /// If the stage has no device: generators call this with stages they computed.
    pub fn push_placed(&mut self, pass: Pass) {
        let device = self.placement.device_of(pass.stage).expect("stage out of range");
        self.push(device, pass);
    }

    /// A heading for a schedule read from file `name`: its sizes.
    pub fn file_label(&self, name: &str) -> String {
        format!(
            "{name} · {} · {} · {}",
            counted(self.devices(), "device", "devices"),
            counted(self.microbatches, "microbatch", "microbatches"),
            counted(self.placement.stages(), "stage", "stages")
        )
    }

    /// The compact notation of the Zero Bubble golden files for `device`'s order:
    /// `F3` forward of microbatch 3, `B`, `W`, `X` fused backward; upper case for chunk 0,
    /// lower case for chunk 1, and `[...]` around an overlapped pair. Chunks past 1 are
    /// written with a `@chunk` suffix.
    pub fn notation(&self, device: u32) -> String {
        let mut out = String::new();
        for op in self.orders.get(device as usize).into_iter().flatten() {
            if !out.is_empty() {
                out.push(' ');
            }
            match op {
                Op::One(p) => self.write_pass_notation(&mut out, *p),
                Op::Pair(a, b) => {
                    out.push('[');
                    self.write_pass_notation(&mut out, *a);
                    out.push(' ');
                    self.write_pass_notation(&mut out, *b);
                    out.push(']');
                }
            }
        }
        out
    }

    fn write_pass_notation(&self, out: &mut String, pass: Pass) {
        use fmt::Write as _;
        let chunk = self.placement.chunk_of(pass.stage);
        let letter = match pass.kind {
            PassKind::F => 'F',
            PassKind::B => 'B',
            PassKind::W => 'W',
            PassKind::BW => 'X',
            PassKind::R => 'R',
            PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => {
                let _ = write!(out, "{}{}", pass.kind.name(), pass.microbatch);
                return;
            }
        };
        out.push(if chunk == 1 { letter.to_ascii_lowercase() } else { letter });
        let _ = write!(out, "{}", pass.microbatch);
        if pass.slice > 0 {
            let _ = write!(out, ".{}", pass.slice);
        }
        if chunk > 1 {
            let _ = write!(out, "@{chunk}");
        }
    }
}

/// `n` followed by the noun in the number it takes: `1 device`, `4 devices`.
pub fn counted(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Small schedules shared by the tests of several modules.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Pass, Placement, Schedule};

    /// Two devices, one microbatch, split backward on the last stage.
    pub(crate) fn two_stage() -> Schedule {
        let mut s = Schedule::new(Placement::linear(2), 1);
        s.push(0, Pass::f(0, 0));
        s.push(1, Pass::f(1, 0));
        s.push(1, Pass::b(1, 0));
        s.push(1, Pass::w(1, 0));
        s.push(0, Pass::bw(0, 0));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_index_is_the_position_in_all() {
        for (i, kind) in PassKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind:?}");
        }
    }

    #[test]
    fn v_shape_puts_first_and_last_stage_on_device_zero() {
        let p = Placement::v_shape(4);
        assert_eq!(p.stage_devices(), &[0, 1, 2, 3, 3, 2, 1, 0]);
        assert_eq!(p.chunk_of(7), 1);
        assert_eq!(p.chunk_of(3), 0);
        assert_eq!(p.stage_scale(), 0.5);
        assert_eq!(p.pipelines(), 1);
    }

    #[test]
    fn wave_zigzags_and_scales_by_waves() {
        let p = Placement::wave(2, 2);
        assert_eq!(p.stage_devices(), &[0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(p.stage_scale(), 0.25);
        assert_eq!(p.chunks_per_device(), 4);
        assert_eq!(p.chunk_of(4), 2);
        let table: Vec<u32> = (0..p.stages()).map(|s| p.chunk_of(s)).collect();
        assert_eq!(p.chunk_table(), table);
    }

    #[test]
    fn two_directional_has_two_pipelines_in_opposite_directions() {
        let p = Placement::two_directional(4);
        assert_eq!(p.stage_devices(), &[0, 1, 2, 3, 3, 2, 1, 0]);
        assert_eq!(p.pipelines(), 2);
        assert!(p.is_last(3) && p.is_first(4) && p.is_last(7));
        assert_eq!(p.stage_scale(), 1.0);
        assert_eq!(p.pipeline_microbatches(0, 10), 0..5);
        assert_eq!(p.pipeline_microbatches(1, 10), 5..10);
    }

    #[test]
    fn interleaved_loops_over_devices() {
        let p = Placement::interleaved(3, 2);
        assert_eq!(p.stage_devices(), &[0, 1, 2, 0, 1, 2]);
        assert_eq!(p.chunk_of(4), 1);
        assert!((p.stage_scale() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn notation_uses_case_for_chunks_and_brackets_for_pairs() {
        let mut s = Schedule::new(Placement::v_shape(2), 2);
        s.push(0, Pass::f(0, 0));
        s.push(0, Pass::f(3, 0));
        s.push(0, Op::Pair(Pass::f(0, 1), Pass::bw(3, 0)));
        s.push(0, Pass::b(0, 0));
        s.push(0, Pass::w(0, 0));
        assert_eq!(s.notation(0), "F0 f0 [F1 x0] B0 W0");
    }
}
