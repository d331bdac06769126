//! The event simulator: the only place times and memory are computed.
//!
//! Each device runs its order in sequence. An op starts when its device is free and the pass
//! each of its passes depends on has finished, plus the communication time when that pass ran
//! on another device. The result is the longest path through the graph of device-order and
//! dependency edges, computed with a ready queue in time linear in the number of passes.
//!
//! With blocking sends ([`P2p::Blocking`], Megatron-LM's exchanges) a device exchanges with
//! its neighbours after each op and waits for all of it: the result of op `X` that op `Y`
//! consumes on another device crosses once both sides have reached the exchange, `X`'s end
//! and the end of the op before `Y` on `Y`'s device, plus the hop. Both `Y` and the op after
//! `X` start no earlier than that. A device whose exchanges never meet is a deadlock.

mod builder;
mod deps;
mod stream;
mod vocab;

pub use builder::Builder;
pub use deps::{dependency, provides, Dep, DepClass, KeySpace};
pub(crate) use stream::Stream;
pub use vocab::{Barrier, CommKind, Link, VocabLinks};

use crate::error::{SimError, Stuck};
use crate::params::{P2p, StageCosts};
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
    /// The time of one barrier (an all-reduce over every vocabulary shard).
    fn barrier(&self, _kind: CommKind) -> f64 {
        0.0
    }
    /// How sends between devices behave.
    fn p2p(&self) -> P2p {
        P2p::Async
    }
}

impl Timing for StageCosts {
    fn duration(&self, _at: OpRef, op: &Op) -> f64 {
        self.op(op)
    }
    fn hop(&self, at: OpRef, from: OpRef) -> f64 {
        self.hop_time(from.device, at.device)
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
    fn barrier(&self, _kind: CommKind) -> f64 {
        self.vocab.reduce
    }
    fn p2p(&self) -> P2p {
        self.p2p
    }
}

/// Times measured per op (a profiled run), parallel to a schedule's orders: each op's
/// duration, the busy time before it that needs none of its inputs (`leads`), and the time
/// from its latest input's end on another device to its start (`hops`); and when each device
/// began its first pass (`starts`), which the stats count its span from.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct PerOpTimes {
    /// `durations[d][i]`: the time of device d's i-th op.
    pub durations: Vec<Vec<f64>>,
    /// `leads[d][i]`: busy time before it, needing none of its inputs.
    pub leads: Vec<Vec<f64>>,
    /// `hops[d][i]`: from its latest input's end on another device to its start.
    pub hops: Vec<Vec<f64>>,
    /// `starts[d]`: when device d began its first pass (the runtime's start of the action, at
    /// or before its work: the wait for its input and the runtime's own code come between).
    /// Empty when unknown: a device's span then starts with its first op's work.
    pub starts: Vec<f64>,
}

impl PerOpTimes {
    /// Whether every list has one entry per op of `schedule`.
    pub fn fits(&self, schedule: &Schedule) -> bool {
        let shape = |lists: &Vec<Vec<f64>>| {
            lists.len() == schedule.orders.len() && lists.iter().zip(&schedule.orders).all(|(l, o)| l.len() == o.len())
        };
        shape(&self.durations)
            && shape(&self.leads)
            && shape(&self.hops)
            && (self.starts.is_empty() || self.starts.len() == schedule.orders.len())
    }

    /// When device `d` began its first pass, if known.
    pub fn start(&self, d: usize) -> Option<f64> {
        self.starts.get(d).copied()
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
        OpTimes::get(&self.times.hops, at).unwrap_or_else(|| self.memory.hop_time(_from.device, at.device))
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
    fn barrier(&self, _kind: CommKind) -> f64 {
        self.memory.vocab.reduce
    }
}

/// Where an op sits: its device and position in that device's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct OpRef {
    /// The device.
    pub device: u32,
    /// The position in the device's order.
    pub position: u32,
}

/// When one op ran.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct TimedOp {
    /// Start time.
    pub start: f64,
    /// End time.
    pub end: f64,
    /// The op whose result arrived last and made this one wait past the moment its device was
    /// free; `None` if it started as soon as its device was free.
    pub waited_for: Option<OpRef>,
}

/// When one collective ran on a device: a barrier of the vocabulary shards. Every shard's
/// device lists it, at the same times.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct TimedComm {
    /// What it reduces.
    pub kind: CommKind,
    /// For which microbatch.
    pub microbatch: u32,
    /// Start time: the last pass feeding it ended, and its stream was free.
    pub start: f64,
    /// End time: what waits for it may start.
    pub end: f64,
    /// Whether it ran on the device's side stream (else on its compute stream).
    pub side: bool,
}

/// A point of a device's activation-memory curve: the value from `time` on.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct MemPoint {
    /// When the value changes.
    pub time: f64,
    /// Activation memory held from then on.
    pub value: f64,
}

/// A timed op packed for the wire: start and end, then the op it waited for (device + 1, or 0
/// for none, and position).
#[cfg(feature = "wire")]
impl crate::units::packed::Packed for TimedOp {
    const SIZE: usize = 24;

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        let (device, position) = self.waited_for.map_or((0, 0), |r| (r.device.wrapping_add(1), r.position));
        out.extend_from_slice(&device.to_le_bytes());
        out.extend_from_slice(&position.to_le_bytes());
    }

    fn take(b: &[u8]) -> Option<TimedOp> {
        use crate::units::packed::{f64_at, u32_at};
        let (device, position) = (u32_at(b, 16)?, u32_at(b, 20)?);
        let waited_for = device.checked_sub(1).map(|device| OpRef { device, position });
        Some(TimedOp { start: f64_at(b, 0)?, end: f64_at(b, 8)?, waited_for })
    }
}

/// A memory point packed for the wire: its time and value.
#[cfg(feature = "wire")]
impl crate::units::packed::Packed for MemPoint {
    const SIZE: usize = 16;

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.time.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
    }

    fn take(b: &[u8]) -> Option<MemPoint> {
        use crate::units::packed::f64_at;
        Some(MemPoint { time: f64_at(b, 0)?, value: f64_at(b, 8)? })
    }
}

/// One device's simulated run.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct DeviceTimeline {
    /// `ops[i]` is when the device's i-th op ran.
    #[cfg_attr(feature = "wire", serde(with = "crate::units::packed"))]
    pub ops: Vec<TimedOp>,
    /// Activation memory over time as a step curve starting at 0: forwards allocate when
    /// they start, backwards release when they end.
    #[cfg_attr(feature = "wire", serde(with = "crate::units::packed"))]
    pub memory: Vec<MemPoint>,
    /// The highest activation memory the device holds.
    pub peak_memory: f64,
    /// `copies[i]` is when the device's i-th copy ran on its copy stream.
    #[cfg_attr(feature = "wire", serde(with = "crate::units::packed"))]
    pub copies: Vec<TimedOp>,
    /// The collectives the device took part in, in the order they ended (barriers of the
    /// vocabulary shards; empty without them).
    pub comms: Vec<TimedComm>,
}

/// The simulated run of a schedule: times and memory, parallel to its orders.
#[derive(Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
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
    let links = VocabLinks::of(schedule);
    let barriers = Barriers::new(&keys, schedule.microbatches, links.is_some());
    let n_keys = barriers.end();
    let mut fed = vec![(0u32, f64::NEG_INFINITY); barriers.len()];
    let mut stream_free = [0.0f64; CommKind::ALL.len()];

    // Completion time and producer of every (class, stage, microbatch, slice).
    let mut done = vec![f64::NEG_INFINITY; n_keys];
    let mut producer = vec![UNSET; n_keys];
    // Devices waiting on a key: an intrusive list through `next_waiter`.
    let mut waiter_head = vec![NONE; n_keys];
    let mut next_waiter = vec![NONE; n_devices];

    let mut next = vec![0usize; n_devices];
    let mut free = vec![0.0f64; n_devices];
    let mut memory = vec![RunningTotal::default(); n_devices];
    let mut devices: Vec<DeviceTimeline> = schedule
        .orders
        .iter()
        .map(|order| DeviceTimeline {
            ops: Vec::with_capacity(order.len()),
            memory: Vec::with_capacity(2 * order.len() + 1),
            peak_memory: 0.0,
            copies: Vec::new(),
            comms: Vec::new(),
        })
        .collect();
    let mut copy = CopyStreams::new(schedule, &keys);
    let exchange = Exchanges::new(schedule, &keys, costs.p2p());
    // Under blocking sends, devices waiting for another device to reach a position:
    // `(waiting device, position)` per device waited on.
    let mut reach_waiters: Vec<Vec<(u32, usize)>> = vec![Vec::new(); if exchange.is_some() { n_devices } else { 0 }];
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
            'passes: for pass in op.passes() {
                for (k, hops) in waits(placement, &keys, links.as_ref(), &barriers, pass) {
                    if producer[k] == UNSET {
                        blocked = Some(k);
                        break 'passes;
                    }
                    let from = unpack(producer[k]);
                    let comm = if !hops || from.device == device { 0.0 } else { costs.hop(at, from) };
                    let mut sent = done[k];
                    // A blocking receive is posted at the exchange after the device's previous op.
                    if let (Some(exchange), true) = (exchange.as_ref(), hops && from.device != device) {
                        sent = sent.max(exchange.posted(d, next[d], &devices, schedule));
                    }
                    let arrival = sent + comm;
                    if arrival > start {
                        start = arrival;
                        waited_for = Some(from);
                    }
                }
            }
            if let Some(k) = blocked {
                next_waiter[d] = waiter_head[k];
                waiter_head[k] = device;
                break;
            }
            // Blocking sends: the previous op's results cross once each receiver has reached
            // the exchange before its consumer; this op starts after the last of them.
            if let (Some(exchange), Some(previous)) = (exchange.as_ref(), next[d].checked_sub(1)) {
                let from = OpRef { device, position: previous as u32 };
                match exchange.sends_done(from, free[d], &next, &devices, costs, schedule) {
                    Ok(Some((done_at, waited))) if done_at > start => {
                        start = done_at;
                        waited_for = Some(waited);
                    }
                    Ok(_) => {}
                    Err(reach) => {
                        reach_waiters[reach.device as usize].push((device, reach.position as usize));
                        break;
                    }
                }
            }

            let end = start + costs.duration(at, op);
            let timeline = &mut devices[d];
            timeline.ops.push(TimedOp { start, end, waited_for });
            let alloc: f64 = op.passes().map(|p| costs.alloc(p)).sum();
            let release: f64 = op.passes().map(|p| costs.release(p)).sum();
            if alloc != 0.0 {
                let value = memory[d].add(alloc);
                timeline.memory.push(MemPoint { time: start, value });
                timeline.peak_memory = timeline.peak_memory.max(value);
            }
            if release != 0.0 {
                let value = memory[d].add(-release);
                timeline.memory.push(MemPoint { time: end, value });
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
            // The barriers this op's passes feed: one ends when its last shard has fed it.
            for b in op.passes().filter_map(|p| links.as_ref().and_then(|l| l.feeds(p))) {
                let (Some(links), Some(k)) = (links.as_ref(), barriers.key(b)) else { continue };
                let slot = &mut fed[k - barriers.base];
                slot.0 += 1;
                slot.1 = slot.1.max(end);
                if slot.0 != links.shards() || producer[k] != UNSET {
                    continue;
                }
                let stream = &mut stream_free[b.kind.index()];
                let begin = slot.1.max(*stream);
                let finish = begin + costs.barrier(b.kind);
                *stream = finish;
                done[k] = finish;
                producer[k] = me;
                let comm = TimedComm {
                    kind: b.kind,
                    microbatch: b.microbatch,
                    start: begin,
                    end: finish,
                    side: links.side_stream(),
                };
                devices.iter_mut().for_each(|t| t.comms.push(comm));
                let mut w = std::mem::replace(&mut waiter_head[k], NONE);
                while w != NONE {
                    ready.push(w);
                    w = std::mem::replace(&mut next_waiter[w as usize], NONE);
                }
            }
            next[d] += 1;
            if let Some(waiters) = reach_waiters.get_mut(d) {
                let reached = next[d];
                waiters.retain(|&(w, position)| {
                    let waiting = position >= reached;
                    if !waiting {
                        ready.push(w);
                    }
                    waiting
                });
            }
        }
        if next[d] == order.len() {
            copy.issue(device, next[d], free[d], &done, &mut devices[d], costs);
        }
    }
    copy.finish(&mut devices);

    if next.iter().zip(&schedule.orders).any(|(&n, order)| n < order.len()) {
        return Err(deadlock(schedule, &keys, &next, &producer, links.as_ref(), &barriers, exchange.as_ref()));
    }
    Ok(Timeline { devices })
}

/// The keys of the barriers, after the two classes of pass completions: one per
/// (kind, microbatch) when the schedule has vocabulary passes.
struct Barriers {
    base: usize,
    microbatches: usize,
    count: usize,
}

impl Barriers {
    fn new(keys: &KeySpace, microbatches: u32, any: bool) -> Barriers {
        let microbatches = microbatches as usize;
        let count = if any { CommKind::ALL.len() * microbatches } else { 0 };
        Barriers { base: 2 * keys.len(), microbatches, count }
    }

    /// One past the last key.
    fn end(&self) -> usize {
        self.base + self.count
    }

    fn len(&self) -> usize {
        self.count
    }

    fn key(&self, b: Barrier) -> Option<usize> {
        let m = b.microbatch as usize;
        (m < self.microbatches && self.count > 0).then(|| self.base + b.kind.index() * self.microbatches + m)
    }
}

/// The keys `pass` waits for, each with whether a hop between devices is added: its
/// transformer dependency, and its vocabulary link (a broadcast hops, a barrier does not).
fn waits(
    placement: &crate::schedule::Placement,
    keys: &KeySpace,
    links: Option<&VocabLinks>,
    barriers: &Barriers,
    pass: Pass,
) -> impl Iterator<Item = (usize, bool)> {
    let own = dependency(placement, pass).map(|d| (keys.dep_index(d), true));
    let link = links.and_then(|l| l.waits(pass)).and_then(|link| match link {
        Link::Pass(d) => keys.contains(d.as_pass()).then(|| (keys.dep_index(d), true)),
        Link::Barrier(b) => barriers.key(b).map(|k| (k, false)),
    });
    own.into_iter().chain(link)
}

/// Blocking sends ([`P2p::Blocking`]): where each result is consumed on another device.
struct Exchanges {
    /// Per completion key: the ops that consume it (any device; the sender skips its own).
    consumers: Vec<Vec<OpRef>>,
    keys: KeySpace,
}

impl Exchanges {
    /// The consumers of every result, or `None` when sends do not block.
    fn new(schedule: &Schedule, keys: &KeySpace, p2p: P2p) -> Option<Exchanges> {
        if p2p != P2p::Blocking {
            return None;
        }
        let links = VocabLinks::of(schedule);
        let barriers = Barriers::new(keys, schedule.microbatches, links.is_some());
        let mut consumers = vec![Vec::new(); 2 * keys.len()];
        for (device, order) in schedule.orders.iter().enumerate() {
            for (position, op) in order.iter().enumerate() {
                let at = OpRef { device: device as u32, position: position as u32 };
                for pass in op.passes() {
                    for (k, hops) in waits(&schedule.placement, keys, links.as_ref(), &barriers, pass) {
                        if let Some(c) = consumers.get_mut(k).filter(|c| hops && !c.contains(&at)) {
                            c.push(at);
                        }
                    }
                }
            }
        }
        Some(Exchanges { consumers, keys: *keys })
    }

    /// The position of the op after which `device` posts the receives of its op at `position`:
    /// the op before it, or before the recomputes that open its backward's step (Megatron
    /// recomputes inside the backward step, with no exchange between). `None` before its first.
    fn exchange_before(schedule: &Schedule, device: usize, position: usize) -> Option<usize> {
        let order = &schedule.orders[device];
        (0..position).rev().find(|&p| !matches!(order[p], Op::One(Pass { kind: PassKind::R, .. })))
    }

    /// When `device` posts the receives of its op at `position` (it has ended every op before).
    fn posted(&self, device: usize, position: usize, devices: &[DeviceTimeline], schedule: &Schedule) -> f64 {
        Exchanges::exchange_before(schedule, device, position).map_or(0.0, |p| devices[device].ops[p].end)
    }

    /// The ops on other devices that consume a result of the op `from` (`op`).
    fn receivers<'a>(&'a self, op: &'a Op, from: OpRef) -> impl Iterator<Item = OpRef> + 'a {
        op.passes()
            .filter_map(|p| self.keys.provided_index(p))
            .flat_map(|k| self.consumers[k].iter().copied())
            .filter(move |r| r.device != from.device)
    }

    /// When the sends of the op at `from`, which ended at `end`, have all crossed, and the op
    /// that set it (the receiver's op before its consumer, or `from` itself); `None` when it
    /// sends nothing. `Err` names a receiver's op that has not ended yet: its exchange is not
    /// reached, so the sender must wait for it.
    fn sends_done<T: Timing>(
        &self,
        from: OpRef,
        end: f64,
        next: &[usize],
        devices: &[DeviceTimeline],
        costs: &T,
        schedule: &Schedule,
    ) -> Result<Option<(f64, OpRef)>, OpRef> {
        let op = &schedule.orders[from.device as usize][from.position as usize];
        let mut out: Option<(f64, OpRef)> = None;
        for to in self.receivers(op, from) {
            // The receiver posts its receive at the exchange after the op before `to`.
            let (posted, by) = match Exchanges::exchange_before(schedule, to.device as usize, to.position as usize) {
                None => (0.0, from),
                Some(before) => {
                    let reach = OpRef { device: to.device, position: before as u32 };
                    if next[to.device as usize] <= before {
                        return Err(reach);
                    }
                    let posted = devices[to.device as usize].ops[before].end;
                    (posted, if posted > end { reach } else { from })
                }
            };
            let crossed = end.max(posted) + costs.hop(to, from);
            if out.is_none_or(|(t, _)| crossed > t) {
                out = Some((crossed, by));
            }
        }
        Ok(out)
    }
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
            let (mut total, mut peak) = (RunningTotal::default(), 0.0f64);
            timeline.memory = all
                .into_iter()
                .map(|(time, change)| {
                    let value = total.add(change);
                    peak = peak.max(value);
                    MemPoint { time, value }
                })
                .collect();
            timeline.peak_memory = peak;
        }
    }
}

/// A running total of memory changes, summed with Neumaier's compensation: after thousands of
/// `+⅓` and `−⅓` it is the exact sum rounded once (`0.6666666666666666`, not the
/// `0.6666666666666852` a plain `+=` drifts to), so curves and peaks carry no float noise.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunningTotal {
    sum: f64,
    compensation: f64,
}

impl RunningTotal {
    /// The exact sum of `values`, rounded once.
    pub(crate) fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
        let mut total = RunningTotal::default();
        values.into_iter().fold(0.0, |_, v| total.add(v))
    }

    /// Adds `change` and returns the total.
    fn add(&mut self, change: f64) -> f64 {
        let sum = self.sum + change;
        self.compensation +=
            if self.sum.abs() >= change.abs() { (self.sum - sum) + change } else { (change - sum) + self.sum };
        self.sum = sum;
        self.sum + self.compensation + 0.0
    }
}

fn pack(device: u32, position: usize) -> u64 {
    (u64::from(device) << 32) | position as u64
}

fn unpack(packed: u64) -> OpRef {
    OpRef { device: (packed >> 32) as u32, position: packed as u32 }
}

/// Builds the deadlock report: every unfinished device, its stuck op and what it waits for.
fn deadlock(
    schedule: &Schedule,
    keys: &KeySpace,
    next: &[usize],
    producer: &[u64],
    links: Option<&VocabLinks>,
    barriers: &Barriers,
    exchange: Option<&Exchanges>,
) -> SimError {
    let placement = &schedule.placement;
    // Where every pass is scheduled, for the "waits on device d" part of the message.
    let mut position_of = vec![UNSET; barriers.end()];
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
            let dep = dependency(placement, pass).map(Link::Pass);
            let link = links.and_then(|l| l.waits(pass));
            dep.into_iter().chain(link).find_map(|l| {
                let k = match l {
                    Link::Pass(d) => keys.dep_index(d),
                    Link::Barrier(b) => barriers.key(b)?,
                };
                (producer.get(k) == Some(&UNSET)).then_some((pass, l, k))
            })
        });
        let Some((pass, link, k)) = blocking else {
            // Blocking sends: the previous op's result waits for a receiver that never reaches
            // the exchange before its consumer.
            let (Some(exchange), Some(previous)) = (exchange, next[device].checked_sub(1)) else { continue };
            let from = OpRef { device: device as u32, position: previous as u32 };
            let sent = &order[previous];
            let unreached = |r: &OpRef| {
                Exchanges::exchange_before(schedule, r.device as usize, r.position as usize)
                    .is_some_and(|p| next[r.device as usize] <= p)
            };
            let Some(to) = exchange.receivers(sent, from).find(unreached) else {
                continue;
            };
            let Some(before) = Exchanges::exchange_before(schedule, to.device as usize, to.position as usize) else {
                continue;
            };
            let Some(waits_for) = schedule.orders[to.device as usize][before].passes().next() else { continue };
            let Some(pass) = op.passes().next() else { continue };
            stuck.push(Stuck {
                device: device as u32,
                position: next[device],
                pass,
                waits_for,
                waits_on: Some((to.device, before)),
                send: sent.passes().find(|p| exchange.keys.provided_index(*p).is_some()),
            });
            continue;
        };
        let stand_in = match link {
            Link::Pass(d) => d.as_pass(),
            Link::Barrier(b) => VocabLinks::as_pass(b),
        };
        let waits_on = position_of.get(k).filter(|&&p| p != UNSET).map(|&p| unpack(p));
        let waits_for = match waits_on {
            Some(r) => schedule.orders[r.device as usize][r.position as usize]
                .passes()
                .find(|p| keys.provided_index(*p) == Some(k))
                .unwrap_or(stand_in),
            None => stand_in,
        };
        stuck.push(Stuck {
            device: device as u32,
            position: next[device],
            pass,
            waits_for,
            waits_on: waits_on.map(|r| (r.device, r.position as usize)),
            send: None,
        });
    }
    SimError::Deadlock(stuck)
}

#[cfg(test)]
mod tests;
