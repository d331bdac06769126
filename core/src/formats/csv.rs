//! A small CSV reader with the rules of Python's `csv.reader`, which PyTorch uses for its files.
//!
//! Rows end at `\n`, `\r\n` or `\r`; the newline after the last row is optional and adds no
//! row, but every other line is a row, a blank one being a row with no cells. Cells are split
//! at commas. A cell that starts with `"` is quoted: it runs to the next lone `"` and may hold
//! commas, newlines and `""` for a quote. Anything else is taken as written.

use std::borrow::Cow;

/// A file cut into rows of cells.
#[derive(Debug, Default)]
pub(crate) struct Table<'a> {
    /// The rows, each a list of cell texts.
    pub rows: Vec<Vec<Cow<'a, str>>>,
    /// Where a quoted cell was still open at the end of the file: (row, column).
    pub unterminated: Option<(usize, usize)>,
}

impl Table<'_> {
    /// The text of the cell at (`row`, `column`), trimmed; empty when there is no such cell.
    pub fn cell(&self, row: u32, column: usize) -> &str {
        self.rows.get(row as usize).and_then(|r| r.get(column)).map_or("", |c| c.trim())
    }
}

/// Why reading stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TooBig {
    /// More rows than allowed.
    Rows,
    /// More cells than allowed.
    Cells,
}

/// Reads `text`, stopping as soon as it has more than `max_rows` rows or `max_cells` cells.
pub(crate) fn read(text: &str, max_rows: usize, max_cells: usize) -> Result<Table<'_>, TooBig> {
    let bytes = text.as_bytes();
    let mut table = Table::default();
    let mut row: Vec<Cow<str>> = Vec::new();
    let mut cells = 0usize;
    let mut i = 0;
    let mut at_line_start = true;
    while i < bytes.len() {
        if at_line_start && matches!(bytes[i], b'\n' | b'\r') {
            // A blank line: a row with no cells.
            i += newline_len(bytes, i);
            push_row(&mut table, Vec::new(), max_rows)?;
            continue;
        }
        at_line_start = false;
        let (cell, next, closed) = read_cell(text, i);
        if !closed {
            table.unterminated = Some((table.rows.len(), row.len()));
        }
        row.push(cell);
        cells += 1;
        if cells > max_cells {
            return Err(TooBig::Cells);
        }
        i = next;
        match bytes.get(i) {
            Some(b',') => {
                i += 1;
                if i == bytes.len() {
                    // A trailing comma: one more, empty cell.
                    row.push(Cow::Borrowed(""));
                }
            }
            Some(b'\n' | b'\r') => {
                i += newline_len(bytes, i);
                push_row(&mut table, std::mem::take(&mut row), max_rows)?;
                at_line_start = true;
            }
            _ => {}
        }
    }
    if !row.is_empty() {
        push_row(&mut table, row, max_rows)?;
    }
    Ok(table)
}

fn push_row<'a>(table: &mut Table<'a>, row: Vec<Cow<'a, str>>, max_rows: usize) -> Result<(), TooBig> {
    if table.rows.len() == max_rows {
        return Err(TooBig::Rows);
    }
    table.rows.push(row);
    Ok(())
}

fn newline_len(bytes: &[u8], i: usize) -> usize {
    if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
        2
    } else {
        1
    }
}

/// Reads the cell starting at `start`: its text, the index of the delimiter (or end) after it,
/// and whether a quoted cell was closed.
fn read_cell(text: &str, start: usize) -> (Cow<'_, str>, usize, bool) {
    let bytes = text.as_bytes();
    if bytes.get(start) != Some(&b'"') {
        let end =
            bytes[start..].iter().position(|b| matches!(b, b',' | b'\n' | b'\r')).map_or(bytes.len(), |n| start + n);
        return (Cow::Borrowed(&text[start..end]), end, true);
    }
    // Quoted: collect up to the closing quote, turning `""` into `"`.
    let mut value = String::new();
    let mut i = start + 1;
    let mut closed = false;
    while i < bytes.len() {
        let rest = &text[i..];
        let n = rest.find('"').unwrap_or(rest.len());
        value.push_str(&rest[..n]);
        i += n;
        if i >= bytes.len() {
            break;
        }
        if bytes.get(i + 1) == Some(&b'"') {
            value.push('"');
            i += 2;
        } else {
            i += 1;
            closed = true;
            break;
        }
    }
    // Like Python, text after the closing quote up to the delimiter is kept.
    let end = bytes[i..].iter().position(|b| matches!(b, b',' | b'\n' | b'\r')).map_or(bytes.len(), |n| i + n);
    value.push_str(&text[i..end]);
    (Cow::Owned(value), end, closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<Vec<String>> {
        read(text, 100, 100)
            .unwrap()
            .rows
            .into_iter()
            .map(|r| r.into_iter().map(|c| c.into_owned()).collect())
            .collect()
    }

    #[test]
    fn rows_and_cells_follow_python_csv() {
        assert_eq!(rows("0F0,0F1\n1F0"), vec![vec!["0F0", "0F1"], vec!["1F0"]]);
        assert_eq!(rows("0F0,,0F1\r\n,1F0\r\n"), vec![vec!["0F0", "", "0F1"], vec!["", "1F0"]]);
        assert_eq!(rows("a\n\nb\n"), vec![vec!["a"], vec![], vec!["b"]]);
        assert_eq!(rows("a\n\n"), vec![vec!["a"], vec![]]);
        assert_eq!(rows("a,\n"), vec![vec!["a", ""]]);
        assert_eq!(rows("a,"), vec![vec!["a", ""]]);
        assert_eq!(rows("a\rb"), vec![vec!["a"], vec!["b"]]);
        assert_eq!(rows(""), Vec::<Vec<String>>::new());
    }

    #[test]
    fn quoted_cells_hold_commas_quotes_and_newlines() {
        assert_eq!(rows("\"0F0\",\"a,b\"\n\"x\"\"y\",\"1\n2\"z"), vec![vec!["0F0", "a,b"], vec!["x\"y", "1\n2z"]]);
        let t = read("0F0,\"open", 10, 10).unwrap();
        assert_eq!(t.unterminated, Some((0, 1)));
        assert_eq!(t.rows[0][1], "open");
    }

    #[test]
    fn stops_at_the_limits() {
        assert_eq!(read("a,b,c", 10, 2).unwrap_err(), TooBig::Cells);
        assert_eq!(read("\n\n\n", 2, 10).unwrap_err(), TooBig::Rows);
        assert!(read("a,b\nc", 2, 3).is_ok());
    }
}
