//! Incremental simulation for generators that need timing feedback.
//!
//! Heuristic families (automatic Zero Bubble, ZB-V, adaptive V) decide the next pass from the
//! times the passes so far would take. They append passes here one at a time and read the
//! resulting times and memory back, so the timing rules live only in the simulator: a
//! [`Builder`]'s times are exactly those [`crate::simulate`] computes for the finished schedule.

use crate::params::StageCosts;
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};

use super::deps::{dependency, provides, DepClass, KeySpace};

/// A schedule under construction, simulated as it grows.
#[derive(Clone, Debug)]
pub struct Builder {
    schedule: Schedule,
    costs: StageCosts,
    keys: KeySpace,
    /// [`dependency`] of every (kind, stage): the one source of the rules, looked up once per
    /// stage instead of once per push (it divides).
    deps: Vec<DepSlot>,
    /// Per completion (see [`Builder::row`]): when it ended and on which device.
    done: Vec<Done>,
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
        let deps = PassKind::ALL
            .iter()
            .flat_map(|&kind| (0..placement.stages()).map(move |stage| (kind, stage)))
            .map(|(kind, stage)| DepSlot::of(&placement, keys, Pass::new(kind, stage, 0)))
            .collect();
        let mut schedule = Schedule::new(placement, microbatches);
        schedule.slices = slices.max(1);
        Builder {
            schedule,
            costs,
            keys,
            deps,
            done: vec![Done::NOT_YET; 2 * keys.len()],
            free: vec![0.0; devices],
            idle: vec![0.0; devices],
            max_idle: 0.0,
            memory: vec![0.0; devices],
            peak: vec![0.0; devices],
        }
    }

    /// Reserves room for three passes (F, B, W) of every stage of every device, for every
    /// microbatch and slice, so the orders do not grow by copying. For generators that build
    /// whole schedules (not ones that abandon most of their builders early).
    pub fn reserve_whole_schedule(&mut self) {
        let devices = self.schedule.orders.len().max(1);
        let stages_per_device = (self.keys.stages() as usize).div_ceil(devices);
        let per_device = 3 * stages_per_device * self.keys.len() / self.keys.stages().max(1) as usize;
        for order in &mut self.schedule.orders {
            order.reserve_exact(per_device.saturating_sub(order.len()));
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
        let done = self.done[self.row(pass) + column(pass.stage, provides(pass.kind)?)];
        (done.device != u32::MAX).then_some(done.end)
    }

    /// When the result `pass` depends on arrives on `device` (with communication): `Some(0)`
    /// if it depends on nothing, `None` if its dependency has not been placed yet.
    #[inline]
    pub fn ready_at(&self, device: u32, pass: Pass) -> Option<f64> {
        if !self.keys.contains(pass) {
            return None;
        }
        let slot = self.deps[pass.kind.index() * self.keys.stages() as usize + pass.stage as usize];
        let column = match slot {
            DepSlot::Nothing => return Some(0.0),
            DepSlot::OutOfRange => return None,
            DepSlot::At(column) => column,
        };
        let done = self.done[self.row(pass) + column];
        if done.device == u32::MAX {
            return None;
        }
        let comm = if done.device == device { 0.0 } else { self.costs.hop_time(done.device, device) };
        Some(done.end + comm)
    }

    /// Appends `op` to `device`'s order and returns its end time. The op starts when the
    /// device is free and its dependencies have arrived. A dependency that has not been placed
    /// yet does not delay it: such an order deadlocks, and the final simulation reports that.
    #[inline(always)]
    pub fn push(&mut self, device: u32, op: impl Into<Op>) -> f64 {
        let op = op.into();
        let (first, second) = match op {
            Op::One(p) => (p, None),
            Op::Pair(f, b) => (f, Some(b)),
        };
        let d = device as usize;
        let first_op = self.schedule.orders[d].is_empty();
        // Stored at once, while its fields are still in registers (the op itself is not read
        // back: a copy through the stack stalls the store).
        self.schedule.orders[d].push(op);
        let duration = match second {
            None => self.costs.pass(first),
            Some(b) => self.costs.op(&Op::Pair(first, b)),
        };
        let free = self.free[d];
        let mut start = free;
        if let Some(ready) = self.ready_at(device, first) {
            start = start.max(ready);
        }
        if let Some(ready) = second.and_then(|p| self.ready_at(device, p)) {
            start = start.max(ready);
        }
        if !first_op {
            self.idle[d] += start - free;
            self.max_idle = self.max_idle.max(self.idle[d]);
        }
        let end = start + duration;
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
        end
    }

    /// Marks `pass` done at `end` on `device` (the first occurrence counts).
    #[inline]
    fn record(&mut self, pass: Pass, device: u32, end: f64) {
        if !self.keys.contains(pass) {
            return;
        }
        if let Some(class) = provides(pass.kind) {
            let k = self.row(pass) + column(pass.stage, class);
            if self.done[k].device == u32::MAX {
                self.done[k] = Done { end, device };
            }
        }
    }

    /// Where `pass`'s (microbatch, slice) starts in `done`: completions are laid out by
    /// microbatch, then stage, then class, so the passes of one moment sit close together.
    fn row(&self, pass: Pass) -> usize {
        (pass.microbatch as usize * self.keys.slices() as usize + pass.slice as usize) * 2 * self.keys.stages() as usize
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

/// When a completion key ended, and where.
#[derive(Clone, Copy, Debug)]
struct Done {
    end: f64,
    /// The device that ran it; `u32::MAX` until then.
    device: u32,
}

impl Done {
    const NOT_YET: Done = Done { end: f64::NEG_INFINITY, device: u32::MAX };
}

/// The position of (stage, class) in a row of `done`.
fn column(stage: u32, class: DepClass) -> usize {
    2 * stage as usize + usize::from(class == DepClass::InputGrad)
}

/// What a (kind, stage) depends on, from [`dependency`]: the same for every microbatch and slice.
#[derive(Clone, Copy, Debug, PartialEq)]
enum DepSlot {
    /// Nothing: it can start at once.
    Nothing,
    /// A pass outside the key space, which never runs.
    OutOfRange,
    /// The completion at this [`column`] of the pass's row.
    At(usize),
}

impl DepSlot {
    fn of(placement: &Placement, keys: KeySpace, pass: Pass) -> DepSlot {
        match dependency(placement, pass) {
            None => DepSlot::Nothing,
            Some(dep) if keys.contains(dep.as_pass()) => DepSlot::At(column(dep.stage, dep.class)),
            Some(_) => DepSlot::OutOfRange,
        }
    }
}
