//! How far from optimal: a lower bound on the cost of every schedule of the same problem.
//!
//! **The problem** of a schedule is its passes (the same ops on the same devices), the
//! dependency rule of [`crate::sim::dependency`], the costs, and a per-device memory limit.
//! Any per-device order of those ops that meets the limit is a solution; its cost is the
//! simulator's (the longest device span).
//!
//! The details are in `docs/lower-bounds.md`, under `bounds.rs`.

use std::collections::BTreeMap;

use crate::families::Family;
use crate::params::{Costs, ScheduleParams, StageCosts};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};
use crate::sim::{dependency, provides, DepClass};
use crate::stats::{busiest_work, device_work, Stats};

/// A lower bound on the cost of every schedule of a problem, and where it comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerBound {
    /// The bound: the largest device bound, and at least the busiest device's work.
    pub value: f64,
    /// The device whose bound it is.
    pub device: u32,
    /// That device's work.
    pub work: f64,
    /// Idle time its first `L` must hold (see the module docs).
    pub head: f64,
    /// Idle time its last `L'` must hold.
    pub tail: f64,
    /// Its longest dependency chain from a microbatch's first pass on it to its last.
    pub chain: f64,
    /// The closed form's value when the device relaxation raised `value` above it
    /// ([`crate::optimal::tight_lower_bound`]); `None`: `value` is the closed form's.
    pub closed_form: Option<f64>,
    /// A floor on the least memory limit any order fits: the most an op needs as it starts
    /// (its allocation on top of what its microbatch must hold on its device then). Below it
    /// the problem has no order, and `value` bounds nothing ([`Standing::NoneFits`]).
    pub least_memory: f64,
}

impl LowerBound {
    /// How far `cost` is above the bound, as a fraction (0.018 for 1.8%).
    pub fn excess(&self, cost: f64) -> f64 {
        if self.value > 0.0 {
            cost / self.value - 1.0
        } else {
            0.0
        }
    }

    /// Whether any order of the problem fits `limit` as far as the bound can tell (no single
    /// op allocates more than it).
    pub fn fits(&self, limit: f64) -> bool {
        self.least_memory <= limit + 1e-9 * limit.abs().max(1.0)
    }

    /// How a run stands against the bound of its problem (`limit` from [`problem_limit`]):
    /// a run whose peak is over the limit is not an order of the problem, so it may cost less
    /// than the bound, and "within −15% of it" would mislead.
    pub fn standing(&self, stats: &Stats, limit: f64) -> Standing {
        if !self.fits(limit) {
            return Standing::NoneFits { least: self.least_memory, limit };
        }
        if stats.peak_memory > limit + 1e-9 * limit.abs().max(1.0) {
            return Standing::OverLimit { peak: stats.peak_memory, limit };
        }
        let excess = self.excess(stats.cost);
        if excess <= 1e-9 {
            Standing::Meets
        } else {
            Standing::Within(excess)
        }
    }
}

/// How a run's cost stands against the lower bound of its problem ([`LowerBound::standing`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub enum Standing {
    /// The cost is the bound: no order of the problem is cheaper.
    Meets,
    /// The cost is this fraction above the bound (0.018 for 1.8%).
    Within(f64),
    /// The run holds more activation memory than the limit: the bound is what orders within
    /// the limit cost, not a measure of this run.
    OverLimit {
        /// The run's peak activation memory.
        peak: f64,
        /// The problem's limit.
        limit: f64,
    },
    /// No order of the problem fits the limit: some op needs more than it as it starts.
    NoneFits {
        /// The least limit any order fits ([`LowerBound::least_memory`]).
        least: f64,
        /// The problem's limit.
        limit: f64,
    },
}

/// The memory limit of the problem a run solves: `--mem-limit`, or the family's default
/// limit when it schedules to one; without either, the schedule's own peak memory (the best
/// order that holds no more activation memory than this one).
pub fn problem_limit(family: Option<&Family>, params: &ScheduleParams, stats: &Stats) -> f64 {
    if let Some(limit) = params.mem_limit {
        return limit;
    }
    if let Some(limit) =
        family.and_then(|f| f.option(crate::error::Field::MemLimit)).and_then(|o| o.default_value(params))
    {
        return limit;
    }
    stats.peak_memory
}

/// Per-device facts of one microbatch shape, gathered before the caps are applied.
#[derive(Clone, Debug, Default, PartialEq)]
struct DeviceFacts {
    /// Shortest lag from a root's start to a non-root's start.
    head_lag: Option<f64>,
    /// Shortest lag from a non-leaf's end to the end of its last descendant on the device.
    tail_lag: Option<f64>,
    /// Longest chain from a root's start to the end of a pass.
    chain: f64,
    /// Roots: (memory allocated, time, count).
    roots: Vec<(f64, f64, u64)>,
    /// Leaves: (memory released, time, count).
    leaves: Vec<(f64, f64, u64)>,
    /// Whether some leaf allocates memory (then the tail's memory cap does not hold).
    leaf_allocates: bool,
    /// Whether some pass is both a root and a leaf (then the two windows may share it).
    root_leaf: bool,
}

/// A lower bound on the cost of any order of `schedule`'s ops under `costs` that keeps every
/// device's activation memory within `limit` (none: no limit).
pub fn lower_bound(schedule: &Schedule, costs: &Costs, limit: Option<f64>) -> LowerBound {
    let table = StageCosts::for_schedule(costs, schedule);
    let work = device_work(schedule, costs);
    let busiest = busiest_work(schedule, costs, &work);
    let devices = schedule.orders.len();
    let pair_time =
        schedule.orders.iter().flatten().filter(|op| op.is_pair()).map(|op| table.op(op)).fold(f64::INFINITY, f64::min);
    let dur = |p: Pass| table.pass(p).min(pair_time);

    // Group passes by unit (microbatch, slice); count units by shape.
    let slices = schedule.slices.max(1) as usize;
    let units = schedule.microbatches as usize * slices;
    // A pass's (stage, kind) as one number, in the order of the pair.
    let kinds = PassKind::ALL.len();
    let mut shapes_of = Groups::new(units, |put| {
        each_pass(schedule, |_, p| {
            let u = p.microbatch as usize * slices + p.slice as usize;
            if u < units {
                put(u, p.stage as usize * kinds + p.kind.index());
            }
        });
    });
    let keys = shapes_of.items.iter().max().map_or(0, |&k| k + 1);
    let mut shapes: BTreeMap<Vec<(u32, u8)>, u64> = BTreeMap::new();
    let (mut counts, mut shape) = (Vec::new(), Vec::new());
    for u in 0..units {
        let v = shapes_of.group_mut(u);
        if v.is_empty() {
            continue;
        }
        // Sorted, by counting when there are few keys for the passes.
        shape.clear();
        if keys <= 4 * v.len() {
            counts.clear();
            counts.resize(keys, 0u32);
            for &k in v.iter() {
                counts[k] += 1;
            }
            for (k, &n) in counts.iter().enumerate() {
                shape.extend(std::iter::repeat_n(((k / kinds) as u32, (k % kinds) as u8), n as usize));
            }
        } else {
            v.sort_unstable();
            shape.extend(v.iter().map(|&k| ((k / kinds) as u32, (k % kinds) as u8)));
        }
        match shapes.get_mut(shape.as_slice()) {
            Some(count) => *count += 1,
            None => {
                shapes.insert(shape.clone(), 1);
            }
        }
    }

    let mut facts: Vec<DeviceFacts> = vec![DeviceFacts::default(); devices];
    let mut last = vec![None; devices.max(1)];
    let timing = Timing { placement: &schedule.placement, table: &table, dur: &dur };
    for (shape, count) in &shapes {
        shape_facts(&timing, shape, *count, &mut facts, &mut last);
    }

    let tolerance = |l: f64| 1e-9 * l.abs().max(1.0);
    let mut best: Option<LowerBound> = None;
    for (d, f) in facts.iter().enumerate() {
        let w = work[d];
        let cap = |items: &[(f64, f64, u64)], capped: bool| -> f64 {
            let total: u64 = items.iter().map(|i| i.2).sum();
            let mut k = total;
            if let (Some(l), true) = (limit, capped) {
                let mut by_mem: Vec<(f64, u64)> = items.iter().map(|i| (i.0, i.2)).collect();
                crate::units::sort::sort_by(&mut by_mem, |a, b| a.0.total_cmp(&b.0));
                let (mut used, mut n) = (0.0, 0u64);
                'fill: for (m, c) in by_mem {
                    for _ in 0..c {
                        if used + m > l + tolerance(l) {
                            break 'fill;
                        }
                        used += m;
                        n += 1;
                        if m == 0.0 {
                            n = total;
                            break 'fill;
                        }
                    }
                }
                k = n.min(total);
            }
            let mut by_time: Vec<(f64, u64)> = items.iter().map(|i| (i.1, i.2)).collect();
            crate::units::sort::sort_by(&mut by_time, |a, b| b.0.total_cmp(&a.0));
            let (mut sum, mut left) = (0.0, k);
            for (t, c) in by_time {
                let take = c.min(left);
                sum += t * take as f64;
                left -= take;
            }
            sum
        };
        let (head_cap, tail_cap) = (cap(&f.roots, true), cap(&f.leaves, !f.leaf_allocates));
        let head = f.head_lag.map_or(0.0, |lag| (lag - head_cap).max(0.0));
        let tail = f.tail_lag.map_or(0.0, |lag| (lag - tail_cap).max(0.0));
        let mut value = f.chain.max(w + head).max(w + tail);
        if f.head_lag.is_some() && f.tail_lag.is_some() {
            // When the two windows overlap they cover the span and hold only roots and
            // leaves; so when no pass is both and the work exceeds what they can hold, the
            // windows are apart and both fills add up.
            let apart = !f.root_leaf && w > head_cap + tail_cap + tolerance(w);
            if apart {
                value = value.max(w + head + tail);
            }
        }
        if best.as_ref().is_none_or(|b| value > b.value) {
            best = Some(LowerBound {
                value,
                device: d as u32,
                work: w,
                head,
                tail,
                chain: f.chain,
                closed_form: None,
                least_memory: 0.0,
            });
        }
    }
    let mut best = best.unwrap_or(LowerBound {
        value: 0.0,
        device: 0,
        work: 0.0,
        head: 0.0,
        tail: 0.0,
        chain: 0.0,
        closed_form: None,
        least_memory: 0.0,
    });
    best.value = best.value.max(busiest);
    best.least_memory = least_memory(schedule, &table);
    best
}

/// The least memory limit any order of `schedule`'s passes fits (a floor on it): an op
/// allocates at its start, on top of what its microbatch already holds on its device. Every
/// pass has at most one dependency, so a pass's ancestors are the chain of dependencies
/// above it: those on the op's device have run, and allocated; what the microbatch's other
/// passes on the device may have released by then is at most what its passes that do not
/// depend on the op release. Other microbatches hold nothing less than nothing. For an
/// interleaved device holding stages 0 and 4, stage 4's forward starts while stage 0's
/// activation is held: 2 mem-f, not 1.
///
/// Linear up to a sort: the dependency keys form one forest for every microbatch
/// ([`KeyTree`]), so a pass's held memory is a sum over its ancestors and descendants on its
/// device, gathered per microbatch along that forest.
fn least_memory(schedule: &Schedule, table: &StageCosts) -> f64 {
    least_memory_counted(schedule, table).0
}

/// [`least_memory`], and the steps it took (entries visited), which tests hold to a multiple
/// of the passes.
fn least_memory_counted(schedule: &Schedule, table: &StageCosts) -> (f64, u64) {
    let tree = KeyTree::new(&schedule.placement);
    // Each (microbatch, slice)'s passes with their device, and the ops they belong to.
    #[derive(Clone, Copy)]
    struct Item {
        unit: (u32, u32),
        tin: u32,
        device: usize,
        op: usize,
        pass: Pass,
    }
    let mut ops: Vec<(usize, f64)> = Vec::new();
    let (mut microbatches, mut slices) = (0u64, 0u64);
    for (d, order) in schedule.orders.iter().enumerate() {
        for op in order {
            ops.push((d, op.passes().map(|p| table.alloc(p)).sum()));
            for p in op.passes().filter(|&p| tree.node(p).is_some()) {
                microbatches = microbatches.max(u64::from(p.microbatch) + 1);
                slices = slices.max(u64::from(p.slice) + 1);
            }
        }
    }
    let devices = schedule.orders.len() as u64;
    let each = |put: &mut dyn FnMut(usize, Item)| {
        let mut index = 0;
        for (d, order) in schedule.orders.iter().enumerate() {
            for op in order {
                for p in op.passes() {
                    if let Some(node) = tree.node(p) {
                        let unit = (u64::from(p.microbatch) * slices + u64::from(p.slice)) * devices + d as u64;
                        let item =
                            Item { unit: (p.microbatch, p.slice), tin: tree.tin[node], device: d, op: index, pass: p };
                        put(unit as usize, item);
                    }
                }
                index += 1;
            }
        }
    };
    // The items in (unit, device, pre-order) order: grouped by (unit, device) in one counting
    // pass (stable), each group sorted by pre-order number (stable); a sort of all the items
    // when the sizes named are far more than the passes.
    let groups = microbatches.saturating_mul(slices).saturating_mul(devices);
    let grouped = if groups <= 4 * schedule.op_count() as u64 + 1024 {
        let mut grouped = Groups::new(groups as usize, each);
        for g in 0..groups as usize {
            crate::units::sort::sort_by_key(grouped.group_mut(g), |i| i.tin);
        }
        grouped.items
    } else {
        let mut items = Vec::new();
        each(&mut |_, item| items.push(item));
        crate::units::sort::sort_by_key(&mut items, |i| (i.unit, i.device, i.tin));
        items
    };
    let items = grouped;
    let mut steps = 0u64;
    let mut held = vec![0.0f64; ops.len()];
    // Per group, reused: entries (one per key node present; B and BW at one stage share one),
    // each entry's nearest present ancestor, and what its ancestors allocate and its
    // descendants release.
    let mut entry_of = Vec::new();
    let mut tins: Vec<u32> = Vec::new();
    let (mut allocs, mut releases): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut up: Vec<Option<usize>> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let (mut above, mut below): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    // One (unit, device) group at a time: its passes in pre-order of the key forest.
    let mut at = 0;
    while at < items.len() {
        let key = (items[at].unit, items[at].device);
        let end = at + items[at..].iter().take_while(|i| (i.unit, i.device) == key).count();
        let group = &items[at..end];
        entry_of.clear();
        tins.clear();
        allocs.clear();
        releases.clear();
        for i in group {
            if tins.last() != Some(&i.tin) {
                tins.push(i.tin);
                allocs.push(0.0);
                releases.push(0.0);
            }
            let e = tins.len() - 1;
            allocs[e] += table.alloc(i.pass);
            releases[e] += table.release(i.pass);
            entry_of.push(e);
        }
        // The nearest present ancestor of each entry, by a stack of the open ones.
        let n = tins.len();
        up.clear();
        up.resize(n, None);
        stack.clear();
        for e in 0..n {
            while let Some(&top) = stack.last() {
                steps += 1;
                if tree.is_ancestor(tree.at(tins[top]), tree.at(tins[e])) {
                    break;
                }
                stack.pop();
            }
            up[e] = stack.last().copied();
            stack.push(e);
        }
        // Allocated by ancestors (pre-order), released by descendants (reverse pre-order).
        above.clear();
        above.resize(n, 0.0);
        for e in 0..n {
            if let Some(u) = up[e] {
                above[e] = above[u] + allocs[u];
            }
        }
        below.clear();
        below.resize(n, 0.0);
        for e in (0..n).rev() {
            if let Some(u) = up[e] {
                below[u] += releases[e] + below[e];
            }
        }
        let released: f64 = releases.iter().sum();
        for (i, &e) in group.iter().zip(&entry_of) {
            steps += 1;
            // Everything of the microbatch on the device may have been released except what
            // waits for this pass (nothing waits for a W).
            let kept = if provides(i.pass.kind).is_some() { below[e] } else { 0.0 };
            let may_release = released - table.release(i.pass) - kept;
            held[i.op] += (above[e] - may_release).max(0.0);
        }
        at = end;
    }
    let least = ops.iter().zip(&held).filter(|((_, alloc), _)| *alloc > 0.0).map(|((_, alloc), h)| h + alloc);
    (least.fold(0.0f64, f64::max), steps)
}

/// Calls `f` with each pass of `schedule` and its device, in the devices' orders.
fn each_pass(schedule: &Schedule, mut f: impl FnMut(usize, Pass)) {
    for (d, order) in schedule.orders.iter().enumerate() {
        for op in order {
            match *op {
                Op::One(p) => f(d, p),
                Op::Pair(a, b) => {
                    f(d, a);
                    f(d, b);
                }
            }
        }
    }
}

/// Items grouped by an index in `0..groups`, each group in the order the items came: one
/// flat buffer (two passes over the items) instead of a vector per group.
struct Groups<T> {
    /// Where each group starts in `items`; the last entry is the end.
    starts: Vec<usize>,
    items: Vec<T>,
}

impl<T: Copy> Groups<T> {
    /// Groups what `each` yields, `(group, item)`; it is called twice (once to count, once
    /// to place).
    fn new(groups: usize, each: impl Fn(&mut dyn FnMut(usize, T))) -> Groups<T> {
        let mut starts = vec![0usize; groups + 1];
        let mut fill = None;
        each(&mut |g, t| {
            starts[g + 1] += 1;
            fill.get_or_insert(t);
        });
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        let mut items = fill.map(|t| vec![t; starts[groups]]).unwrap_or_default();
        let mut next = starts.clone();
        each(&mut |g, t| {
            items[next[g]] = t;
            next[g] += 1;
        });
        Groups { starts, items }
    }

    fn group_mut(&mut self, g: usize) -> &mut [T] {
        &mut self.items[self.starts[g]..self.starts[g + 1]]
    }
}

/// The dependency rule's keys as one forest, the same for every microbatch: a node per
/// (stage, F), (stage, B or BW) and (stage, W), its parent the key it waits for, numbered in
/// pre-order (`tin`) with the end of each subtree (`tout`), so that ancestry is two
/// comparisons.
struct KeyTree {
    stages: u32,
    /// Pre-order number of each node.
    tin: Vec<u32>,
    /// One past the last pre-order number in each node's subtree.
    tout: Vec<u32>,
    /// The node of each pre-order number.
    order: Vec<usize>,
}

impl KeyTree {
    fn new(placement: &crate::schedule::Placement) -> KeyTree {
        let stages = placement.stages();
        let n = 3 * stages as usize;
        let kinds = [PassKind::F, PassKind::B, PassKind::W];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut is_root = vec![true; n];
        for stage in 0..stages {
            for (k, kind) in kinds.into_iter().enumerate() {
                let node = 3 * stage as usize + k;
                let Some(dep) = dependency(placement, Pass::new(kind, stage, 0)) else { continue };
                if dep.stage >= stages {
                    continue;
                }
                let class = match dep.class {
                    DepClass::Forward => 0,
                    DepClass::InputGrad => 1,
                };
                children[3 * dep.stage as usize + class].push(node);
                is_root[node] = false;
            }
        }
        let (mut tin, mut tout) = (vec![u32::MAX; n], vec![0u32; n]);
        let mut order = Vec::with_capacity(n);
        // Iterative depth-first walk: (node, whether its children are done).
        let mut stack: Vec<(usize, bool)> = (0..n).rev().filter(|&v| is_root[v]).map(|v| (v, false)).collect();
        while let Some((v, done)) = stack.pop() {
            if done {
                tout[v] = order.len() as u32;
                continue;
            }
            tin[v] = order.len() as u32;
            order.push(v);
            stack.push((v, true));
            stack.extend(children[v].iter().rev().map(|&c| (c, false)));
        }
        KeyTree { stages, tin, tout, order }
    }

    /// The node of `pass` (none for a stage outside the placement, or a node no walk reached).
    fn node(&self, pass: Pass) -> Option<usize> {
        let k = match pass.kind {
            PassKind::F => 0,
            PassKind::B | PassKind::BW => 1,
            PassKind::W => 2,
            PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => return None,
        };
        let node = (pass.stage < self.stages).then(|| 3 * pass.stage as usize + k)?;
        (self.tin[node] != u32::MAX).then_some(node)
    }

    /// The node numbered `tin` in pre-order.
    fn at(&self, tin: u32) -> usize {
        self.order[tin as usize]
    }

    /// Whether `a` is a strict ancestor of `b`.
    fn is_ancestor(&self, a: usize, b: usize) -> bool {
        self.tin[a] < self.tin[b] && self.tout[b] <= self.tout[a]
    }
}

/// What the facts of a microbatch shape are reckoned with: where each stage runs, the stage
/// costs (memory and communication) and each pass's duration.
#[derive(Clone, Copy)]
struct Timing<'a> {
    placement: &'a Placement,
    table: &'a StageCosts,
    dur: &'a dyn Fn(Pass) -> f64,
}

/// Adds the facts of one microbatch shape (`count` microbatches have it) to `facts`, in time
/// linear in the shape's passes (up to a sort): each pass's nearest ancestor on its own
/// device comes from one walk of the shape's dependency forest. `last` holds one slot per
/// device, all `None`, and is left so.
fn shape_facts(
    timing: &Timing,
    shape: &[(u32, u8)],
    count: u64,
    facts: &mut [DeviceFacts],
    last: &mut [Option<usize>],
) {
    let Timing { placement, table, dur } = *timing;
    let passes: Vec<Pass> = shape.iter().map(|&(stage, k)| Pass::new(PassKind::ALL[k as usize], stage, 0)).collect();
    let n = passes.len();
    let device: Vec<usize> = passes
        .iter()
        .map(|p| placement.device_of(p.stage).unwrap_or(0) as usize)
        .map(|d| d.min(last.len().saturating_sub(1)))
        .collect();
    // The index of each pass's dependency inside the shape: the first pass providing it.
    let mut provider: BTreeMap<(u8, u32), usize> = BTreeMap::new();
    for (i, p) in passes.iter().enumerate() {
        if let Some(class) = provides(p.kind) {
            provider.entry((class as u8, p.stage)).or_insert(i);
        }
    }
    let parent: Vec<Option<usize>> = passes
        .iter()
        .map(|&p| dependency(placement, p).and_then(|d| provider.get(&(d.class as u8, d.stage)).copied()))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in parent.iter().enumerate() {
        if let Some(j) = *p {
            children[j].push(i);
        }
    }
    // A depth-first walk from the passes without a dependency in the shape: earliest starts
    // with unlimited devices (parents first), and each pass's nearest ancestor on its device.
    let mut est = vec![0.0f64; n];
    let mut up: Vec<Option<usize>> = vec![None; n];
    let mut pre: Vec<usize> = Vec::with_capacity(n);
    let mut stack: Vec<(usize, bool)> = (0..n).rev().filter(|&i| parent[i].is_none()).map(|i| (i, false)).collect();
    let mut saved: Vec<Option<usize>> = vec![None; n];
    while let Some((v, done)) = stack.pop() {
        if done {
            last[device[v]] = saved[v];
            continue;
        }
        if let Some(j) = parent[v] {
            let comm = if device[v] == device[j] { 0.0 } else { table.comm };
            est[v] = est[j] + dur(passes[j]) + comm;
        }
        up[v] = last[device[v]];
        saved[v] = last[device[v]];
        last[device[v]] = Some(v);
        pre.push(v);
        stack.push((v, true));
        stack.extend(children[v].iter().rev().map(|&c| (c, false)));
    }
    let end = |v: usize| est[v] + dur(passes[v]);
    // Roots (no ancestor on their device), their chains and lags, in pre-order.
    let mut root: Vec<usize> = (0..n).collect();
    for &v in &pre {
        if let Some(u) = up[v] {
            root[v] = root[u];
        }
        let r = root[v];
        let f = &mut facts[device[v]];
        f.chain = f.chain.max(end(v) - est[r]);
        if r == v {
            f.roots.push((table.alloc(passes[v]), dur(passes[v]), count));
        } else {
            let lag = est[v] - est[r];
            f.head_lag = Some(f.head_lag.map_or(lag, |h| h.min(lag)));
        }
    }
    // Leaves (no descendant on their device) and the latest end below each other pass.
    let mut latest: Vec<Option<f64>> = vec![None; n];
    for &v in pre.iter().rev() {
        if let Some(u) = up[v] {
            let below = latest[v].map_or(end(v), |l| l.max(end(v)));
            latest[u] = Some(latest[u].map_or(below, |l: f64| l.max(below)));
        }
    }
    for &q in &pre {
        let f = &mut facts[device[q]];
        match latest[q] {
            None => {
                f.root_leaf |= up[q].is_none();
                f.leaves.push((table.release(passes[q]), dur(passes[q]), count));
                f.leaf_allocates |= table.alloc(passes[q]) > 0.0;
            }
            Some(l) => {
                let lag = l - est[q] - dur(passes[q]);
                f.tail_lag = Some(f.tail_lag.map_or(lag, |t| t.min(lag)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run, ScheduleParams};

    /// The pairwise definitions the linear [`least_memory`] and [`shape_facts`] replaced
    /// (quadratic in the stages), kept as their oracles.
    mod pairwise {
        use super::super::*;

        /// The least memory limit any order of `schedule`'s passes fits (a floor on it): an op
        /// allocates at its start, on top of what its microbatch already holds on its device. Every
        /// pass has at most one dependency, so a pass's ancestors are the chain of dependencies
        /// above it: those on the op's device have run, and allocated; what the microbatch's other
        /// passes on the device may have released by then is at most what its passes that do not
        /// depend on the op release. Other microbatches hold nothing less than nothing. For an
        /// interleaved device holding stages 0 and 4, stage 4's forward starts while stage 0's
        /// activation is held: 2 mem-f, not 1.
        pub(super) fn least_memory_pairwise(schedule: &Schedule, table: &StageCosts) -> f64 {
            let placement = &schedule.placement;
            let key = |p: Pass| provides(p.kind).map(|c| (c, p.stage));
            // The (class, stage) keys a pass waits for, directly or not.
            let above = |p: Pass| -> Vec<(DepClass, u32)> {
                let mut keys = Vec::new();
                let mut at = dependency(placement, p);
                // A pipeline's chain visits each stage at most twice (forward, input gradient).
                let most = 2 * placement.stages_per_pipeline() as usize + 2;
                while let Some(dep) = at.filter(|_| keys.len() < most) {
                    keys.push((dep.class, dep.stage));
                    // The pass that provides it (B stands for B or BW: both wait for the same).
                    let kind = match dep.class {
                        DepClass::Forward => PassKind::F,
                        DepClass::InputGrad => PassKind::B,
                    };
                    at = dependency(
                        placement,
                        Pass { kind, stage: dep.stage, microbatch: p.microbatch, slice: p.slice },
                    );
                }
                keys
            };
            // Each (microbatch, slice)'s passes on each device.
            let mut on_device: BTreeMap<(u32, u32, usize), Vec<Pass>> = BTreeMap::new();
            for (d, order) in schedule.orders.iter().enumerate() {
                for p in order.iter().flat_map(|op| op.passes()) {
                    on_device.entry((p.microbatch, p.slice, d)).or_default().push(p);
                }
            }
            let held_before = |p: Pass, d: usize| -> f64 {
                let Some(mine) = on_device.get(&(p.microbatch, p.slice, d)) else { return 0.0 };
                let waits_for = above(p);
                let mut held = 0.0;
                for &q in mine.iter().filter(|&&q| q != p) {
                    // `q` has run before `p` when `p` waits for it, and may have unless it waits for `p`.
                    if key(q).is_some_and(|k| waits_for.contains(&k)) {
                        held += table.alloc(q);
                    }
                    if !key(p).is_some_and(|k| above(q).contains(&k)) {
                        held -= table.release(q);
                    }
                }
                held.max(0.0)
            };
            let mut least = 0.0f64;
            for (d, order) in schedule.orders.iter().enumerate() {
                for op in order {
                    let alloc: f64 = op.passes().map(|p| table.alloc(p)).sum();
                    if alloc > 0.0 {
                        let held: f64 = op.passes().map(|p| held_before(p, d)).sum();
                        least = least.max(held + alloc);
                    }
                }
            }
            least
        }

        /// Adds the facts of one microbatch shape (`count` microbatches have it) to `facts`.
        pub(super) fn shape_facts_walk(timing: &Timing, shape: &[(u32, u8)], count: u64, facts: &mut [DeviceFacts]) {
            let Timing { placement, table, dur } = *timing;
            let passes: Vec<Pass> =
                shape.iter().map(|&(stage, k)| Pass::new(PassKind::ALL[k as usize], stage, 0)).collect();
            let n = passes.len();
            let device: Vec<usize> =
                passes.iter().map(|p| placement.device_of(p.stage).unwrap_or(0) as usize).collect();
            // The index of each pass's dependency inside the shape.
            let find = |class: DepClass, stage: u32| -> Option<usize> {
                passes.iter().position(|p| {
                    p.stage == stage
                        && match class {
                            DepClass::Forward => p.kind == PassKind::F,
                            DepClass::InputGrad => p.kind.is_input_grad(),
                        }
                })
            };
            let parent: Vec<Option<usize>> =
                passes.iter().map(|&p| dependency(placement, p).and_then(|d| find(d.class, d.stage))).collect();
            // Earliest starts with unlimited devices, in an order where parents come first.
            let mut order: Vec<usize> = (0..n).collect();
            let rank = |i: usize| -> (u8, i64) {
                let p = passes[i];
                let local = i64::from(placement.local_stage(p.stage));
                let pipe = i64::from(placement.pipeline_of(p.stage)) << 40;
                match p.kind {
                    PassKind::F | PassKind::R => (0, pipe + local),
                    PassKind::B | PassKind::BW => (1, pipe - local),
                    PassKind::W | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => (2, pipe + local),
                }
            };
            order.sort_by_key(|&i| rank(i));
            let mut est = vec![0.0f64; n];
            for &i in &order {
                if let Some(j) = parent[i] {
                    let comm = if device[i] == device[j] { 0.0 } else { table.comm };
                    est[i] = est[j] + dur(passes[j]) + comm;
                }
            }
            // Roots, leaves, lags: walk each pass's ancestors.
            let mut is_leaf = vec![true; n];
            let mut tail_lag: Vec<Option<f64>> = vec![None; n];
            let mut is_root = vec![false; n];
            for v in 0..n {
                let end_v = est[v] + dur(passes[v]);
                let mut root = v;
                let mut cursor = parent[v];
                let mut steps = 0;
                while let Some(q) = cursor {
                    if device[q] == device[v] {
                        root = q;
                        is_leaf[q] = false;
                        let lag = end_v - est[q] - dur(passes[q]);
                        tail_lag[q] = Some(tail_lag[q].map_or(lag, |t: f64| t.max(lag)));
                    }
                    cursor = parent[q];
                    steps += 1;
                    if steps > n {
                        break;
                    }
                }
                let f = &mut facts[device[v]];
                f.chain = f.chain.max(end_v - est[root]);
                if root == v {
                    is_root[v] = true;
                    f.roots.push((table.alloc(passes[v]), dur(passes[v]), count));
                } else {
                    let lag = est[v] - est[root];
                    f.head_lag = Some(f.head_lag.map_or(lag, |h| h.min(lag)));
                }
            }
            for q in 0..n {
                let f = &mut facts[device[q]];
                if is_leaf[q] {
                    f.root_leaf |= is_root[q];
                    f.leaves.push((table.release(passes[q]), dur(passes[q]), count));
                    f.leaf_allocates |= table.alloc(passes[q]) > 0.0;
                } else if let Some(lag) = tail_lag[q] {
                    f.tail_lag = Some(f.tail_lag.map_or(lag, |t| t.min(lag)));
                }
            }
        }
    }

    /// Every family's runs at small sizes, with equal and unequal costs and communication.
    fn sample_runs() -> Vec<(Schedule, Costs)> {
        let mut out = Vec::new();
        let costs = [
            Costs::default(),
            Costs { comm: 1.0, ..Costs::default() },
            Costs { f: 1.0, b: 2.0, w: 0.5, comm: 0.25, mem_f: 2.0, mem_w: Some(0.5), ..Costs::default() },
        ];
        for f in crate::FAMILIES {
            for (p, m) in [(2, 4), (4, 8), (3, 7)] {
                for chunks in [None, Some(3)] {
                    for c in &costs {
                        let mut params = ScheduleParams::new(p, m).with_costs(c.clone());
                        params.chunks = chunks.filter(|_| f.uses(crate::error::Field::Chunks));
                        if let Ok(a) = run(f.name, &params) {
                            out.push((a.schedule, c.clone()));
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn least_memory_and_shape_facts_match_their_pairwise_definitions() {
        let runs = sample_runs();
        assert!(runs.len() > 100, "{}", runs.len());
        for (schedule, costs) in &runs {
            let table = StageCosts::for_schedule(costs, schedule);
            let (fast, slow) = (least_memory(schedule, &table), pairwise::least_memory_pairwise(schedule, &table));
            assert!((fast - slow).abs() <= 1e-9 * slow.abs().max(1.0), "{:?}: {fast} vs {slow}", schedule.placement);
            let dur = |p: Pass| table.pass(p);
            let devices = schedule.orders.len();
            let shape: Vec<(u32, u8)> = {
                let mut v: Vec<(u32, u8)> = schedule
                    .orders
                    .iter()
                    .flatten()
                    .flat_map(|op| op.passes())
                    .filter(|p| p.microbatch == 0 && p.slice == 0)
                    .map(|p| (p.stage, p.kind.index() as u8))
                    .collect();
                v.sort_unstable();
                v
            };
            let mut fast = vec![DeviceFacts::default(); devices];
            let mut slow = vec![DeviceFacts::default(); devices];
            let timing = Timing { placement: &schedule.placement, table: &table, dur: &dur };
            shape_facts(&timing, &shape, 3, &mut fast, &mut vec![None; devices]);
            pairwise::shape_facts_walk(&timing, &shape, 3, &mut slow);
            for f in fast.iter_mut().chain(slow.iter_mut()) {
                f.roots.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
                f.leaves.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            }
            assert_eq!(fast, slow, "{:?}", schedule.placement);
        }
    }

    #[test]
    fn simulate_with_many_chunks_finishes_in_linear_time() {
        // 1,024 chunks: 65,536 passes, each of whose microbatches has 2,048 passes on its
        // device (the pairwise definition took billions of steps here).
        let mut params = ScheduleParams::new(4, 8);
        params.chunks = Some(1024);
        let a = run("interleaved-1f1b", &params).unwrap();
        let table = StageCosts::for_schedule(&params.costs, &a.schedule);
        let (least, steps) = least_memory_counted(&a.schedule, &table);
        // Device 0's last forward waits for its 1,023 earlier ones, each holding 1/1024.
        assert!((least - 1.0).abs() < 1e-9, "{least}");
        let passes = a.schedule.pass_count() as u64;
        assert!(steps <= 3 * passes, "{steps} steps for {passes} passes");
    }

    fn bound(name: &str, params: &ScheduleParams, limit: Option<f64>) -> (f64, f64) {
        let a = run(name, params).unwrap();
        (lower_bound(&a.schedule, &params.costs, limit).value, a.stats.cost)
    }

    #[test]
    fn a_run_stands_against_the_bound_by_its_cost_unless_it_is_over_the_limit() {
        let a = run("gpipe", &ScheduleParams::new(4, 8)).unwrap();
        let lb = |value: f64| LowerBound { value, ..lower_bound(&a.schedule, &Costs::default(), None) };
        // GPipe: cost 33, peak 8.
        assert_eq!(lb(33.0).standing(&a.stats, 8.0), Standing::Meets);
        let Standing::Within(x) = lb(30.0).standing(&a.stats, 8.0) else { panic!("above the bound") };
        assert!((x - 0.1).abs() < 1e-12, "{x}");
        assert_eq!(lb(39.0).standing(&a.stats, 3.0), Standing::OverLimit { peak: 8.0, limit: 3.0 });
        // Over the limit even when the cost is above the bound.
        assert!(matches!(lb(30.0).standing(&a.stats, 7.5), Standing::OverLimit { .. }));
        // Below one forward's activation no order exists: the bound is not a cost.
        assert_eq!(lb(39.0).standing(&a.stats, 0.5), Standing::NoneFits { least: 1.0, limit: 0.5 });
        assert!(matches!(lb(39.0).standing(&a.stats, 1.0), Standing::OverLimit { .. }));
    }

    #[test]
    fn one_f_one_b_at_its_own_memory_is_optimal() {
        // P = 4, M = 8, F = B = W = 1: 1F1B's 33 is the bound at P·mem-f (head 6, tail 3).
        let p = ScheduleParams::new(4, 8);
        assert_eq!(bound("1f1b", &p, Some(4.0)), (33.0, 33.0));
    }

    #[test]
    fn zb_h1_meets_the_bound_at_one_f_one_b_memory() {
        // ZB-H1's (P−1)(F+B−W) = 3 over the ideal 24 is forced at a limit of P·mem-f.
        let p = ScheduleParams::new(4, 8);
        assert_eq!(bound("zb-h1", &p, Some(4.0)), (27.0, 27.0));
        // At twice the memory nothing is forced: the bound is the ideal, which ZB-H2 reaches.
        assert_eq!(bound("zb-h2", &p, Some(8.0)), (24.0, 24.0));
    }

    #[test]
    fn communication_lengthens_the_forced_fill() {
        let costs = Costs { comm: 1.0, ..Costs::default() };
        let p = ScheduleParams::new(4, 8).with_costs(costs);
        let (lb, cost) = bound("zb-h1", &p, Some(4.0));
        // Head lag F + 3(F+B) + 6 hops = 13, four forwards fit: 9 forced idle.
        assert_eq!(lb, 24.0 + 9.0);
        assert!(lb <= cost);
    }
}
