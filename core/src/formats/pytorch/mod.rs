//! PyTorch's schedule CSV: cell grammar, dialects, placement inference, SEND/RECV checks and
//! the `_add_send_recv` lowering. The rules are in the [module docs](super).

/// The two shapes of a PyTorch schedule file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CsvForm {
    /// Compute actions only (PyTorch's `compute_only`), lowered by PyTorch before running.
    ComputeOnly,
    /// Compute and SEND/RECV actions (PyTorch's `compute_comms`), run as written.
    ComputeComms,
}

mod comms;
mod export;
mod grammar;
mod import;
mod placement;
mod pyset;

pub use export::{export_pytorch_csv, export_pytorch_csv_with};
pub(super) use import::import;

use super::text::Source;
use crate::error::Diagnostic;
use crate::schedule::{Op, Pass};
use grammar::{parse_cell, pass_kind, RawPass, Token};

/// The compute op of one action as PyTorch's runtime names it (a cell, or a profiler label
/// without its `PP:` prefix) in the current dialect: `0F3`, `1I2`, `2B0`,
/// `(0F7;7B3)OVERLAP_F_B`. `Ok(None)` for an action that computes nothing (SEND, RECV,
/// UNSHARD, …).
///
/// # Errors
/// Why the text is not an action, with a hint.
pub fn compute_action(text: &str) -> Result<Option<Op>, (String, String)> {
    let pass = |raw: RawPass| {
        pass_kind(raw.word, super::Dialect::Current)
            .map(|kind| Pass::new(kind, raw.stage, raw.microbatch))
            .map_err(|e| (e.to_string(), "profiler labels use the current dialect: F, I, W, B".to_string()))
    };
    match parse_cell(text) {
        Token::Compute(raw) => pass(raw).map(|p| Some(Op::One(p))),
        Token::Pair(a, b) => Ok(Some(Op::Pair(pass(a)?, pass(b)?))),
        Token::Idle | Token::Comms(_) | Token::Stage(_) => Ok(None),
        Token::Bad(why) => Err(*why),
    }
}

/// An error at the cell (`row`, `column`) of `source`, with the way to fix it: the shape of most
/// of this format's diagnostics.
fn cell_error(
    source: &Source,
    (row, column): (u32, usize),
    message: impl AsRef<str>,
    hint: impl Into<String>,
) -> Diagnostic {
    source.error_at(row, column, message).hint(hint)
}

/// A warning at a cell, with the way to fix it (as [`cell_error`]).
fn cell_warning(source: &Source, at: (u32, usize), message: impl AsRef<str>, hint: impl Into<String>) -> Diagnostic {
    source.warning_at(at.0, at.1, message).hint(hint)
}

#[cfg(test)]
mod tests;
