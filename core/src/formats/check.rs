//! Checking an imported schedule in the file's own terms.
//!
//! [`crate::validate`] and [`crate::sim::simulate`] speak of devices and positions in the orders. A
//! file's reader thinks in rows, columns and cell text, and a CSV row has cells (idle slots,
//! SEND/RECV actions) that are not ops. So importers hand their ops here with the column each
//! came from; this check reports every problem at that column, naming passes the way the file
//! writes them, and drops what cannot be kept so the rest still loads. A deadlock is found by
//! the simulator and reported the same way: every stuck row, the cell it is stuck at, and the
//! cell it waits for. `crate::validate` runs last as a safety net.

use crate::error::{SimError, Stuck};
use crate::params::{Costs, StageCosts};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};
use crate::sim::KeySpace;

use super::text::{count, Diagnostics, Source};

/// An imported schedule before checking: ops with the file column each came from.
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    /// Where stages run.
    pub placement: Placement,
    /// Number of microbatches.
    pub microbatches: u32,
    /// Number of sequence slices.
    pub slices: u32,
    /// Per device, the ops in order with their columns.
    pub rows: Vec<Vec<(Op, usize)>>,
}

/// A checked schedule and where each of its ops came from.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    /// The schedule, without the passes that had to be dropped.
    pub schedule: Schedule,
    /// `columns[d][p]` is the file column of op `p` of device `d`.
    pub columns: Vec<Vec<usize>>,
}

impl Checked {
    /// The file column of the op at (`device`, `position`).
    pub fn column(&self, device: u32, position: usize) -> usize {
        self.columns.get(device as usize).and_then(|c| c.get(position)).copied().unwrap_or(position)
    }
}

/// How a file writes a pass, e.g. `2I0` (PyTorch current dialect) or `2B0` (JSON).
pub(crate) type Namer<'a> = &'a dyn Fn(Pass) -> String;

const NONE: u32 = u32::MAX;

/// Where a kept pass is: device and position in the checked orders.
#[derive(Clone, Copy)]
struct At {
    device: u32,
    position: u32,
}

/// The schedule being rebuilt from a draft, and where every kept pass is.
struct Kept {
    schedule: Schedule,
    columns: Vec<Vec<usize>>,
    keys: KeySpace,
    /// For every key, where its F, B, W and BW were kept (an index into `places`).
    seen: Vec<[u32; PassKind::ALL.len()]>,
    places: Vec<At>,
}

impl Kept {
    /// Whether `pass`, read at (`device`, `column`), can be kept: in range, in its pipeline's
    /// share of the microbatches, on its stage's device and not a repeat. Reports why not.
    fn accepts(
        &self,
        pass: Pass,
        device: u32,
        column: usize,
        source: &Source,
        name: Namer,
        out: &mut Diagnostics,
    ) -> bool {
        let cell = format!("`{}`", name(pass));
        let Some((message, hint)) = self.problem(pass, device, &cell, source) else { return true };
        let error = source.error_at(device, column, message);
        out.push(match hint {
            Some(hint) => error.hint(hint),
            None => error,
        });
        false
    }

    /// Why `pass`, written `cell` on `device`, cannot be kept, with a hint when there is one;
    /// `None` when it can.
    fn problem(&self, pass: Pass, device: u32, cell: &str, source: &Source) -> Option<(String, Option<&'static str>)> {
        let (schedule, placement) = (&self.schedule, &self.schedule.placement);
        if !self.keys.contains(pass) {
            let mut ranges = vec![
                format!("stages 0 to {}", placement.stages().saturating_sub(1)),
                format!("microbatches 0 to {}", schedule.microbatches.saturating_sub(1)),
            ];
            if schedule.slices > 1 {
                ranges.push(format!("slices 0 to {}", schedule.slices - 1));
            }
            return Some((format!("{cell} is out of range: the schedule has {}", ranges.join(", ")), None));
        }
        let pipeline = placement.pipeline_of(pass.stage);
        let share = placement.pipeline_microbatches(pipeline, schedule.microbatches);
        if !share.contains(&pass.microbatch) {
            let (first, last) = (share.start, share.end.saturating_sub(1));
            return Some((
                format!(
                    "{cell} is not in its pipeline's share: pipeline {pipeline} runs microbatches {first} to {last}"
                ),
                Some("the two pipelines of a two-directional schedule split the microbatches in equal halves"),
            ));
        }
        if pass.kind.is_vocab() {
            // A vocabulary pass's stage is its shard, which lives on the device of its number.
            if pass.stage != device {
                return Some((
                    format!(
                        "{cell} runs on device {device}, but vocabulary shard {} lives on device {}",
                        pass.stage, pass.stage
                    ),
                    Some("shard k of the output and input layers (S, T, IF, IB) runs on device k"),
                ));
            }
        } else if placement.device_of(pass.stage).unwrap_or(device) != device {
            let home = placement.device_of(pass.stage).unwrap_or(device);
            return Some((
                format!("{cell} runs on device {device}, but stage {} is placed on device {home}", pass.stage),
                Some("every action of a stage must run on the device its placement names"),
            ));
        }
        let first = self.seen[self.key(pass)][pass.kind.index()];
        if first != NONE {
            let at = self.places[first as usize];
            let first_column = self.columns[at.device as usize][at.position as usize];
            return Some((
                format!("{cell} appears twice: first at {}", source.short(at.device, first_column)),
                Some("each action runs once per microbatch; delete one of them"),
            ));
        }
        None
    }

    /// Appends `op` (whose passes were accepted) to `device`'s order.
    fn push(&mut self, op: Op, device: u32, column: usize) {
        let order = &mut self.schedule.orders[device as usize];
        let at = At { device, position: order.len() as u32 };
        order.push(op);
        self.columns[device as usize].push(column);
        for pass in op.passes() {
            let k = self.key(pass);
            self.seen[k][pass.kind.index()] = self.places.len() as u32;
        }
        self.places.push(at);
    }

    fn key(&self, pass: Pass) -> usize {
        self.keys.index(pass.stage, pass.microbatch, pass.slice)
    }
}

/// Checks `draft` and returns the schedule that can be kept. Problems go to `out`.
///
/// The caller guarantees the key space (stages × microbatches × slices) is within
/// [`crate::params::MAX_PASSES`], so the tables here are bounded.
pub(crate) fn check(draft: Draft, source: &Source, name: Namer, costs: &Costs, out: &mut Diagnostics) -> Checked {
    check_then_simulate(draft, source, name, costs, out, true)
}

/// [`check`], with the deadlock search (a simulation) only when `simulate`: a file refused
/// before it could run (unpaired sends and waits) is not simulated at all.
pub(crate) fn check_then_simulate(
    draft: Draft,
    source: &Source,
    name: Namer,
    costs: &Costs,
    out: &mut Diagnostics,
    simulate: bool,
) -> Checked {
    let errors_before = out.errors();
    let Draft { placement, microbatches, slices, rows } = draft;
    let keys = KeySpace::new(&placement, microbatches, slices);
    let mut schedule = Schedule::new(placement, microbatches);
    schedule.slices = slices.max(1);
    schedule.orders = vec![Vec::new(); rows.len()];
    let mut kept = Kept {
        schedule,
        columns: vec![Vec::new(); rows.len()],
        keys,
        seen: vec![[NONE; PassKind::ALL.len()]; keys.len()],
        places: Vec::new(),
    };

    for (device, row) in rows.into_iter().enumerate() {
        let device = device as u32;
        for (op, column) in row {
            let mut accepts = |pass| kept.accepts(pass, device, column, source, name, out);
            let op = match op {
                Op::One(p) if accepts(p) => Op::One(p),
                Op::Pair(f, b) => match (accepts(f), accepts(b)) {
                    (true, true) => Op::Pair(f, b),
                    (true, false) => Op::One(f),
                    (false, true) => Op::One(b),
                    (false, false) => continue,
                },
                Op::One(_) => continue,
            };
            kept.push(op, device, column);
        }
    }
    let Kept { schedule, columns, keys, seen, places } = kept;
    let checked = Checked { schedule, columns };
    check_complete(&checked, &keys, &seen, &places, source, name, out);

    if simulate && out.errors() == errors_before {
        let stage_costs = StageCosts::for_schedule(costs, &checked.schedule);
        match crate::sim::simulate(&checked.schedule, &stage_costs) {
            Ok(_) => {}
            Err(SimError::Deadlock(stuck)) => report_deadlock(&checked, &stuck, source, name, out),
            Err(SimError::Malformed(message)) => out.push(source.error(format!("internal check failed: {message}"))),
        }
    }
    if simulate && out.errors() == errors_before {
        // The checks above cover everything `validate` checks; anything it still finds is a
        // gap in them, reported rather than hidden.
        for d in crate::validate(&checked.schedule) {
            out.push(source.error(format!("internal check: {}", d.message)));
        }
    }
    checked
}

/// Reports missing passes and passes out of order, per (stage, microbatch, slice).
fn check_complete(
    checked: &Checked,
    keys: &KeySpace,
    seen: &[[u32; PassKind::ALL.len()]],
    places: &[At],
    source: &Source,
    name: Namer,
    out: &mut Diagnostics,
) {
    let schedule = &checked.schedule;
    let placement = &schedule.placement;
    let (stages, microbatches, slices) = (placement.stages(), schedule.microbatches, schedule.slices.max(1));
    let column = |i: u32| {
        let at = places[i as usize];
        (at.device, checked.column(at.device, at.position as usize), at.position)
    };

    // A stage or microbatch with no action at all is one problem, not one per key.
    let mut stage_used = vec![false; stages as usize];
    let mut microbatch_used = vec![false; microbatches as usize];
    for op in schedule.orders.iter().flatten() {
        for p in op.passes() {
            stage_used[p.stage as usize] = true;
            microbatch_used[p.microbatch as usize] = true;
        }
    }
    for (first, last) in gaps(&stage_used) {
        let which = if first == last { format!("stage {first} has") } else { format!("stages {first} to {last} have") };
        out.push(source.error(format!("{which} no actions, but the schedule has stages 0 to {}", stages - 1)).hint(
            format!(
                "add the actions of stage {first}, e.g. `{}`, or check for a mistyped stage number",
                name(Pass::f(first, 0))
            ),
        ));
    }
    for (first, last) in gaps(&microbatch_used) {
        let which = if first == last {
            format!("microbatch {first} has")
        } else {
            format!("microbatches {first} to {last} have")
        };
        out.push(
            source
                .error(format!("{which} no actions, but the schedule has microbatches 0 to {}", microbatches - 1))
                .hint("microbatches are numbered from 0 without gaps; check for a mistyped microbatch number"),
        );
    }

    for stage in 0..stages {
        if !stage_used[stage as usize] {
            continue;
        }
        let home = placement.device_of(stage).unwrap_or(0);
        // Each pipeline (model replica) runs its share of the microbatches.
        let share = placement.pipeline_microbatches(placement.pipeline_of(stage), microbatches);
        for microbatch in share.filter(|&m| microbatch_used[m as usize]) {
            for slice in 0..slices {
                let key = Pass { kind: PassKind::F, stage, microbatch, slice };
                let with = |kind| name(Pass { kind, ..key });
                let [f, b, w, bw, ..] = seen[keys.index(stage, microbatch, slice)];
                let found = |i: u32| (i != NONE).then(|| column(i));
                let (f, b, w, bw) = (found(f), found(b), found(w), found(bw));
                if f.is_none() {
                    out.push(source.error_in_row(
                        home,
                        format!(
                            "`{}` is missing: stage {stage} has no forward for microbatch {microbatch}{}",
                            with(PassKind::F),
                            slice_text(slices, slice)
                        ),
                    ));
                }
                match (b, w, bw) {
                    (None, None, None) => out.push(
                        source
                            .error_in_row(home, format!(
                                "the backward of stage {stage}, microbatch {microbatch}{} is missing",
                                slice_text(slices, slice)
                            ))
                            .hint(format!("add `{}`, or `{}` and then `{}`", with(PassKind::BW), with(PassKind::B), with(PassKind::W))),
                    ),
                    (Some(at), _, Some(full)) | (_, Some(at), Some(full)) => out.push(
                        source
                            .error_at(full.0, full.1, format!(
                                "`{}` is a full backward, but the split backward `{}` is at {} too",
                                with(PassKind::BW),
                                name(Pass { kind: if b.is_some() { PassKind::B } else { PassKind::W }, ..key }),
                                source.short(at.0, at.1)
                            ))
                            .hint("a microbatch's backward is either one full backward or an input-gradient and a weight-gradient action"),
                    ),
                    (Some(at), None, None) => out.push(
                        source
                            .error_at(at.0, at.1, format!("`{}` has no weight-gradient action `{}`", with(PassKind::B), with(PassKind::W)))
                            .hint(format!("add `{}` after it on the same row", with(PassKind::W))),
                    ),
                    (None, Some(at), None) => out.push(
                        source
                            .error_at(at.0, at.1, format!("`{}` has no input-gradient action `{}`", with(PassKind::W), with(PassKind::B)))
                            .hint(format!("add `{}` before it on the same row", with(PassKind::B))),
                    ),
                    _ => {}
                }
                // The order on the stage's device (all three are on it: placement was checked).
                if let (Some(fa), Some(ba)) = (f, b.or(bw)) {
                    if ba.2 < fa.2 {
                        let kind = if b.is_some() { PassKind::B } else { PassKind::BW };
                        out.push(
                            source
                                .error_at(
                                    ba.0,
                                    ba.1,
                                    format!(
                                        "`{}` comes before its forward `{}` at {}",
                                        with(kind),
                                        with(PassKind::F),
                                        source.short(fa.0, fa.1)
                                    ),
                                )
                                .hint("a backward needs its forward's activations: move it after the forward"),
                        );
                    }
                }
                if let (Some(ba), Some(wa)) = (b, w) {
                    if wa.2 < ba.2 {
                        out.push(
                            source
                                .error_at(
                                    wa.0,
                                    wa.1,
                                    format!(
                                        "`{}` comes before its input-gradient action `{}` at {}",
                                        with(PassKind::W),
                                        with(PassKind::B),
                                        source.short(ba.0, ba.1)
                                    ),
                                )
                                .hint("the weight gradient needs the input gradient's result: move it after"),
                        );
                    }
                }
            }
        }
    }
}

/// The runs of `false` in `used`, as (first, last) indices.
fn gaps(used: &[bool]) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for (i, _) in used.iter().enumerate().filter(|(_, u)| !**u) {
        let i = i as u32;
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == i => *last = i,
            _ => runs.push((i, i)),
        }
    }
    runs
}

fn slice_text(slices: u32, slice: u32) -> String {
    if slices > 1 {
        format!(", slice {slice}")
    } else {
        String::new()
    }
}

/// One error per stuck device: the cell it is stuck at and the cell it waits for.
fn report_deadlock(checked: &Checked, stuck: &[Stuck], source: &Source, name: Namer, out: &mut Diagnostics) {
    for (i, s) in stuck.iter().enumerate() {
        let column = checked.column(s.device, s.position);
        let waits = match s.waits_on {
            Some((device, position)) => {
                format!("`{}` at {}", name(s.waits_for), source.short(device, checked.column(device, position)))
            }
            None => format!("`{}`, which no device runs", name(s.waits_for)),
        };
        let mut d = source.error_at(
            s.device,
            column,
            format!("deadlock: device {} is stuck at `{}`, waiting for {waits}", s.device, name(s.pass)),
        );
        if i + 1 == stuck.len() {
            d = d.hint(if stuck.len() == 1 {
                "it waits for an action that comes after it on its own row: move that action (or this one) so the dependency comes first".to_string()
            } else {
                format!(
                    "the {} wait for each other in a cycle: move an action so that what it waits for comes first",
                    count(stuck.len(), "stuck device")
                )
            });
        }
        out.push(d);
    }
}
