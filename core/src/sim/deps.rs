//! Dependencies between passes, and the dense key space the simulator indexes them by.

use crate::error::SimError;
use crate::schedule::{Pass, PassKind, Placement, Schedule};

/// What a pass waits for: the end of a forward, or of an input-gradient pass (B or BW).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DepClass {
    /// The forward of a (stage, microbatch, slice).
    Forward,
    /// The input-gradient pass (B or BW) of a (stage, microbatch, slice).
    InputGrad,
}

/// The one pass a pass depends on, named by class, stage, microbatch and slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dep {
    /// Which kind of pass is awaited.
    pub class: DepClass,
    /// Its stage.
    pub stage: u32,
    /// Its microbatch.
    pub microbatch: u32,
    /// Its sequence slice.
    pub slice: u32,
}

impl Dep {
    /// A pass that satisfies this dependency, for messages (B stands for B or BW).
    pub fn as_pass(&self) -> Pass {
        let kind = match self.class {
            DepClass::Forward => PassKind::F,
            DepClass::InputGrad => PassKind::B,
        };
        Pass { kind, stage: self.stage, microbatch: self.microbatch, slice: self.slice }
    }
}

/// The dependency of `pass` under `placement`:
/// F of stage s after F of stage s-1 (none on a pipeline's first stage); the input-gradient
/// pass of stage s after that of stage s+1, or after its own F on a pipeline's last stage;
/// W after its own B; R (recompute) after its own F.
pub fn dependency(placement: &Placement, pass: Pass) -> Option<Dep> {
    let Pass { kind, stage, microbatch, slice } = pass;
    let dep = |class, stage| Some(Dep { class, stage, microbatch, slice });
    match kind {
        PassKind::F if placement.is_first(stage) => None,
        PassKind::F => dep(DepClass::Forward, stage - 1),
        PassKind::B | PassKind::BW if placement.is_last(stage) => dep(DepClass::Forward, stage),
        PassKind::B | PassKind::BW => dep(DepClass::InputGrad, stage + 1),
        PassKind::W => dep(DepClass::InputGrad, stage),
        PassKind::R => dep(DepClass::Forward, stage),
        // A vocabulary pass's links are the simulator's extra rules (`sim::VocabLinks`).
        PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => None,
    }
}

/// The class of completion a pass provides to others, if any (W and R provide none).
pub fn provides(kind: PassKind) -> Option<DepClass> {
    match kind {
        PassKind::F => Some(DepClass::Forward),
        PassKind::B | PassKind::BW => Some(DepClass::InputGrad),
        PassKind::W | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => None,
    }
}

/// Dense indices for (class, stage, microbatch, slice).
#[derive(Clone, Copy, Debug)]
pub struct KeySpace {
    stages: u32,
    microbatches: u32,
    slices: u32,
}

impl KeySpace {
    /// The key space of `schedule`, after checking every pass is in range.
    pub fn checked(schedule: &Schedule) -> Result<KeySpace, SimError> {
        let keys = KeySpace::new(&schedule.placement, schedule.microbatches, schedule.slices);
        if schedule.orders.len() != schedule.placement.devices() as usize {
            return Err(SimError::Malformed(format!(
                "the schedule has orders for {} devices but its placement has {}",
                schedule.orders.len(),
                schedule.placement.devices()
            )));
        }
        for (device, order) in schedule.orders.iter().enumerate() {
            for (position, op) in order.iter().enumerate() {
                for pass in op.passes() {
                    if pass.kind.is_vocab() && pass.stage >= schedule.placement.devices() {
                        return Err(SimError::Malformed(format!(
                            "{pass} at device {device}, position {position} names a shard that does not exist: \
                             the schedule has {} devices, one vocabulary shard each",
                            schedule.placement.devices()
                        )));
                    }
                    if !keys.contains(pass) {
                        return Err(SimError::Malformed(format!(
                            "{pass} at device {device}, position {position} is out of range: \
                             the schedule has {} stages, {} microbatches and {} slices",
                            keys.stages, keys.microbatches, keys.slices
                        )));
                    }
                }
            }
        }
        Ok(keys)
    }

    /// The key space for a placement and sizes (no checks).
    pub fn new(placement: &Placement, microbatches: u32, slices: u32) -> KeySpace {
        KeySpace { stages: placement.stages(), microbatches, slices: slices.max(1) }
    }

    /// Whether `pass` has a key.
    pub fn contains(&self, pass: Pass) -> bool {
        pass.stage < self.stages && pass.microbatch < self.microbatches && pass.slice < self.slices
    }

    /// Number of stages.
    pub fn stages(&self) -> u32 {
        self.stages
    }

    /// Number of sequence slices.
    pub fn slices(&self) -> u32 {
        self.slices
    }

    /// Number of keys per class.
    pub fn len(&self) -> usize {
        self.stages as usize * self.microbatches as usize * self.slices as usize
    }

    /// Whether the space is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Index of (stage, microbatch, slice) in `0..len()`.
    pub fn index(&self, stage: u32, microbatch: u32, slice: u32) -> usize {
        (stage as usize * self.microbatches as usize + microbatch as usize) * self.slices as usize + slice as usize
    }

    /// Index of a dependency's completion in `0..2 * len()`.
    pub fn dep_index(&self, dep: Dep) -> usize {
        let base = match dep.class {
            DepClass::Forward => 0,
            DepClass::InputGrad => self.len(),
        };
        base + self.index(dep.stage, dep.microbatch, dep.slice)
    }

    /// Index of the completion a pass provides, if any.
    pub fn provided_index(&self, pass: Pass) -> Option<usize> {
        let class = provides(pass.kind)?;
        Some(self.dep_index(Dep { class, stage: pass.stage, microbatch: pass.microbatch, slice: pass.slice }))
    }
}
