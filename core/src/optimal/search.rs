//! The branch-and-bound state: the problem's ops ([`OpInfo`]) and the [`Search`] that places
//! them in start-time order, times them as the simulator does, bounds each node (Jackson's
//! preemptive one-machine schedule with memory-raised release dates) and prunes by symmetry,
//! explored states and dominance. The API around it is in [`super`]; the root bound and the
//! local search are its siblings `relaxation` and `local`.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, DefaultHasher};

use crate::params::{Costs, StageCosts};
use crate::schedule::{Op, Pass, Schedule};
use crate::sim::{dependency, KeySpace};

/// How much search to spend: the search stops at whichever of its two limits comes first
/// (and the probes get a quarter more of each, see [`Search::run`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Search nodes (appended ops) before giving up.
    pub nodes: u64,
    /// Largest number of ops searched at all.
    pub max_ops: usize,
    /// Units of work before giving up: one per op a node looks at, as a candidate, in its
    /// earliest starts and in each one-machine bound. A node's time is close to proportional
    /// to them (20–45 ns per unit natively across families, measured at P = 4, M = 8), while
    /// its number of ops is not: a node of ZB-V costs five times one of ZB-H1. So a budget of
    /// work takes about the same time for every family, where one of nodes took 0.4 s for
    /// ZB-H1 and 4.5 s for ZB-V.
    pub work: u64,
    /// Bytes the table of explored states and the dominance fronts may hold, counted from
    /// their entries' sizes ([`DEFAULT_MEMO_BYTES`]); states past it are not kept, which only
    /// loses pruning (a state not remembered may be searched again).
    pub memo_bytes: usize,
}

impl Default for Budget {
    /// [`DEFAULT_WORK`] units of work, about a second natively at any family: about 330,000
    /// nodes of ZB-H1 and 70,000 of ZB-V at P = 4, M = 8 (the probes included).
    fn default() -> Budget {
        Budget { nodes: u64::MAX, max_ops: MAX_OPS, work: DEFAULT_WORK, memo_bytes: DEFAULT_MEMO_BYTES }
    }
}

impl Budget {
    /// Exactly `nodes` search nodes, whatever their work (`--optimal-nodes`).
    pub const fn of_nodes(nodes: u64) -> Budget {
        Budget { nodes, work: u64::MAX, max_ops: MAX_OPS, memo_bytes: DEFAULT_MEMO_BYTES }
    }
}

/// The most ops a problem may have to be searched at all.
pub(super) const MAX_OPS: usize = 256;

/// The default budget's work: 40 million units (see [`Budget::work`]). Measured over the 425
/// problems of every family at P = 4, M = 4..8 (`examples/optimal_sweep.rs`): 321 proven,
/// against 318 with the 120,000 nodes it replaced, which lost no proof (the V shapes get
/// fewer nodes, and none of theirs needed more) and won three of Chimera's.
pub const DEFAULT_WORK: u64 = 40_000_000;

/// The default [`Budget::memo_bytes`]: 256 MiB of remembered states.
pub const DEFAULT_MEMO_BYTES: usize = 256 << 20;

/// What one remembered entry costs besides its numbers: the table's slot and control byte at
/// its load factor, the box's pointer and length, and the allocator's header.
const ENTRY_OVERHEAD: usize = 48;

/// How often the search reports its progress, in nodes.
pub const PROGRESS_NODES: u64 = 1 << 12;

/// How far a search has come, for a caller that shows it (every [`PROGRESS_NODES`] nodes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Nodes visited so far.
    pub nodes: u64,
    /// Work spent so far ([`Budget::work`]).
    pub work: u64,
    /// The best order's cost so far (∞ before one is known).
    pub best: f64,
    /// What every order is proven to cost at least so far.
    pub bound: f64,
    /// Bytes of remembered states ([`Budget::memo_bytes`]).
    pub memo_bytes: usize,
    /// States not remembered for the cap.
    pub memo_dropped: u64,
}

/// A key for comparing op multisets.
pub(super) fn op_key(op: &Op) -> (u8, Pass, Pass) {
    match *op {
        Op::One(p) => (0, p, p),
        Op::Pair(a, b) => (1, a, b),
    }
}

/// The tolerance of comparisons at the scale of `v` (floating sums of the same time may
/// differ in the last bits).
pub(super) fn tolerance(v: f64) -> f64 {
    1e-9 * v.abs().max(1.0)
}

/// One op of the problem.
#[derive(Clone, Debug)]
pub(super) struct OpInfo {
    pub(super) op: Op,
    pub(super) device: usize,
    pub(super) dur: f64,
    pub(super) alloc: f64,
    pub(super) release: f64,
    /// Dependency keys.
    pub(super) deps: Vec<usize>,
    /// Keys it provides.
    pub(super) provides: Vec<usize>,
    /// (kind, stage, slice) of a single pass; `None` for a pair.
    pub(super) shape: Option<(u8, u32, u32)>,
    /// Index of its microbatch-slice unit.
    pub(super) unit: usize,
    /// Order of preference among equal starts (input-gradient first).
    pub(super) priority: u8,
}

/// The branch-and-bound state.
pub(super) struct Search {
    pub(super) ops: Vec<OpInfo>,
    pub(super) devices: usize,
    pub(super) comm: f64,
    pub(super) limit: Option<f64>,
    /// Whether ties in start are broken by device (exact arithmetic and positive times).
    pub(super) tie_by_device: bool,
    pub(super) symmetry: bool,
    /// `tail[o * devices + d]`: longest path from `o`'s start to the end of a later op on `d`
    /// (itself included), or −∞.
    pub(super) tail: Vec<f64>,
    /// Ops in dependency order.
    pub(super) topo: Vec<usize>,
    /// For each key, the ops that depend on it.
    pub(super) dependents: Vec<Vec<usize>>,
    /// For each unit, its ops sorted by shape.
    pub(super) unit_ops: Vec<Vec<usize>>,
    // State.
    pub(super) placed: Vec<bool>,
    pub(super) end: Vec<f64>,
    pub(super) from: Vec<usize>,
    pub(super) free: Vec<f64>,
    pub(super) first: Vec<Option<f64>>,
    pub(super) memory: Vec<f64>,
    pub(super) orders: Vec<Vec<usize>>,
    pub(super) placed_count: usize,
    pub(super) now: f64,
    pub(super) last_device: usize,
    pub(super) est: Vec<f64>,
    /// States already explored (their subtrees need no second visit).
    pub(super) seen: HashSet<Box<[u64]>, BuildHasherDefault<DefaultHasher>>,
    /// Visited states by placed set, as (free times, minus first starts, pending ends): a
    /// state no earlier anywhere than one of these is dominated (see
    /// [`Search::dominance_profile`]); at most [`FRONT_SIZE`] per placed set.
    pub(super) fronts: HashMap<Box<[u64]>, Vec<Times>, BuildHasherDefault<DefaultHasher>>,
    /// Whether the dominance rule is on (the tests turn it off to compare), and how many
    /// nodes it skipped.
    pub(super) dominance: bool,
    pub(super) dominated: u64,
    /// Each device's ops.
    pub(super) device_ops: Vec<Vec<usize>>,
    /// Release dates for the one-machine relaxations: earliest starts, raised by memory.
    pub(super) rel: Vec<f64>,
    /// Per device: whether an op both allocates and releases (no memory release dates).
    pub(super) mixed: Vec<bool>,
    /// Classes of interchangeable ops (see [`Class`]), and each device's classes.
    pub(super) classes: Vec<Class>,
    pub(super) device_classes: Vec<Vec<usize>>,
    /// Scratch: (time per release, release) of one device's releasing ops.
    pub(super) cheapest: Vec<(f64, f64)>,
    /// Scratch: the raised release dates of an allocating class's unplaced members, sorted.
    pub(super) floors: Vec<Vec<f64>>,
    /// Scratch: (earliest end, release) of one device's releasing ops; class members.
    pub(super) freeing: Vec<(f64, f64)>,
    pub(super) members: Vec<usize>,
    /// Scratch for [`jackson`].
    pub(super) jobs: Vec<Job>,
    pub(super) heap: BinaryHeap<(u64, usize)>,
    // Results.
    pub(super) best: f64,
    pub(super) root_bound: f64,
    pub(super) best_orders: Option<Vec<Vec<usize>>>,
    pub(super) nodes: u64,
    pub(super) budget: u64,
    /// Work done (see [`Budget::work`]) and the most allowed.
    pub(super) work: u64,
    pub(super) work_budget: u64,
    pub(super) aborted: bool,
    /// The probe's target: only completions costing at most this are sought (∞: any
    /// completion below the best found, a plain depth-first search).
    pub(super) target: f64,
    /// The least bound of a node the probe cut for exceeding the target, or the least cost of
    /// a completion above it: what every order the probe did not look at costs at least.
    pub(super) beyond: f64,
    /// A completion costing at most this is optimal (the proven bound): the search stops.
    pub(super) goal: f64,
    /// Set when a completion within the goal is found.
    pub(super) hit: bool,
    /// The bound proven so far (the root bound, raised by finished probes), for progress.
    pub(super) proven: f64,
    /// Estimated bytes of `seen` and `fronts`, their cap, and the states not kept for it.
    pub(super) memo_bytes: usize,
    pub(super) memo_cap: usize,
    pub(super) memo_dropped: u64,
    /// Nodes between two progress reports ([`PROGRESS_NODES`]).
    pub(super) progress_every: u64,
}

pub(super) const NOT_DONE: usize = usize::MAX;

/// What placing an op changed besides the op itself: its device's free time, first start and
/// memory, and the sweep point and last device.
pub(super) type Undo = (f64, Option<f64>, f64, f64, usize);

/// A state's times as the dominance rule compares them ([`Search::dominance_profile`]).
pub(super) type Times = Box<[f64]>;

/// The most states kept per placed set for the dominance rule (the latest non-dominated).
pub(super) const FRONT_SIZE: usize = 16;

/// The probes get `1 / PROBE_SHARE` of the node budget on top of it (see [`Search::run`]).
pub(super) const PROBE_SHARE: u64 = 4;

/// One op of a one-machine relaxation: it cannot start before `release`, runs `dur`, and
/// something that must follow it ends at least `delivery` after it ends.
#[derive(Clone, Copy, Debug)]
pub(super) struct Job {
    pub(super) release: f64,
    pub(super) dur: f64,
    pub(super) delivery: f64,
}

/// A class of interchangeable ops: on one device, each of a different microbatch-slice unit,
/// with the same time, allocation, release and longest paths to every device's ops.
#[derive(Clone, Debug)]
pub(super) struct Class {
    pub(super) members: Vec<usize>,
    pub(super) alloc: f64,
    pub(super) release: f64,
    /// An allocating class of the same device whose member in each unit precedes this
    /// class's member by at least the lag: (class, lag). `anchors[k]` is member `k`'s.
    pub(super) anchor: Option<(usize, f64)>,
    pub(super) anchors: Vec<usize>,
}

/// The classes of `ops`, each device's classes, and per device whether an op both allocates
/// and releases (then memory gives no release dates there).
pub(super) fn op_classes(
    ops: &[OpInfo],
    tail: &[f64],
    topo: &[usize],
    dependents: &[Vec<usize>],
    devices: usize,
    comm: f64,
) -> (Vec<Class>, Vec<Vec<usize>>, Vec<bool>) {
    let n = ops.len();
    let mut mixed = vec![false; devices];
    let mut classes: Vec<Class> = Vec::new();
    let mut class_of = vec![0; n];
    let mut device_classes = vec![Vec::new(); devices];
    let row = |i: usize| &tail[i * devices..(i + 1) * devices];
    for (i, o) in ops.iter().enumerate() {
        mixed[o.device] |= o.alloc > 0.0 && o.release > 0.0;
        let same = |j: usize| {
            ops[j].device == o.device
                && ops[j].dur == o.dur
                && ops[j].alloc == o.alloc
                && ops[j].release == o.release
                && row(j) == row(i)
        };
        let found = device_classes[o.device].iter().copied().find(|&c: &usize| {
            let class: &Class = &classes[c];
            same(class.members[0]) && class.members.iter().all(|&j| ops[j].unit != o.unit)
        });
        let c = found.unwrap_or_else(|| {
            classes.push(Class {
                members: Vec::new(),
                alloc: o.alloc,
                release: o.release,
                anchor: None,
                anchors: Vec::new(),
            });
            device_classes[o.device].push(classes.len() - 1);
            classes.len() - 1
        });
        classes[c].members.push(i);
        class_of[i] = c;
    }
    // Longest paths from each allocating op to the ops after it on its device, in its unit.
    let mut dist = vec![f64::NEG_INFINITY; n];
    let mut anchor_of: Vec<Option<(usize, f64)>> = vec![None; n];
    for (a, op) in ops.iter().enumerate() {
        if op.alloc <= 0.0 {
            continue;
        }
        dist.iter_mut().for_each(|d| *d = f64::NEG_INFINITY);
        dist[a] = 0.0;
        for &o in topo {
            if dist[o] == f64::NEG_INFINITY {
                continue;
            }
            if o != a && ops[o].device == op.device && ops[o].unit == op.unit {
                // The longest lag wins: the latest allocating ancestor is not needed.
                if anchor_of[o].is_none_or(|(_, l)| dist[o] > l) {
                    anchor_of[o] = Some((a, dist[o]));
                }
            }
            for &k in &ops[o].provides {
                for &c in &dependents[k] {
                    let hop = if ops[c].device == ops[o].device { 0.0 } else { comm };
                    dist[c] = dist[c].max(dist[o] + ops[o].dur + hop);
                }
            }
        }
    }
    // A class is anchored when all its members' anchors lie in one class at one lag.
    for class in &mut classes {
        let first = anchor_of[class.members[0]];
        let Some((a0, lag)) = first else { continue };
        let g = class_of[a0];
        let anchors: Vec<usize> = class
            .members
            .iter()
            .filter_map(|&o| anchor_of[o])
            .filter(|&(a, l)| class_of[a] == g && l == lag)
            .map(|(a, _)| a)
            .collect();
        let mut distinct = anchors.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if anchors.len() == class.members.len() && distinct.len() == anchors.len() {
            class.anchor = Some((g, lag));
            class.anchors = anchors;
        }
    }
    (classes, device_classes, mixed)
}

/// Jackson's preemptive schedule: the least `max(end + delivery)` over preemptive schedules
/// of `jobs` on one machine (run, whenever a release or an end occurs, the released job with
/// the longest delivery), a lower bound on the same over non-preemptive ones. `jobs` is
/// sorted in place; deliveries must be non-negative. 0 without jobs.
pub(super) fn jackson(jobs: &mut [Job], heap: &mut BinaryHeap<(u64, usize)>) -> f64 {
    if !jobs.is_sorted_by(|a, b| a.release <= b.release) {
        jobs.sort_unstable_by(|a, b| a.release.total_cmp(&b.release));
    }
    heap.clear();
    let mut best = 0.0f64;
    let mut t = f64::NEG_INFINITY;
    let mut next = 0;
    // Remaining times live in the jobs' `dur` (the slice is scratch).
    while next < jobs.len() || !heap.is_empty() {
        if heap.is_empty() {
            t = t.max(jobs[next].release);
        }
        while next < jobs.len() && jobs[next].release <= t {
            // Non-negative floats order as their bits.
            heap.push((jobs[next].delivery.to_bits(), next));
            next += 1;
        }
        let Some((_, j)) = heap.pop() else { continue };
        let until = if next < jobs.len() { jobs[next].release } else { f64::INFINITY };
        let run = jobs[j].dur.min(until - t);
        t += run;
        jobs[j].dur -= run;
        if jobs[j].dur <= 0.0 {
            best = best.max(t + jobs[j].delivery);
        } else {
            heap.push((jobs[j].delivery.to_bits(), j));
        }
    }
    best
}

impl Search {
    pub(super) fn new(
        schedule: &Schedule,
        costs: &Costs,
        limit: Option<f64>,
        best: Option<f64>,
        root_bound: f64,
    ) -> Option<Search> {
        let keys = KeySpace::checked(schedule).ok()?;
        let table = StageCosts::for_schedule(costs, schedule);
        let placement = &schedule.placement;
        let slices = schedule.slices.max(1) as usize;
        let devices = schedule.orders.len();
        let mut ops = Vec::new();
        for (d, order) in schedule.orders.iter().enumerate() {
            for op in order {
                let deps =
                    op.passes().filter_map(|p| dependency(placement, p)).map(|dep| keys.dep_index(dep)).collect();
                let provides = op.passes().filter_map(|p| keys.provided_index(p)).collect();
                let (shape, priority) = match *op {
                    Op::One(p) => (
                        Some((p.kind.index() as u8, p.stage, p.slice)),
                        match p.kind {
                            crate::schedule::PassKind::B
                            | crate::schedule::PassKind::BW
                            | crate::schedule::PassKind::R => 0,
                            crate::schedule::PassKind::F
                            | crate::schedule::PassKind::S
                            | crate::schedule::PassKind::T
                            | crate::schedule::PassKind::IF
                            | crate::schedule::PassKind::IB => 1,
                            crate::schedule::PassKind::W => 2,
                        },
                    ),
                    Op::Pair(..) => (None, 0),
                };
                let first = op.first();
                ops.push(OpInfo {
                    op: *op,
                    device: d,
                    dur: table.op(op),
                    alloc: op.passes().map(|p| table.alloc(p)).sum(),
                    release: op.passes().map(|p| table.release(p)).sum(),
                    deps,
                    provides,
                    shape,
                    unit: first.microbatch as usize * slices + first.slice as usize,
                    priority,
                });
            }
        }
        let n = ops.len();
        let n_keys = 2 * keys.len();
        let mut producer = vec![usize::MAX; n_keys];
        let mut dependents = vec![Vec::new(); n_keys];
        for (i, o) in ops.iter().enumerate() {
            for &k in &o.provides {
                if producer[k] == usize::MAX {
                    producer[k] = i;
                }
            }
            for &k in &o.deps {
                dependents[k].push(i);
            }
        }
        // Every dependency must be produced by some op, or the problem has no solution.
        if ops.iter().any(|o| o.deps.iter().any(|&k| producer[k] == usize::MAX)) {
            return None;
        }
        // Dependency order (Kahn).
        let mut indegree: Vec<usize> = ops.iter().map(|o| o.deps.len()).collect();
        let mut topo: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut head = 0;
        while head < topo.len() {
            let i = topo[head];
            head += 1;
            for &k in &ops[i].provides {
                if producer[k] != i {
                    continue;
                }
                for &c in &dependents[k] {
                    indegree[c] -= 1;
                    if indegree[c] == 0 {
                        topo.push(c);
                    }
                }
            }
        }
        if topo.len() != n {
            return None;
        }
        let comm = table.comm;
        let mut tail = vec![f64::NEG_INFINITY; n * devices];
        for &o in topo.iter().rev() {
            let (d, dur) = (ops[o].device, ops[o].dur);
            tail[o * devices + d] = dur;
            for &k in &ops[o].provides {
                for &c in &dependents[k] {
                    let hop = if ops[c].device == d { 0.0 } else { comm };
                    for e in 0..devices {
                        let via = tail[c * devices + e];
                        if via > f64::NEG_INFINITY {
                            let v = dur + hop + via;
                            if v > tail[o * devices + e] {
                                tail[o * devices + e] = v;
                            }
                        }
                    }
                }
            }
        }
        let units = schedule.microbatches as usize * slices;
        let mut unit_ops = vec![Vec::new(); units];
        for (i, o) in ops.iter().enumerate() {
            if o.unit < units {
                unit_ops[o.unit].push(i);
            }
        }
        for list in &mut unit_ops {
            crate::units::sort::sort_by_key(list, |&i| ops[i].shape);
        }
        // Multiples of 1/1024 below 10^9 add up exactly in f64.
        let whole = |v: f64| (v * 1024.0).fract() == 0.0 && v.abs() < 1e9;
        let tie_by_device = ops.iter().all(|o| o.dur > 0.0 && whole(o.dur)) && whole(comm);
        let symmetry = ops.iter().all(|o| o.shape.is_some() && o.dur > 0.0);
        let mut device_ops = vec![Vec::new(); devices];
        for (i, o) in ops.iter().enumerate() {
            device_ops[o.device].push(i);
        }
        let (classes, device_classes, mixed) = op_classes(&ops, &tail, &topo, &dependents, devices, comm);
        Some(Search {
            devices,
            comm,
            limit,
            tie_by_device,
            symmetry,
            tail,
            topo,
            dependents,
            unit_ops,
            placed: vec![false; n],
            end: vec![0.0; n_keys],
            from: vec![NOT_DONE; n_keys],
            free: vec![0.0; devices],
            first: vec![None; devices],
            memory: vec![0.0; devices],
            orders: vec![Vec::new(); devices],
            placed_count: 0,
            now: 0.0,
            last_device: 0,
            est: vec![0.0; n],
            seen: HashSet::default(),
            fronts: HashMap::default(),
            dominance: true,
            dominated: 0,
            device_ops,
            rel: vec![0.0; n],
            mixed,
            classes,
            device_classes,
            floors: Vec::new(),
            cheapest: Vec::new(),
            freeing: Vec::new(),
            members: Vec::new(),
            jobs: Vec::new(),
            heap: BinaryHeap::new(),
            best: best.unwrap_or(f64::INFINITY),
            root_bound,
            best_orders: None,
            nodes: 0,
            budget: 0,
            work: 0,
            work_budget: u64::MAX,
            aborted: false,
            target: f64::INFINITY,
            beyond: f64::INFINITY,
            goal: f64::NEG_INFINITY,
            hit: false,
            proven: root_bound,
            memo_bytes: 0,
            memo_cap: DEFAULT_MEMO_BYTES,
            memo_dropped: 0,
            progress_every: PROGRESS_NODES,
            ops,
        })
    }

    /// The tolerance of time comparisons: relative to the best cost, or to the root bound
    /// before any order is known (an infinite best would make it infinite, and the first
    /// order found would count as meeting the goal).
    pub(super) fn eps(&self) -> f64 {
        let scale = if self.best.is_finite() { self.best } else { self.root_bound };
        1e-9 * scale.abs().clamp(1.0, 1e12)
    }

    /// When op `o` could start now on its device, if its dependencies are placed.
    #[inline]
    pub(super) fn start_of(&self, o: usize) -> Option<f64> {
        let op = &self.ops[o];
        let mut start = self.free[op.device];
        for &k in &op.deps {
            let from = self.from[k];
            if from == NOT_DONE {
                return None;
            }
            let hop = if from == op.device { 0.0 } else { self.comm };
            start = start.max(self.end[k] + hop);
        }
        Some(start)
    }

    /// Whether op `o`'s allocation fits its device's memory now.
    #[inline]
    pub(super) fn fits(&self, o: usize) -> bool {
        let op = &self.ops[o];
        self.limit.is_none_or(|l| op.alloc <= 0.0 || self.memory[op.device] + op.alloc <= l + tolerance(l))
    }

    /// Appends op `o` to its device's order at `start` (see [`Search::start_of`]), and returns
    /// what [`Search::unplace`] needs to take it back. The one place the search's state
    /// advances: the depth-first search and the local search both time orders through it.
    #[inline]
    pub(super) fn place(&mut self, o: usize, start: f64) -> Undo {
        let d = self.ops[o].device;
        let undo = (self.free[d], self.first[d], self.memory[d], self.now, self.last_device);
        let op = &self.ops[o];
        let end = start + op.dur;
        self.placed[o] = true;
        self.placed_count += 1;
        self.free[d] = end;
        self.first[d] = Some(self.first[d].unwrap_or(start));
        self.memory[d] += op.alloc - op.release;
        self.now = start;
        self.last_device = d;
        self.orders[d].push(o);
        for &k in &op.provides {
            self.end[k] = end;
            self.from[k] = d;
        }
        undo
    }

    /// Takes back the last op placed, `o`.
    pub(super) fn unplace(&mut self, o: usize, undo: Undo) {
        let d = self.ops[o].device;
        for &k in &self.ops[o].provides {
            self.from[k] = NOT_DONE;
        }
        self.orders[d].pop();
        (self.free[d], self.first[d], self.memory[d], self.now, self.last_device) = undo;
        self.placed[o] = false;
        self.placed_count -= 1;
    }

    /// Takes back every op placed: the empty state the search starts from.
    pub(super) fn reset(&mut self) {
        for order in &mut self.orders {
            for &o in order.iter() {
                self.placed[o] = false;
                for &k in &self.ops[o].provides {
                    self.from[k] = NOT_DONE;
                }
            }
        }
        self.free.iter_mut().for_each(|f| *f = 0.0);
        self.first.iter_mut().for_each(|f| *f = None);
        self.memory.iter_mut().for_each(|m| *m = 0.0);
        self.orders.iter_mut().for_each(Vec::clear);
        (self.placed_count, self.now, self.last_device) = (0, 0.0, 0);
    }

    /// A lower bound on the cost of every completion of the current state (see the module
    /// docs): earliest starts by dependencies, then, for every started device `d` and every
    /// device `e`, Jackson's preemptive schedule of `e`'s unplaced ops with their earliest
    /// starts as release dates and their paths to the end of an op on `d` as tails.
    pub(super) fn bound(&mut self, cutoff: f64) -> f64 {
        let mut lb = self.root_bound;
        self.work += self.topo.len() as u64;
        self.est.iter_mut().for_each(|e| *e = 0.0);
        for d in 0..self.devices {
            if let Some(first) = self.first[d] {
                lb = lb.max(self.free[d] - first);
            }
        }
        for idx in 0..self.topo.len() {
            let o = self.topo[idx];
            if self.placed[o] {
                continue;
            }
            let op = &self.ops[o];
            let mut t = self.now.max(self.free[op.device]).max(self.est[o]);
            for &k in &op.deps {
                let from = self.from[k];
                if from != NOT_DONE {
                    let hop = if from == op.device { 0.0 } else { self.comm };
                    t = t.max(self.end[k] + hop);
                }
            }
            self.est[o] = t;
            // One op's path to each started device's end (cheap: cuts many nodes early).
            let base = o * self.devices;
            for d in 0..self.devices {
                if let Some(first) = self.first[d] {
                    lb = lb.max(t + self.tail[base + d] - first);
                }
            }
            // Push this op's earliest end to its unplaced dependents' estimates.
            let end = t + op.dur;
            let dev = op.device;
            for pi in 0..self.ops[o].provides.len() {
                let k = self.ops[o].provides[pi];
                for ci in 0..self.dependents[k].len() {
                    let c = self.dependents[k][ci];
                    let hop = if self.ops[c].device == dev { 0.0 } else { self.comm };
                    self.est[c] = self.est[c].max(end + hop);
                }
            }
        }
        if lb >= cutoff {
            return lb;
        }
        self.rel.copy_from_slice(&self.est);
        if !self.memory_releases() {
            return f64::INFINITY;
        }
        // Each device's unplaced ops by release date once; then one schedule per target,
        // the target itself first (usually the tightest), stopping once the node is cut.
        for step in 0..self.devices {
            let e = (self.last_device + step) % self.devices;
            self.members.clear();
            self.members.extend(self.device_ops[e].iter().copied().filter(|&o| !self.placed[o]));
            self.members.sort_unstable_by(|&a, &b| self.rel[a].total_cmp(&self.rel[b]));
            for shift in 0..self.devices {
                let d = (e + shift) % self.devices;
                let Some(first) = self.first[d] else { continue };
                self.jobs.clear();
                for &o in &self.members {
                    let tl = self.tail[o * self.devices + d];
                    if tl > f64::NEG_INFINITY {
                        let dur = self.ops[o].dur;
                        self.jobs.push(Job { release: self.rel[o], dur, delivery: (tl - dur).max(0.0) });
                    }
                }
                self.work += self.jobs.len() as u64;
                lb = lb.max(jackson(&mut self.jobs, &mut self.heap) - first);
                if lb >= cutoff {
                    return lb;
                }
            }
        }
        lb
    }

    /// Raises the release dates `rel` by memory, as multisets per [`Class`] (which member
    /// is which does not matter in the one-machine relaxations: a class's members are
    /// interchangeable there, so raising the `i`-th earliest release date to what the `i`-th
    /// member to start must wait for is sound).
    ///
    /// * On a device holding `m`, the `i`-th member of an allocating class to start needs
    ///   `m + i·alloc − limit` released before it by ops of the device, which must have
    ///   ended: it waits for the least time by which the unplaced releasing ops, each at its
    ///   release date plus its time, release that much.
    /// * A class anchored to an allocating class with lag `L` (each member follows its own
    ///   microbatch's member of that class by at least `L`): the `i`-th of its members whose
    ///   anchor is unplaced starts at least `L` after the `i`-th raised date of the anchors
    ///   (the `i`-th of a part starts no earlier than the `i`-th of the whole). For a class
    ///   that itself allocates, only when every unplaced member's anchor is unplaced: its
    ///   dates are already ranks over all its members, and ranks over a part would match
    ///   members to dates differently (found by a fuzzing review; no case was seen to hit it).
    ///
    /// Two rounds, the second with the releasing ops' raised dates. False when some
    /// allocation can never fit (no completion exists).
    pub(super) fn memory_releases(&mut self) -> bool {
        let Some(limit) = self.limit else { return true };
        let tol = tolerance(limit);
        if self.floors.len() != self.classes.len() {
            self.floors = vec![Vec::new(); self.classes.len()];
        }
        for _round in 0..2 {
            for e in 0..self.devices {
                if self.mixed[e] {
                    continue;
                }
                self.freeing.clear();
                self.cheapest.clear();
                let mut first_release = f64::INFINITY;
                for &c in &self.device_classes[e] {
                    let class = &self.classes[c];
                    if class.release > 0.0 {
                        for &o in &class.members {
                            if !self.placed[o] {
                                self.freeing.push((self.rel[o] + self.ops[o].dur, class.release));
                                self.cheapest.push((self.ops[o].dur / class.release, class.release));
                                first_release = first_release.min(self.rel[o]);
                            }
                        }
                    }
                }
                self.freeing.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                self.cheapest.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
                for ci in 0..self.device_classes[e].len() {
                    let c = self.device_classes[e][ci];
                    let alloc = self.classes[c].alloc;
                    self.members.clear();
                    self.members.extend(self.classes[c].members.iter().copied().filter(|&o| !self.placed[o]));
                    let mut floors = std::mem::take(&mut self.floors[c]);
                    floors.clear();
                    if alloc > 0.0 && !self.members.is_empty() {
                        self.members.sort_unstable_by(|&a, &b| self.rel[a].total_cmp(&self.rel[b]));
                        let (mut freed, mut next, mut at) = (0.0, 0, f64::NEG_INFINITY);
                        let (mut bought, mut spent, mut cheap) = (0.0, 0.0, 0);
                        for i in 0..self.members.len() {
                            let need = self.memory[e] + (i + 1) as f64 * alloc - limit - tol;
                            while freed < need {
                                let Some(&(end, amount)) = self.freeing.get(next) else { return false };
                                freed += amount;
                                at = end;
                                next += 1;
                            }
                            let o = self.members[i];
                            if need > 0.0 {
                                // The releasing ops run one after another from the first
                                // release date on: at least the least time releasing `need`
                                // (fractional knapsack by time per release).
                                while bought < need {
                                    let Some(&(per, amount)) = self.cheapest.get(cheap) else { break };
                                    bought += amount;
                                    spent += per * amount;
                                    cheap += 1;
                                }
                                let over = (bought - need).max(0.0);
                                let least = if cheap > 0 { spent - over * self.cheapest[cheap - 1].0 } else { 0.0 };
                                self.rel[o] = self.rel[o].max(at).max(first_release + least);
                            }
                            floors.push(self.rel[o]);
                        }
                    }
                    self.floors[c] = floors;
                }
                for ci in 0..self.device_classes[e].len() {
                    let c = self.device_classes[e][ci];
                    let Some((g, lag)) = self.classes[c].anchor else { continue };
                    self.members.clear();
                    for (k, &o) in self.classes[c].members.iter().enumerate() {
                        if !self.placed[o] && !self.placed[self.classes[c].anchors[k]] {
                            self.members.push(o);
                        }
                    }
                    // An allocating class's dates were raised by rank over all its unplaced
                    // members; raising them again by rank over a part of them would need
                    // another matching of members to dates (one of the others may start
                    // first), so then the lags wait for every member's anchor to be unplaced.
                    let unplaced = self.classes[c].members.iter().filter(|&&o| !self.placed[o]).count();
                    if self.classes[c].alloc > 0.0 && self.members.len() != unplaced {
                        continue;
                    }
                    self.members.sort_unstable_by(|&a, &b| self.rel[a].total_cmp(&self.rel[b]));
                    for (i, &o) in self.members.iter().enumerate() {
                        if let Some(&f) = self.floors[g].get(i) {
                            self.rel[o] = self.rel[o].max(f + lag);
                        }
                    }
                }
            }
        }
        true
    }

    /// Everything the rest of the search depends on: what is placed, when each device is
    /// free and started, the sweep point, and when each result still awaited arrives.
    pub(super) fn state_key(&self) -> Box<[u64]> {
        let n = self.ops.len();
        let mut key = vec![0u64; n.div_ceil(64)];
        for (i, &p) in self.placed.iter().enumerate() {
            if p {
                key[i / 64] |= 1 << (i % 64);
            }
        }
        for d in 0..self.devices {
            key.push(self.free[d].to_bits());
            key.push(self.first[d].map_or(u64::MAX, f64::to_bits));
        }
        key.push(self.now.to_bits());
        key.push(self.last_device as u64);
        for (k, deps) in self.dependents.iter().enumerate() {
            if self.from[k] != NOT_DONE && deps.iter().any(|&c| !self.placed[c]) {
                key.push(self.end[k].to_bits());
            }
        }
        key.into_boxed_slice()
    }

    /// The state as the dominance rule compares it, when the rule applies (every device
    /// started, exact times, the rule on): the placed set, and the times that must all be no
    /// later — free times, minus first starts, pending ends (the ends of placed results an
    /// unplaced op still waits for, in key order: the same keys for the same placed set).
    ///
    /// **The rule.** A state `S'` is skipped when a visited state `S` has the same placed set
    /// and, on every device, a free time no later and a first start no earlier, and every
    /// pending result no later — provided no ready op of `S` could start before `S`'s sweep
    /// point (then every completion of `S` is in `S`'s subtree). For a completion of `S'`
    /// (the remaining ops in some per-device orders), the same orders timed from `S` start
    /// every op no later (induction along the orders), with the same memory on every device
    /// (memory follows the orders), so every device ends no later and, started no earlier,
    /// spans no more; and since every op then starts at or after `S`'s first ready op,
    /// which starts at or after the sweep point, that schedule is in `S`'s subtree.
    /// In a depth-first search, `S` (not an ancestor: the placed sets differ) has returned,
    /// so it has found, or cut by a bound, an order no dearer than each of `S'`'s. It is the
    /// identical-state table generalised to states that are later everywhere; measured at
    /// P = 4, M = 4..8 it skips about 1% of the nodes and proves one problem more.
    pub(super) fn dominance_profile(&self) -> Option<(Box<[u64]>, Times)> {
        if !self.dominance || !self.tie_by_device || self.first.iter().any(Option::is_none) {
            return None;
        }
        let n = self.ops.len();
        let mut placed = vec![0u64; n.div_ceil(64)];
        for (i, &p) in self.placed.iter().enumerate() {
            if p {
                placed[i / 64] |= 1 << (i % 64);
            }
        }
        let mut times: Vec<f64> = self.free.clone();
        times.extend(self.first.iter().map(|f| -f.unwrap_or(0.0)));
        for (k, deps) in self.dependents.iter().enumerate() {
            if self.from[k] != NOT_DONE && deps.iter().any(|&c| !self.placed[c]) {
                times.push(self.end[k]);
            }
        }
        Some((placed.into_boxed_slice(), times.into_boxed_slice()))
    }

    /// Whether units `a` and `b` are in the same state, ignoring the dependency edges into the
    /// candidates `x` and `y`.
    pub(super) fn same_state(&self, a: usize, b: usize, x: usize, y: usize) -> bool {
        let (ua, ub) = (&self.unit_ops[a], &self.unit_ops[b]);
        if ua.len() != ub.len() {
            return false;
        }
        for (&oa, &ob) in ua.iter().zip(ub) {
            if self.ops[oa].shape != self.ops[ob].shape || self.placed[oa] != self.placed[ob] {
                return false;
            }
            if !self.placed[oa] {
                continue;
            }
            for (&ka, &kb) in self.ops[oa].provides.iter().zip(&self.ops[ob].provides) {
                let pending_a = self.dependents[ka].iter().any(|&c| !self.placed[c] && c != x);
                let pending_b = self.dependents[kb].iter().any(|&c| !self.placed[c] && c != y);
                if pending_a != pending_b || (pending_a && self.end[ka] != self.end[kb]) {
                    return false;
                }
            }
        }
        true
    }

    /// Searches in two phases and returns the proven lower bound reached (`from` at least).
    ///
    /// 1. **A depth-first search below the incumbent** with the node budget, which improves
    ///    the best order found and proves optimality when it finishes (or finds an order at
    ///    the lower bound).
    /// 2. When it does not finish: **probes of rising targets** (iterative deepening on the
    ///    cost) with a quarter more nodes ([`PROBE_SHARE`]). A probe seeks an order costing at
    ///    most its target, cutting every node whose bound exceeds it; when it finds none,
    ///    every order costs at least the least bound it cut (`beyond`), which is both a
    ///    proven lower bound and the next target. The first order a probe finds is optimal.
    ///    Probes never visit a node the last bound rules out, so they raise the bound far
    ///    faster than the depth-first search, which spends its nodes on subtrees between the
    ///    optimum and the incumbent.
    ///
    /// Measured when the root bound was the closed forms alone, over 140 instances at P = 4,
    /// M = 4..8 (`examples/optimal_sweep.rs`, six
    /// families, five cost sets, the default budget): the same 57 proofs and the same orders
    /// as the depth-first search alone, and on 75 of the 83 instances left unproven a raised
    /// bound, closing 42% of the gap between the root bound and the best order on average.
    pub(super) fn run(&mut self, from: f64, progress: &mut dyn FnMut(&Progress)) -> f64 {
        let extra = self.budget / PROBE_SHARE;
        let extra_work = self.work_budget / PROBE_SHARE;
        self.goal = from;
        self.proven = from;
        self.dfs(progress);
        if self.hit || !self.aborted {
            return self.best;
        }
        self.budget = self.budget.saturating_add(extra);
        self.work_budget = self.work_budget.saturating_add(extra_work);
        self.aborted = false;
        let mut proven = from;
        loop {
            if proven >= self.best - self.eps() {
                return proven;
            }
            self.target = proven;
            self.goal = proven;
            self.beyond = f64::INFINITY;
            self.hit = false;
            self.forget();
            self.dfs(progress);
            if self.hit || self.aborted {
                return proven;
            }
            proven = proven.max(self.beyond.min(self.best));
            self.proven = proven;
        }
    }

    /// Empties the explored states and the dominance fronts.
    pub(super) fn forget(&mut self) {
        self.seen.clear();
        self.fronts.clear();
        self.memo_bytes = 0;
    }

    /// Whether `bytes` more fit the cap on remembered states; counts a state not kept.
    fn room(&mut self, bytes: usize) -> bool {
        let fits = self.memo_bytes.saturating_add(bytes) <= self.memo_cap;
        if !fits {
            self.memo_dropped += 1;
        }
        fits
    }

    pub(super) fn dfs(&mut self, progress: &mut dyn FnMut(&Progress)) {
        if self.nodes >= self.budget || self.work >= self.work_budget {
            self.aborted = true;
            return;
        }
        self.nodes += 1;
        if self.nodes % self.progress_every.max(1) == 0 {
            progress(&Progress {
                nodes: self.nodes,
                work: self.work,
                best: self.best,
                bound: self.proven,
                memo_bytes: self.memo_bytes,
                memo_dropped: self.memo_dropped,
            });
        }
        if self.placed_count == self.ops.len() {
            let cost = (0..self.devices).filter_map(|d| self.first[d].map(|f| self.free[d] - f)).fold(0.0, f64::max);
            let eps = self.eps();
            if cost < self.best - eps {
                self.best = cost;
                self.best_orders = Some(self.orders.clone());
            }
            if cost <= self.goal + eps {
                self.hit = true;
            }
            if cost > self.target + eps {
                self.beyond = self.beyond.min(cost);
            }
            return;
        }
        let eps = self.eps();
        let cutoff = (self.best - eps).min(self.target + eps);
        let b = self.bound(cutoff);
        if b >= cutoff {
            self.beyond = self.beyond.min(b);
            return;
        }
        let key = self.state_key();
        if self.seen.contains(&key) {
            return;
        }
        if self.room(key.len() * 8 + ENTRY_OVERHEAD) {
            self.memo_bytes += key.len() * 8 + ENTRY_OVERHEAD;
            self.seen.insert(key);
        }
        let profile = self.dominance_profile();
        if let Some((placed, times)) = &profile {
            let no_later = |v: &Times| v.iter().zip(times.iter()).all(|(a, b)| a <= b);
            if self.fronts.get(placed).is_some_and(|front| front.iter().any(no_later)) {
                self.dominated += 1;
                return;
            }
        }
        // Whether a ready op could start before the sweep point (see [`Search::dominance_profile`]).
        let mut stranded = false;
        let eps = self.eps();
        let mut candidates: Vec<(f64, u8, usize, usize)> = Vec::new();
        self.work += self.ops.len() as u64;
        for o in 0..self.ops.len() {
            if self.placed[o] {
                continue;
            }
            let Some(start) = self.start_of(o) else { continue };
            let d = self.ops[o].device;
            if start < self.now - eps {
                stranded = true;
                continue;
            }
            if self.tie_by_device && start == self.now && d < self.last_device && self.placed_count > 0 {
                stranded = true;
                continue;
            }
            if !self.fits(o) {
                continue;
            }
            // Symmetry: skip when an equivalent candidate was already kept.
            if self.symmetry {
                let twin = candidates.iter().any(|&(s, _, dd, c)| {
                    dd == d
                        && s == start
                        && self.ops[c].shape == self.ops[o].shape
                        && self.same_state(self.ops[c].unit, self.ops[o].unit, c, o)
                });
                if twin {
                    continue;
                }
            }
            candidates.push((start, self.ops[o].priority, d, o));
        }
        // Only a state whose every completion is in its own subtree may dominate.
        if let (Some((placed, times)), false) = (profile, stranded) {
            // Every state of one placed set has as many times (the same pending keys).
            let entry = times.len() * 8 + ENTRY_OVERHEAD;
            let (mut freed, known) = (0, self.fronts.contains_key(&placed));
            if let Some(front) = self.fronts.get_mut(&placed) {
                let before = front.len();
                front.retain(|v| !v.iter().zip(times.iter()).all(|(a, b)| b <= a));
                if front.len() == FRONT_SIZE {
                    front.remove(0);
                }
                freed = (before - front.len()) * entry;
            }
            self.memo_bytes -= freed.min(self.memo_bytes);
            let needed = if known { entry } else { entry + placed.len() * 8 + ENTRY_OVERHEAD };
            if self.room(needed) {
                self.memo_bytes += needed;
                self.fronts.entry(placed).or_default().push(times);
            }
        }
        crate::units::sort::sort_by(&mut candidates, |a, b| {
            a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
        });
        for (start, _, _, o) in candidates {
            let undo = self.place(o, start);
            self.dfs(progress);
            self.unplace(o, undo);
            if self.aborted || self.hit {
                return;
            }
        }
    }
}
