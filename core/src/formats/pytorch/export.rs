//! Writing a PyTorch CSV, and PyTorch's lowering of a compute order for the compute+comms
//! form: `_add_unshard_reshard`, `_add_reduce_grad`, `_add_send_recv` and (torch 2.15)
//! `_add_wait_send`, each with the exact output of the version the file is for.

use std::collections::{BTreeSet, HashMap};

use crate::schedule::{Op, Pass, PassKind, Schedule};

use super::super::text::count;
use super::super::{Dialect, ExportOptions, FormatError, TorchVersion};
use super::grammar::{next_cell, op_text, pass_text, write_op, Comm, CommKind, StageAction, StageKind};
use super::pyset::PySet;
use super::CsvForm;

// ---------------------------------------------------------------------------------------------
// Export

/// Writes `schedule` as a PyTorch CSV in `form` and `dialect`; a compute+comms file is for the
/// newest PyTorch version ([`TorchVersion::NEWEST`]).
///
/// # Errors
/// As [`export_pytorch_csv_with`].
pub fn export_pytorch_csv(schedule: &Schedule, form: CsvForm, dialect: Dialect) -> Result<String, FormatError> {
    export_pytorch_csv_with(schedule, form, &ExportOptions { dialect, ..ExportOptions::default() })
}

/// Writes `schedule` as a PyTorch CSV in `form`, with the dialect and, for the compute+comms
/// form, the PyTorch version `options` name.
///
/// # Errors
/// When the schedule has two pipelines or sequence slices (PyTorch's grammar has neither), or,
/// for the compute+comms form, when it is invalid or deadlocks so SEND/RECV actions cannot be
/// placed.
pub fn export_pytorch_csv_with(
    schedule: &Schedule,
    form: CsvForm,
    options: &ExportOptions,
) -> Result<String, FormatError> {
    let dialect = options.dialect;
    if schedule.placement.pipelines() > 1 {
        return Err(FormatError::new(format!(
            "PyTorch CSV holds one pipeline, but this schedule runs {} model replicas in opposite directions ({} placement)",
            schedule.placement.pipelines(),
            schedule.placement.kind().name()
        ))
        .hint("export it as JSON (--to-format json), which keeps both pipelines"));
    }
    if schedule.slices > 1 {
        return Err(FormatError::new(format!(
            "PyTorch CSV has no sequence slices, but this schedule splits every microbatch into {} slices",
            schedule.slices
        ))
        .hint("export it as JSON (--to-format json), which keeps the slices"));
    }
    if let Some(pass) = schedule.orders.iter().flatten().flat_map(Op::passes).find(|p| p.kind.is_vocab()) {
        return Err(FormatError::new(format!(
            "PyTorch CSV has no action for a vocabulary shard's pass, but this schedule runs {} ({}) on every device",
            pass.kind.name(),
            pass.kind.long_name()
        ))
        .hint("PyTorch's actions are F, I, W, B and R on model stages: it cannot split the output or input layer by vocabulary")
        .hint("export it as JSON (--to-format json), which keeps the S, T, IF and IB passes and the barriers"));
    }
    let rows: Vec<String> = match form {
        CsvForm::ComputeOnly => schedule
            .orders
            .iter()
            .map(|order| {
                let mut row = String::new();
                for op in order {
                    write_op(next_cell(&mut row), op, dialect);
                }
                row
            })
            .collect(),
        CsvForm::ComputeComms => {
            let problems = crate::validate(schedule);
            if let Some(first) = problems.first() {
                return Err(FormatError::new(format!(
                    "the schedule is invalid ({}), so SEND/RECV actions cannot be placed",
                    count(problems.len(), "problem")
                ))
                .hint(first.message.clone()));
            }
            let torch = match dialect {
                Dialect::Current => Some(options.torch),
                Dialect::Legacy => None,
            };
            lower(schedule, torch, dialect)?.iter().map(|row| write_row(row, dialect)).collect()
        }
    };
    let mut text = String::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    for row in rows {
        text.push_str(&row);
        text.push('\n');
    }
    Ok(text)
}

// ---------------------------------------------------------------------------------------------
// The lowering

/// One action of a lowered row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lowered {
    /// A compute action.
    Op(Op),
    /// SEND, RECV or WAIT_SEND.
    Comm(Comm),
    /// UNSHARD, RESHARD, REDUCE_GRAD or WAIT_REDUCE_GRAD.
    Stage(StageAction),
}

pub(super) fn write_row(row: &[Lowered], dialect: Dialect) -> String {
    let mut out = String::new();
    for action in row {
        let cell = next_cell(&mut out);
        match action {
            Lowered::Op(op) => write_op(cell, op, dialect),
            Lowered::Comm(c) => c.write(cell),
            Lowered::Stage(a) => a.write(cell),
        }
    }
    out
}

/// PyTorch's lowering of `schedule`'s orders for `torch` (`_prepare_schedule_with_comms` with
/// its defaults), or, with `None`, only the SEND/RECV actions, as PyTorch did before 2.14 (the
/// legacy dialect's files).
pub(super) fn lower(
    schedule: &Schedule,
    torch: Option<TorchVersion>,
    dialect: Dialect,
) -> Result<Vec<Vec<Lowered>>, FormatError> {
    let mut rows: Vec<Vec<Lowered>> = match torch {
        None => schedule.orders.iter().map(|order| order.iter().map(|&op| Lowered::Op(op)).collect()).collect(),
        Some(torch) => schedule
            .orders
            .iter()
            .map(|order| add_reduce_grad(&add_unshard_reshard(order, torch), schedule.microbatches, torch))
            .collect(),
    };
    rows = add_send_recv(schedule, rows, dialect)?;
    if torch >= Some(TorchVersion::V2_15) {
        rows = rows.iter().map(|row| add_wait_send(row)).collect();
    }
    Ok(rows)
}

/// How many stages PyTorch keeps unsharded at once (`max_active_stages`, default 3).
const MAX_ACTIVE_STAGES: usize = 3;

/// The stages an op computes on, in the order its cell writes them, each once.
fn op_stages(op: &Op) -> impl Iterator<Item = u32> {
    let (a, b) = match *op {
        Op::One(p) => (p.stage, None),
        Op::Pair(f, b) => (f.stage, Some(b.stage).filter(|&s| s != f.stage)),
    };
    std::iter::once(a).chain(b)
}

/// The set of unsharded stages, iterated as the version's `_add_unshard_reshard` iterates it:
/// in the order the stages became active (2.15, a dict), or in CPython's set order (2.14).
enum Active {
    Ordered(Vec<u32>),
    Set(PySet),
}

impl Active {
    fn contains(&self, stage: u32) -> bool {
        match self {
            Active::Ordered(list) => list.contains(&stage),
            Active::Set(set) => set.contains(stage),
        }
    }

    fn add(&mut self, stage: u32) {
        match self {
            Active::Ordered(list) => list.push(stage),
            Active::Set(set) => set.add(stage),
        }
    }

    fn remove(&mut self, stage: u32) {
        match self {
            Active::Ordered(list) => list.retain(|&s| s != stage),
            Active::Set(set) => set.remove(stage),
        }
    }

    fn list(&self) -> Vec<u32> {
        match self {
            Active::Ordered(list) => list.clone(),
            Active::Set(set) => set.items(),
        }
    }
}

/// PyTorch's `_add_unshard_reshard` of one rank's order (defaults: 3 stages at most, a
/// lookahead of 3). Before each op the stages it and the next ops need first — 3 distinct
/// stages, read op by op, so an overlapped pair can make it 4 — are the resident ones: active
/// stages not among them are resharded, then the missing ones unsharded, in the order they are
/// needed. After the last op every still-active stage is resharded.
///
/// The next uses are kept in an ordered set (next use, place in its op, stage), so finding
/// the resident stages costs a few steps per op, not a scan to the rank's end.
pub(super) fn add_unshard_reshard(order: &[Op], torch: TorchVersion) -> Vec<Lowered> {
    // Where each stage is used on this rank: (op index, place in the op's cell).
    let mut uses: HashMap<u32, Vec<(usize, usize)>> = HashMap::new();
    for (i, op) in order.iter().enumerate() {
        for (place, stage) in op_stages(op).enumerate() {
            uses.entry(stage).or_default().push((i, place));
        }
    }
    let mut next: HashMap<u32, usize> = HashMap::new();
    let mut upcoming: BTreeSet<(usize, usize, u32)> = BTreeSet::new();
    for (&stage, list) in &uses {
        upcoming.insert((list[0].0, list[0].1, stage));
        next.insert(stage, 0);
    }
    let mut active = match torch {
        TorchVersion::V2_14 => Active::Set(PySet::default()),
        TorchVersion::V2_15 => Active::Ordered(Vec::new()),
    };
    let mut out = Vec::with_capacity(order.len() + 8);
    for (i, op) in order.iter().enumerate() {
        // The resident stages: by next use, whole ops at a time, until there are 3.
        let mut resident: Vec<u32> = Vec::with_capacity(MAX_ACTIVE_STAGES + 1);
        let mut last_op = usize::MAX;
        for &(at, _, stage) in &upcoming {
            if resident.len() >= MAX_ACTIVE_STAGES && at != last_op {
                break;
            }
            resident.push(stage);
            last_op = at;
        }
        let evict: Vec<u32> = active.list().into_iter().filter(|s| !resident.contains(s)).collect();
        let fetch: Vec<u32> = resident.iter().copied().filter(|&s| !active.contains(s)).collect();
        for stage in evict {
            active.remove(stage);
            out.push(Lowered::Stage(StageAction { kind: StageKind::Reshard, stage }));
        }
        for stage in fetch {
            active.add(stage);
            out.push(Lowered::Stage(StageAction { kind: StageKind::Unshard, stage }));
        }
        out.push(Lowered::Op(*op));
        // Move this op's stages to their next use.
        for (place, stage) in op_stages(op).enumerate() {
            upcoming.remove(&(i, place, stage));
            let k = next.entry(stage).or_default();
            *k += 1;
            if let Some(&(at, place)) = uses.get(&stage).and_then(|list| list.get(*k)) {
                upcoming.insert((at, place, stage));
            }
        }
    }
    for stage in active.list() {
        out.push(Lowered::Stage(StageAction { kind: StageKind::Reshard, stage }));
    }
    out
}

/// PyTorch's `_add_reduce_grad`: right after the op that runs a stage's `microbatches`-th full
/// backward or weight pass (PyTorch's `B` and `W`), `REDUCE_GRAD` of that stage, and with torch
/// 2.15 its `WAIT_REDUCE_GRAD` (stages in the order the op's cell writes them).
pub(super) fn add_reduce_grad(row: &[Lowered], microbatches: u32, torch: TorchVersion) -> Vec<Lowered> {
    let mut done: HashMap<u32, u32> = HashMap::new();
    let mut out = Vec::with_capacity(row.len() + 8);
    for action in row {
        out.push(*action);
        let Lowered::Op(op) = action else { continue };
        for pass in op.passes().filter(|p| matches!(p.kind, PassKind::W | PassKind::BW)) {
            let n = done.entry(pass.stage).or_default();
            *n += 1;
            if *n == microbatches {
                out.push(Lowered::Stage(StageAction { kind: StageKind::ReduceGrad, stage: pass.stage }));
                if torch >= TorchVersion::V2_15 {
                    out.push(Lowered::Stage(StageAction { kind: StageKind::WaitReduceGrad, stage: pass.stage }));
                }
            }
        }
    }
    out
}

/// PyTorch's `_add_wait_send` (torch 2.15), for one rank: after a backward (`I` or `B`) of a
/// (stage, microbatch) whose forward output this rank sent, `WAIT_SEND_F` of it — the local
/// backward proves the peer consumed the activation; every send still unwaited at the end gets
/// its wait there, in the order the sends were posted.
pub(super) fn add_wait_send(row: &[Lowered]) -> Vec<Lowered> {
    let mut out = Vec::with_capacity(row.len() * 5 / 4 + 1);
    // Unwaited sends in posting order; `pending` maps a send to its place in `order`.
    let mut order: Vec<Option<Comm>> = Vec::new();
    let mut pending: HashMap<(CommKind, u32, u32), usize> = HashMap::new();
    for action in row {
        out.push(*action);
        match *action {
            Lowered::Comm(c) if c.kind.is_send() => {
                pending.insert((c.kind, c.stage, c.microbatch), order.len());
                order.push(Some(c));
            }
            Lowered::Op(op) => {
                for p in op.passes().filter(|p| p.kind.is_input_grad()) {
                    if let Some(at) = pending.remove(&(CommKind::SendF, p.stage, p.microbatch)) {
                        order[at] = None;
                        out.push(Lowered::Comm(Comm { kind: CommKind::WaitSendF, ..comm_of(p) }));
                    }
                }
            }
            _ => {}
        }
    }
    for send in order.into_iter().flatten() {
        let kind = send.kind.wait_pair().unwrap_or(CommKind::WaitSendB);
        out.push(Lowered::Comm(Comm { kind, ..send }));
    }
    out
}

fn comm_of(p: Pass) -> Comm {
    Comm { kind: CommKind::SendF, stage: p.stage, microbatch: p.microbatch }
}

/// What a pass waits for in PyTorch's lowering: the completion of another pass's output.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Awaited {
    /// The forward of (stage, microbatch).
    Forward(usize),
    /// The input gradient of (stage, microbatch).
    Grad(usize),
}

/// PyTorch's `_add_send_recv`, event-driven but with its exact output.
///
/// PyTorch visits ranks round-robin in increasing order; each visit takes the rank's next
/// action if it is ready — a forward needs the previous stage's forward, an input-gradient
/// pass the next stage's, or the RECV that brings it; every other action (W, UNSHARD,
/// REDUCE_GRAD, …) is always ready and uses up the rank's turn — appends a SEND after it for
/// every result that leaves the rank, and appends the matching RECV to the receiving rank right
/// away. Here a blocked rank is not revisited until its input is produced, so the cost is
/// linear in the number of actions instead of ranks × rounds; the rounds and their order are
/// PyTorch's.
pub(super) fn add_send_recv(
    schedule: &Schedule,
    lists: Vec<Vec<Lowered>>,
    dialect: Dialect,
) -> Result<Vec<Vec<Lowered>>, FormatError> {
    let placement = &schedule.placement;
    let stages = placement.stages();
    let microbatches = schedule.microbatches as usize;
    let devices = lists.len();
    let home = |stage: u32| placement.device_of(stage).unwrap_or(0) as usize;
    let key = |stage: u32, microbatch: u32| stage as usize * microbatches + microbatch as usize;
    let n = stages as usize * microbatches;
    let mut forward_done = vec![false; n];
    let mut grad_done = vec![false; n];
    let mut rows: Vec<Vec<Lowered>> = lists.iter().map(|l| Vec::with_capacity(l.len() * 5 / 4 + 1)).collect();
    let mut next = vec![0usize; devices];
    let mut ops_done = vec![0usize; devices];
    let mut blocked: Vec<Option<Awaited>> = vec![None; devices];

    // What `pass` waits for that is not done yet (PyTorch's `_ready_to_schedule`).
    let awaited = |pass: Pass, forward_done: &[bool], grad_done: &[bool]| -> Option<Awaited> {
        match pass.kind {
            PassKind::F if pass.stage != 0 => {
                let k = key(pass.stage - 1, pass.microbatch);
                (!forward_done[k]).then_some(Awaited::Forward(k))
            }
            PassKind::B | PassKind::BW if pass.stage + 1 != stages => {
                let k = key(pass.stage + 1, pass.microbatch);
                (!grad_done[k]).then_some(Awaited::Grad(k))
            }
            _ => None,
        }
    };

    let mut current: BTreeSet<usize> = (0..devices).filter(|&d| !lists[d].is_empty()).collect();
    let mut remaining: usize = lists.iter().map(Vec::len).sum();
    while remaining > 0 {
        if current.is_empty() {
            return Err(stuck_error(schedule, &ops_done, &blocked, dialect));
        }
        let mut upcoming: BTreeSet<usize> = BTreeSet::new();
        let mut cursor = 0;
        while let Some(&rank) = current.range(cursor..).next() {
            current.remove(&rank);
            cursor = rank + 1;
            let action = lists[rank][next[rank]];
            if let Lowered::Op(op) = action {
                if let Some(wait) = op.passes().find_map(|p| awaited(p, &forward_done, &grad_done)) {
                    blocked[rank] = Some(wait);
                    continue;
                }
            }
            rows[rank].push(action);
            if let Lowered::Op(op) = action {
                blocked[rank] = None;
                ops_done[rank] += 1;
                for p in op.passes() {
                    let (k, to_stage, send, recv) = match p.kind {
                        PassKind::F => {
                            let k = key(p.stage, p.microbatch);
                            forward_done[k] = true;
                            (
                                Awaited::Forward(k),
                                p.stage.checked_add(1).filter(|&s| s < stages),
                                CommKind::SendF,
                                CommKind::RecvF,
                            )
                        }
                        PassKind::B | PassKind::BW => {
                            let k = key(p.stage, p.microbatch);
                            grad_done[k] = true;
                            (Awaited::Grad(k), p.stage.checked_sub(1), CommKind::SendB, CommKind::RecvB)
                        }
                        PassKind::W | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => continue,
                    };
                    let Some(to_stage) = to_stage else { continue };
                    let peer = home(to_stage);
                    if peer != rank {
                        rows[rank].push(Lowered::Comm(Comm { kind: send, stage: p.stage, microbatch: p.microbatch }));
                        rows[peer].push(Lowered::Comm(Comm { kind: recv, stage: to_stage, microbatch: p.microbatch }));
                    }
                    // Wake the rank waiting for this result: later in this round, or in the next.
                    if blocked[peer] == Some(k) {
                        blocked[peer] = None;
                        if peer > rank {
                            current.insert(peer);
                        } else if peer != rank {
                            upcoming.insert(peer);
                        }
                    }
                }
            }
            next[rank] += 1;
            remaining -= 1;
            if next[rank] < lists[rank].len() {
                upcoming.insert(rank);
            }
        }
        current = upcoming;
    }
    Ok(rows)
}

/// The error when no rank can place its next op: every stuck rank and what it waits for.
/// `ops_done[r]` is how many of rank r's ops were placed.
pub(super) fn stuck_error(
    schedule: &Schedule,
    ops_done: &[usize],
    blocked: &[Option<Awaited>],
    dialect: Dialect,
) -> FormatError {
    let mut err = FormatError::new(
        "the schedule deadlocks, so SEND/RECV actions cannot be placed: no rank can run its next action",
    );
    let microbatches = schedule.microbatches.max(1) as usize;
    for (rank, order) in schedule.orders.iter().enumerate() {
        let Some(op) = order.get(ops_done[rank]) else { continue };
        let waits = match blocked[rank] {
            Some(Awaited::Forward(k)) => format!(
                ", waiting for `{}`",
                pass_text(Pass::f((k / microbatches) as u32, (k % microbatches) as u32), dialect)
            ),
            Some(Awaited::Grad(k)) => format!(
                ", waiting for the input gradient of stage {}, microbatch {}",
                k / microbatches,
                k % microbatches
            ),
            None => String::new(),
        };
        err = err.hint(format!("row {rank} is stuck at column {} `{}`{waits}", ops_done[rank], op_text(op, dialect)));
    }
    err
}
