//! 1F1B-V: 1F1B in a V placement, without splitting the backward.
//!
//! Source: Qi et al., *Pipeline Parallelism with Controllable Memory* (NeurIPS 2024, App. I)
//! and the authors' `v1f1b.py` (zero-bubble.md §4.10). Two chunks per device in a V; every
//! backward is fused (B and W in one pass, `x`/`X` in the golden notation).
//!
//! The details are in `docs/schedule-families.md`, under `families/one_f_one_b_v.rs`.

use super::formula::{floor_div, int, sym, Assumption, Explanation, Formula, Sym, Term, DERIVED_HERE};
use super::v_common::{Chunk, VPass};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
use crate::error::ParamError;
use crate::params::ScheduleParams;
use crate::schedule::{PassKind, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "1f1b-v",
    title: "1F1B-V",
    group: FamilyGroup::VShape,
    summary: "1F1B in V placement without split backward: ⌊2P/3⌋ + 1 microbatches of memory instead of P",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), App. I",
    url: "https://arxiv.org/abs/2405.15362",
    passes: per_device_microbatch::<4>,
    generate,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// The 1F1B-V orders: the repeated period, its warm-up compacted.
fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let mut grid = SlotGrid::repeated(params.devices, params.microbatches);
    grid.compact_warm_up();
    Ok(grid.into_schedule())
}

/// Slots per period: F and BW (two slots) of each chunk.
const PERIOD: usize = 6;

/// What occupies a slot. The order is the building block's: forwards, backwards, tails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Forward of model chunk 0 (`F`).
    ForwardDown,
    /// Forward of model chunk 1 (`f`).
    ForwardUp,
    /// Fused backward of model chunk 1 (`x`), which flows down the devices.
    BackwardUp,
    /// Fused backward of model chunk 0 (`X`), which flows up the devices.
    BackwardDown,
    /// Second slot of a chunk-1 backward.
    TailUp,
    /// Second slot of a chunk-0 backward.
    TailDown,
}

impl Slot {
    /// Every slot kind, in the building block's order.
    const ALL: [Slot; PERIOD] =
        [Slot::ForwardDown, Slot::ForwardUp, Slot::BackwardUp, Slot::BackwardDown, Slot::TailUp, Slot::TailDown];

    /// Index in [`Slot::ALL`].
    fn index(self) -> usize {
        self as usize
    }

    /// The tail slot of a backward.
    fn tail(self) -> Option<Slot> {
        match self {
            Slot::BackwardUp => Some(Slot::TailUp),
            Slot::BackwardDown => Some(Slot::TailDown),
            _ => None,
        }
    }

    /// Chunk activations this slot adds to its device: `+1` for a forward, `−1` for a tail.
    fn memory(self) -> i32 {
        match self {
            Slot::ForwardDown | Slot::ForwardUp => 1,
            Slot::TailUp | Slot::TailDown => -1,
            Slot::BackwardUp | Slot::BackwardDown => 0,
        }
    }

    /// The slot that must come before this one, for the same microbatch: `(device, slot)`.
    /// A backward waits for the tail of the backward before it (B and W are one pass).
    fn dependency(self, device: u32, last: u32) -> Option<(u32, Slot)> {
        match self {
            Slot::ForwardDown => (device > 0).then(|| (device - 1, Slot::ForwardDown)),
            Slot::ForwardUp if device < last => Some((device + 1, Slot::ForwardUp)),
            Slot::ForwardUp => Some((device, Slot::ForwardDown)),
            Slot::BackwardUp if device > 0 => Some((device - 1, Slot::TailUp)),
            Slot::BackwardUp => Some((device, Slot::ForwardUp)),
            Slot::BackwardDown if device < last => Some((device + 1, Slot::TailDown)),
            Slot::BackwardDown => Some((device, Slot::TailUp)),
            Slot::TailUp => Some((device, Slot::BackwardUp)),
            Slot::TailDown => Some((device, Slot::BackwardDown)),
        }
    }

    /// The pass this slot runs, if it is not a tail.
    fn pass(self) -> Option<(PassKind, Chunk)> {
        match self {
            Slot::ForwardDown => Some((PassKind::F, Chunk::Down)),
            Slot::ForwardUp => Some((PassKind::F, Chunk::Up)),
            Slot::BackwardUp => Some((PassKind::BW, Chunk::Up)),
            Slot::BackwardDown => Some((PassKind::BW, Chunk::Down)),
            Slot::TailUp | Slot::TailDown => None,
        }
    }
}

/// Every device's offset of each slot kind within the six-slot period (`create_whole_pattern`),
/// indexed `[device][slot.index()]`.
fn slot_offsets(devices: u32) -> Vec<[usize; PERIOD]> {
    let p = devices as usize;
    let mut offsets = vec![[0usize; PERIOD]; p];
    let mut now = 0;
    for row in &mut offsets {
        now += 1;
        row[Slot::ForwardDown.index()] = now;
    }
    for row in offsets.iter_mut().rev() {
        now += 1;
        row[Slot::ForwardUp.index()] = now;
    }
    now += 1;
    if p % 3 == 0 {
        now += 3;
    }
    // Backwards take two slots per hop; every third hop leaves three slots for the forwards.
    let mut hop = (3 - (p + 2) % 3) % 3;
    let down = (0..p).map(|d| (d, Slot::BackwardUp));
    let up = (0..p).rev().map(|d| (d, Slot::BackwardDown));
    for (device, backward) in down.chain(up) {
        offsets[device][backward.index()] = now;
        if let Some(tail) = backward.tail() {
            offsets[device][tail.index()] = now + 1;
        }
        now += 2;
        hop += 1;
        if hop == 3 {
            hop = 0;
            now += 3;
        }
    }
    for row in &mut offsets {
        for offset in row.iter_mut() {
            *offset %= PERIOD;
        }
    }
    offsets
}

/// The slot grid: one row per device, every microbatch of every slot kind placed.
struct SlotGrid {
    devices: u32,
    microbatches: u32,
    /// Slots per row.
    width: usize,
    /// Row-major: `cells[device * width + slot]`; use [`SlotGrid::cell`] and [`SlotGrid::set`].
    cells: Vec<Option<Slot>>,
}

impl SlotGrid {
    /// The building block repeated `M` times on every device (steps 1 and 2).
    fn repeated(devices: u32, microbatches: u32) -> SlotGrid {
        let offsets = slot_offsets(devices);
        let p = devices as usize;
        // First slot of every (device, kind), walking microbatch 0 along the V: the slot kinds
        // are in the order of the V parts (forwards, backwards down then up, their tails as W).
        let residues: Vec<[u32; PERIOD]> = offsets.iter().map(|row| row.map(|o| o as u32)).collect();
        let first: Vec<[usize; PERIOD]> =
            super::v_blocks::first_slots(&residues).iter().map(|row| row.map(|s| s as usize)).collect();
        // The walk advances at most 6 slots per hop: `width < 24P + 6M + 8`, well within u32.
        let last_first = first.iter().flatten().copied().max().unwrap_or(0);
        let width = last_first + PERIOD * microbatches as usize + 1;
        let mut grid = SlotGrid { devices, microbatches, width, cells: vec![None; p * width] };
        for (device, row) in first.iter().enumerate() {
            for slot in Slot::ALL {
                for k in 0..microbatches as usize {
                    grid.set(device, row[slot.index()] + PERIOD * k, Some(slot));
                }
            }
        }
        grid
    }

    /// What occupies `slot` of `device`'s row.
    fn cell(&self, device: usize, slot: usize) -> Option<Slot> {
        self.cells[device * self.width + slot]
    }

    /// Puts `value` into `slot` of `device`'s row.
    fn set(&mut self, device: usize, slot: usize, value: Option<Slot>) {
        self.cells[device * self.width + slot] = value;
    }

    /// The slots of `device`'s row in order.
    fn row(&self, device: usize) -> impl Iterator<Item = Option<Slot>> + '_ {
        (0..self.width).map(move |slot| self.cell(device, slot))
    }

    /// Step 3: moves every pass to the earliest slot its dependencies allow, forwards only
    /// where that keeps the device below the grid's peak memory. Slots are visited in time
    /// order, devices in order within a slot.
    fn compact_warm_up(&mut self) {
        let mut compaction = Compaction::new(self);
        for column in 0..self.width {
            for device in 0..self.devices as usize {
                if let Some(slot) = self.cell(device, column) {
                    compaction.visit(self, device, column, slot);
                }
            }
        }
    }

    /// The peak memory of any device over the whole grid, in chunk activations.
    fn peak_memory(&self) -> i32 {
        let row_peak = |device| {
            self.row(device).flatten().scan(0, |held, slot: Slot| {
                *held += slot.memory();
                Some(*held)
            })
        };
        (0..self.devices as usize).flat_map(row_peak).max().unwrap_or(0)
    }

    /// The first slot of `device` in `from..until` that starts `span` free slots (`until` if
    /// none). `until` is the slot being moved, so the slots looked at stay inside the row.
    fn first_free(&self, device: usize, from: usize, until: usize, span: usize) -> usize {
        let mut at = from;
        while at < until && (at..at + span).any(|s| self.cell(device, s).is_some()) {
            at += 1;
        }
        at
    }

    /// Step 4: each row's passes in slot order, microbatches numbered per kind.
    fn into_schedule(self) -> Schedule {
        let v = VPass { devices: self.devices };
        let mut schedule = Schedule::new(v.placement(), self.microbatches);
        for device in 0..self.devices {
            let mut seen = [0u32; PERIOD];
            for slot in self.row(device as usize).flatten() {
                let microbatch = seen[slot.index()];
                seen[slot.index()] += 1;
                if let Some((kind, chunk)) = slot.pass() {
                    schedule.push(device, v.on(kind, chunk, device, microbatch));
                }
            }
        }
        schedule
    }
}

/// The state of the warm-up compaction (`process_warmup_without_increasing_peak_mem`).
struct Compaction {
    devices: usize,
    /// The grid's peak memory before compaction, which no move may exceed.
    peak: i32,
    /// Which slots are taken, for the memory walk.
    occupancy: Occupancy,
    /// Memory each device holds before the column being visited: its passes already visited,
    /// which are exactly the ones left of that column.
    held_before: Vec<i32>,
    /// Where microbatch `k` of each (device, kind) ended up, `u32::MAX` if not visited yet:
    /// `placed[(k * P + device) * 6 + kind]` (u32 halves the largest table; the width fits, see
    /// [`SlotGrid::repeated`]).
    placed: Vec<u32>,
    /// How many passes of each kind each device has visited.
    seen: Vec<[usize; PERIOD]>,
}

impl Compaction {
    /// The state before visiting the first slot of `grid`.
    fn new(grid: &SlotGrid) -> Compaction {
        let (devices, microbatches) = (grid.devices as usize, grid.microbatches as usize);
        Compaction {
            devices,
            peak: grid.peak_memory(),
            occupancy: Occupancy::new(grid),
            held_before: vec![0; devices],
            placed: vec![u32::MAX; devices * PERIOD * microbatches],
            seen: vec![[0; PERIOD]; devices],
        }
    }

    /// Index of microbatch `k` of `slot` on `device` in [`Compaction::placed`].
    fn key(&self, device: usize, slot: Slot, k: usize) -> usize {
        (k * self.devices + device) * PERIOD + slot.index()
    }

    /// Visits the pass in `column` of `device`'s row and moves it as early as allowed.
    fn visit(&mut self, grid: &mut SlotGrid, device: usize, column: usize, slot: Slot) {
        let k = self.seen[device][slot.index()];
        self.seen[device][slot.index()] += 1;
        let earliest = self.earliest(grid, device, column, slot, k);
        // A backward needs its tail's slot free too.
        let span = if slot.tail().is_some() { 2 } else { 1 };
        let mut target = grid.first_free(device, earliest, column, span);
        if target < column && slot.memory() > 0 {
            let bound = self.memory_bound(grid, device, column, target);
            target = grid.first_free(device, bound, column, 1);
        }
        if target < column {
            grid.set(device, target, Some(slot));
            grid.set(device, column, None);
            self.occupancy.set(device, target, true);
            self.occupancy.set(device, column, false);
        }
        self.held_before[device] += slot.memory();
        let key = self.key(device, slot, k);
        self.placed[key] = target as u32;
    }

    /// The first slot after microbatch `k - 1` of this kind and after the dependency.
    fn earliest(&self, grid: &SlotGrid, device: usize, column: usize, slot: Slot, k: usize) -> usize {
        let previous = (k > 0).then(|| self.placed[self.key(device, slot, k - 1)]);
        // A dependency not visited yet lies later in the grid and does not constrain (as
        // upstream); the pattern never puts one there.
        let dependency = slot
            .dependency(device as u32, grid.devices - 1)
            .map(|(d, s)| self.placed[self.key(d as usize, s, k)])
            .filter(|&at| at != u32::MAX);
        let after = previous.into_iter().chain(dependency).max().map(|at| at as usize);
        debug_assert!(after.is_none_or(|a| a < column), "a dependency after slot {column}");
        after.map_or(0, |a| a + 1).min(column)
    }

    /// How far back a forward in `column` may go (not before `target`): while the device holds
    /// less than the peak just before it. Memory only changes at taken slots, so the walk
    /// jumps over empty stretches.
    fn memory_bound(&self, grid: &SlotGrid, device: usize, column: usize, target: usize) -> usize {
        let mut place = column;
        let mut held = self.held_before[device]; // memory just before `place`
        while place > target && held < self.peak {
            match self.occupancy.last_taken(device, target, place) {
                None => place = target,
                Some(taken) => {
                    place = taken;
                    held -= grid.cell(device, taken).map_or(0, Slot::memory);
                }
            }
        }
        place
    }
}

/// One bit per slot and row: which slots are taken, so a walk can skip empty stretches.
struct Occupancy {
    words: Vec<u64>,
    words_per_row: usize,
}

impl Occupancy {
    /// The taken slots of `grid`, one row per device.
    fn new(grid: &SlotGrid) -> Occupancy {
        let (rows, words_per_row) = (grid.devices as usize, grid.width.div_ceil(64));
        let mut occupancy = Occupancy { words: vec![0; rows * words_per_row], words_per_row };
        for row in 0..rows {
            for (slot, cell) in grid.row(row).enumerate() {
                if cell.is_some() {
                    occupancy.set(row, slot, true);
                }
            }
        }
        occupancy
    }

    /// Marks `slot` of `row` taken or free.
    fn set(&mut self, row: usize, slot: usize, taken: bool) {
        let word = &mut self.words[row * self.words_per_row + slot / 64];
        let bit = 1u64 << (slot % 64);
        if taken {
            *word |= bit;
        } else {
            *word &= !bit;
        }
    }

    /// The last taken slot of `row` in `lo..hi`.
    fn last_taken(&self, row: usize, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let words = &self.words[row * self.words_per_row..][..self.words_per_row];
        let (first_word, last_word) = (lo / 64, (hi - 1) / 64);
        for w in (first_word..=last_word).rev() {
            let mut bits = words[w];
            if w == last_word && (hi % 64) != 0 {
                bits &= (1u64 << (hi % 64)) - 1;
            }
            if w == first_word {
                bits &= !((1u64 << (lo % 64)) - 1);
            }
            if bits != 0 {
                return Some(w * 64 + 63 - bits.leading_zeros() as usize);
            }
        }
        None
    }
}

/// The peak memory once `M ≥ 2⌊2P/3⌋ + 1` (see the module docs): `2⌊2P/3⌋ + 2` chunk
/// activations of mem-f/2 on every device. No bubble formula: the fixed slot pattern's bubble
/// depends on P mod 3 and on the costs.
fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let chunks = 2 * floor_div(2 * sym(Sym::P), int(3)) + 2;
    let memory = Formula::new(
        DERIVED_HERE,
        vec![Term::new("2⌊2P/3⌋+2 chunk activations of mem-f/2 on every device", chunks * sym(Sym::MemF) / 2)],
    );
    let needed = 2 * (2 * params.devices / 3) + 1;
    let steady = Assumption::memory(format!("M ≥ 2⌊2P/3⌋+1 = {needed}"), params.microbatches >= needed);
    Some(Explanation::new(params, None, Some(memory), vec![steady]))
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "no closed form: the fixed slot pattern's bubble depends on P mod 3 and on the costs",
            "(⌊2P/3⌋ + 1)·mem-f on every device once M ≥ 2⌊2P/3⌋ + 1",
        )
    })
}

#[cfg(test)]
#[path = "one_f_one_b_v_tests.rs"]
mod tests;
