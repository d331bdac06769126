//! The checks of a compute+comms file: SEND/RECV pairs across rows, torch 2.15's waits,
//! and the per-stage actions (REDUCE_GRAD above all).

use std::collections::{BTreeMap, HashMap};

use crate::schedule::{Pass, PassKind, Schedule};

use super::super::check::Checked;
use super::super::csv;
use super::super::text::{count, quote, warning, Diagnostics, Source};
use super::grammar::{Actions, Comm, CommKind, StageAction, StageKind};
use super::{cell_error, cell_warning};

/// Whether any dependency of `schedule` crosses devices (so a compute+comms file needs a
/// SEND/RECV pair).
pub(super) fn needs_comms(schedule: &Schedule) -> bool {
    let placement = &schedule.placement;
    (1..placement.stages()).any(|s| placement.device_of(s) != placement.device_of(s - 1))
}

/// The SEND/RECV checks (see the module docs).
pub(super) fn check_comms(
    checked: &Checked,
    comms: &[(u32, usize, Comm)],
    source: &Source,
    name: &dyn Fn(Pass) -> String,
    out: &mut Diagnostics,
) {
    let schedule = &checked.schedule;
    let placement = &schedule.placement;
    let (stages, microbatches) = (placement.stages(), schedule.microbatches);
    // Column of every kept forward and input-gradient action, by (stage, microbatch).
    let key = |stage: u32, microbatch: u32| stage as usize * microbatches as usize + microbatch as usize;
    let mut forward: Vec<Option<(usize, Pass)>> = vec![None; stages as usize * microbatches as usize];
    let mut grad = forward.clone();
    for (device, order) in schedule.orders.iter().enumerate() {
        for (position, op) in order.iter().enumerate() {
            for p in op.passes() {
                let found = Some((checked.column(device as u32, position), p));
                match p.kind {
                    PassKind::F => forward[key(p.stage, p.microbatch)] = found,
                    PassKind::B | PassKind::BW => grad[key(p.stage, p.microbatch)] = found,
                    PassKind::W | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => {}
                }
            }
        }
    }

    // A message goes from `from` stage to the next (F) or previous (B) stage; key it by the
    // sending stage so a SEND and its RECV share a key.
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    struct Message {
        backward: bool,
        from: u32,
        microbatch: u32,
    }
    let mut sends: HashMap<Message, (u32, usize)> = HashMap::new();
    let mut recvs: HashMap<Message, (u32, usize)> = HashMap::new();
    let mut valid: Vec<(u32, usize, Comm, Message)> = Vec::new();
    let last = stages.saturating_sub(1);
    for &(row, column, comm) in comms.iter().filter(|(_, _, c)| c.kind.is_transfer()) {
        let cell = quote(&comm.text());
        let Comm { kind, stage, microbatch } = comm;
        if stage >= stages || microbatch >= microbatches {
            out.push(source.error_at(row, column, format!(
                "{cell} names stage {stage}, microbatch {microbatch}, but the compute actions have stages 0 to {last} and microbatches 0 to {}",
                microbatches.saturating_sub(1)
            )));
            continue;
        }
        let home = placement.device_of(stage).unwrap_or(row);
        if home != row {
            out.push(cell_error(
                source,
                (row, column),
                format!("{cell} is on row {row}, but stage {stage} runs on row {home}"),
                "a stage's SEND and RECV actions go on the row that runs the stage",
            ));
            continue;
        }
        let (peer, message, what) = match kind {
            CommKind::SendF | CommKind::WaitSendF => (
                stage.checked_add(1).filter(|&s| s < stages),
                Message { backward: false, from: stage, microbatch },
                "sends the output of the last stage, which has no next stage",
            ),
            CommKind::RecvF => (
                stage.checked_sub(1),
                Message { backward: false, from: stage.wrapping_sub(1), microbatch },
                "receives the input of stage 0, which has no previous stage",
            ),
            CommKind::SendB | CommKind::WaitSendB => (
                stage.checked_sub(1),
                Message { backward: true, from: stage, microbatch },
                "sends the input gradient of stage 0, which has no previous stage",
            ),
            CommKind::RecvB => (
                stage.checked_add(1).filter(|&s| s < stages),
                Message { backward: true, from: stage + 1, microbatch },
                "receives a gradient for the last stage, which has no next stage",
            ),
        };
        let Some(peer) = peer else {
            out.push(cell_error(source, (row, column), format!("{cell} {what}"), "delete the cell"));
            continue;
        };
        let peer_row = placement.device_of(peer).unwrap_or(row);
        if peer_row == row {
            out.push(cell_warning(
                source,
                (row, column),
                format!(
                    "{cell} is not needed: stages {} and {} both run on row {row}",
                    stage.min(peer),
                    stage.max(peer)
                ),
                "PyTorch passes data between stages of the same rank without SEND/RECV; delete the cell",
            ));
            continue;
        }
        let table = if kind.is_send() { &mut sends } else { &mut recvs };
        if let Some(&(r, c)) = table.get(&message) {
            out.push(source.error_at(row, column, format!("{cell} appears twice: first at {}", source.short(r, c))));
            continue;
        }
        table.insert(message, (row, column));
        // Relative to the compute action that produces or uses the data.
        let (at, send_after) = match kind {
            CommKind::SendF | CommKind::WaitSendF => (forward[key(stage, microbatch)], true),
            CommKind::RecvF => (forward[key(stage, microbatch)], false),
            CommKind::SendB | CommKind::WaitSendB => (grad[key(stage, microbatch)], true),
            CommKind::RecvB => (grad[key(stage, microbatch)], false),
        };
        if let Some((at, pass)) = at {
            if send_after && column < at {
                out.push(source.error_at(
                    row,
                    column,
                    format!(
                        "{cell} comes before `{}` at {}: a SEND must follow the action that computes what it sends",
                        name(pass),
                        source.short(row, at)
                    ),
                ));
            } else if !send_after && column > at {
                out.push(source.error_at(
                    row,
                    column,
                    format!(
                        "{cell} comes after `{}` at {}, which needs what it receives: a RECV must come first",
                        name(pass),
                        source.short(row, at)
                    ),
                ));
            }
        }
        valid.push((row, column, comm, message));
    }

    // Pairing.
    for &(row, column, comm, message) in &valid {
        let (other, partner) =
            if comm.kind.is_send() { (&recvs, partner_of(comm)) } else { (&sends, partner_of(comm)) };
        if !other.contains_key(&message) {
            let peer_row = placement.device_of(partner.stage).unwrap_or(0);
            let advice = if comm.kind.is_send() {
                "before the action that uses it"
            } else {
                "after the action that computes it"
            };
            out.push(cell_error(
                source,
                (row, column),
                format!("{} has no matching {} on row {peer_row}", quote(&comm.text()), quote(&partner.text())),
                format!("add {} on row {peer_row}, {advice}", quote(&partner.text())),
            ));
        }
    }

    // Completeness: every dependency between rows needs its RECV (and so its SEND).
    for (device, order) in schedule.orders.iter().enumerate() {
        for (position, op) in order.iter().enumerate() {
            for p in op.passes() {
                let (producer, message, recv) = match p.kind {
                    PassKind::F if p.stage > 0 => (
                        p.stage - 1,
                        Message { backward: false, from: p.stage - 1, microbatch: p.microbatch },
                        CommKind::RecvF,
                    ),
                    PassKind::B | PassKind::BW if p.stage + 1 < stages => (
                        p.stage + 1,
                        Message { backward: true, from: p.stage + 1, microbatch: p.microbatch },
                        CommKind::RecvB,
                    ),
                    _ => continue,
                };
                let from_row = placement.device_of(producer).unwrap_or(device as u32);
                if from_row == device as u32 || recvs.contains_key(&message) || sends.contains_key(&message) {
                    continue;
                }
                let recv = Comm { kind: recv, stage: p.stage, microbatch: p.microbatch };
                let send = partner_of(recv);
                let what = if p.kind == PassKind::F { "the output" } else { "the gradient" };
                out.push(cell_error(
                    source,
                    (device as u32, checked.column(device as u32, position)),
                    format!(
                        "`{}` needs {what} of stage {producer} from row {from_row}, but there is no {} for it",
                        name(p),
                        quote(&recv.text())
                    ),
                    format!(
                        "in the compute+comms form, add {} on row {from_row} after the action that computes it, and {} on row {device} before this one",
                        quote(&send.text()),
                        quote(&recv.text())
                    ),
                ));
            }
        }
    }

    // Two rows must exchange messages in the same order on both sides.
    struct Matched {
        send_column: usize,
        recv_column: usize,
        send: Comm,
        recv: Comm,
    }
    let mut channels: HashMap<(u32, u32), Vec<Matched>> = HashMap::new();
    for &(row, send_column, send, message) in &valid {
        if send.kind.is_send() {
            if let Some(&(recv_row, recv_column)) = recvs.get(&message) {
                channels.entry((row, recv_row)).or_default().push(Matched {
                    send_column,
                    recv_column,
                    send,
                    recv: partner_of(send),
                });
            }
        }
    }
    let mut channels: Vec<_> = channels.into_iter().collect();
    crate::units::sort::sort_by_key(&mut channels, |(k, _)| *k);
    for ((from, to), mut list) in channels {
        crate::units::sort::sort_by_key(&mut list, |m| m.send_column);
        // The first send whose receive comes before that of an earlier send.
        for pair in list.windows(2) {
            let [earlier, later] = pair else { continue };
            if later.recv_column < earlier.recv_column {
                out.push(cell_warning(
                    source,
                    (from, later.send_column),
                    format!(
                        "row {from} sends {} after {}, but row {to} receives {} before {}",
                        quote(&later.send.text()),
                        quote(&earlier.send.text()),
                        quote(&later.recv.text()),
                        quote(&earlier.recv.text())
                    ),
                    "messages between two ranks are matched in the order they are posted; swap the RECV cells",
                ));
                break;
            }
        }
    }
}

/// The action matching `comm` on the other side.
pub(super) fn partner_of(comm: Comm) -> Comm {
    let Comm { kind, stage, microbatch } = comm;
    match kind {
        CommKind::SendF | CommKind::WaitSendF => Comm { kind: CommKind::RecvF, stage: stage + 1, microbatch },
        CommKind::RecvF => Comm { kind: CommKind::SendF, stage: stage.wrapping_sub(1), microbatch },
        CommKind::SendB | CommKind::WaitSendB => {
            Comm { kind: CommKind::RecvB, stage: stage.wrapping_sub(1), microbatch }
        }
        CommKind::RecvB => Comm { kind: CommKind::SendB, stage: stage + 1, microbatch },
    }
}

/// One row's SEND, WAIT_SEND, REDUCE_GRAD and WAIT_REDUCE_GRAD cells in file order.
#[derive(Clone, Copy)]
enum Paired {
    Comm(Comm),
    Stage(StageAction),
}

/// Torch 2.15's pairing rules, row by row in file order (`_validate_send_waits` and the
/// REDUCE_GRAD checks of `_prepare_schedule_with_comms`), for a file with any wait. A file
/// with none is torch 2.14's (its sends are waited for at the end of the step) and passes.
/// Returns whether every send and reduction pairs with its wait.
pub(super) fn check_waits(
    actions: &Actions,
    table: &csv::Table,
    source: &Source,
    name: &dyn Fn(Pass) -> String,
    out: &mut Diagnostics,
) -> bool {
    let any_wait =
        !actions.waits.is_empty() || actions.stage_actions.iter().any(|(_, _, a)| a.kind == StageKind::WaitReduceGrad);
    if !any_wait {
        return true;
    }
    let errors_before = out.errors();
    let mut rows: BTreeMap<u32, Vec<(usize, Paired)>> = BTreeMap::new();
    for &(row, column, c) in actions.comms.iter().chain(&actions.waits) {
        if c.kind.is_send() || c.kind.is_wait() {
            rows.entry(row).or_default().push((column, Paired::Comm(c)));
        }
    }
    for &(row, column, a) in &actions.stage_actions {
        if matches!(a.kind, StageKind::ReduceGrad | StageKind::WaitReduceGrad) {
            rows.entry(row).or_default().push((column, Paired::Stage(a)));
        }
    }
    // Where each row computes the input gradient of a (stage, microbatch): for the hint.
    let backward: HashMap<(u32, u32), (u32, Pass)> = actions
        .ops
        .iter()
        .flat_map(|&(row, _, op)| op.passes().map(move |p| (row, p)))
        .filter(|(_, p)| p.kind.is_input_grad())
        .map(|(row, p)| ((p.stage, p.microbatch), (row, p)))
        .collect();
    for (row, mut list) in rows {
        crate::units::sort::sort_by_key(&mut list, |(column, _)| *column);
        // Unwaited sends in posting order, and the reduction in progress.
        let mut pending: Vec<(usize, Comm)> = Vec::new();
        let mut registered: std::collections::HashSet<(CommKind, u32, u32)> = std::collections::HashSet::new();
        let mut reducing: Option<(usize, u32)> = None;
        for (column, action) in list {
            let cell = quote(table.cell(row, column));
            match action {
                Paired::Comm(c) if c.kind.is_send() => {
                    // A repeated SEND is reported by the SEND/RECV check.
                    if registered.insert((c.kind, c.stage, c.microbatch)) {
                        pending.push((column, c));
                    }
                }
                Paired::Comm(w) => {
                    let send = Comm { kind: w.kind.wait_pair().unwrap_or(CommKind::SendF), ..w };
                    match pending.iter().position(|(_, c)| *c == send) {
                        Some(i) => {
                            pending.remove(i);
                        }
                        None => out.push(cell_error(
                            source,
                            (row, column),
                            format!("{cell} has no {} before it on row {row} to wait for", quote(&send.text())),
                            format!(
                                "torch 2.15 refuses it (\"Pipeline wait {} at rank {row} has no pending send\"): \
                                 a send is waited for once, after it is posted",
                                w.text()
                            ),
                        )),
                    }
                }
                Paired::Stage(a) if a.kind == StageKind::ReduceGrad => {
                    if let Some((_, busy)) = reducing {
                        out.push(cell_error(
                            source,
                            (row, column),
                            format!("{cell} starts while stage {busy}'s reduction is pending: torch 2.15 runs one at a time"),
                            format!("add `{busy}WAIT_REDUCE_GRAD` before it"),
                        ));
                    }
                    reducing = Some((column, a.stage));
                }
                Paired::Stage(a) => match reducing {
                    Some((_, busy)) if busy == a.stage => reducing = None,
                    Some((_, busy)) => {
                        out.push(cell_error(
                            source,
                            (row, column),
                            format!(
                                "{cell} waits for stage {}'s reduction, but the pending one is stage {busy}'s",
                                a.stage
                            ),
                            format!("a WAIT_REDUCE_GRAD follows its own REDUCE_GRAD: `{busy}WAIT_REDUCE_GRAD`"),
                        ));
                        reducing = None;
                    }
                    None => out.push(cell_error(
                        source,
                        (row, column),
                        format!("{cell} has no `{}REDUCE_GRAD` before it on row {row} to wait for", a.stage),
                        "torch 2.15 refuses a WAIT_REDUCE_GRAD without a pending reduction",
                    )),
                },
            }
        }
        if let Some(&(column, first)) = pending.first() {
            let wait = Comm { kind: first.kind.wait_pair().unwrap_or(CommKind::WaitSendF), ..first };
            let listed: Vec<String> = pending.iter().take(6).map(|(_, c)| format!("`{}`", c.text())).collect();
            let more = if pending.len() > 6 { format!(" and {} more", pending.len() - 6) } else { String::new() };
            let what = match pending.len() {
                1 => format!("{} has no matching {} on row {row}", quote(&first.text()), quote(&wait.text())),
                n => format!("{n} sends on row {row} have no matching wait: {}{more}", listed.join(", ")),
            };
            let place = match (first.kind, backward.get(&(first.stage, first.microbatch))) {
                (CommKind::SendF, Some(&(r, p))) if r == row => format!("after `{}`", name(p)),
                _ => "at the end of the row".to_string(),
            };
            out.push(
                source
                    .error_at(row, column, what)
                    .hint(format!(
                        "torch 2.15 refuses the file (\"Pipeline sends at rank {row} have no matching wait\"): \
                         add {} {place}; a forward's send is waited for after this row's backward of its microbatch, \
                         a backward's at the end of the row",
                        quote(&wait.text())
                    ))
                    .hint("or write the file for torch 2.14, which waits for every send at the end of the step"),
            );
        }
        if let Some((column, busy)) = reducing {
            out.push(cell_error(
                source,
                (row, column),
                format!("{} has no matching `{busy}WAIT_REDUCE_GRAD` on row {row}", quote(table.cell(row, column))),
                format!(
                    "torch 2.15 refuses the file (\"Stage {busy} at rank {row} has REDUCE_GRAD without \
                     WAIT_REDUCE_GRAD\"): add `{busy}WAIT_REDUCE_GRAD` after it"
                ),
            ));
        }
    }
    let paired = out.errors() == errors_before;
    if paired {
        warn_blocking_waits(actions, table, source, out);
    }
    paired
}

/// A wait that can hold its rank up: Bubblescope times the compute order, in which PyTorch's
/// own waits never block (see `docs/pytorch.md`), so a wait placed elsewhere is named. A wait
/// cannot block when no compute follows it on its row, or when a compute before it on the row
/// needs what the peer computes after receiving: for `WAIT_SEND_F` of (s, m) this row's input
/// gradient of (s, m); for `WAIT_SEND_B` of (s, m) an input gradient of microbatch m on a stage
/// below s.
fn warn_blocking_waits(actions: &Actions, table: &csv::Table, source: &Source, out: &mut Diagnostics) {
    // Per row, the columns of the input-gradient passes and the last compute column.
    let mut grads: HashMap<u32, Vec<(usize, Pass)>> = HashMap::new();
    let mut last: HashMap<u32, usize> = HashMap::new();
    for &(row, column, op) in &actions.ops {
        last.insert(row, column);
        for p in op.passes().filter(|p| p.kind.is_input_grad()) {
            grads.entry(row).or_default().push((column, p));
        }
    }
    for &(row, column, w) in &actions.waits {
        if last.get(&row).is_none_or(|&l| l < column) {
            continue;
        }
        let before = grads.get(&row).map_or(&[][..], Vec::as_slice);
        let covered = before.iter().take_while(|(c, _)| *c < column).any(|(_, p)| match w.kind {
            CommKind::WaitSendF => (p.stage, p.microbatch) == (w.stage, w.microbatch),
            _ => p.microbatch == w.microbatch && p.stage < w.stage,
        });
        if covered {
            continue;
        }
        let recv = partner_of(w);
        out.push(
            warning(source.error_at(
                row,
                column,
                format!(
                    "{} can hold row {row} up until {} has been received on its peer's row: Bubblescope times \
                     the compute order and does not delay the row for it",
                    quote(table.cell(row, column)),
                    quote(&recv.text())
                ),
            ))
            .hint(
                "PyTorch waits for a forward's send after this row's backward of the same microbatch and for a \
                 backward's at the end of the row, where a wait never blocks",
            ),
        );
    }
}

/// The per-stage actions of a compute+comms file: each on the row that runs its stage (PyTorch
/// infers the stage-to-rank map from every action), and one `REDUCE_GRAD` per stage after the
/// stage's last full backward or weight pass. PyTorch runs a file without it, but the stage's
/// gradients are then the sum over the microbatches instead of their mean: M times too large.
pub(super) fn check_stage_actions(
    checked: &Checked,
    actions: &Actions,
    table: &csv::Table,
    source: &Source,
    name: &dyn Fn(Pass) -> String,
    want_reduce_grad: bool,
    out: &mut Diagnostics,
) {
    let schedule = &checked.schedule;
    let placement = &schedule.placement;
    let stages = placement.stages();
    // The last full backward or weight pass of every stage: its row, column and pass.
    let mut last: Vec<Option<(u32, usize, Pass)>> = vec![None; stages as usize];
    for (device, order) in schedule.orders.iter().enumerate() {
        for (position, op) in order.iter().enumerate() {
            for p in op.passes().filter(|p| matches!(p.kind, PassKind::W | PassKind::BW)) {
                last[p.stage as usize] = Some((device as u32, checked.column(device as u32, position), p));
            }
        }
    }
    let mut reduced: Vec<Option<usize>> = vec![None; stages as usize];
    for &(row, column, a) in &actions.stage_actions {
        let cell = quote(table.cell(row, column));
        if a.stage >= stages {
            out.push(source.error_at(
                row,
                column,
                format!("{cell} names stage {}, but the compute actions have stages 0 to {}", a.stage, stages - 1),
            ));
            continue;
        }
        let home = placement.device_of(a.stage).unwrap_or(row);
        if home != row {
            out.push(cell_error(
                source,
                (row, column),
                format!("{cell} is on row {row}, but stage {} runs on row {home}", a.stage),
                "PyTorch gives a stage to the row any of its actions is on, so a stage on two rows is refused",
            ));
            continue;
        }
        if a.kind != StageKind::ReduceGrad {
            continue;
        }
        if let Some(first) = reduced[a.stage as usize] {
            out.push(warning(source.error_at(
                row,
                column,
                format!(
                    "{cell} appears twice (first at {}): the stage's gradients are divided by M twice",
                    source.short(row, first)
                ),
            )));
            continue;
        }
        reduced[a.stage as usize] = Some(column);
        if let Some((_, at, pass)) = last[a.stage as usize].filter(|&(r, at, _)| r == row && at > column) {
            out.push(
                warning(source.error_at(
                    row,
                    column,
                    format!(
                        "{cell} comes before `{}` at {}: the runtime divides the stage's gradients by M there, \
                         so the gradients of the backward passes after it are not divided",
                        name(pass),
                        source.short(row, at)
                    ),
                ))
                .hint("move it after the stage's last full backward or weight pass"),
            );
        }
    }
    let missing: Vec<u32> = (0..stages)
        .filter(|_| want_reduce_grad && schedule.microbatches > 1)
        .filter(|&s| reduced[s as usize].is_none() && last[s as usize].is_some())
        .collect();
    if let Some(&first) = missing.first() {
        let row = placement.device_of(first).unwrap_or(0);
        let which = match missing.len() {
            1 => format!("stage {first} has"),
            n => format!("stage {first} and {} have", count(n - 1, "more stage")),
        };
        let mut d = source.error_in_row(
            row,
            format!(
                "{which} no REDUCE_GRAD: PyTorch runs the file, but the gradients come out M = {} times too large \
                 (REDUCE_GRAD is where the runtime divides a stage's gradients by its microbatches)",
                schedule.microbatches
            ),
        );
        d = warning(d).hint(format!(
            "add `{first}REDUCE_GRAD` right after the stage's last full backward or weight pass (and \
             `{first}WAIT_REDUCE_GRAD` after it for torch 2.15), or write the file again with \
             `bubblescope convert IN OUT --to-format pytorch-csv-comms`"
        ));
        out.push(d);
    }
}
