//! The vocabulary shards' links (Vocabulary Parallelism): what S, T, IF and IB wait for, the
//! barriers they feed, and the transformer passes that wait for a barrier. The simulator adds
//! these to [`super::dependency`]'s one dependency per pass; the rules are the authors' chain
//! per microbatch (`docs/notes/vocab-oracles.md`):
//!
//! IF → input barrier → F of the first stage → (broadcast) S → output barrier → T
//! (→ output-gradient barrier, with two barriers) → B of the last stage → (broadcast) IB.
//!
//! Uses the IR and the key space only.

use super::deps::{Dep, DepClass};
use crate::schedule::{Pass, PassKind, Schedule, VocabSplit};

/// What a barrier reduces: one all-reduce over every shard per microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum CommKind {
    /// After S: the softmax statistics (max, sum of exponentials, predicted logits) and, with
    /// one barrier, the input gradient of the output layer (the authors' C0).
    OutputBarrier,
    /// After T, with two barriers: the output layer's input gradient (the authors' C1).
    OutputGradBarrier,
    /// After IF: the input layer's output, summed over the shards.
    InputBarrier,
}

impl CommKind {
    /// Every kind, in a fixed order.
    pub const ALL: [CommKind; 3] = [CommKind::OutputBarrier, CommKind::OutputGradBarrier, CommKind::InputBarrier];

    /// Its position in [`CommKind::ALL`].
    pub fn index(self) -> usize {
        match self {
            CommKind::OutputBarrier => 0,
            CommKind::OutputGradBarrier => 1,
            CommKind::InputBarrier => 2,
        }
    }

    /// The short name used in files and charts.
    pub fn name(self) -> &'static str {
        match self {
            CommKind::OutputBarrier => "reduce-s",
            CommKind::OutputGradBarrier => "reduce-t",
            CommKind::InputBarrier => "reduce-if",
        }
    }

    /// A human name for tooltips and legends.
    pub fn long_name(self) -> &'static str {
        match self {
            CommKind::OutputBarrier => "all-reduce after S (output-layer statistics)",
            CommKind::OutputGradBarrier => "all-reduce after T (output-layer input gradient)",
            CommKind::InputBarrier => "all-reduce after IF (input-layer output)",
        }
    }
}

/// One barrier: its kind and microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Barrier {
    /// What it reduces.
    pub kind: CommKind,
    /// For which microbatch.
    pub microbatch: u32,
}

/// What a pass waits for beyond its transformer dependency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    /// A pass on another device (a broadcast: the simulator adds the hop).
    Pass(Dep),
    /// A barrier's end.
    Barrier(Barrier),
}

/// The links of one schedule with vocabulary passes.
#[derive(Clone, Copy, Debug)]
pub struct VocabLinks {
    split: VocabSplit,
    /// Number of shards: every device holds one.
    shards: u32,
    /// Stages in one pipeline: the last one's forward feeds S, its backward waits for a barrier.
    per_pipeline: u32,
    /// Whether the input layer is split too (the orders hold IF passes): then the first
    /// stage's forward waits for the input barrier.
    input: bool,
    /// Whether the output layer is split (the orders hold S passes).
    output: bool,
}

impl VocabLinks {
    /// The links of `schedule`, if its orders hold vocabulary passes.
    pub fn of(schedule: &Schedule) -> Option<VocabLinks> {
        let split = schedule.vocab_split()?;
        let kinds = |k: PassKind| schedule.orders.iter().flatten().flat_map(|op| op.passes()).any(|p| p.kind == k);
        Some(VocabLinks {
            split,
            shards: schedule.placement.devices(),
            per_pipeline: schedule.placement.stages_per_pipeline(),
            input: kinds(PassKind::IF),
            output: kinds(PassKind::S),
        })
    }

    /// Number of shards: each barrier waits for this many passes.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Whether barriers run on a side stream (else on the compute stream).
    pub fn side_stream(&self) -> bool {
        self.split.side_stream
    }

    /// What `pass` waits for besides its transformer dependency.
    pub fn waits(&self, pass: Pass) -> Option<Link> {
        let Pass { kind, stage, microbatch, slice } = pass;
        let barrier = |kind| Some(Link::Barrier(Barrier { kind, microbatch }));
        match kind {
            PassKind::S => {
                let last = self.per_pipeline.checked_sub(1)?;
                Some(Link::Pass(Dep { class: DepClass::Forward, stage: last, microbatch, slice }))
            }
            PassKind::T => barrier(CommKind::OutputBarrier),
            PassKind::IB => Some(Link::Pass(Dep { class: DepClass::InputGrad, stage: 0, microbatch, slice })),
            PassKind::F if self.input && stage == 0 => barrier(CommKind::InputBarrier),
            PassKind::B | PassKind::BW if self.output && stage + 1 == self.per_pipeline => {
                barrier(if self.split.barriers >= 2 { CommKind::OutputGradBarrier } else { CommKind::OutputBarrier })
            }
            _ => None,
        }
    }

    /// The barrier `pass` feeds, if any.
    pub fn feeds(&self, pass: Pass) -> Option<Barrier> {
        let kind = match pass.kind {
            PassKind::S => CommKind::OutputBarrier,
            PassKind::T if self.split.barriers >= 2 => CommKind::OutputGradBarrier,
            PassKind::IF => CommKind::InputBarrier,
            _ => return None,
        };
        Some(Barrier { kind, microbatch: pass.microbatch })
    }

    /// A pass that stands for a barrier in messages: the pass on shard 0 that feeds it.
    pub fn as_pass(barrier: Barrier) -> Pass {
        let kind = match barrier.kind {
            CommKind::OutputBarrier => PassKind::S,
            CommKind::OutputGradBarrier => PassKind::T,
            CommKind::InputBarrier => PassKind::IF,
        };
        Pass::new(kind, 0, barrier.microbatch)
    }
}
