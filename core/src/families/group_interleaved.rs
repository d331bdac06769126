//! Grouped interleaved 1F1B: PipeOffload's schedule (the Zero Bubble repository's
//! `group_interleaved_1f1b.py`, Wan et al., "PipeOffload: Improving Scalability of Pipeline
//! Parallelism with Memory Optimization").
//!
//! `P·V` stages loop over the devices (stage `s` on device `s mod P`, as Megatron's virtual
//! pipeline), the backward is split into B and W, and microbatches go in groups of `G`
//! (`--group`, 1 to `P`; the authors recommend `⌈P/2⌉` to `P`). Their recompute chunks and
//! offload chunks are not part of the order: the trade's `chunks` limit ([`crate::trade`])
//! adds them ([`crate::passes`]).
//!
//! The order (a periodic block of slots, repeated, shifted and compacted) is described in
//! `docs/schedule-families.md`; it is written from the authors' algorithm, not their code.
//!
//! The compute orders equal the authors' for the configurations their scripts use (tests:
//! `core/tests/golden/pipeoffload/`, written by `tools/pipeoffload_golden.py` from their
//! code). Times come from the simulator: with `G > 1` the authors time the order as soon as
//! possible too (`passes.add_time`), with the same result; with `G = 1` they stamp slot `j`
//! with `j·max(F)` instead, a grid the simulator does not reproduce where slots idle.
//!
//! Uses params, schedule and error, as every generator.

use super::{count_option, per_chunk, Family, FamilyGroup, FamilyOption, OptionDefault};
use crate::error::{Field, ParamError};
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{Pass, PassKind, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: super::family::PIPEOFFLOAD_FAMILY,
    title: "Grouped interleaved 1F1B (PipeOffload)",
    // Megatron's interleaving, regrouped: with the classic schedules (the Zero Bubble group's
    // seven members already take every marker shape of the Pareto chart).
    group: FamilyGroup::Classic,
    summary: "PipeOffload's interleaved 1F1B with split backward, microbatches in groups of G \
              so each activation waits long enough to be offloaded",
    reference: "Wan et al., PipeOffload: Improving Scalability of Pipeline Parallelism with Memory Optimization (2025)",
    url: "https://arxiv.org/abs/2503.01328",
    options: &[
        FamilyOption::count(Field::Chunks, DEFAULT_CHUNKS),
        FamilyOption { field: Field::Group, default: OptionDefault::Devices },
    ],
    constraints: "chunks ≥ 1 (default 2); 1 ≤ group ≤ devices (default group = devices)",
    passes,
    generate,
    pipeoffload: true,
    ..Family::DEFAULTS
};

/// Chunks per device when `--chunks` is not given.
pub const DEFAULT_CHUNKS: u32 = 2;

/// F, B and W per chunk and microbatch.
fn passes(params: &ScheduleParams) -> u64 {
    per_chunk(params, params.chunks.unwrap_or(DEFAULT_CHUNKS), 3)
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let devices = params.devices;
    let chunks = count_option(
        Field::Chunks,
        params.chunks,
        DEFAULT_CHUNKS,
        "--chunks 2 or 3 is what the authors' scripts run (one layer per chunk)",
    )?;
    let group = count_option(
        Field::Group,
        params.group,
        devices,
        "PipeOffload's group is ⌈devices/2⌉ to devices microbatches",
    )?;
    if group > devices {
        return Err(ParamError::new(
            Field::Group,
            format!("group must lie between 1 and devices ({devices}), found {group}"),
        )
        .hint(format!(
            "PipeOffload groups ⌈P/2⌉ to P microbatches: --group {} to --group {devices}",
            devices.div_ceil(2)
        )));
    }
    let grid = Grid { devices, chunks, group, min_group: min_group(params, chunks) };
    let rows = grid.rows(params.microbatches)?;
    let mut schedule = Schedule::new(Placement::interleaved(devices, chunks), params.microbatches);
    for (device, row) in rows.iter().enumerate() {
        for cell in row.iter().flatten() {
            schedule.push(device as u32, cell.pass(devices, device as u32));
        }
    }
    Ok(schedule)
}

/// The smallest group the authors' block is built for: `⌈P/2⌉`, raised while one device's
/// F+B+W times the group stays below the pipeline's total F (or B). Their rule reads per-device
/// costs; with a profile these are the sums over each device's chunks.
fn min_group(params: &ScheduleParams, chunks: u32) -> u32 {
    let devices = params.devices;
    let c = &params.costs;
    let (max_fbw, sum_f, sum_b) = if c.profile.is_none() {
        let n = f64::from(devices);
        (c.f + c.b + c.w, n * c.f, n * c.b)
    } else {
        let costs = StageCosts::new(c, &Placement::interleaved(devices, chunks));
        let per_device = |device: u32, kind: PassKind| -> f64 {
            (0..chunks).map(|chunk| costs.pass(Pass::new(kind, chunk * devices + device, 0))).sum()
        };
        let mut max_fbw = 0.0f64;
        let (mut sum_f, mut sum_b) = (0.0, 0.0);
        for d in 0..devices {
            let (f, b, w) = (per_device(d, PassKind::F), per_device(d, PassKind::B), per_device(d, PassKind::W));
            max_fbw = max_fbw.max(f + b + w);
            sum_f += f;
            sum_b += b;
        }
        (max_fbw, sum_f, sum_b)
    };
    let mut group = devices.div_ceil(2).max(1);
    while group < devices && max_fbw * f64::from(group) < sum_f.max(sum_b) {
        group += 1;
    }
    group
}

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    kind: PassKind,
    chunk: u32,
    microbatch: u32,
}

impl Cell {
    fn pass(self, devices: u32, device: u32) -> Pass {
        Pass::new(self.kind, self.chunk * devices + device, self.microbatch)
    }
}

/// One row of slots per device.
type Rows = Vec<Vec<Option<Cell>>>;

/// The sizes the block is built from.
#[derive(Clone, Copy, Debug)]
struct Grid {
    devices: u32,
    chunks: u32,
    group: u32,
    min_group: u32,
}

impl Grid {
    /// Every device's slots: block, repeat, shift and, for groups above 1, compaction.
    fn rows(&self, microbatches: u32) -> Result<Rows, ParamError> {
        let block = self.block()?;
        let rows = self.repeat(&block, microbatches);
        let rows = shift(rows, self.devices);
        if self.group > 1 {
            compact(rows, self.devices * self.chunks)
        } else {
            Ok(rows)
        }
    }

    /// The passes of one group, each at its slot (absolute, not folded by the period).
    fn block(&self) -> Result<Vec<Vec<(usize, Cell)>>, ParamError> {
        let Grid { devices, chunks, group, min_group } = *self;
        let (p, v, g) = (devices as usize, chunks as usize, group as usize);
        let k = min_group.div_ceil(group) as usize;
        let q = v / gcd(v, k);
        let period = 3 * g * v;
        let round = |c: usize, i: usize| 3 * k * g * c + 3 * i + 3 * g * (c / q);
        let mut out = vec![Vec::with_capacity(period); p];
        for (d, passes) in out.iter_mut().enumerate() {
            let first_b = round(v - 1, 0) + d + 3 * (p - 1 - d) + 1;
            for c in 0..v {
                for i in 0..g {
                    let (mb, f_chunk, b_chunk) = (i as u32, c as u32, (v - 1 - c) as u32);
                    let b_slot = first_b + round(c, i);
                    passes.push((round(c, i) + d, Cell { kind: PassKind::F, chunk: f_chunk, microbatch: mb }));
                    passes.push((b_slot, Cell { kind: PassKind::B, chunk: b_chunk, microbatch: mb }));
                    passes.push((b_slot + 1, Cell { kind: PassKind::W, chunk: b_chunk, microbatch: mb }));
                }
            }
            let mut folded = vec![false; period];
            for (slot, _) in passes.iter() {
                if std::mem::replace(&mut folded[slot % period], true) {
                    return Err(ParamError::new(
                        Field::Group,
                        format!("the building block for group {group} and {chunks} chunks puts two passes in one slot"),
                    )
                    .hint("try another --group between ⌈devices/2⌉ and devices"));
                }
            }
        }
        Ok(out)
    }

    /// The block once per group of microbatches, each `3GV` slots after the last.
    fn repeat(&self, block: &[Vec<(usize, Cell)>], microbatches: u32) -> Rows {
        let period = 3 * self.group as usize * self.chunks as usize;
        let groups = microbatches.div_ceil(self.group) as usize;
        let last = block.iter().flatten().map(|(slot, _)| *slot).max().unwrap_or(0);
        let len = last + 1 + period * groups.saturating_sub(1);
        block
            .iter()
            .map(|passes| {
                let mut row = vec![None; len];
                for &(slot, cell) in passes {
                    for n in 0..groups {
                        let microbatch = cell.microbatch + n as u32 * self.group;
                        if microbatch < microbatches {
                            row[slot + period * n] = Some(Cell { microbatch, ..cell });
                        }
                    }
                }
                row
            })
            .collect()
    }
}

/// Delays device `d` by `min(d, e)` slots (and pads the others at the end), `e` the least
/// slack on device 0 (see the module docs).
fn shift(rows: Rows, devices: u32) -> Rows {
    let last = rows.len().saturating_sub(1);
    let mut forward_at = std::collections::BTreeMap::new();
    for (j, cell) in rows[last].iter().enumerate() {
        if let Some(c) = cell.filter(|c| c.kind == PassKind::F) {
            forward_at.insert((c.microbatch, c.chunk), j);
        }
    }
    let mut slack = devices.saturating_sub(1) as usize;
    for (j, cell) in rows[0].iter().enumerate() {
        let Some(c) = cell.filter(|c| c.chunk > 0) else { continue };
        if let Some(&at) = forward_at.get(&(c.microbatch, c.chunk - 1)) {
            slack = slack.min(j.saturating_sub(at + 1));
        }
    }
    rows.into_iter()
        .enumerate()
        .map(|(d, row)| {
            let lead = d.min(slack);
            let mut out = vec![None; lead];
            out.extend(row);
            out.extend(std::iter::repeat_n(None, slack - lead));
            out
        })
        .collect()
}

/// Slot by slot, each device runs its next pass when its dependency ran in an earlier slot.
fn compact(rows: Rows, stages: u32) -> Result<Rows, ParamError> {
    let devices = rows.len() as u32;
    let queues: Vec<Vec<Cell>> = rows.iter().map(|row| row.iter().flatten().copied().collect()).collect();
    let total: usize = queues.iter().map(Vec::len).sum();
    // The passes that ran in earlier slots: (kind, stage, microbatch).
    let mut done = std::collections::BTreeSet::new();
    let mut next = vec![0usize; queues.len()];
    let mut out: Rows = vec![Vec::new(); queues.len()];
    let mut placed = 0;
    while placed < total {
        let mut now = Vec::new();
        for (d, queue) in queues.iter().enumerate() {
            let cell = queue.get(next[d]).copied().filter(|c| {
                let stage = c.chunk * devices + d as u32;
                match c.kind {
                    PassKind::F if stage > 0 => done.contains(&(PassKind::F, stage - 1, c.microbatch)),
                    PassKind::B if stage + 1 < stages => done.contains(&(PassKind::B, stage + 1, c.microbatch)),
                    _ => true,
                }
            });
            if let Some(c) = cell {
                next[d] += 1;
                now.push((c.kind, c.chunk * devices + d as u32, c.microbatch));
            }
            out[d].push(cell);
        }
        if now.is_empty() {
            return Err(ParamError::new(Field::Group, "the grouped order cannot be compacted: a pass waits forever")
                .hint("report it as a bug, with the devices, microbatches, chunks and group"));
        }
        placed += now.len();
        done.extend(now);
    }
    Ok(out)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
#[path = "group_interleaved_tests.rs"]
mod tests;
