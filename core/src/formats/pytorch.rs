//! PyTorch's schedule CSV: cell grammar, dialects, placement inference, SEND/RECV checks and
//! the `_add_send_recv` lowering. The rules are in the [module docs](super).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::params::{Costs, MAX_DEVICES, MAX_PASSES};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};

use super::check::{self, Checked, Draft};
use super::csv::{self, TooBig};
use super::text::{count, quote, Diagnostics, Source};
use super::{Dialect, FormatError, ImportOptions, Imported};

/// The two shapes of a PyTorch schedule file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CsvForm {
    /// Compute actions only (PyTorch's `compute_only`), lowered by PyTorch before running.
    ComputeOnly,
    /// Compute and SEND/RECV actions (PyTorch's `compute_comms`), run as written.
    ComputeComms,
}

// ---------------------------------------------------------------------------------------------
// Cells

/// A compute action type as written, before the dialect gives it a meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    F,
    I,
    B,
    W,
    Bw,
}

impl Word {
    fn text(self) -> &'static str {
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
struct RawPass {
    word: Word,
    stage: u32,
    microbatch: u32,
}

/// A point-to-point communication action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum CommKind {
    SendF,
    RecvF,
    SendB,
    RecvB,
}

impl CommKind {
    fn text(self) -> &'static str {
        match self {
            CommKind::SendF => "SEND_F",
            CommKind::RecvF => "RECV_F",
            CommKind::SendB => "SEND_B",
            CommKind::RecvB => "RECV_B",
        }
    }

    fn is_send(self) -> bool {
        matches!(self, CommKind::SendF | CommKind::SendB)
    }
}

/// A communication action: its kind, the stage it is written with, and the microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Comm {
    kind: CommKind,
    stage: u32,
    microbatch: u32,
}

impl Comm {
    fn write(self, out: &mut String) {
        let _ = write!(out, "{}{}{}", self.stage, self.kind.text(), self.microbatch);
    }

    fn text(self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// What one cell holds.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// An empty cell: an idle slot.
    Idle,
    /// One compute action.
    Compute(RawPass),
    /// `(a;b)OVERLAP_F_B`: two compute actions overlapped.
    Pair(RawPass, RawPass),
    /// One communication action, or two for the legacy fused cells.
    Comms(Vec<Comm>),
    /// `UNSHARD`, `RESHARD` or `REDUCE_GRAD`: not modelled.
    Ignored,
    /// Not a cell of the grammar: why, and a hint (boxed: rare, and cells are many).
    Bad(Box<(String, String)>),
}

const GRAMMAR_HINT: &str = "a cell is `<stage><type><microbatch>` such as `0F1`, `3I0`, `2W5` or `4SEND_F2`, \
                            an overlapped pair such as `(0F7;7B3)OVERLAP_F_B`, or empty";
const TYPES_HINT: &str = "types are F, I, W and B (current dialect) or F, B, W and BW (legacy), \
                          plus SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD and REDUCE_GRAD";

fn bad(reason: impl Into<String>, hint: &str) -> Token {
    Token::Bad(Box::new((reason.into(), hint.to_string())))
}

/// Reads one cell (already unquoted).
fn parse_cell(cell: &str) -> Token {
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
                        Ok(Action::Comm(recv)) if !recv.kind.is_send() && cursor.rest().is_empty() => {
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
                Action::Ignored => Token::Ignored,
            }
        }
    }
}

/// `(a;b)OVERLAP_F_B`, after the opening parenthesis.
fn parse_pair(inner: &str) -> Token {
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
enum Action {
    Compute(RawPass),
    Comm(Comm),
    Ignored,
}

/// A position in a cell's text.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    /// The longest prefix of the rest whose characters satisfy `f`, consumed.
    fn take(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let n = rest.find(|c| !f(c)).unwrap_or(rest.len());
        self.at += n;
        &rest[..n]
    }

    /// The number at the cursor, if there are digits.
    fn number(&mut self) -> Result<Option<u32>, Token> {
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
fn parse_action(cursor: &mut Cursor) -> Result<Action, Token> {
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
        "UNSHARD" | "RESHARD" | "REDUCE_GRAD" => Ok(Action::Ignored),
        "" => Err(bad(format!("expected an action type after the stage number {stage}"), TYPES_HINT)),
        other => {
            let upper = other.to_ascii_uppercase();
            let hint = if upper != other && ["F", "I", "B", "W", "BW"].contains(&upper.as_str()) {
                format!("types are upper case: `{stage}{upper}…`")
            } else {
                TYPES_HINT.to_string()
            };
            Err(Token::Bad(Box::new((format!("unknown action type {}", quote(other)), hint))))
        }
    }
}

fn missing_microbatch(stage: u32, word: &str) -> Token {
    bad(
        format!("expected a microbatch number after `{stage}{word}`"),
        "compute and SEND/RECV actions name their microbatch, e.g. `0F1`",
    )
}

// ---------------------------------------------------------------------------------------------
// Dialects

/// How `dialect` reads `word`, or why it cannot.
fn pass_kind(word: Word, dialect: Dialect) -> Result<PassKind, &'static str> {
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
fn kind_text(kind: PassKind, dialect: Dialect) -> &'static str {
    match (dialect, kind) {
        (_, PassKind::F) => "F",
        (_, PassKind::W) => "W",
        (Dialect::Current, PassKind::B) => "I",
        (Dialect::Current, PassKind::BW) => "B",
        (Dialect::Legacy, PassKind::B) => "B",
        (Dialect::Legacy, PassKind::BW) => "BW",
    }
}

/// Writes the cell of `pass` in `dialect`, e.g. `7I0`.
fn write_pass(out: &mut String, pass: Pass, dialect: Dialect) {
    let _ = write!(out, "{}{}{}", pass.stage, kind_text(pass.kind, dialect), pass.microbatch);
}

/// Writes the cell of `op` in `dialect`.
fn write_op(out: &mut String, op: &Op, dialect: Dialect) {
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
fn pass_text(pass: Pass, dialect: Dialect) -> String {
    let mut out = String::new();
    write_pass(&mut out, pass, dialect);
    out
}

/// The cell of `op` in `dialect`.
fn op_text(op: &Op, dialect: Dialect) -> String {
    let mut out = String::new();
    write_op(&mut out, op, dialect);
    out
}

/// Starts a new cell in a CSV row being written.
fn next_cell(row: &mut String) -> &mut String {
    if !row.is_empty() {
        row.push(',');
    }
    row
}

/// Where the dialect was decided: the first `I` and the first `BW` cell, if any.
struct DialectEvidence {
    i: Option<(u32, usize)>,
    bw: Option<(u32, usize)>,
    w: bool,
}

impl DialectEvidence {
    fn dialect(&self) -> Dialect {
        match (self.i, self.bw) {
            (Some(_), _) => Dialect::Current,
            (None, Some(_)) => Dialect::Legacy,
            (None, None) if self.w => Dialect::Legacy,
            (None, None) => Dialect::Current,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Import

/// A cell read from the file, located.
struct Cell {
    row: u32,
    column: usize,
    token: Token,
}

/// The compute and communication actions of a file, read in its dialect.
#[derive(Default)]
struct Actions {
    /// Compute ops with their (row, column).
    ops: Vec<(u32, usize, Op)>,
    /// SEND/RECV actions with their (row, column).
    comms: Vec<(u32, usize, Comm)>,
    /// The first UNSHARD/RESHARD/REDUCE_GRAD cell and how many there are.
    ignored: Option<(u32, usize, usize)>,
}

/// Reads a PyTorch CSV. `expect_comms`: the caller asked for the compute+comms form.
pub(super) fn import(text: &str, expect_comms: bool, options: &ImportOptions, source: &Source) -> Imported {
    let mut out = Diagnostics::default();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let table = match csv::read(text, MAX_DEVICES as usize, MAX_PASSES as usize) {
        Ok(table) => table,
        Err(TooBig::Rows) => {
            return Imported::failed(
                source
                    .error(format!("the file has more than {MAX_DEVICES} rows, but one row is one device and at most {MAX_DEVICES} are supported"))
                    .hint("is this a schedule file? PyTorch writes one row per rank"),
            )
        }
        Err(TooBig::Cells) => {
            return Imported::failed(
                source
                    .error(format!("the file has more than {MAX_PASSES} cells, more than the engine simulates"))
                    .hint("use fewer ranks or microbatches"),
            )
        }
    };
    if table.rows.iter().all(Vec::is_empty) {
        return Imported::failed(
            source
                .error("the file has no actions")
                .hint("PyTorch's schedule CSV has one row per rank, e.g. `0F0,0F1,0B0,0B1`"),
        );
    }
    if let Some((row, column)) = table.unterminated {
        out.push(
            source
                .error_at(row as u32, column, "a quoted cell is never closed: it runs to the end of the file")
                .hint("close it with `\"`"),
        );
    }
    let rows = table.rows.len();

    let (cells, evidence) = tokenize(&table, source, &mut out);
    let dialect = options.dialect.unwrap_or_else(|| evidence.dialect());
    let mut actions = read_actions(&cells, dialect, options.dialect.is_some(), &evidence, &table, source, &mut out);
    drop(cells);
    if options.merge_bw {
        merge_bw(&mut actions.ops);
    }
    if actions.ops.is_empty() {
        out.push(
            source
                .error("the file has no compute actions (F, I, W, B, BW)")
                .hint("PyTorch's schedule CSV has one row per rank, e.g. `0F0,0F1,0B0,0B1`"),
        );
        return Imported { schedule: None, costs: None, diagnostics: out.finish() };
    }

    // The placement and sizes the cells imply.
    let namer = move |p: Pass| pass_text(p, dialect);
    let Some(placement) = infer_placement(&mut actions.ops, rows as u32, source, &namer, &mut out) else {
        return Imported { schedule: None, costs: None, diagnostics: out.finish() };
    };
    let Some(microbatches) = count_microbatches(&actions.ops, &placement, source, &mut out) else {
        return Imported { schedule: None, costs: None, diagnostics: out.finish() };
    };

    // The schedule, checked in the file's terms.
    let mut draft_rows: Vec<Vec<(Op, usize)>> = vec![Vec::new(); rows];
    for (row, column, op) in actions.ops {
        draft_rows[row as usize].push((op, column));
    }
    let draft = Draft { placement, microbatches, slices: 1, rows: draft_rows };
    let checked = check::check(draft, source, &namer, &Costs::default(), &mut out);

    if !actions.comms.is_empty() {
        check_comms(&checked, &actions.comms, source, &namer, &mut out);
    } else if expect_comms && needs_comms(&checked.schedule) {
        out.push(
            source
                .error("the file has no SEND or RECV actions, but the compute+comms form needs them wherever data crosses rows")
                .hint("read it as pytorch-csv (compute only)"),
        );
    }
    if let Some((row, column, n)) = actions.ignored {
        let first = quote(table.cell(row, column));
        let what = match n {
            1 => format!("{first} is ignored"),
            n => format!("{first} and {} are ignored", count(n - 1, "more UNSHARD/RESHARD/REDUCE_GRAD action")),
        };
        out.push(source.warning_at(
            row,
            column,
            format!("{what}: FSDP and gradient-reduction actions are not modelled"),
        ));
    }
    Imported { schedule: Some(checked.schedule), costs: None, diagnostics: out.finish() }
}

/// Every non-empty cell as a token, and what the cells say about the dialect. Unreadable
/// cells are reported and left out.
fn tokenize(table: &csv::Table, source: &Source, out: &mut Diagnostics) -> (Vec<Cell>, DialectEvidence) {
    let mut cells: Vec<Cell> = Vec::new();
    let mut evidence = DialectEvidence { i: None, bw: None, w: false };
    for (row, texts) in table.rows.iter().enumerate() {
        let row = row as u32;
        for (column, text) in texts.iter().enumerate() {
            let token = parse_cell(text);
            let mut note = |raw: &RawPass| match raw.word {
                Word::I => {
                    evidence.i.get_or_insert((row, column));
                }
                Word::Bw => {
                    evidence.bw.get_or_insert((row, column));
                }
                Word::W => evidence.w = true,
                Word::F | Word::B => {}
            };
            match &token {
                Token::Idle => continue,
                Token::Compute(p) => note(p),
                Token::Pair(a, b) => {
                    note(a);
                    note(b);
                }
                Token::Bad(bad) => {
                    let (reason, hint) = &**bad;
                    let mut d = source
                        .error_at(row, column, format!("cannot read cell {}: {reason}", quote(text)))
                        .hint(GRAMMAR_HINT);
                    if hint != GRAMMAR_HINT {
                        d = d.hint(hint.clone());
                    }
                    out.push(d.hint("the cell is skipped"));
                    continue;
                }
                Token::Comms(_) | Token::Ignored => {}
            }
            cells.push(Cell { row, column, token });
        }
    }
    (cells, evidence)
}

/// The tokens as passes, ops and communication in `dialect`. Cells the dialect cannot read are
/// reported and left out.
fn read_actions(
    cells: &[Cell],
    dialect: Dialect,
    forced: bool,
    evidence: &DialectEvidence,
    table: &csv::Table,
    source: &Source,
    out: &mut Diagnostics,
) -> Actions {
    let because = match (forced, evidence.i, evidence.bw) {
        (true, ..) => "as chosen".to_string(),
        (false, Some(at), _) => format!("because of the `I` at {}", source.short(at.0, at.1)),
        (false, None, Some(at)) => format!("because of the `BW` at {}", source.short(at.0, at.1)),
        (false, None, None) => "by default".to_string(),
    };
    let mut actions = Actions::default();
    for &Cell { row, column, ref token } in cells {
        let to_pass = |raw: RawPass, out: &mut Diagnostics| match pass_kind(raw.word, dialect) {
            Ok(kind) => Some(Pass::new(kind, raw.stage, raw.microbatch)),
            Err(why) => {
                let hint = if forced {
                    "the file seems to use the other dialect; read it with that one"
                } else {
                    "a file uses one dialect throughout; choose the dialect explicitly if the guess is wrong"
                };
                out.push(
                    source
                        .error_at(
                            row,
                            column,
                            format!("cannot read cell {}: {why} ({because})", quote(table.cell(row, column))),
                        )
                        .hint(hint)
                        .hint("the cell is skipped"),
                );
                None
            }
        };
        match *token {
            Token::Compute(raw) => {
                if let Some(p) = to_pass(raw, out) {
                    actions.ops.push((row, column, Op::One(p)));
                }
            }
            Token::Pair(a, b) => {
                let (Some(a), Some(b)) = (to_pass(a, out), to_pass(b, out)) else { continue };
                let (f, back) = if a.kind == PassKind::F { (a, b) } else { (b, a) };
                if f.kind == PassKind::F && back.kind.is_input_grad() {
                    actions.ops.push((row, column, Op::Pair(f, back)));
                } else {
                    out.push(
                        source
                            .error_at(
                                row,
                                column,
                                format!(
                                "cell {} overlaps `{}` with `{}`, but an overlapped pair is a forward and a backward",
                                quote(table.cell(row, column)),
                                pass_text(a, dialect),
                                pass_text(b, dialect)
                            ),
                            )
                            .hint("the two actions are read as if they were not overlapped"),
                    );
                    actions.ops.push((row, column, Op::One(a)));
                    actions.ops.push((row, column, Op::One(b)));
                }
            }
            Token::Comms(ref list) => actions.comms.extend(list.iter().map(|c| (row, column, *c))),
            Token::Ignored => actions.ignored.get_or_insert((row, column, 0)).2 += 1,
            Token::Idle | Token::Bad(..) => {}
        }
    }
    actions
}

/// The number of microbatches (the largest microbatch number plus one), if the file is not
/// too sparse for it: with fewer actions than (stage, microbatch) pairs it cannot be a
/// schedule, and its tables would be needlessly large.
fn count_microbatches(
    ops: &[(u32, usize, Op)],
    placement: &Placement,
    source: &Source,
    out: &mut Diagnostics,
) -> Option<u32> {
    let microbatches = ops.iter().flat_map(|(_, _, op)| op.passes()).map(|p| p.microbatch).max().map_or(0, |m| m + 1);
    let passes = ops.iter().map(|(_, _, op)| op.passes().count()).sum::<usize>();
    let keys = u64::from(placement.stages()) * u64::from(microbatches);
    if keys <= passes as u64 {
        return Some(microbatches);
    }
    // Stages are bounded already (see `infer_placement`), so a microbatch number is too large.
    let message = format!(
        "the file names stages 0 to {} and microbatches 0 to {}, which needs at least {} actions, but it has {passes}",
        placement.stages().saturating_sub(1),
        microbatches - 1,
        2 * keys
    );
    let culprit = ops.iter().max_by_key(|(_, _, op)| op.passes().map(|p| p.microbatch).max());
    let d = match culprit {
        Some(&(row, column, _)) => source.error_at(row, column, message),
        None => source.error(message),
    };
    out.push(d.hint("check this cell's microbatch number: microbatches are numbered from 0 without gaps"));
    None
}

/// PyTorch's `_merge_bw`: an input-gradient action directly followed (on its row, other cells
/// aside) by the weight-gradient action of the same stage and microbatch becomes one full
/// backward.
fn merge_bw(ops: &mut Vec<(u32, usize, Op)>) {
    let mut merged: Vec<(u32, usize, Op)> = Vec::with_capacity(ops.len());
    let mut i = 0;
    while i < ops.len() {
        let (row, column, op) = ops[i];
        if let (Op::One(b), Some((next_row, _, Op::One(w)))) = (op, ops.get(i + 1)) {
            if b.kind == PassKind::B
                && w.kind == PassKind::W
                && *next_row == row
                && (b.stage, b.microbatch) == (w.stage, w.microbatch)
            {
                merged.push((row, column, Op::One(Pass { kind: PassKind::BW, ..b })));
                i += 2;
                continue;
            }
        }
        merged.push((row, column, op));
        i += 1;
    }
    *ops = merged;
}

/// The stage-to-device table the cells imply, as a placement. A stage on two rows is an error
/// and its cells on the later rows are dropped.
fn infer_placement(
    ops: &mut Vec<(u32, usize, Op)>,
    devices: u32,
    source: &Source,
    name: &dyn Fn(Pass) -> String,
    out: &mut Diagnostics,
) -> Option<Placement> {
    let stages = ops.iter().flat_map(|(_, _, op)| op.passes()).map(|p| p.stage).max().map_or(0, |s| s + 1);
    let passes = ops.iter().map(|(_, _, op)| op.passes().count()).sum::<usize>();
    if stages as usize > passes {
        // Bound the table: a valid file has at least one action per stage.
        let (row, column, op) = ops.iter().max_by_key(|(_, _, op)| op.passes().map(|p| p.stage).max()).copied()?;
        out.push(
            source
                .error_at(
                    row,
                    column,
                    format!(
                        "`{}` names stage {}, but the file has only {passes} actions, so most stages would have none",
                        name(op.first()),
                        stages - 1
                    ),
                )
                .hint("check this cell's stage number"),
        );
        return None;
    }
    // The first (row, column) each stage appears at.
    let mut home: Vec<Option<(u32, usize)>> = vec![None; stages as usize];
    for (row, column, op) in ops.iter() {
        for p in op.passes() {
            home[p.stage as usize].get_or_insert((*row, *column));
        }
    }
    let mut reported: BTreeSet<(u32, u32)> = BTreeSet::new();
    ops.retain_mut(|(row, column, op)| {
        let foreign = |p: &Pass| home[p.stage as usize].is_some_and(|(r, _)| r != *row);
        for p in op.passes().filter(foreign) {
            if reported.insert((p.stage, *row)) {
                let (first_row, first_column) = home[p.stage as usize].unwrap_or((0, 0));
                out.push(
                    source
                        .error_at(
                            *row,
                            *column,
                            format!(
                                "`{}` puts stage {} on row {row}, but it runs on row {first_row} (first at {})",
                                name(p),
                                p.stage,
                                source.short(first_row, first_column)
                            ),
                        )
                        .hint("a stage runs on one rank: PyTorch infers the stage-to-rank map from the rows")
                        .hint(format!("the actions of stage {} on row {row} are skipped", p.stage)),
                );
            }
        }
        let kept: Vec<Pass> = op.passes().filter(|p| !foreign(p)).collect();
        match (*op, kept.as_slice()) {
            (Op::Pair(..), [_, _]) => true,
            (_, [p]) => {
                *op = Op::One(*p);
                true
            }
            _ => false,
        }
    });
    // A stage with no action keeps a device (0) so the table is whole; the check reports it.
    let table: Vec<u32> = home.iter().map(|h| h.map_or(0, |(row, _)| row)).collect();
    Some(detect_placement(devices, table))
}

/// The known placement equal to `table`, or a custom one.
fn detect_placement(devices: u32, table: Vec<u32>) -> Placement {
    let stages = table.len() as u32;
    if devices > 0 && stages > 0 {
        let mut candidates = Vec::new();
        if stages == devices {
            candidates.push(Placement::linear(devices));
        }
        if stages % devices == 0 && stages / devices >= 2 {
            candidates.push(Placement::interleaved(devices, stages / devices));
        }
        if stages == 2 * devices {
            candidates.push(Placement::v_shape(devices));
        }
        if stages % (2 * devices) == 0 && stages / (2 * devices) >= 2 {
            candidates.push(Placement::wave(devices, stages / (2 * devices)));
        }
        if let Some(known) = candidates.into_iter().find(|p| p.stage_devices() == table.as_slice()) {
            return known;
        }
    }
    Placement::custom(devices, table)
}

/// Whether any dependency of `schedule` crosses devices (so a compute+comms file needs a
/// SEND/RECV pair).
fn needs_comms(schedule: &Schedule) -> bool {
    let placement = &schedule.placement;
    (1..placement.stages()).any(|s| placement.device_of(s) != placement.device_of(s - 1))
}

/// The SEND/RECV checks (see the module docs).
fn check_comms(
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
fn partner_of(comm: Comm) -> Comm {
    let Comm { kind, stage, microbatch } = comm;
    match kind {
        CommKind::SendF => Comm { kind: CommKind::RecvF, stage: stage + 1, microbatch },
        CommKind::RecvF => Comm { kind: CommKind::SendF, stage: stage.wrapping_sub(1), microbatch },
        CommKind::SendB => Comm { kind: CommKind::RecvB, stage: stage.wrapping_sub(1), microbatch },
        CommKind::RecvB => Comm { kind: CommKind::SendB, stage: stage + 1, microbatch },
    }
}

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
enum Awaited {
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
fn add_send_recv(schedule: &Schedule, dialect: Dialect) -> Result<Vec<String>, FormatError> {
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
fn stuck_error(schedule: &Schedule, next: &[usize], blocked: &[Option<Awaited>], dialect: Dialect) -> FormatError {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse_cell("1UNSHARD"), Token::Ignored);
        assert_eq!(parse_cell("2REDUCE_GRAD"), Token::Ignored);
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
        assert_eq!(
            reason("(0F1)OVERLAP_F_B"),
            "an overlapped pair holds two actions, a forward and a backward, found 1"
        );
        assert_eq!(
            reason("(0F1;0SEND_F1)OVERLAP_F_B"),
            "`0SEND_F1` cannot be overlapped: an overlapped pair holds compute actions"
        );
        assert_eq!(reason("3"), "expected an action type after the stage number 3");
        assert!(matches!(parse_cell("0f1"), Token::Bad(bad) if bad.1 == "types are upper case: `0F…`"));
    }

    #[test]
    fn dialect_evidence_decides_as_documented() {
        let e = |i, bw, w| DialectEvidence { i, bw, w };
        assert_eq!(e(Some((0, 0)), Some((0, 1)), true).dialect(), Dialect::Current);
        assert_eq!(e(None, Some((0, 1)), false).dialect(), Dialect::Legacy);
        assert_eq!(e(None, None, true).dialect(), Dialect::Legacy);
        assert_eq!(e(None, None, false).dialect(), Dialect::Current);
    }

    /// PyTorch's `_add_send_recv` transcribed loop for loop: every round visits every rank
    /// with actions left, in order. The event-driven version must give the same rows.
    fn add_send_recv_as_pytorch(schedule: &Schedule, dialect: Dialect) -> Vec<String> {
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
        while (0..rows.len()).any(|r| next[r] < schedule.orders[r].len()) {
            let mut progress = false;
            for rank in 0..rows.len() {
                let Some(op) = schedule.orders[rank].get(next[rank]) else { continue };
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
                        PassKind::W => continue,
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

    /// A random valid schedule: the passes of all microbatches in a random interleaving that
    /// keeps each microbatch's chain (forwards down, backwards up) in order.
    fn shuffled(placement: Placement, microbatches: u32, seed: u64) -> Schedule {
        let stages = placement.stages();
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut random = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let chain = |m: u32| -> Vec<Pass> {
            let split = m % 2 == 0;
            let mut passes: Vec<Pass> = (0..stages).map(|st| Pass::f(st, m)).collect();
            for st in (0..stages).rev() {
                if split {
                    passes.extend([Pass::b(st, m), Pass::w(st, m)]);
                } else {
                    passes.push(Pass::bw(st, m));
                }
            }
            passes
        };
        let mut chains: Vec<std::collections::VecDeque<Pass>> = (0..microbatches).map(|m| chain(m).into()).collect();
        let mut s = Schedule::new(placement, microbatches);
        loop {
            let open: Vec<usize> = (0..chains.len()).filter(|&m| !chains[m].is_empty()).collect();
            if open.is_empty() {
                break;
            }
            let m = open[random(open.len())];
            if let Some(pass) = chains[m].pop_front() {
                s.push_placed(pass);
            }
        }
        s
    }

    #[test]
    fn send_recv_lowering_matches_pytorch_by_hand() {
        // 1F1B on 2 devices, 2 microbatches, worked through PyTorch's loop by hand: round 4
        // blocks rank 0 on 0B1 until rank 1 sends the gradient, so 0B1 runs in round 5.
        let s = crate::generate("1f1b", &crate::ScheduleParams::new(2, 2)).unwrap();
        let text = export_pytorch_csv(&s, CsvForm::ComputeComms, Dialect::Current).unwrap();
        assert_eq!(
            text,
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n\
             1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n"
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
            for dialect in [Dialect::Current, Dialect::Legacy] {
                assert_eq!(
                    add_send_recv(s, dialect).unwrap(),
                    add_send_recv_as_pytorch(s, dialect),
                    "{:?}",
                    s.placement
                );
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
}
