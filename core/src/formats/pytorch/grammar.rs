//! The cell grammar: reading a cell into a token, and writing passes and ops in a dialect.

use std::fmt::Write as _;

use crate::schedule::{Op, Pass, PassKind};

use super::super::text::quote;
use super::super::Dialect;

// ---------------------------------------------------------------------------------------------
// Cells

/// A compute action type as written, before the dialect gives it a meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Word {
    F,
    I,
    B,
    W,
    Bw,
}

impl Word {
    pub(super) fn text(self) -> &'static str {
        match self {
            Word::F => "F",
            Word::I => "I",
            Word::B => "B",
            Word::W => "W",
            Word::Bw => "BW",
        }
    }
}

/// A compute action as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RawPass {
    pub(super) word: Word,
    pub(super) stage: u32,
    pub(super) microbatch: u32,
}

/// A point-to-point communication action, or (torch 2.15) the wait for a send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum CommKind {
    SendF,
    RecvF,
    SendB,
    RecvB,
    WaitSendF,
    WaitSendB,
}

impl CommKind {
    pub(super) fn text(self) -> &'static str {
        match self {
            CommKind::SendF => "SEND_F",
            CommKind::RecvF => "RECV_F",
            CommKind::SendB => "SEND_B",
            CommKind::RecvB => "RECV_B",
            CommKind::WaitSendF => "WAIT_SEND_F",
            CommKind::WaitSendB => "WAIT_SEND_B",
        }
    }

    pub(super) fn is_send(self) -> bool {
        matches!(self, CommKind::SendF | CommKind::SendB)
    }

    /// A SEND or RECV (not a wait).
    pub(super) fn is_transfer(self) -> bool {
        !self.is_wait()
    }

    pub(super) fn is_wait(self) -> bool {
        matches!(self, CommKind::WaitSendF | CommKind::WaitSendB)
    }

    /// The wait that retires this send (torch 2.15), or the send this wait retires.
    pub(super) fn wait_pair(self) -> Option<CommKind> {
        match self {
            CommKind::SendF => Some(CommKind::WaitSendF),
            CommKind::SendB => Some(CommKind::WaitSendB),
            CommKind::WaitSendF => Some(CommKind::SendF),
            CommKind::WaitSendB => Some(CommKind::SendB),
            CommKind::RecvF | CommKind::RecvB => None,
        }
    }
}

/// A communication action: its kind, the stage it is written with, and the microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Comm {
    pub(super) kind: CommKind,
    pub(super) stage: u32,
    pub(super) microbatch: u32,
}

impl Comm {
    pub(super) fn write(self, out: &mut String) {
        let _ = write!(out, "{}{}{}", self.stage, self.kind.text(), self.microbatch);
    }

    pub(super) fn text(self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// A per-stage action without microbatch: FSDP's parameter gathering and freeing, and the
/// gradient reduction (where the runtime divides a stage's gradients by M).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum StageKind {
    Unshard,
    Reshard,
    ReduceGrad,
    WaitReduceGrad,
}

impl StageKind {
    pub(super) fn text(self) -> &'static str {
        match self {
            StageKind::Unshard => "UNSHARD",
            StageKind::Reshard => "RESHARD",
            StageKind::ReduceGrad => "REDUCE_GRAD",
            StageKind::WaitReduceGrad => "WAIT_REDUCE_GRAD",
        }
    }
}

/// A per-stage action: its kind and stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct StageAction {
    pub(super) kind: StageKind,
    pub(super) stage: u32,
}

impl StageAction {
    pub(super) fn write(self, out: &mut String) {
        let _ = write!(out, "{}{}", self.stage, self.kind.text());
    }

    pub(super) fn text(self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// What one cell holds.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    /// An empty cell: an idle slot.
    Idle,
    /// One compute action.
    Compute(RawPass),
    /// `(a;b)OVERLAP_F_B`: two compute actions overlapped.
    Pair(RawPass, RawPass),
    /// One communication action, or two for the legacy fused cells.
    Comms(Vec<Comm>),
    /// `UNSHARD`, `RESHARD`, `REDUCE_GRAD` or `WAIT_REDUCE_GRAD`.
    Stage(StageAction),
    /// Not a cell of the grammar: why, and a hint (boxed: rare, and cells are many).
    Bad(Box<(String, String)>),
}

pub(super) const GRAMMAR_HINT: &str =
    "a cell is `<stage><type><microbatch>` such as `0F1`, `3I0`, `2W5` or `4SEND_F2`, \
                            an overlapped pair such as `(0F7;7B3)OVERLAP_F_B`, or empty";
pub(super) const TYPES_HINT: &str =
    "the types PyTorch writes are F, I, W and B (current dialect; F, B, W and BW in the \
                          legacy one), OVERLAP_F_B, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD and REDUCE_GRAD, \
                          and since torch 2.15 WAIT_SEND_F, WAIT_SEND_B and WAIT_REDUCE_GRAD";

/// Every action type of the grammar, as written.
const WORDS: [&str; 16] = [
    "F",
    "I",
    "B",
    "W",
    "BW",
    "SEND_F",
    "RECV_F",
    "SEND_B",
    "RECV_B",
    "WAIT_SEND_F",
    "WAIT_SEND_B",
    "UNSHARD",
    "RESHARD",
    "REDUCE_GRAD",
    "WAIT_REDUCE_GRAD",
    "OVERLAP_F_B",
];

pub(super) fn bad(reason: impl Into<String>, hint: &str) -> Token {
    Token::Bad(Box::new((reason.into(), hint.to_string())))
}

/// Reads one cell (already unquoted).
pub(super) fn parse_cell(cell: &str) -> Token {
    let cell = cell.trim();
    if cell.is_empty() {
        return Token::Idle;
    }
    if let Some(inner) = cell.strip_prefix('(') {
        return parse_pair(inner);
    }
    let mut cursor = Cursor { text: cell, at: 0 };
    match parse_action(&mut cursor) {
        Err(token) => token,
        Ok(first) => {
            let rest = cursor.rest();
            match first {
                Action::Comm(send) if rest.starts_with('_') && send.kind.is_send() => {
                    // Legacy fused cell: `<s>SEND_F<m>_<s'>RECV_B<m'>` or `SEND_B … RECV_F`.
                    cursor.at += 1;
                    match parse_action(&mut cursor) {
                        Ok(Action::Comm(recv))
                            if matches!(recv.kind, CommKind::RecvF | CommKind::RecvB) && cursor.rest().is_empty() =>
                        {
                            Token::Comms(vec![send, recv])
                        }
                        Err(token) => token,
                        _ => bad(format!("unexpected {} after {}", quote(rest), quote(&send.text())), GRAMMAR_HINT),
                    }
                }
                _ if !rest.is_empty() => {
                    let done = &cell[..cell.len() - rest.len()];
                    bad(format!("unexpected {} after {}", quote(rest), quote(done)), GRAMMAR_HINT)
                }
                Action::Compute(p) => Token::Compute(p),
                Action::Comm(c) => Token::Comms(vec![c]),
                Action::Stage(a) => Token::Stage(a),
            }
        }
    }
}

/// `(a;b)OVERLAP_F_B`, after the opening parenthesis.
pub(super) fn parse_pair(inner: &str) -> Token {
    let Some((list, container)) = inner.split_once(')') else {
        return bad("the `(` is never closed", "an overlapped pair is written `(0F7;7B3)OVERLAP_F_B`");
    };
    if container.trim() != "OVERLAP_F_B" {
        return bad(
            format!("unknown container type {}, expected `OVERLAP_F_B`", quote(container.trim())),
            "an overlapped pair is written `(0F7;7B3)OVERLAP_F_B`",
        );
    }
    let mut passes = Vec::new();
    for part in list.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let mut cursor = Cursor { text: part, at: 0 };
        match parse_action(&mut cursor) {
            Ok(Action::Compute(p)) if cursor.rest().is_empty() => passes.push(p),
            Err(token) => return token,
            _ => {
                return bad(
                    format!("{} cannot be overlapped: an overlapped pair holds compute actions", quote(part)),
                    "an overlapped pair is written `(0F7;7B3)OVERLAP_F_B`",
                )
            }
        }
    }
    match passes.as_slice() {
        [a, b] => Token::Pair(*a, *b),
        _ => bad(
            format!("an overlapped pair holds two actions, a forward and a backward, found {}", passes.len()),
            "an overlapped pair is written `(0F7;7B3)OVERLAP_F_B`",
        ),
    }
}

/// One action of a cell (a pair has two, a legacy fused cell two communications).
pub(super) enum Action {
    Compute(RawPass),
    Comm(Comm),
    Stage(StageAction),
}

/// A position in a cell's text.
pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    pub(super) at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    /// The longest prefix of the rest whose characters satisfy `f`, consumed.
    pub(super) fn take(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let n = rest.find(|c| !f(c)).unwrap_or(rest.len());
        self.at += n;
        &rest[..n]
    }

    /// The number at the cursor, if there are digits.
    pub(super) fn number(&mut self) -> Result<Option<u32>, Token> {
        let digits = self.take(|c| c.is_ascii_digit());
        if digits.is_empty() {
            return Ok(None);
        }
        digits.parse::<u32>().map(Some).map_err(|_| {
            bad(
                format!("the number {} is too large", quote(digits)),
                "stage and microbatch numbers are at most 4294967295",
            )
        })
    }
}

/// `<stage><TYPE><microbatch>` at the cursor.
pub(super) fn parse_action(cursor: &mut Cursor) -> Result<Action, Token> {
    let Some(stage) = cursor.number()? else {
        return Err(bad(format!("expected a stage number at {}", quote(cursor.rest())), GRAMMAR_HINT));
    };
    let word = cursor.take(|c| c.is_ascii_alphabetic() || c == '_');
    // `SEND_F3_2RECV_B1`: the type is `SEND_F`, the `_` belongs to the fused tail.
    let word = word.trim_end_matches('_');
    cursor.at = cursor.text[..cursor.at].trim_end_matches('_').len();
    let microbatch = cursor.number()?;
    let compute = |word| -> Result<Action, Token> {
        match microbatch {
            Some(microbatch) => Ok(Action::Compute(RawPass { word, stage, microbatch })),
            None => Err(missing_microbatch(stage, word.text())),
        }
    };
    let comm = |kind| -> Result<Action, Token> {
        match microbatch {
            Some(microbatch) => Ok(Action::Comm(Comm { kind, stage, microbatch })),
            None => Err(missing_microbatch(stage, kind.text())),
        }
    };
    match word {
        "F" => compute(Word::F),
        "I" => compute(Word::I),
        "B" => compute(Word::B),
        "W" => compute(Word::W),
        "BW" => compute(Word::Bw),
        "SEND_F" => comm(CommKind::SendF),
        "RECV_F" => comm(CommKind::RecvF),
        "SEND_B" => comm(CommKind::SendB),
        "RECV_B" => comm(CommKind::RecvB),
        "WAIT_SEND_F" => comm(CommKind::WaitSendF),
        "WAIT_SEND_B" => comm(CommKind::WaitSendB),
        // PyTorch's grammar allows a microbatch here and ignores it; so does this one.
        "UNSHARD" => Ok(Action::Stage(StageAction { kind: StageKind::Unshard, stage })),
        "RESHARD" => Ok(Action::Stage(StageAction { kind: StageKind::Reshard, stage })),
        "REDUCE_GRAD" => Ok(Action::Stage(StageAction { kind: StageKind::ReduceGrad, stage })),
        "WAIT_REDUCE_GRAD" => Ok(Action::Stage(StageAction { kind: StageKind::WaitReduceGrad, stage })),
        "" => Err(bad(format!("expected an action type after the stage number {stage}"), TYPES_HINT)),
        other => {
            let upper = other.to_ascii_uppercase();
            let hint = if upper != other && WORDS.contains(&upper.as_str()) {
                format!("types are upper case: `{stage}{upper}…`")
            } else {
                TYPES_HINT.to_string()
            };
            Err(Token::Bad(Box::new((format!("unknown action type {}", quote(other)), hint))))
        }
    }
}

pub(super) fn missing_microbatch(stage: u32, word: &str) -> Token {
    bad(
        format!("expected a microbatch number after `{stage}{word}`"),
        "compute, SEND/RECV and WAIT_SEND actions name their microbatch, e.g. `0F1`",
    )
}

// ---------------------------------------------------------------------------------------------
// Dialects

/// How `dialect` reads `word`, or why it cannot.
pub(super) fn pass_kind(word: Word, dialect: Dialect) -> Result<PassKind, &'static str> {
    match (dialect, word) {
        (_, Word::F) => Ok(PassKind::F),
        (_, Word::W) => Ok(PassKind::W),
        (Dialect::Current, Word::I) => Ok(PassKind::B),
        (Dialect::Current, Word::B) => Ok(PassKind::BW),
        (Dialect::Legacy, Word::B) => Ok(PassKind::B),
        (Dialect::Legacy, Word::Bw) => Ok(PassKind::BW),
        (Dialect::Current, Word::Bw) => {
            Err("`BW` is the legacy dialect's full backward, but this file is read in the current dialect")
        }
        (Dialect::Legacy, Word::I) => {
            Err("`I` is the current dialect's input-gradient action, but this file is read in the legacy dialect")
        }
    }
}

/// The text `dialect` writes for `kind`.
pub(super) fn kind_text(kind: PassKind, dialect: Dialect) -> &'static str {
    match (dialect, kind) {
        (_, PassKind::F) => "F",
        (_, PassKind::W) => "W",
        (Dialect::Current, PassKind::B) => "I",
        (Dialect::Current, PassKind::BW) => "B",
        (Dialect::Legacy, PassKind::B) => "B",
        (Dialect::Legacy, PassKind::BW) => "BW",
        (_, PassKind::R) => "R",
        // PyTorch has no action for these; the export refuses schedules that hold them first.
        (_, PassKind::S) => "S",
        (_, PassKind::T) => "T",
        (_, PassKind::IF) => "IF",
        (_, PassKind::IB) => "IB",
    }
}

/// Writes the cell of `pass` in `dialect`, e.g. `7I0`.
pub(super) fn write_pass(out: &mut String, pass: Pass, dialect: Dialect) {
    let _ = write!(out, "{}{}{}", pass.stage, kind_text(pass.kind, dialect), pass.microbatch);
}

/// Writes the cell of `op` in `dialect`.
pub(super) fn write_op(out: &mut String, op: &Op, dialect: Dialect) {
    match *op {
        Op::One(p) => write_pass(out, p, dialect),
        Op::Pair(f, b) => {
            out.push('(');
            write_pass(out, f, dialect);
            out.push(';');
            write_pass(out, b, dialect);
            out.push_str(")OVERLAP_F_B");
        }
    }
}

/// The cell of `pass` in `dialect`.
pub(super) fn pass_text(pass: Pass, dialect: Dialect) -> String {
    let mut out = String::new();
    write_pass(&mut out, pass, dialect);
    out
}

/// The cell of `op` in `dialect`.
pub(super) fn op_text(op: &Op, dialect: Dialect) -> String {
    let mut out = String::new();
    write_op(&mut out, op, dialect);
    out
}

/// Starts a new cell in a CSV row being written.
pub(super) fn next_cell(row: &mut String) -> &mut String {
    if !row.is_empty() {
        row.push(',');
    }
    row
}

/// The compute and communication actions of a file, read in its dialect, each with its (row,
/// column), in file order.
#[derive(Default)]
pub(super) struct Actions {
    /// Compute ops.
    pub(super) ops: Vec<(u32, usize, Op)>,
    /// SEND and RECV actions.
    pub(super) comms: Vec<(u32, usize, Comm)>,
    /// WAIT_SEND_F and WAIT_SEND_B actions.
    pub(super) waits: Vec<(u32, usize, Comm)>,
    /// UNSHARD, RESHARD, REDUCE_GRAD and WAIT_REDUCE_GRAD actions.
    pub(super) stage_actions: Vec<(u32, usize, StageAction)>,
}

impl Actions {
    /// Whether the file is in the compute+comms form: it has SEND, RECV or WAIT_SEND cells.
    pub(super) fn has_comms(&self) -> bool {
        !self.comms.is_empty() || !self.waits.is_empty()
    }
}
