//! A copy stream's busy intervals: where a copy planned or simulated on it fits.

/// The busy intervals of a copy stream, sorted by start, never overlapping (beyond rounding).
#[derive(Clone, Debug, Default)]
pub(crate) struct Stream {
    busy: Vec<(f64, f64)>,
}

impl Stream {
    /// The earliest start from `from` on where `length` fits, overlapping the next busy
    /// interval by at most `slack` (rounding).
    pub(crate) fn first_free(&self, from: f64, length: f64, slack: f64) -> Option<f64> {
        let mut start = from;
        // The intervals do not overlap, so their ends are sorted too: skip those over by `from`.
        let over = self.busy.partition_point(|&(_, e)| e <= from);
        for &(s, e) in &self.busy[over..] {
            if start + length <= s + slack {
                break;
            }
            start = start.max(e);
        }
        start.is_finite().then_some(start)
    }

    /// The latest start from `from` on at which `length` ends by `by`.
    pub(crate) fn last_free(&self, from: f64, by: f64, length: f64) -> Option<f64> {
        let mut end = by;
        for &(s, e) in self.busy.iter().rev() {
            if e <= end - length || s >= end {
                if s >= end {
                    continue;
                }
                break;
            }
            end = end.min(s);
        }
        let start = end - length;
        (start >= from).then_some(start)
    }

    /// Marks `start..start + length` busy.
    pub(crate) fn take(&mut self, start: f64, length: f64) {
        let at = self.busy.partition_point(|&(s, _)| s < start);
        self.busy.insert(at, (start, start + length));
    }
}
