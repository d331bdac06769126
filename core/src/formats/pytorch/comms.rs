//! The SEND/RECV checks of a compute+comms file.

use std::collections::HashMap;

use crate::schedule::{Pass, PassKind, Schedule};

use super::super::check::Checked;
use super::super::text::{quote, Diagnostics, Source};
use super::grammar::{Comm, CommKind};

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
                    PassKind::W => {}
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
    for &(row, column, comm) in comms {
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
            out.push(
                source
                    .error_at(row, column, format!("{cell} is on row {row}, but stage {stage} runs on row {home}"))
                    .hint("a stage's SEND and RECV actions go on the row that runs the stage"),
            );
            continue;
        }
        let (peer, message, what) = match kind {
            CommKind::SendF => (
                stage.checked_add(1).filter(|&s| s < stages),
                Message { backward: false, from: stage, microbatch },
                "sends the output of the last stage, which has no next stage",
            ),
            CommKind::RecvF => (
                stage.checked_sub(1),
                Message { backward: false, from: stage.wrapping_sub(1), microbatch },
                "receives the input of stage 0, which has no previous stage",
            ),
            CommKind::SendB => (
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
            out.push(source.error_at(row, column, format!("{cell} {what}")).hint("delete the cell"));
            continue;
        };
        let peer_row = placement.device_of(peer).unwrap_or(row);
        if peer_row == row {
            out.push(
                source
                    .warning_at(
                        row,
                        column,
                        format!(
                            "{cell} is not needed: stages {} and {} both run on row {row}",
                            stage.min(peer),
                            stage.max(peer)
                        ),
                    )
                    .hint("PyTorch passes data between stages of the same rank without SEND/RECV; delete the cell"),
            );
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
            CommKind::SendF => (forward[key(stage, microbatch)], true),
            CommKind::RecvF => (forward[key(stage, microbatch)], false),
            CommKind::SendB => (grad[key(stage, microbatch)], true),
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
            out.push(
                source
                    .error_at(
                        row,
                        column,
                        format!("{} has no matching {} on row {peer_row}", quote(&comm.text()), quote(&partner.text())),
                    )
                    .hint(format!("add {} on row {peer_row}, {advice}", quote(&partner.text()))),
            );
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
                out.push(
                    source
                        .error_at(device as u32, checked.column(device as u32, position), format!(
                            "`{}` needs {what} of stage {producer} from row {from_row}, but there is no {} for it",
                            name(p),
                            quote(&recv.text())
                        ))
                        .hint(format!(
                            "in the compute+comms form, add {} on row {from_row} after the action that computes it, and {} on row {device} before this one",
                            quote(&send.text()),
                            quote(&recv.text())
                        )),
                );
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
    channels.sort_by_key(|(k, _)| *k);
    for ((from, to), mut list) in channels {
        list.sort_by_key(|m| m.send_column);
        // The first send whose receive comes before that of an earlier send.
        for pair in list.windows(2) {
            let [earlier, later] = pair else { continue };
            if later.recv_column < earlier.recv_column {
                out.push(
                    source
                        .warning_at(
                            from,
                            later.send_column,
                            format!(
                                "row {from} sends {} after {}, but row {to} receives {} before {}",
                                quote(&later.send.text()),
                                quote(&earlier.send.text()),
                                quote(&later.recv.text()),
                                quote(&earlier.recv.text())
                            ),
                        )
                        .hint(
                            "messages between two ranks are matched in the order they are posted; swap the RECV cells",
                        ),
                );
                break;
            }
        }
    }
}

/// The action matching `comm` on the other side.
pub(super) fn partner_of(comm: Comm) -> Comm {
    let Comm { kind, stage, microbatch } = comm;
    match kind {
        CommKind::SendF => Comm { kind: CommKind::RecvF, stage: stage + 1, microbatch },
        CommKind::RecvF => Comm { kind: CommKind::SendF, stage: stage.wrapping_sub(1), microbatch },
        CommKind::SendB => Comm { kind: CommKind::RecvB, stage: stage.wrapping_sub(1), microbatch },
        CommKind::RecvB => Comm { kind: CommKind::SendB, stage: stage + 1, microbatch },
    }
}
