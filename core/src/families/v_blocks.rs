//! Slot-level machinery shared by the Controllable-Memory V schedules (`v-half`, `v-min`,
//! `v-auto`).
//!
//! Qi et al. (Pipeline Parallelism with Controllable Memory, NeurIPS 2024) build V schedules
//! from a *building block*: where, within a period of six slots, each device runs the six
//! passes of one microbatch. Repeating the block once per microbatch and squeezing out the empty
//! slots gives the stable phase; warm-up and cool-down are then reordered without raising the
//! peak memory. This module holds the vocabulary those generators share:
//!
//! * [`Part`]: the six passes one device runs per microbatch under a V placement;
//! * [`Grid`]: one row of slots per device, each slot empty or holding a part; the `k`-th
//!   occurrence of a part in a row is microbatch `k`;
//! * [`Grid::squeeze`]: every pass as early as its device's order and its dependency allow, one
//!   slot per pass (the papers' "squeezing");
//! * the lifespan memory count the papers schedule with: a forward holds one chunk-activation
//!   until its weight-gradient pass (`F` +1, `W` −1, `B` 0).
//!
//! Slots only order passes. The finished orders are timed by the simulator
//! ([`crate::simulate`]), never here.

use crate::params::{Costs, StageCosts};
use crate::schedule::{Pass, Placement, Schedule};
use crate::sim::{simulate, Builder};

/// Slots per microbatch in a building block: F, B and W of two chunks.
pub(super) const PERIOD: u32 = 6;

/// An empty slot in a [`Grid`] row.
pub(super) const EMPTY: u8 = u8::MAX;

/// One of the six passes a device runs for each microbatch under a V placement.
///
/// Chunk 0 is the device's stage on the way down (stage `d`), chunk 1 its stage on the way
/// back up (stage `2P−1−d`). The discriminants are the papers' slot order `F f B b W w`, in
/// which `B` is the input gradient of chunk 1 (it flows down, like `F`) and `b` that of chunk 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Part {
    /// Forward of chunk 0 (`F` in the papers' blocks and in the golden notation).
    F0 = 0,
    /// Forward of chunk 1 (`f`).
    F1 = 1,
    /// Input gradient of chunk 1 (the papers' `B`; `b` in the golden notation).
    B1 = 2,
    /// Input gradient of chunk 0 (the papers' `b`; `B` in the golden notation).
    B0 = 3,
    /// Weight gradient of chunk 1 (`w` in the golden notation).
    W1 = 4,
    /// Weight gradient of chunk 0 (`W` in the golden notation).
    W0 = 5,
}

impl Part {
    /// Every part, in slot-order index.
    pub(super) const ALL: [Part; 6] = [Part::F0, Part::F1, Part::B1, Part::B0, Part::W1, Part::W0];

    /// The part with index `index` (`0..6`), if any.
    pub(super) fn from_index(index: u8) -> Option<Part> {
        Part::ALL.get(usize::from(index)).copied()
    }

    /// The index `0..6`, as stored in a [`Grid`] cell.
    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// The model chunk (0 on the way down, 1 on the way up).
    pub(super) fn chunk(self) -> u32 {
        match self {
            Part::F0 | Part::B0 | Part::W0 => 0,
            Part::F1 | Part::B1 | Part::W1 => 1,
        }
    }

    /// Change of the lifespan count: a forward takes one chunk-activation, its weight-gradient
    /// pass gives it back.
    pub(super) fn memory(self) -> i32 {
        match self {
            Part::F0 | Part::F1 => 1,
            Part::B1 | Part::B0 => 0,
            Part::W1 | Part::W0 => -1,
        }
    }

    /// Whether this is a forward.
    pub(super) fn is_forward(self) -> bool {
        matches!(self, Part::F0 | Part::F1)
    }

    /// Whether this is an input-gradient pass.
    pub(super) fn is_input_grad(self) -> bool {
        matches!(self, Part::B1 | Part::B0)
    }

    /// Whether this is a weight-gradient pass.
    pub(super) fn is_weight(self) -> bool {
        matches!(self, Part::W1 | Part::W0)
    }

    /// The weight-gradient pass that follows this input-gradient pass.
    pub(super) fn weight(self) -> Option<Part> {
        match self {
            Part::B1 => Some(Part::W1),
            Part::B0 => Some(Part::W0),
            _ => None,
        }
    }

    /// The pass this part is on `device` for `microbatch` under `Placement::v_shape(devices)`.
    pub(super) fn pass(self, device: u32, microbatch: u32, devices: u32) -> Pass {
        let stage = if self.chunk() == 0 { device } else { 2 * devices - 1 - device };
        match self {
            Part::F0 | Part::F1 => Pass::f(stage, microbatch),
            Part::B1 | Part::B0 => Pass::b(stage, microbatch),
            Part::W1 | Part::W0 => Pass::w(stage, microbatch),
        }
    }

    /// The part (and its row) this part waits for, same microbatch, under the V dependency
    /// rules: forwards run down (`F0`) then up (`F1`), input gradients down (`B1`) then up
    /// (`B0`); the turn-arounds are on the last device (`F0`→`F1`, `B1`→`B0`) and device 0
    /// (`F1`→`B1`). Weight gradients follow their input gradient on the same row. `None` for
    /// the first forward.
    pub(super) fn dependency(self, row: u32, devices: u32) -> Option<(Part, u32)> {
        let last = devices - 1;
        match self {
            Part::F0 if row == 0 => None,
            Part::F0 => Some((Part::F0, row - 1)),
            Part::F1 if row == last => Some((Part::F0, row)),
            Part::F1 => Some((Part::F1, row + 1)),
            Part::B1 if row == 0 => Some((Part::F1, row)),
            Part::B1 => Some((Part::B1, row - 1)),
            Part::B0 if row == last => Some((Part::B1, row)),
            Part::B0 => Some((Part::B0, row + 1)),
            Part::W1 => Some((Part::B1, row)),
            Part::W0 => Some((Part::B0, row)),
        }
    }
}

/// One row of slots per device: each cell is [`EMPTY`] or a [`Part`] index.
///
/// The `k`-th occurrence of a part in a row is microbatch `k`. Rows have equal lengths.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Grid {
    /// `rows[d][slot]`.
    pub(super) rows: Vec<Vec<u8>>,
}

impl Grid {
    /// `devices` empty rows of `len` slots.
    pub(super) fn empty(devices: u32, len: usize) -> Grid {
        Grid { rows: vec![vec![EMPTY; len]; devices as usize] }
    }

    /// Number of rows (devices).
    pub(super) fn devices(&self) -> u32 {
        self.rows.len() as u32
    }

    /// The common row length.
    pub(super) fn len(&self) -> usize {
        self.rows.first().map_or(0, Vec::len)
    }

    /// Pads every row with empty slots to the longest row's length.
    pub(super) fn pad(&mut self) {
        let len = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        for row in &mut self.rows {
            row.resize(len, EMPTY);
        }
    }

    /// The peak lifespan count of every row.
    pub(super) fn peaks(&self) -> Vec<i32> {
        self.rows.iter().map(|row| row_peak(row)).collect()
    }

    /// The highest peak lifespan count over all rows.
    pub(super) fn peak(&self) -> i32 {
        self.rows.iter().map(|row| row_peak(row)).max().unwrap_or(0)
    }

    /// Slot-level ASAP that keeps every row's order: each pass one slot after the previous
    /// pass of its row and one slot after the pass it depends on (see [`Part::dependency`]).
    /// Weight gradients only keep their place in their row's order.
    ///
    /// Returns `None` when the orders cannot run: a row holds a part more than `microbatches`
    /// times, a same-row dependency comes later in its row, or the rows wait on each other.
    pub(super) fn squeeze(&self, microbatches: u32) -> Option<Grid> {
        let devices = self.devices();
        let (p, m) = (devices as usize, microbatches as usize);
        // New slot of (part, row, microbatch) for the four parts others wait for, and the row
        // waiting on it (at most one: the one holding the dependent pass).
        let mut placed = vec![u32::MAX; 4 * p * m];
        let mut waiter = vec![u32::MAX; 4 * p * m];
        let mut counts = vec![[0usize; 6]; p];
        let mut cursor = vec![0usize; p];
        let mut next_free = vec![0u32; p];
        let mut out: Vec<Vec<u8>> = self.rows.iter().map(|row| vec![EMPTY; row.len()]).collect();
        let mut ready: Vec<u32> = (0..devices).rev().collect();
        // Per row, the key base of each part's dependency and whether it is on the same row
        // (a row is resumed many times: worked out once).
        let row_deps: Vec<[Option<(usize, bool)>; 4]> = (0..devices)
            .map(|row| {
                std::array::from_fn(|x| {
                    let (dep, dep_row) = Part::ALL[x].dependency(row, devices)?;
                    Some(((dep.index() * p + dep_row as usize) * m, dep_row == row))
                })
            })
            .collect();

        while let Some(row) = ready.pop() {
            let r = row as usize;
            let cells = &self.rows[r];
            let out_row = &mut out[r];
            // Key base of each part's own slot.
            let own = |part: usize| part * p * m + r * m;
            let deps = row_deps[r];
            let (mut count, mut at, mut free) = (counts[r], cursor[r], next_free[r]);
            while let Some(&cell) = cells.get(at) {
                if cell == EMPTY {
                    at += 1;
                    continue;
                }
                let x = usize::from(cell);
                let mb = count[x];
                let mut slot = free;
                if x < 4 {
                    if mb >= m {
                        return None;
                    }
                    if let Some((base, same_row)) = deps[x] {
                        let dep_slot = placed[base + mb];
                        if dep_slot == u32::MAX {
                            if same_row {
                                return None; // its dependency comes later in its own row
                            }
                            waiter[base + mb] = row;
                            break;
                        }
                        slot = slot.max(dep_slot + 1);
                    }
                    let k = own(x) + mb;
                    placed[k] = slot;
                    let w = std::mem::replace(&mut waiter[k], u32::MAX);
                    if w != u32::MAX {
                        ready.push(w);
                    }
                }
                count[x] += 1;
                let s = slot as usize;
                if s >= out_row.len() {
                    out_row.resize(s + 1, EMPTY);
                }
                out_row[s] = cell;
                free = slot + 1;
                at += 1;
            }
            counts[r] = count;
            cursor[r] = at;
            next_free[r] = free;
        }
        if cursor.iter().zip(&self.rows).any(|(&c, row)| c < row.len()) {
            return None;
        }
        let len = next_free.iter().copied().max().unwrap_or(0) as usize;
        for row in &mut out {
            row.resize(len, EMPTY);
        }
        Some(Grid { rows: out })
    }

    /// Whether every row holds each part exactly `microbatches` times and every pass sits in
    /// a later slot than the pass it depends on: then slot order is a valid order to time the
    /// passes in.
    pub(super) fn is_slot_ordered(&self, microbatches: u32) -> bool {
        let devices = self.devices();
        let (p, m) = (devices as usize, microbatches as usize);
        let mut slot_of = vec![usize::MAX; 6 * p * m];
        for (r, row) in self.rows.iter().enumerate() {
            let mut counts = [0usize; 6];
            for (slot, &cell) in row.iter().enumerate() {
                let Some(part) = Part::from_index(cell) else { continue };
                let mb = counts[part.index()];
                if mb >= m {
                    return false;
                }
                slot_of[(part.index() * p + r) * m + mb] = slot;
                counts[part.index()] += 1;
            }
            if counts.iter().any(|&c| c != m) {
                return false;
            }
        }
        Part::ALL.iter().all(|&part| {
            (0..devices).all(|row| {
                let Some((dep, dep_row)) = part.dependency(row, devices) else { return true };
                let own = &slot_of[(part.index() * p + row as usize) * m..][..m];
                let before = &slot_of[(dep.index() * p + dep_row as usize) * m..][..m];
                own.iter().zip(before).all(|(o, b)| b < o)
            })
        })
    }

    /// The schedule these rows describe, on `Placement::v_shape`.
    pub(super) fn to_schedule(&self, microbatches: u32) -> Schedule {
        let devices = self.devices();
        let mut schedule = Schedule::new(Placement::v_shape(devices), microbatches);
        for (device, row) in self.rows.iter().enumerate() {
            let mut counts = [0u32; 6];
            let order = &mut schedule.orders[device];
            order.reserve(6 * microbatches as usize);
            for part in row.iter().filter_map(|&cell| Part::from_index(cell)) {
                order.push(part.pass(device as u32, counts[part.index()], devices).into());
                counts[part.index()] += 1;
            }
        }
        schedule
    }
}

/// The peak of a row's lifespan count (`F` +1, `W` −1), starting from 0.
pub(super) fn row_peak(row: &[u8]) -> i32 {
    let (mut current, mut peak) = (0, 0);
    for part in row.iter().filter_map(|&cell| Part::from_index(cell)) {
        current += part.memory();
        peak = peak.max(current);
    }
    peak
}

/// The absolute slot of every device's microbatch-0 passes when a V building block repeats
/// every [`PERIOD`] slots from slot `PERIOD`: `block[d][x]` is the slot (mod 6) of part `x` on
/// device `d`, parts in [`Part`] index order (`F f B b W w`). Each pass takes its first slot
/// after the pass it follows in the chain `F` down, `f` up, `B` down, `b` up; each W its
/// first slot after its B.
pub(super) fn first_slots<T: Copy + Into<u32>>(block: &[[T; 6]]) -> Vec<[u32; 6]> {
    let devices = block.len();
    let mut starts = vec![[0u32; 6]; devices];
    let next = |from: u32, residue: T| from + (residue.into() + PERIOD - from % PERIOD) % PERIOD;
    let mut cursor = PERIOD;
    for part in [Part::F0, Part::F1, Part::B1, Part::B0] {
        let rows: Vec<usize> =
            if matches!(part, Part::F0 | Part::B1) { (0..devices).collect() } else { (0..devices).rev().collect() };
        for d in rows {
            let slot = next(cursor, block[d][part.index()]);
            starts[d][part.index()] = slot;
            cursor = slot + 1;
            if let Some(w) = part.weight() {
                starts[d][w.index()] = next(cursor, block[d][w.index()]);
            }
        }
    }
    starts
}

/// The longest per-device span of `schedule` under `costs`, simulated; `None` if it deadlocks.
pub(super) fn simulated_cost(schedule: &Schedule, costs: &Costs) -> Option<f64> {
    let stage_costs = StageCosts::for_schedule(costs, schedule);
    let timeline = simulate(schedule, &stage_costs).ok()?;
    let span = |d: &crate::sim::DeviceTimeline| match (d.ops.first(), d.ops.last()) {
        (Some(first), Some(last)) => last.end - first.start,
        _ => 0.0,
    };
    Some(timeline.devices.iter().map(span).fold(0.0, f64::max))
}

/// Times the rows under `costs` and returns their longest per-device span and schedule, unless
/// that span cannot be below `beat`: then `Err` carries a lower bound of the span that is at
/// least `beat` (infinite when the orders deadlock).
///
/// Passes are pushed in slot order into a [`Builder`] (the simulator's own rules). A device
/// that has been busy or waiting for `t` since its first pass and still has `r` of work left
/// ends its span no earlier than `t + r`: once that reaches `beat`, the rows are abandoned and
/// `t + r` is the bound returned. The same rows timed again against any `beat` up to that
/// bound are abandoned too (the times do not depend on `beat`), so a caller may keep the
/// bound instead of timing them again. Rows whose slot order is not a valid order are
/// simulated whole instead.
pub(super) fn cost_below(grid: &Grid, microbatches: u32, costs: &Costs, beat: f64) -> Result<(f64, Schedule), f64> {
    if !grid.is_slot_ordered(microbatches) {
        let schedule = grid.to_schedule(microbatches);
        let cost = simulated_cost(&schedule, costs).unwrap_or(f64::INFINITY);
        return if cost < beat { Ok((cost, schedule)) } else { Err(cost) };
    }
    let devices = grid.devices();
    let p = devices as usize;
    let placement = Placement::v_shape(devices);
    let stage_costs = StageCosts::new(costs, &placement);
    let mut builder = Builder::new(placement, microbatches, 1, stage_costs);
    builder.reserve_whole_schedule();
    // Every device runs each part once per microbatch (its own stages' costs: with a cost
    // profile devices differ).
    let work: Vec<f64> = (0..devices)
        .map(|d| Part::ALL.iter().map(|part| builder.cost(part.pass(d, 0, devices))).sum::<f64>())
        .map(|per_microbatch| per_microbatch * f64::from(microbatches))
        .collect();
    let mut first_start = vec![None::<f64>; p];
    let mut done = vec![0.0f64; p];
    let mut counts = vec![[0u32; 6]; p];
    for slot in 0..grid.len() {
        for (d, row) in grid.rows.iter().enumerate() {
            let Some(part) = Part::from_index(row[slot]) else { continue };
            let device = d as u32;
            let pass = part.pass(device, counts[d][part.index()], devices);
            counts[d][part.index()] += 1;
            let start = first_start[d]
                .get_or_insert_with(|| builder.free_at(device).max(builder.ready_at(device, pass).unwrap_or(0.0)));
            let start = *start;
            let cost = builder.cost(pass);
            let end = builder.push(device, pass);
            done[d] += cost;
            let bound = end - start + (work[d] - done[d]);
            if bound >= beat {
                return Err(bound);
            }
        }
    }
    let cost = (0..devices).map(|d| builder.free_at(d) - first_start[d as usize].unwrap_or(0.0)).fold(0.0, f64::max);
    if cost < beat {
        Ok((cost, builder.finish()))
    } else {
        Err(cost)
    }
}

/// The least time any device of a V placement over `devices` spends on one microbatch's six
/// passes under `costs`: what every further microbatch adds to a device's span at least.
pub(super) fn microbatch_work(devices: u32, costs: &Costs) -> f64 {
    let placement = Placement::v_shape(devices);
    let stage_costs = StageCosts::new(costs, &placement);
    let builder = Builder::new(placement, 1, 1, stage_costs);
    (0..devices)
        .map(|d| Part::ALL.iter().map(|part| builder.cost(part.pass(d, 0, devices))).sum::<f64>())
        .fold(f64::INFINITY, f64::min)
}

/// The most chunk-activations a device may hold under `--mem-limit`.
///
/// The schedulers count in chunk-activations: a chunk's forward holds `mem_f / 2` (a V
/// stage is half of a device's 1/P share) until its weight-gradient pass. A limit of `L`
/// (in mem-f) therefore allows `⌊2L / mem_f⌋` chunk-activations. The count ignores what the
/// input-gradient pass already frees (`mem_f − mem_w` per stage), so with `--mem-w` below
/// `--mem-f` the simulated peak is lower than the count: the limit is always kept.
/// `None` when `mem_f` is 0 (forwards hold nothing, no limit binds).
pub(super) fn chunk_activations(limit: f64, mem_f: f64) -> Option<u64> {
    if mem_f <= 0.0 {
        return None;
    }
    // A relative epsilon so that e.g. 2.5 / 0.5 with rounding noise still counts 5.
    let chunks = (2.0 * limit / mem_f * (1.0 + 1e-12)).floor();
    Some(if chunks >= 1e15 { u64::MAX } else { chunks.max(0.0) as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(rows: &[&str]) -> Grid {
        let cell = |c: char| match c {
            'F' => 0,
            'f' => 1,
            'B' => 2,
            'b' => 3,
            'W' => 4,
            'w' => 5,
            _ => EMPTY,
        };
        let mut g = Grid { rows: rows.iter().map(|r| r.chars().map(cell).collect()).collect() };
        g.pad();
        g
    }

    fn text(g: &Grid) -> Vec<String> {
        g.rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|&c| Part::from_index(c).map_or(' ', |p| ['F', 'f', 'B', 'b', 'W', 'w'][p.index()]))
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn squeeze_packs_each_pass_after_its_row_and_its_dependency() {
        // Two devices, one microbatch, in the papers' letters (B = chunk 1's input gradient).
        let g = grid(&["F   f B     b W  w", "  F f  B  b  W w"]);
        let s = g.squeeze(1).unwrap();
        assert_eq!(text(&s), vec!["F  fB  bWw", " Ff  BbWw"]);
    }

    #[test]
    fn squeeze_rejects_orders_that_cannot_run() {
        // Device 0 runs B (needs its own f first) before f.
        assert!(grid(&["FBf bWw", " Ff Bbw W"]).squeeze(1).is_none());
        // Two occurrences of F for one microbatch.
        assert!(grid(&["FF"]).squeeze(1).is_none());
        // The devices wait on each other: device 0's b needs device 1's b, which needs device
        // 1's B, which needs device 0's B, which comes after device 0's b.
        assert!(grid(&["Ffb BWw", " FfBbWw"]).squeeze(1).is_none());
    }

    #[test]
    fn lifespan_peak_counts_forwards_until_their_weight_gradient() {
        assert_eq!(row_peak(&grid(&["FFfBbWwW"]).rows[0]), 3);
        assert_eq!(grid(&["FfBbWw", "FWfw"]).peaks(), vec![2, 1]);
    }

    #[test]
    fn parts_map_to_the_v_stages_and_golden_letters() {
        // Device 1 of 4: chunk 0 is stage 1, chunk 1 is stage 6.
        assert_eq!(Part::F1.pass(1, 3, 4), Pass::f(6, 3));
        assert_eq!(Part::B0.pass(1, 3, 4), Pass::b(1, 3));
        assert_eq!(Part::W1.pass(1, 3, 4), Pass::w(6, 3));
        let g = grid(&["FfBbWw"]).squeeze(1).unwrap();
        assert_eq!(g.to_schedule(1).notation(0), "F0 f0 b0 B0 w0 W0");
    }

    #[test]
    fn memory_limits_map_to_chunk_activations() {
        assert_eq!(chunk_activations(2.5, 1.0), Some(5));
        assert_eq!(chunk_activations(2.49, 1.0), Some(4));
        assert_eq!(chunk_activations(0.3 * 3.0, 0.3), Some(6));
        assert_eq!(chunk_activations(1.0, 0.0), None);
        assert_eq!(chunk_activations(1e300, 1e-300), Some(u64::MAX));
    }
}
