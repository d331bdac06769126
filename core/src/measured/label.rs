//! What a pipeline span's label names: a compute pass (PyTorch's action grammar, read by
//! [`crate::formats::compute_action`], or `ScheduleGPipe`'s `Forward i` and `Backward i`),
//! communication, or the runtime's own work; and a compute op written back as its action.

use crate::formats::compute_action;
use crate::schedule::{Op, PassKind};

/// How the pipeline's work is labelled in one rank's trace.
pub(super) enum Kind {
    Compute(Op),
    Communication,
    Runtime,
}

/// What a label names.
pub(super) fn kind_of(label: &str, rank: u32) -> Result<Kind, (String, String)> {
    if let Some(i) = label.strip_prefix("Forward ").and_then(|n| n.parse().ok()) {
        return Ok(Kind::Compute(Op::One(crate::schedule::Pass::f(rank, i))));
    }
    if let Some(i) = label.strip_prefix("Backward ").and_then(|n| n.parse().ok()) {
        return Ok(Kind::Compute(Op::One(crate::schedule::Pass::bw(rank, i))));
    }
    let word: String = label
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
        .collect();
    match word.as_str() {
        "SEND_F" | "RECV_F" | "SEND_B" | "RECV_B" | "WAIT_SEND_F" | "WAIT_SEND_B" => return Ok(Kind::Communication),
        "UNSHARD" | "RESHARD" | "REDUCE_GRAD" | "WAIT_REDUCE_GRAD" => return Ok(Kind::Runtime),
        _ => {}
    }
    match compute_action(label)? {
        Some(op) => Ok(Kind::Compute(op)),
        None => Ok(Kind::Runtime),
    }
}

/// A compute op as a cell of PyTorch's grammar (current dialect).
pub(super) fn op_cell(op: &Op) -> String {
    let pass = |p: crate::schedule::Pass| {
        let t = match p.kind {
            PassKind::F => "F",
            PassKind::B => "I",
            PassKind::W => "W",
            PassKind::BW => "B",
            PassKind::R => "R",
            PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => p.kind.name(),
        };
        format!("{}{t}{}", p.stage, p.microbatch)
    };
    match *op {
        Op::One(p) => pass(p),
        Op::Pair(a, b) => format!("({};{})OVERLAP_F_B", pass(a), pass(b)),
    }
}
