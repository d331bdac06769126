//! What every importer shares: making file text safe to quote, naming file locations, and a
//! bounded list of diagnostics.

use crate::error::{Diagnostic, Severity};
use crate::validate::MAX_DIAGNOSTICS;

/// Longest piece of file text quoted in a message, in characters.
pub const MAX_QUOTED_CHARS: usize = 40;

/// `text` made safe to put in a message that may end up in a terminal, SVG or HTML.
///
/// Control characters, Unicode format characters (zero-width and bidirectional overrides, which
/// can make text display differently from what it is) and the byte-order mark are written as
/// `\n`, `\t`, `\r` or `\u{…}`; text longer than [`MAX_QUOTED_CHARS`] characters is cut and
/// ends with `…`. Markup characters (`<`, `&`) are left alone: escaping for a markup language
/// is the job of whoever writes that language.
pub fn sanitize(text: &str) -> String {
    sanitize_to(text, MAX_QUOTED_CHARS)
}

/// [`sanitize`] with room for `max_chars` characters (for longer text such as a parser's own
/// message, which may quote the file).
pub(crate) fn sanitize_to(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(4 * max_chars));
    for (i, c) in text.chars().enumerate() {
        if i == max_chars {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Whether `c` is invisible or changes how the text around it is displayed.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{ad}'                      // soft hyphen
            | '\u{61c}'                   // Arabic letter mark
            | '\u{180e}'                  // Mongolian vowel separator
            | '\u{200b}'..='\u{200f}'     // zero-width characters, LRM, RLM
            | '\u{2028}'..='\u{202e}'     // line/paragraph separators, bidi embeddings and overrides
            | '\u{2060}'..='\u{206f}'     // word joiner, bidi isolates, invisible operators
            | '\u{feff}'                  // byte-order mark
            | '\u{fff9}'..='\u{fffb}'     // interlinear annotations
        )
}

/// `text` sanitised and between backticks, as every message quotes file text.
pub(crate) fn quote(text: &str) -> String {
    format!("`{}`", sanitize(text))
}

/// How a format names a place in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grid {
    /// PyTorch CSV: `row R, column C`, both from 0 (row R is device R).
    Csv,
    /// Bubblescope JSON: `orders[R][C]`.
    Json,
}

/// The file being read: its optional name and how it names locations.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Source<'a> {
    /// The file's name, for messages (already sanitised).
    pub name: Option<&'a str>,
    /// How locations are written.
    pub grid: Grid,
}

impl Source<'_> {
    /// The location of cell `column` of row `row`, e.g. `zb.csv, row 1, column 4`.
    pub fn at(&self, row: u32, column: usize) -> String {
        self.in_file(match self.grid {
            Grid::Csv => format!("row {row}, column {column}"),
            Grid::Json => format!("orders[{row}][{column}]"),
        })
    }

    /// A location inside the same file, for "first at ..." references (no file name).
    pub fn short(&self, row: u32, column: usize) -> String {
        Source { name: None, ..*self }.at(row, column)
    }

    /// A whole row, e.g. `row 2`.
    pub fn row(&self, row: u32) -> String {
        self.in_file(match self.grid {
            Grid::Csv => format!("row {row}"),
            Grid::Json => format!("orders[{row}]"),
        })
    }

    /// `place` prefixed with the file's name, when it has one: `zb.csv, row 1`.
    fn in_file(&self, place: String) -> String {
        match self.name {
            Some(name) => format!("{name}, {place}"),
            None => place,
        }
    }

    /// An error at a cell: the message is prefixed with the location.
    pub fn error_at(&self, row: u32, column: usize, message: impl AsRef<str>) -> Diagnostic {
        let message = format!("{}: {}", self.at(row, column), message.as_ref());
        Diagnostic { located_in_message: true, ..Diagnostic::error(Some(row), Some(column), message) }
    }

    /// A warning at a cell.
    pub fn warning_at(&self, row: u32, column: usize, message: impl AsRef<str>) -> Diagnostic {
        warning(self.error_at(row, column, message))
    }

    /// An error about a whole row.
    pub fn error_in_row(&self, row: u32, message: impl AsRef<str>) -> Diagnostic {
        let message = format!("{}: {}", self.row(row), message.as_ref());
        Diagnostic { located_in_message: true, ..Diagnostic::error(Some(row), None, message) }
    }

    /// An error about the whole file.
    pub fn error(&self, message: impl AsRef<str>) -> Diagnostic {
        let message = match self.name {
            Some(name) => format!("{name}: {}", message.as_ref()),
            None => message.as_ref().to_string(),
        };
        Diagnostic::error(None, None, message)
    }
}

/// `n` and `noun`, with an `s` unless `n` is 1: `1 more error`, `3 more errors`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The same diagnostic as a warning.
pub(crate) fn warning(mut d: Diagnostic) -> Diagnostic {
    d.severity = Severity::Warning;
    d
}

/// Diagnostics with a cap: past [`MAX_DIAGNOSTICS`] they are counted, not kept, so no file can
/// produce an unbounded report.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    list: Vec<Diagnostic>,
    dropped_errors: usize,
    dropped_warnings: usize,
    errors: usize,
}

impl Diagnostics {
    /// Adds `d`, or counts it when the list is full.
    pub fn push(&mut self, d: Diagnostic) {
        let is_error = d.severity == Severity::Error;
        self.errors += usize::from(is_error);
        if self.list.len() < MAX_DIAGNOSTICS {
            self.list.push(d);
        } else if is_error {
            self.dropped_errors += 1;
        } else {
            self.dropped_warnings += 1;
        }
    }

    /// Number of errors so far, kept or not.
    pub fn errors(&self) -> usize {
        self.errors
    }

    /// The list, with one closing line counting what was left out.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        let dropped = self.dropped_errors + self.dropped_warnings;
        if dropped > 0 {
            let what = match (self.dropped_errors, self.dropped_warnings) {
                (e, 0) => count(e, "more error"),
                (0, w) => count(w, "more warning"),
                (e, w) => format!("{} and {}", count(e, "more error"), count(w, "more warning")),
            };
            let mut d = Diagnostic::error(None, None, format!("and {what} not shown"))
                .hint("fix the problems above first; the rest are often consequences");
            if self.dropped_errors == 0 {
                d.severity = Severity::Warning;
            }
            self.list.push(d);
        }
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_escapes_controls_and_bidi_and_truncates() {
        assert_eq!(sanitize("0F1"), "0F1");
        assert_eq!(sanitize("a\nb\tc\r\u{0}"), "a\\nb\\tc\\r\\u{0}");
        assert_eq!(sanitize("x\u{202e}y\u{200b}\u{feff}"), "x\\u{202e}y\\u{200b}\\u{feff}");
        assert_eq!(sanitize("\u{1b}[31m"), "\\u{1b}[31m");
        let long = "7".repeat(100);
        assert_eq!(sanitize(&long), format!("{}…", "7".repeat(MAX_QUOTED_CHARS)));
        assert_eq!(sanitize("<b>&"), "<b>&");
    }

    #[test]
    fn diagnostics_are_capped_with_a_closing_count() {
        let mut d = Diagnostics::default();
        for i in 0..MAX_DIAGNOSTICS + 3 {
            d.push(Diagnostic::error(None, None, format!("e{i}")));
        }
        d.push(warning(Diagnostic::error(None, None, "w")));
        assert_eq!(d.errors(), MAX_DIAGNOSTICS + 3);
        let list = d.finish();
        assert_eq!(list.len(), MAX_DIAGNOSTICS + 1);
        assert_eq!(list[MAX_DIAGNOSTICS].message, "and 3 more errors and 1 more warning not shown");
    }

    #[test]
    fn locations_name_the_file_row_and_column() {
        let csv = Source { name: Some("a.csv"), grid: Grid::Csv };
        assert_eq!(csv.at(2, 5), "a.csv, row 2, column 5");
        assert_eq!(csv.short(2, 5), "row 2, column 5");
        let json = Source { name: None, grid: Grid::Json };
        assert_eq!(json.at(1, 0), "orders[1][0]");
        assert_eq!(json.error_at(1, 0, "bad").to_string(), "error: orders[1][0]: bad");
    }
}
