//! Reading a PyTorch CSV: cells to actions in the file's dialect, then the checked schedule.

use crate::params::{Costs, MAX_DEVICES, MAX_PASSES};
use crate::schedule::{Op, Pass, PassKind, Placement};

use super::super::check::{self, Draft};
use super::super::csv::{self, TooBig};
use super::super::text::{count, quote, Diagnostics, Source};
use super::super::{Dialect, ImportOptions, Imported};
use super::comms::{check_comms, check_stage_actions, check_waits, needs_comms};
use super::grammar::{parse_cell, pass_kind, pass_text, Actions, RawPass, StageKind, Token, Word, GRAMMAR_HINT};
use super::placement::infer_placement;
use super::{cell_error, cell_warning};

/// Where the dialect was decided: the first `I` and the first `BW` cell, if any, whether there
/// is a `W`, and the first cells only one generation of PyTorch writes: torch 2.15's waits
/// (`WAIT_SEND_F`, `WAIT_SEND_B`, `WAIT_REDUCE_GRAD`) and older PyTorch's fused SEND/RECV cells.
pub(super) struct DialectEvidence {
    pub(super) i: Option<(u32, usize)>,
    pub(super) bw: Option<(u32, usize)>,
    pub(super) w: bool,
    pub(super) waits: Option<(u32, usize)>,
    pub(super) fused: Option<(u32, usize)>,
}

impl DialectEvidence {
    pub(super) fn dialect(&self) -> Dialect {
        match (self.i, self.bw) {
            (Some(_), _) => Dialect::Current,
            (None, Some(_)) => Dialect::Legacy,
            // Torch 2.15's files are in the current dialect.
            (None, None) if self.waits.is_some() => Dialect::Current,
            (None, None) if self.w => Dialect::Legacy,
            (None, None) => Dialect::Current,
        }
    }

    /// A legacy cell and a torch 2.15 cell in the same file, if there are both.
    fn mixed(&self) -> Option<((u32, usize), (u32, usize))> {
        Some((self.waits?, self.bw.or(self.fused)?))
    }
}

// ---------------------------------------------------------------------------------------------
// Import

/// A cell read from the file, located.
pub(super) struct Cell {
    pub(super) row: u32,
    pub(super) column: usize,
    pub(super) token: Token,
}

/// Reads a PyTorch CSV. `expect_comms`: the caller asked for the compute+comms form.
pub(in crate::formats) fn import(text: &str, expect_comms: bool, options: &ImportOptions, source: &Source) -> Imported {
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
        out.push(cell_error(
            source,
            (row as u32, column),
            "a quoted cell is never closed: it runs to the end of the file",
            "close it with `\"`",
        ));
    }
    let rows = table.rows.len();

    let (cells, evidence) = tokenize(&table, source, &mut out);
    let dialect = options.dialect.unwrap_or_else(|| evidence.dialect());
    if let Some((modern, legacy)) = evidence.mixed() {
        out.push(cell_error(
            source,
            modern,
            format!(
                "the file mixes dialects: {} is torch 2.15's, but {} at {} is the legacy dialect's, \
                 which PyTorch stopped writing before 2.14",
                quote(table.cell(modern.0, modern.1)),
                quote(table.cell(legacy.0, legacy.1)),
                source.short(legacy.0, legacy.1)
            ),
            "a file is written for one PyTorch version: torch 2.15's use F, I, W, B and one SEND or RECV per \
             cell; write it again with `bubblescope convert IN OUT --to-format pytorch-csv-comms --torch 2.15`",
        ));
    }
    let mut actions = read_actions(&cells, dialect, options.dialect.is_some(), &evidence, &table, source, &mut out);
    drop(cells);
    renumber_1f1b_forwards(&mut actions.ops, &table, source, &mut out);
    if options.merge_bw {
        merge_bw(&mut actions.ops);
    }
    if actions.ops.is_empty() {
        out.push(
            source
                .error("the file has no compute actions (F, I, W, B, BW)")
                .hint("PyTorch's schedule CSV has one row per rank, e.g. `0F0,0F1,0B0,0B1`"),
        );
        return Imported { schedule: None, costs: None, times: None, diagnostics: out.finish() };
    }

    // The placement and sizes the cells imply.
    let namer = move |p: Pass| pass_text(p, dialect);
    let Some(placement) = infer_placement(&mut actions.ops, rows as u32, source, &namer, &mut out) else {
        return Imported { schedule: None, costs: None, times: None, diagnostics: out.finish() };
    };
    let Some(microbatches) = count_microbatches(&actions.ops, &placement, source, &mut out) else {
        return Imported { schedule: None, costs: None, times: None, diagnostics: out.finish() };
    };

    // The schedule, checked in the file's terms.
    let mut draft_rows: Vec<Vec<(Op, usize)>> = vec![Vec::new(); rows];
    for &(row, column, op) in &actions.ops {
        draft_rows[row as usize].push((op, column));
    }
    let draft = Draft { placement, microbatches, slices: 1, rows: draft_rows };

    // Torch 2.15 refuses a file whose sends and waits do not pair before it runs anything, and
    // so does this reader: such a file is not simulated.
    let paired = check_waits(&actions, &table, source, &namer, &mut out);
    let checked = check::check_then_simulate(draft, source, &namer, &Costs::default(), &mut out, paired);

    if !actions.comms.is_empty() {
        check_comms(&checked, &actions.comms, source, &namer, &mut out);
    } else if expect_comms && needs_comms(&checked.schedule) {
        out.push(
            source
                .error("the file has no SEND or RECV actions, but the compute+comms form needs them wherever data crosses rows")
                .hint("read it as pytorch-csv (compute only)"),
        );
    }
    // A file whose rows exchange nothing is in either form; with per-stage actions it is
    // PyTorch's lowering of a one-rank order.
    let comms_form =
        actions.has_comms() || expect_comms || (!actions.stage_actions.is_empty() && !needs_comms(&checked.schedule));
    if comms_form {
        // What PyTorch 2.14 and 2.15 do with the file; older PyTorch's legacy files had neither
        // REDUCE_GRAD nor waits.
        // Advice on what PyTorch would do with a file that reads well: not piled on errors.
        let advise = dialect == Dialect::Current && out.errors() == 0;
        check_stage_actions(&checked, &actions, &table, source, &namer, advise, &mut out);
        if advise && evidence.waits.is_none() {
            if let Some(&(row, column, _)) = actions.comms.iter().find(|(_, _, c)| c.kind.is_send()) {
                out.push(cell_warning(
                    source,
                    (row, column),
                    format!(
                        "the file has SEND actions but no WAIT_SEND: torch 2.14 runs it, torch 2.15 refuses it \
                         (\"Pipeline sends at rank {row} have no matching wait\")"
                    ),
                    "write it for torch 2.15 with `bubblescope convert IN OUT --to-format pytorch-csv-comms --torch 2.15`",
                ));
            }
        }
    } else if let Some(&(row, column, first)) = actions.stage_actions.first() {
        let n = actions.stage_actions.len();
        let what = match n {
            1 => format!("{} is", quote(&first.text())),
            n => format!("{} and {} are", quote(&first.text()), count(n - 1, "more action")),
        };
        out.push(cell_warning(
            source,
            (row, column),
            format!(
                "{what} not compute actions: PyTorch's `_load_csv(format=\"compute_only\")` refuses them \
                 in a compute-only file (its lowering adds them); read here and ignored"
            ),
            "delete them to give PyTorch the file, or add the SEND/RECV actions and load it as compute_comms",
        ));
    }
    Imported { schedule: Some(checked.schedule), costs: None, times: None, diagnostics: out.finish() }
}

/// Every non-empty cell as a token, and what the cells say about the dialect. Unreadable
/// cells are reported and left out.
pub(super) fn tokenize(table: &csv::Table, source: &Source, out: &mut Diagnostics) -> (Vec<Cell>, DialectEvidence) {
    let mut cells: Vec<Cell> = Vec::new();
    let mut evidence = DialectEvidence { i: None, bw: None, w: false, waits: None, fused: None };
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
                Token::Comms(list) => {
                    if list.len() > 1 {
                        evidence.fused.get_or_insert((row, column));
                    } else if list.iter().any(|c| c.kind.is_wait()) {
                        evidence.waits.get_or_insert((row, column));
                    }
                }
                Token::Stage(a) => {
                    if a.kind == StageKind::WaitReduceGrad {
                        evidence.waits.get_or_insert((row, column));
                    }
                }
            }
            cells.push(Cell { row, column, token });
        }
    }
    (cells, evidence)
}

/// The tokens as passes, ops and communication in `dialect`. Cells the dialect cannot read are
/// reported and left out.
pub(super) fn read_actions(
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
                    let message = format!(
                        "cell {} overlaps `{}` with `{}`, but an overlapped pair is a forward and a backward",
                        quote(table.cell(row, column)),
                        pass_text(a, dialect),
                        pass_text(b, dialect)
                    );
                    let error = source.error_at(row, column, message);
                    out.push(error.hint("the two actions are read as if they were not overlapped"));
                    actions.ops.push((row, column, Op::One(a)));
                    actions.ops.push((row, column, Op::One(b)));
                }
            }
            Token::Comms(ref list) => {
                for &c in list {
                    if c.kind.is_wait() {
                        actions.waits.push((row, column, c));
                    } else {
                        actions.comms.push((row, column, c));
                    }
                }
            }
            Token::Stage(a) => actions.stage_actions.push((row, column, a)),
            Token::Idle | Token::Bad(..) => {}
        }
    }
    actions
}

/// The number of microbatches (the largest microbatch number plus one), if the file is not
/// too sparse for it: with fewer actions than (stage, microbatch) pairs it cannot be a
/// schedule, and its tables would be needlessly large.
pub(super) fn count_microbatches(
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

/// PyTorch's `_merge_bw` (defined in 2.14 and 2.15, called by neither's runtime): an
/// input-gradient action directly followed (on its row, other cells aside) by the
/// weight-gradient action of the same stage and microbatch becomes one full backward.
pub(super) fn merge_bw(ops: &mut Vec<(u32, usize, Op)>) {
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

/// PyTorch's `Schedule1F1B` writes its last rank's forwards as microbatches 1 to M (its
/// backwards 0 to M−1), in both 2.14 and 2.15; what it runs numbers them from 0. A stage whose
/// forwards are exactly 1..=n and whose other actions are exactly 0..n−1 is that quirk: its
/// forwards are read one lower, with a warning.
pub(super) fn renumber_1f1b_forwards(
    ops: &mut [(u32, usize, Op)],
    table: &csv::Table,
    source: &Source,
    out: &mut Diagnostics,
) {
    use std::collections::{BTreeMap, BTreeSet};
    /// A stage's forward microbatches, its other microbatches, and its first forward's cell.
    struct Numbers {
        forwards: BTreeSet<u32>,
        others: BTreeSet<u32>,
        first_forward: (u32, usize),
    }
    let mut stages: BTreeMap<u32, Numbers> = BTreeMap::new();
    for &(row, column, op) in ops.iter() {
        for p in op.passes() {
            let entry = stages.entry(p.stage).or_insert_with(|| Numbers {
                forwards: BTreeSet::new(),
                others: BTreeSet::new(),
                first_forward: (row, column),
            });
            if p.kind == PassKind::F {
                if entry.forwards.is_empty() {
                    entry.first_forward = (row, column);
                }
                entry.forwards.insert(p.microbatch);
            } else {
                entry.others.insert(p.microbatch);
            }
        }
    }
    let shifted: Vec<(u32, u32, (u32, usize))> = stages
        .iter()
        .filter_map(|(&stage, Numbers { forwards: f, others: rest, first_forward: at })| {
            let n = f.len() as u32;
            let ones = f.iter().copied().eq(1..=n);
            let zeros = rest.iter().copied().eq(0..n);
            (n > 0 && ones && zeros && !rest.is_empty()).then_some((stage, n, *at))
        })
        .collect();
    for &(stage, n, (row, column)) in &shifted {
        out.push(cell_warning(
            source,
            (row, column),
            format!(
                "stage {stage} numbers its forwards 1 to {n} but its other actions 0 to {}, as PyTorch's \
                 Schedule1F1B writes its last rank (cell {}); read with the forwards numbered 0 to {}",
                n - 1,
                quote(table.cell(row, column)),
                n - 1
            ),
            format!(
                "PyTorch refuses this file itself (\"Running Full Backward for stage {stage}, microbatch 0 without \
                 first running Forward\"); the schedule Schedule1F1B runs numbers its forwards from 0"
            ),
        ));
    }
    if shifted.is_empty() {
        return;
    }
    for (_, _, op) in ops.iter_mut() {
        let shift = |p: Pass| {
            if p.kind == PassKind::F && shifted.iter().any(|&(s, ..)| s == p.stage) {
                Pass { microbatch: p.microbatch - 1, ..p }
            } else {
                p
            }
        };
        *op = match *op {
            Op::One(p) => Op::One(shift(p)),
            Op::Pair(f, b) => Op::Pair(shift(f), shift(b)),
        };
    }
}
