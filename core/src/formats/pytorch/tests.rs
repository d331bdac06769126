use super::export::*;
use super::grammar::*;
use super::import::*;
use super::placement::*;
use super::*;
use crate::formats::{Dialect, ExportOptions, TorchVersion};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};

fn pass(word: Word, stage: u32, microbatch: u32) -> RawPass {
    RawPass { word, stage, microbatch }
}

#[test]
fn cells_follow_the_grammar() {
    assert_eq!(parse_cell(" 0F1 "), Token::Compute(pass(Word::F, 0, 1)));
    assert_eq!(parse_cell("7I0"), Token::Compute(pass(Word::I, 7, 0)));
    assert_eq!(parse_cell("2BW0"), Token::Compute(pass(Word::Bw, 2, 0)));
    assert_eq!(parse_cell("(0F7;7B3)OVERLAP_F_B"), Token::Pair(pass(Word::F, 0, 7), pass(Word::B, 7, 3)));
    assert_eq!(parse_cell("5SEND_F2"), Token::Comms(vec![Comm { kind: CommKind::SendF, stage: 5, microbatch: 2 }]));
    assert_eq!(parse_cell("4RECV_B0"), Token::Comms(vec![Comm { kind: CommKind::RecvB, stage: 4, microbatch: 0 }]));
    assert_eq!(
        parse_cell("2SEND_F3_2RECV_B1"),
        Token::Comms(vec![
            Comm { kind: CommKind::SendF, stage: 2, microbatch: 3 },
            Comm { kind: CommKind::RecvB, stage: 2, microbatch: 1 }
        ])
    );
    assert_eq!(parse_cell("1UNSHARD"), Token::Stage(StageAction { kind: StageKind::Unshard, stage: 1 }));
    assert_eq!(parse_cell("2REDUCE_GRAD"), Token::Stage(StageAction { kind: StageKind::ReduceGrad, stage: 2 }));
    assert_eq!(
        parse_cell("2WAIT_REDUCE_GRAD"),
        Token::Stage(StageAction { kind: StageKind::WaitReduceGrad, stage: 2 })
    );
    assert_eq!(parse_cell("3RESHARD"), Token::Stage(StageAction { kind: StageKind::Reshard, stage: 3 }));
    assert_eq!(
        parse_cell("5WAIT_SEND_F2"),
        Token::Comms(vec![Comm { kind: CommKind::WaitSendF, stage: 5, microbatch: 2 }])
    );
    assert_eq!(
        parse_cell("0WAIT_SEND_B7"),
        Token::Comms(vec![Comm { kind: CommKind::WaitSendB, stage: 0, microbatch: 7 }])
    );
    assert_eq!(parse_cell(""), Token::Idle);
}

#[test]
fn bad_cells_say_what_was_expected() {
    let reason = |cell| match parse_cell(cell) {
        Token::Bad(bad) => bad.0,
        other => panic!("{cell} parsed as {other:?}"),
    };
    assert_eq!(reason("0X1"), "unknown action type `X`");
    assert_eq!(reason("F1"), "expected a stage number at `F1`");
    assert_eq!(reason("0F"), "expected a microbatch number after `0F`");
    assert_eq!(reason("0F1x"), "unexpected `x` after `0F1`");
    assert_eq!(reason("0F99999999999"), "the number `99999999999` is too large");
    assert_eq!(reason("(0F1;1I0"), "the `(` is never closed");
    assert_eq!(reason("(0F1;1I0)FOO"), "unknown container type `FOO`, expected `OVERLAP_F_B`");
    assert_eq!(reason("(0F1)OVERLAP_F_B"), "an overlapped pair holds two actions, a forward and a backward, found 1");
    assert_eq!(
        reason("(0F1;0SEND_F1)OVERLAP_F_B"),
        "`0SEND_F1` cannot be overlapped: an overlapped pair holds compute actions"
    );
    assert_eq!(reason("3"), "expected an action type after the stage number 3");
    assert!(matches!(parse_cell("0f1"), Token::Bad(bad) if bad.1 == "types are upper case: `0F…`"));
}

#[test]
fn dialect_evidence_decides_as_documented() {
    let e = |i, bw, w| DialectEvidence { i, bw, w, waits: None, fused: None };
    assert_eq!(e(Some((0, 0)), Some((0, 1)), true).dialect(), Dialect::Current);
    assert_eq!(e(None, Some((0, 1)), false).dialect(), Dialect::Legacy);
    assert_eq!(e(None, None, true).dialect(), Dialect::Legacy);
    assert_eq!(e(None, None, false).dialect(), Dialect::Current);
    // Torch 2.15's waits are in the current dialect, so a `W` then means an `I` is missing.
    assert_eq!(DialectEvidence { waits: Some((0, 3)), ..e(None, None, true) }.dialect(), Dialect::Current);
}

/// PyTorch's `_add_send_recv` transcribed loop for loop: every round visits every rank
/// with actions left, in order. The event-driven version must give the same rows.
fn add_send_recv_as_pytorch(schedule: &Schedule, lists: &[Vec<Lowered>], dialect: Dialect) -> Vec<String> {
    let placement = &schedule.placement;
    let stages = placement.stages();
    let home = |stage: u32| placement.device_of(stage).unwrap() as usize;
    let mut prev: Vec<std::collections::HashSet<(u8, u32, u32)>> = vec![Default::default(); schedule.orders.len()];
    let mut rows = vec![String::new(); schedule.orders.len()];
    let mut next = vec![0; schedule.orders.len()];
    let ready = |p: Pass, prev: &std::collections::HashSet<(u8, u32, u32)>| match p.kind {
        PassKind::F if p.stage != 0 => {
            prev.contains(&(1, p.stage, p.microbatch)) || prev.contains(&(0, p.stage - 1, p.microbatch))
        }
        PassKind::B | PassKind::BW if p.stage != stages - 1 => {
            prev.contains(&(3, p.stage, p.microbatch)) || prev.contains(&(2, p.stage + 1, p.microbatch))
        }
        _ => true,
    };
    while (0..rows.len()).any(|r| next[r] < lists[r].len()) {
        let mut progress = false;
        for rank in 0..rows.len() {
            let Some(action) = lists[rank].get(next[rank]) else { continue };
            let op = match action {
                Lowered::Op(op) => op,
                Lowered::Stage(a) => {
                    a.write(next_cell(&mut rows[rank]));
                    next[rank] += 1;
                    progress = true;
                    continue;
                }
                Lowered::Comm(_) => unreachable!("no comms before the lowering"),
            };
            if !op.passes().all(|p| ready(p, &prev[rank])) {
                continue;
            }
            write_op(next_cell(&mut rows[rank]), op, dialect);
            for p in op.passes() {
                let (key, to, send, recv) = match p.kind {
                    PassKind::F => (
                        (0, p.stage, p.microbatch),
                        p.stage.checked_add(1).filter(|&s| s < stages),
                        CommKind::SendF,
                        CommKind::RecvF,
                    ),
                    PassKind::B | PassKind::BW => {
                        ((2, p.stage, p.microbatch), p.stage.checked_sub(1), CommKind::SendB, CommKind::RecvB)
                    }
                    PassKind::W | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => continue,
                };
                prev[rank].insert(key);
                let Some(to) = to else { continue };
                if home(to) != rank {
                    Comm { kind: send, stage: p.stage, microbatch: p.microbatch }.write(next_cell(&mut rows[rank]));
                    Comm { kind: recv, stage: to, microbatch: p.microbatch }.write(next_cell(&mut rows[home(to)]));
                    prev[home(to)].insert((if recv == CommKind::RecvF { 1 } else { 3 }, to, p.microbatch));
                }
            }
            next[rank] += 1;
            progress = true;
        }
        assert!(progress, "malformed compute schedule");
    }
    rows
}

/// Microbatch by microbatch down and up each stage: valid on any one-pipeline placement.
fn sequential(placement: Placement, microbatches: u32, split: bool) -> Schedule {
    let stages = placement.stages();
    let mut s = Schedule::new(placement, microbatches);
    for m in 0..microbatches {
        (0..stages).for_each(|st| s.push_placed(Pass::f(st, m)));
        for st in (0..stages).rev() {
            if split {
                s.push_placed(Pass::b(st, m));
                s.push_placed(Pass::w(st, m));
            } else {
                s.push_placed(Pass::bw(st, m));
            }
        }
    }
    s
}

#[path = "../../../tests/support/shuffled.rs"]
mod shuffled;
use shuffled::shuffled;

#[test]
fn send_recv_lowering_matches_pytorch_by_hand() {
    // 1F1B on 2 devices, 2 microbatches, worked through PyTorch's loop by hand. Legacy
    // dialect, SEND/RECV only (PyTorch before 2.14): round 4 blocks rank 0 on 0BW1 until rank 1
    // sends the gradient, so 0BW1 runs in round 5.
    let s = crate::generate("1f1b", &crate::ScheduleParams::new(2, 2)).unwrap();
    let text = export_pytorch_csv(&s, CsvForm::ComputeComms, Dialect::Legacy).unwrap();
    assert_eq!(
        text,
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0BW0,0RECV_B1,0BW1\n\
         1RECV_F0,1F0,1RECV_F1,1BW0,1SEND_B0,1F1,1BW1,1SEND_B1\n"
    );
    // Torch 2.15: the UNSHARDs take round 1, so everything runs a round later; REDUCE_GRAD
    // and its wait follow each stage's last backward, RESHARD ends the row, a forward's send is
    // waited for after the backward of its microbatch and a backward's at the end.
    let text = export_pytorch_csv(&s, CsvForm::ComputeComms, Dialect::Current).unwrap();
    assert_eq!(
        text,
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0WAIT_SEND_F0,0RECV_B1,0B1,0WAIT_SEND_F1,\
         0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n\
         1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1WAIT_REDUCE_GRAD,1RESHARD,\
         1WAIT_SEND_B0,1WAIT_SEND_B1\n"
    );
    // Torch 2.14: no waits.
    let text = export_pytorch_csv_with(&s, CsvForm::ComputeComms, &ExportOptions::torch(TorchVersion::V2_14)).unwrap();
    assert_eq!(
        text,
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n\
         1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n"
    );
}

#[test]
fn send_recv_lowering_matches_pytorch_loop_for_loop() {
    let mut schedules: Vec<Schedule> = Vec::new();
    for (devices, microbatches) in [(1, 3), (2, 5), (4, 8), (5, 3)] {
        for family in ["gpipe", "1f1b"] {
            schedules.push(crate::generate(family, &crate::ScheduleParams::new(devices, microbatches)).unwrap());
        }
        schedules.push(sequential(Placement::v_shape(devices), microbatches, true));
        schedules.push(sequential(Placement::interleaved(devices, 3), microbatches, false));
        schedules.push(sequential(Placement::wave(devices, 2), microbatches, true));
    }
    let mut pairs = crate::generate("1f1b", &crate::ScheduleParams::new(3, 6)).unwrap();
    for order in &mut pairs.orders {
        // 1F1B's steady `F, BW` neighbours on device 0 overlapped as DualPipe pairs.
        if let Some(i) = order
            .windows(2)
            .position(|w| matches!(w, [Op::One(f), Op::One(b)] if f.kind == PassKind::F && b.kind == PassKind::BW))
        {
            let (Op::One(f), Op::One(b)) = (order[i], order[i + 1]) else { unreachable!() };
            order.splice(i..i + 2, [Op::Pair(f, b)]);
        }
    }
    schedules.push(pairs);
    for seed in 0..60 {
        let devices = 2 + (seed % 3) as u32;
        let placement = match seed % 4 {
            0 => Placement::linear(devices),
            1 => Placement::interleaved(devices, 2),
            2 => Placement::v_shape(devices),
            _ => Placement::custom(devices, (0..devices + 1).map(|s| (s * 7 + seed as u32) % devices).collect()),
        };
        schedules.push(shuffled(placement, 2 + (seed % 5) as u32, seed));
    }
    for s in &schedules {
        assert_eq!(crate::validate(s), vec![]);
        let ops: Vec<Vec<Lowered>> = s.orders.iter().map(|o| o.iter().map(|&op| Lowered::Op(op)).collect()).collect();
        for dialect in [Dialect::Current, Dialect::Legacy] {
            let rows: Vec<String> =
                add_send_recv(s, ops.clone(), dialect).unwrap().iter().map(|r| write_row(r, dialect)).collect();
            assert_eq!(rows, add_send_recv_as_pytorch(s, &ops, dialect), "{:?}", s.placement);
        }
        // With UNSHARD, RESHARD and REDUCE_GRAD in the lists, each taking a round.
        for torch in TorchVersion::ALL {
            let lists: Vec<Vec<Lowered>> = s
                .orders
                .iter()
                .map(|o| add_reduce_grad(&add_unshard_reshard(o, torch), s.microbatches, torch))
                .collect();
            let rows: Vec<String> = add_send_recv(s, lists.clone(), Dialect::Current)
                .unwrap()
                .iter()
                .map(|r| write_row(r, Dialect::Current))
                .collect();
            assert_eq!(rows, add_send_recv_as_pytorch(s, &lists, Dialect::Current), "{:?}", s.placement);
        }
    }
}

#[test]
fn placement_detection_prefers_known_layouts() {
    assert_eq!(detect_placement(4, vec![0, 1, 2, 3]), Placement::linear(4));
    assert_eq!(detect_placement(2, vec![0, 1, 0, 1]), Placement::interleaved(2, 2));
    assert_eq!(detect_placement(2, vec![0, 1, 1, 0]), Placement::v_shape(2));
    assert_eq!(detect_placement(2, vec![0, 1, 1, 0, 0, 1, 1, 0]), Placement::wave(2, 2));
    assert_eq!(detect_placement(2, vec![1, 0]), Placement::custom(2, vec![1, 0]));
    assert_eq!(detect_placement(1, vec![0, 0]), Placement::interleaved(1, 2));
}
