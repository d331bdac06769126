//! Incremental simulation for generators that need timing feedback.
//!
//! Heuristic families (automatic Zero Bubble, ZB-V, adaptive V) decide the next pass from the
//! times the passes so far would take. They append passes here one at a time and read the
//! resulting times and memory back, so the timing rules live only in the simulator: a
//! [`Builder`]'s times are exactly those [`crate::simulate`] computes for the finished schedule.

use crate::params::StageCosts;
use crate::schedule::{Op, Pass, Placement, Schedule};

use super::deps::{dependency, KeySpace};

/// A schedule under construction, simulated as it grows.
#[derive(Clone, Debug)]
pub struct Builder {
    schedule: Schedule,
    costs: StageCosts,
    keys: KeySpace,
    done: Vec<f64>,
    producer_device: Vec<u32>,
    free: Vec<f64>,
    idle: Vec<f64>,
    max_idle: f64,
    memory: Vec<f64>,
    peak: Vec<f64>,
}

impl Builder {
    /// An empty schedule on `placement` for `microbatches` microbatches of `slices` slices.
    pub fn new(placement: Placement, microbatches: u32, slices: u32, costs: StageCosts) -> Builder {
        let keys = KeySpace::new(&placement, microbatches, slices);
        let devices = placement.devices() as usize;
        let mut schedule = Schedule::new(placement, microbatches);
        schedule.slices = slices.max(1);
        Builder {
            schedule,
            costs,
            keys,
            done: vec![f64::NEG_INFINITY; 2 * keys.len()],
            producer_device: vec![u32::MAX; 2 * keys.len()],
            free: vec![0.0; devices],
            idle: vec![0.0; devices],
            max_idle: 0.0,
            memory: vec![0.0; devices],
            peak: vec![0.0; devices],
        }
    }

    /// The placement being scheduled.
    pub fn placement(&self) -> &Placement {
        &self.schedule.placement
    }

    /// The cost table.
    pub fn costs(&self) -> &StageCosts {
        &self.costs
    }

    /// Duration of `pass`.
    pub fn cost(&self, pass: Pass) -> f64 {
        self.costs.pass(pass)
    }

    /// When `device` becomes free: the end of its last op so far (0 if none).
    pub fn free_at(&self, device: u32) -> f64 {
        self.free[device as usize]
    }

    /// Idle time on `device` between its first op and now.
    pub fn idle(&self, device: u32) -> f64 {
        self.idle[device as usize]
    }

    /// The largest idle time over all devices (kept as a running maximum: O(1)).
    pub fn max_idle(&self) -> f64 {
        self.max_idle
    }

    /// Activation memory `device` holds after its last op.
    pub fn memory(&self, device: u32) -> f64 {
        self.memory[device as usize]
    }

    /// The highest activation memory `device` has held so far.
    pub fn peak(&self, device: u32) -> f64 {
        self.peak[device as usize]
    }

    /// When `pass` finished, if it has been placed and provides a result (F, B or BW).
    pub fn end_of(&self, pass: Pass) -> Option<f64> {
        if !self.keys.contains(pass) {
            return None;
        }
        let k = self.keys.provided_index(pass)?;
        (self.producer_device[k] != u32::MAX).then_some(self.done[k])
    }

    /// When the result `pass` depends on arrives on `device` (with communication): `Some(0)`
    /// if it depends on nothing, `None` if its dependency has not been placed yet.
    pub fn ready_at(&self, device: u32, pass: Pass) -> Option<f64> {
        if !self.keys.contains(pass) {
            return None;
        }
        let Some(dep) = dependency(&self.schedule.placement, pass) else { return Some(0.0) };
        if !self.keys.contains(dep.as_pass()) {
            return None;
        }
        let k = self.keys.dep_index(dep);
        let from = self.producer_device[k];
        if from == u32::MAX {
            return None;
        }
        let comm = if from == device { 0.0 } else { self.costs.comm };
        Some(self.done[k] + comm)
    }

    /// Appends `op` to `device`'s order and returns its end time. The op starts when the
    /// device is free and its dependencies have arrived. A dependency that has not been placed
    /// yet does not delay it: such an order deadlocks, and the final simulation reports that.
    pub fn push(&mut self, device: u32, op: impl Into<Op>) -> f64 {
        let op = op.into();
        let (first, second) = match op {
            Op::One(p) => (p, None),
            Op::Pair(f, b) => (f, Some(b)),
        };
        let d = device as usize;
        let free = self.free[d];
        let mut start = free;
        if let Some(ready) = self.ready_at(device, first) {
            start = start.max(ready);
        }
        if let Some(ready) = second.and_then(|p| self.ready_at(device, p)) {
            start = start.max(ready);
        }
        if !self.schedule.orders[d].is_empty() {
            self.idle[d] += start - free;
            self.max_idle = self.max_idle.max(self.idle[d]);
        }
        let end = start + self.costs.op(&op);
        let mut memory = self.memory[d] + self.costs.alloc(first);
        if let Some(p) = second {
            memory += self.costs.alloc(p);
        }
        self.peak[d] = self.peak[d].max(memory);
        memory -= self.costs.release(first);
        if let Some(p) = second {
            memory -= self.costs.release(p);
        }
        self.memory[d] = memory;
        self.free[d] = end;
        self.record(first, device, end);
        if let Some(p) = second {
            self.record(p, device, end);
        }
        self.schedule.orders[d].push(op);
        end
    }

    /// Marks `pass` done at `end` on `device` (the first occurrence counts).
    fn record(&mut self, pass: Pass, device: u32, end: f64) {
        if !self.keys.contains(pass) {
            return;
        }
        if let Some(k) = self.keys.provided_index(pass) {
            if self.producer_device[k] == u32::MAX {
                self.done[k] = end;
                self.producer_device[k] = device;
            }
        }
    }

    /// Appends `pass` on the device its placement names and returns its end time.
    ///
    /// # Panics
    /// If the stage has no device: generators call this with stages they computed.
    pub fn push_placed(&mut self, pass: Pass) -> f64 {
        let device = self.schedule.placement.device_of(pass.stage).expect("stage out of range");
        self.push(device, pass)
    }

    /// The schedule built so far.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The finished schedule.
    pub fn finish(self) -> Schedule {
        self.schedule
    }
}
