//! The event simulator: the only place times and memory are computed.
//!
//! Each device runs its order in sequence. An op starts when its device is free and the pass
//! each of its passes depends on has finished, plus the communication time when that pass ran
//! on another device. The result is the longest path through the graph of device-order and
//! dependency edges, computed with a ready queue in time linear in the number of passes.

mod builder;
mod deps;
mod stream;

pub use builder::Builder;
pub use deps::{dependency, provides, Dep, DepClass, KeySpace};
pub(crate) use stream::Stream;

use crate::error::{SimError, Stuck};
use crate::params::StageCosts;
use crate::schedule::{CopyKind, CopyOp, Op, Pass, PassKind, Schedule};

/// How long each op takes, how long a result takes to reach another device, and what memory
/// passes hold.
pub trait Timing {
    /// The time of the op at `at`.
    fn duration(&self, at: OpRef, op: &Op) -> f64;
    /// Time the device spends right before the op at `at` on work that needs none of the op's
    /// inputs (0 for planned runs).
    fn lead(&self, _at: OpRef) -> f64 {
        0.0
    }
    /// The time a result of `from` takes to reach the op at `at` on another device.
    fn hop(&self, at: OpRef, from: OpRef) -> f64;
    /// Activation memory `pass` allocates when it starts.
    fn alloc(&self, pass: Pass) -> f64;
    /// Activation memory `pass` releases when it ends.
    fn release(&self, pass: Pass) -> f64;
    /// The time a copy of `forward`'s activation to or from the host takes.
    fn copy(&self, _forward: Pass) -> f64 {
        0.0
    }
    /// The activation memory `forward` holds when it ends: what a copy moves.
    fn held(&self, _forward: Pass) -> f64 {
        0.0
    }
}

impl Timing for StageCosts {
    fn duration(&self, _at: OpRef, op: &Op) -> f64 {
        self.op(op)
    }
    fn hop(&self, _at: OpRef, _from: OpRef) -> f64 {
        self.comm
    }
    fn alloc(&self, pass: Pass) -> f64 {
        StageCosts::alloc(self, pass)
    }
    fn release(&self, pass: Pass) -> f64 {
        StageCosts::release(self, pass)
    }
    fn copy(&self, forward: Pass) -> f64 {
        StageCosts::copy(self, forward.stage)
    }
    fn held(&self, forward: Pass) -> f64 {
        StageCosts::held(self, forward.stage)
    }
}

/// Times measured per op (a profiled run), parallel to a schedule's orders: each op's
/// duration, the busy time before it that needs none of its inputs (`leads`), and the time
/// from its latest input's end on another device to its start (`hops`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PerOpTimes {
    /// `durations[d][i]`: the time of device d's i-th op.
    pub durations: Vec<Vec<f64>>,
    /// `leads[d][i]`: busy time before it, needing none of its inputs.
    pub leads: Vec<Vec<f64>>,
    /// `hops[d][i]`: from its latest input's end on another device to its start.
    pub hops: Vec<Vec<f64>>,
}

impl PerOpTimes {
    /// Whether every list has one entry per op of `schedule`.
    pub fn fits(&self, schedule: &Schedule) -> bool {
        let shape = |lists: &Vec<Vec<f64>>| {
            lists.len() == schedule.orders.len() && lists.iter().zip(&schedule.orders).all(|(l, o)| l.len() == o.len())
        };
        shape(&self.durations) && shape(&self.leads) && shape(&self.hops)
    }
}

/// [`PerOpTimes`] with the memory model the simulator needs beside them (and the times of any
/// op the lists do not cover).
#[derive(Clone, Debug, PartialEq)]
pub struct OpTimes {
    /// The measured times.
    pub times: PerOpTimes,
    /// The stage costs' memory (and fallback times).
    pub memory: StageCosts,
}

impl OpTimes {
    fn get(list: &[Vec<f64>], at: OpRef) -> Option<f64> {
        list.get(at.device as usize)?.get(at.position as usize).copied()
    }
}

impl Timing for OpTimes {
    fn duration(&self, at: OpRef, op: &Op) -> f64 {
        OpTimes::get(&self.times.durations, at).unwrap_or_else(|| self.memory.op(op))
    }
    fn lead(&self, at: OpRef) -> f64 {
        OpTimes::get(&self.times.leads, at).unwrap_or(0.0)
    }
    fn hop(&self, at: OpRef, _from: OpRef) -> f64 {
        OpTimes::get(&self.times.hops, at).unwrap_or(self.memory.comm)
    }
    fn alloc(&self, pass: Pass) -> f64 {
        self.memory.alloc(pass)
    }
    fn release(&self, pass: Pass) -> f64 {
        self.memory.release(pass)
    }
    fn copy(&self, forward: Pass) -> f64 {
        self.memory.copy(forward.stage)
    }
    fn held(&self, forward: Pass) -> f64 {
        self.memory.held(forward.stage)
    }
}

/// Where an op sits: its device and position in that device's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpRef {
    /// The device.
    pub device: u32,
    /// The position in the device's order.
    pub position: u32,
}

/// When one op ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimedOp {
    /// Start time.
    pub start: f64,
    /// End time.
    pub end: f64,
    /// The op whose result arrived last and made this one wait past the moment its device was
    /// free; `None` if it started as soon as its device was free.
    pub waited_for: Option<OpRef>,
}

/// A point of a device's activation-memory curve: the value from `time` on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemPoint {
    /// When the value changes.
    pub time: f64,
    /// Activation memory held from then on.
    pub value: f64,
}

/// One device's simulated run.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DeviceTimeline {
    /// `ops[i]` is when the device's i-th op ran.
    pub ops: Vec<TimedOp>,
    /// Activation memory over time as a step curve starting at 0: forwards allocate when
    /// they start, backwards release when they end.
    pub memory: Vec<MemPoint>,
    /// The highest activation memory the device holds.
    pub peak_memory: f64,
    /// `copies[i]` is when the device's i-th copy ran on its copy stream.
    pub copies: Vec<TimedOp>,
}

/// The simulated run of a schedule: times and memory, parallel to its orders.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Timeline {
    /// One entry per device.
    pub devices: Vec<DeviceTimeline>,
}

impl Timeline {
    /// The time the last op ends.
    pub fn end(&self) -> f64 {
        self.devices.iter().filter_map(|d| d.ops.last()).map(|o| o.end).fold(0.0, f64::max)
    }

    /// The position of the op `device` runs at time `t`, if it is busy then (hit testing).
    pub fn op_at(&self, device: u32, t: f64) -> Option<usize> {
        let ops = &self.devices.get(device as usize)?.ops;
        let i = ops.partition_point(|o| o.end <= t);
        ops.get(i).filter(|o| o.start <= t && t < o.end).map(|_| i)
    }
}

const NONE: u32 = u32::MAX;
const UNSET: u64 = u64::MAX;

/// Simulates `schedule` under `costs`.
///
/// # Errors
/// [`SimError::Malformed`] when a pass is outside the schedule's stages, microbatches or
/// slices, and [`SimError::Deadlock`] when no device can make progress.
pub fn simulate(schedule: &Schedule, costs: &StageCosts) -> Result<Timeline, SimError> {
    simulate_timed(schedule, costs)
}

/// Simulates `schedule` with any [`Timing`]: [`simulate`] is this with the stage costs.
///
/// # Errors
/// As [`simulate`].
pub fn simulate_timed<T: Timing>(schedule: &Schedule, costs: &T) -> Result<Timeline, SimError> {
    let keys = KeySpace::checked(schedule)?;
    let placement = &schedule.placement;
    let n_devices = schedule.orders.len();
    let n_keys = 2 * keys.len();

    // Completion time and producer of every (class, stage, microbatch, slice).
    let mut done = vec![f64::NEG_INFINITY; n_keys];
    let mut producer = vec![UNSET; n_keys];
    // Devices waiting on a key: an intrusive list through `next_waiter`.
    let mut waiter_head = vec![NONE; n_keys];
    let mut next_waiter = vec![NONE; n_devices];

    let mut next = vec![0usize; n_devices];
    let mut free = vec![0.0f64; n_devices];
    let mut memory = vec![0.0f64; n_devices];
    let mut devices: Vec<DeviceTimeline> = schedule
        .orders
        .iter()
        .map(|order| DeviceTimeline {
            ops: Vec::with_capacity(order.len()),
            memory: Vec::with_capacity(2 * order.len() + 1),
            peak_memory: 0.0,
            copies: Vec::new(),
        })
        .collect();
    let mut copy = CopyStreams::new(schedule, &keys);
    for d in &mut devices {
        d.memory.push(MemPoint { time: 0.0, value: 0.0 });
    }

    let mut ready: Vec<u32> = (0..n_devices as u32).rev().collect();
    while let Some(device) = ready.pop() {
        let d = device as usize;
        let order = &schedule.orders[d];
        while let Some(op) = order.get(next[d]) {
            copy.issue(device, next[d], free[d], &done, &mut devices[d], costs);
            let at = OpRef { device, position: next[d] as u32 };
            let mut start = free[d] + costs.lead(at);
            start = start.max(copy.reloaded(op));
            let mut waited_for = None;
            let mut blocked = None;
            for pass in op.passes() {
                let Some(dep) = dependency(placement, pass) else { continue };
                let k = keys.dep_index(dep);
                if producer[k] == UNSET {
                    blocked = Some(k);
                    break;
                }
                let from = unpack(producer[k]);
                let comm = if from.device == device { 0.0 } else { costs.hop(at, from) };
                let arrival = done[k] + comm;
                if arrival > start {
                    start = arrival;
                    waited_for = Some(from);
                }
            }
            if let Some(k) = blocked {
                next_waiter[d] = waiter_head[k];
                waiter_head[k] = device;
                break;
            }

            let end = start + costs.duration(at, op);
            let timeline = &mut devices[d];
            timeline.ops.push(TimedOp { start, end, waited_for });
            let alloc: f64 = op.passes().map(|p| costs.alloc(p)).sum();
            let release: f64 = op.passes().map(|p| costs.release(p)).sum();
            if alloc != 0.0 {
                memory[d] += alloc;
                timeline.memory.push(MemPoint { time: start, value: memory[d] });
                timeline.peak_memory = timeline.peak_memory.max(memory[d]);
            }
            if release != 0.0 {
                memory[d] -= release;
                timeline.memory.push(MemPoint { time: end, value: memory[d] });
            }
            free[d] = end;

            let me = pack(device, next[d]);
            for pass in op.passes() {
                let Some(k) = keys.provided_index(pass) else { continue };
                if producer[k] != UNSET {
                    continue; // A duplicate: validation reports it; the first one counts.
                }
                done[k] = end;
                producer[k] = me;
                let mut w = std::mem::replace(&mut waiter_head[k], NONE);
                while w != NONE {
                    ready.push(w);
                    w = std::mem::replace(&mut next_waiter[w as usize], NONE);
                }
            }
            next[d] += 1;
        }
        if next[d] == order.len() {
            copy.issue(device, next[d], free[d], &done, &mut devices[d], costs);
        }
    }
    copy.finish(&mut devices);

    if next.iter().zip(&schedule.orders).any(|(&n, order)| n < order.len()) {
        return Err(deadlock(schedule, &keys, &next, &producer));
    }
    Ok(Timeline { devices })
}

/// The devices' copy streams: each runs its device's copies in issue order, beside compute.
/// A copy starts when issued (the device's compute reaching its position), its stream is
/// free, and what it moves exists (the forward's end; the offload's end for a reload), and
/// takes the stage's copy time. A copy with a slot ([`crate::schedule::CopySlot`]) is issued
/// once the op before its position has started, starts no earlier than the slot's start, in
/// the first gap of its stream from then on, and takes the slot's time. A recompute or
/// backward of a reloaded activation waits for its reload's end.
struct CopyStreams<'a> {
    schedule: &'a Schedule,
    keys: &'a KeySpace,
    /// Per device: the next copy to issue, when its stream is free after its last copy, and
    /// the intervals its copies take (where a slotted copy finds a gap).
    next: Vec<usize>,
    free: Vec<f64>,
    busy: Vec<Stream>,
    /// Per key: when its offload and its reload end (`NaN` until they run).
    offloaded: Vec<f64>,
    reloaded: Vec<f64>,
    /// Per device: memory changes of its copies, (time, change), merged at the end.
    changes: Vec<Vec<(f64, f64)>>,
}

impl<'a> CopyStreams<'a> {
    fn new(schedule: &'a Schedule, keys: &'a KeySpace) -> CopyStreams<'a> {
        let (n, any) = (schedule.orders.len(), schedule.has_copies());
        let per_key = if any { vec![f64::NAN; keys.len()] } else { Vec::new() };
        CopyStreams {
            schedule,
            keys,
            next: vec![0; n],
            free: vec![0.0; n],
            busy: vec![Stream::default(); n],
            offloaded: per_key.clone(),
            reloaded: per_key,
            changes: vec![Vec::new(); if any { n } else { 0 }],
        }
    }

    fn key(&self, pass: Pass) -> Option<usize> {
        self.keys.contains(pass).then(|| self.keys.index(pass.stage, pass.microbatch, pass.slice))
    }

    /// Runs `device`'s copies issued at `position`, when its compute is free at `now`.
    fn issue<T: Timing>(
        &mut self,
        device: u32,
        position: usize,
        now: f64,
        done: &[f64],
        timeline: &mut DeviceTimeline,
        costs: &T,
    ) {
        let d = device as usize;
        let copies = self.schedule.copies_of(device);
        while let Some(&CopyOp { kind, pass, at, slot }) = copies.get(self.next[d]) {
            if at as usize > position {
                break;
            }
            let Some(k) = self.key(pass) else {
                self.next[d] += 1;
                continue;
            };
            let ready = match kind {
                CopyKind::Offload => {
                    done[self.keys.dep_index(Dep {
                        class: DepClass::Forward,
                        stage: pass.stage,
                        microbatch: pass.microbatch,
                        slice: pass.slice,
                    })]
                }
                CopyKind::Reload => self.offloaded[k],
            };
            // A slotted copy is queued once the op before its position has started (the
            // authors' runtime queues it right after launching that op): its slot holds it.
            let issued = match (slot, (at as usize).checked_sub(1)) {
                (Some(_), Some(before)) => timeline.ops.get(before).map_or(now, |t| t.start),
                _ => now,
            };
            let earliest = issued.max(if ready.is_finite() { ready } else { issued });
            let (start, end) = match slot {
                // In its slot, or the first gap on the stream after it: slotted copies run in
                // slot order, which may differ from issue order.
                Some(slot) => {
                    let from = earliest.max(slot.start);
                    // Slots planned back to back may overlap by rounding.
                    let slack = 1e-9 * from.abs().max(slot.time);
                    let start = self.busy[d].first_free(from, slot.time, slack).unwrap_or(from);
                    (start, start + slot.time)
                }
                None => {
                    let start = earliest.max(self.free[d]);
                    (start, start + costs.copy(pass))
                }
            };
            self.busy[d].take(start, end - start);
            let held = costs.held(pass);
            match kind {
                CopyKind::Offload => {
                    self.offloaded[k] = end;
                    self.changes[d].push((end, -held));
                }
                CopyKind::Reload => {
                    self.reloaded[k] = end;
                    self.changes[d].push((start, held));
                }
            }
            self.free[d] = self.free[d].max(end);
            timeline.copies.push(TimedOp { start, end, waited_for: None });
            self.next[d] += 1;
        }
    }

    /// When the activations `op` needs are back on the device: the latest reload end of its
    /// recompute or backward passes (`-inf` when nothing was reloaded).
    fn reloaded(&self, op: &Op) -> f64 {
        if self.reloaded.is_empty() {
            return f64::NEG_INFINITY;
        }
        op.passes()
            .filter(|p| matches!(p.kind, PassKind::R | PassKind::B | PassKind::BW))
            .filter_map(|p| self.key(p).map(|k| self.reloaded[k]))
            .filter(|t| t.is_finite())
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Merges the copies' memory changes into each device's curve and peak.
    fn finish(self, devices: &mut [DeviceTimeline]) {
        for (timeline, changes) in devices.iter_mut().zip(self.changes) {
            if changes.is_empty() {
                continue;
            }
            let mut all: Vec<(f64, f64)> = Vec::with_capacity(timeline.memory.len() + changes.len());
            let mut before = 0.0;
            for p in &timeline.memory {
                all.push((p.time, p.value - before));
                before = p.value;
            }
            all.extend(changes);
            all.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut value, mut peak) = (0.0, 0.0f64);
            timeline.memory = all
                .into_iter()
                .map(|(time, change)| {
                    value += change;
                    peak = peak.max(value);
                    MemPoint { time, value }
                })
                .collect();
            timeline.peak_memory = peak;
        }
    }
}

fn pack(device: u32, position: usize) -> u64 {
    (u64::from(device) << 32) | position as u64
}

fn unpack(packed: u64) -> OpRef {
    OpRef { device: (packed >> 32) as u32, position: packed as u32 }
}

/// Builds the deadlock report: every unfinished device, its stuck op and what it waits for.
fn deadlock(schedule: &Schedule, keys: &KeySpace, next: &[usize], producer: &[u64]) -> SimError {
    let placement = &schedule.placement;
    // Where every pass is scheduled, for the "waits on device d" part of the message.
    let mut position_of = vec![UNSET; 2 * keys.len()];
    for (device, order) in schedule.orders.iter().enumerate() {
        for (position, op) in order.iter().enumerate() {
            for pass in op.passes() {
                if let Some(k) = keys.provided_index(pass) {
                    if position_of[k] == UNSET {
                        position_of[k] = pack(device as u32, position);
                    }
                }
            }
        }
    }
    let mut stuck = Vec::new();
    for (device, order) in schedule.orders.iter().enumerate() {
        let Some(op) = order.get(next[device]) else { continue };
        let blocking = op.passes().find_map(|pass| {
            let dep = dependency(placement, pass)?;
            (producer[keys.dep_index(dep)] == UNSET).then_some((pass, dep))
        });
        let Some((pass, dep)) = blocking else { continue };
        let k = keys.dep_index(dep);
        let waits_on = (position_of[k] != UNSET).then(|| unpack(position_of[k]));
        let waits_for = match waits_on {
            Some(r) => schedule.orders[r.device as usize][r.position as usize]
                .passes()
                .find(|p| keys.provided_index(*p) == Some(k))
                .unwrap_or_else(|| dep.as_pass()),
            None => dep.as_pass(),
        };
        stuck.push(Stuck {
            device: device as u32,
            position: next[device],
            pass,
            waits_for,
            waits_on: waits_on.map(|r| (r.device, r.position as usize)),
        });
    }
    SimError::Deadlock(stuck)
}

#[cfg(test)]
mod tests;
