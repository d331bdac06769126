//! Writing a PyTorch CSV, and PyTorch's `_add_send_recv` lowering for the compute+comms form.

use std::collections::BTreeSet;

use crate::schedule::{Pass, PassKind, Schedule};

use super::super::text::count;
use super::super::{Dialect, FormatError};
use super::grammar::{next_cell, op_text, pass_text, write_op, Comm, CommKind};
use super::CsvForm;

// ---------------------------------------------------------------------------------------------
// Export

/// Writes `schedule` as a PyTorch CSV in `form` and `dialect`.
///
/// # Errors
/// When the schedule has two pipelines or sequence slices (PyTorch's grammar has neither), or,
/// for the compute+comms form, when it is invalid or deadlocks so SEND/RECV actions cannot be
/// placed.
pub fn export_pytorch_csv(schedule: &Schedule, form: CsvForm, dialect: Dialect) -> Result<String, FormatError> {
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
            add_send_recv(schedule, dialect)?
        }
    };
    let mut text = String::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    for row in rows {
        text.push_str(&row);
        text.push('\n');
    }
    Ok(text)
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
/// PyTorch visits ranks round-robin in increasing order; each visit places the rank's next op
/// if its input is ready (a forward needs the previous stage's forward, an input-gradient pass
/// the next stage's, or the RECV that brings it), appends a SEND after it for every result that
/// leaves the rank, and appends the matching RECV to the receiving rank right away. Here a
/// blocked rank is not revisited until its input is produced, so the cost is linear in the
/// number of ops instead of ranks × rounds; the rounds and their order are PyTorch's.
pub(super) fn add_send_recv(schedule: &Schedule, dialect: Dialect) -> Result<Vec<String>, FormatError> {
    let placement = &schedule.placement;
    let stages = placement.stages();
    let microbatches = schedule.microbatches as usize;
    let devices = schedule.orders.len();
    let home = |stage: u32| placement.device_of(stage).unwrap_or(0) as usize;
    let key = |stage: u32, microbatch: u32| stage as usize * microbatches + microbatch as usize;
    let n = stages as usize * microbatches;
    let mut forward_done = vec![false; n];
    let mut grad_done = vec![false; n];
    let mut rows: Vec<String> = vec![String::new(); devices];
    let mut next = vec![0usize; devices];
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

    let mut current: BTreeSet<usize> = (0..devices).filter(|&d| !schedule.orders[d].is_empty()).collect();
    let mut remaining: usize = schedule.orders.iter().map(Vec::len).sum();
    while remaining > 0 {
        if current.is_empty() {
            return Err(stuck_error(schedule, &next, &blocked, dialect));
        }
        let mut upcoming: BTreeSet<usize> = BTreeSet::new();
        let mut cursor = 0;
        while let Some(&rank) = current.range(cursor..).next() {
            current.remove(&rank);
            cursor = rank + 1;
            let op = schedule.orders[rank][next[rank]];
            if let Some(wait) = op.passes().find_map(|p| awaited(p, &forward_done, &grad_done)) {
                blocked[rank] = Some(wait);
                continue;
            }
            blocked[rank] = None;
            write_op(next_cell(&mut rows[rank]), &op, dialect);
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
                    PassKind::W => continue,
                };
                let Some(to_stage) = to_stage else { continue };
                let peer = home(to_stage);
                if peer != rank {
                    Comm { kind: send, stage: p.stage, microbatch: p.microbatch }.write(next_cell(&mut rows[rank]));
                    Comm { kind: recv, stage: to_stage, microbatch: p.microbatch }.write(next_cell(&mut rows[peer]));
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
            next[rank] += 1;
            remaining -= 1;
            if next[rank] < schedule.orders[rank].len() {
                upcoming.insert(rank);
            }
        }
        current = upcoming;
    }
    Ok(rows)
}

/// The error when no rank can place its next op: every stuck rank and what it waits for.
pub(super) fn stuck_error(
    schedule: &Schedule,
    next: &[usize],
    blocked: &[Option<Awaited>],
    dialect: Dialect,
) -> FormatError {
    let mut err = FormatError::new(
        "the schedule deadlocks, so SEND/RECV actions cannot be placed: no rank can run its next action",
    );
    let microbatches = schedule.microbatches.max(1) as usize;
    for (rank, order) in schedule.orders.iter().enumerate() {
        let Some(op) = order.get(next[rank]) else { continue };
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
        err = err.hint(format!("row {rank} is stuck at column {} `{}`{waits}", next[rank], op_text(op, dialect)));
    }
    err
}
