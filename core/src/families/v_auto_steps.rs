//! The repeat–squeeze–reorder steps of the adaptive V scheduler (`v-auto`, see
//! [`super`] for the search that runs them and the papers they follow): one building
//! block, given as the first slot of each device's six parts ([`super`]'s
//! `first_slots`), becomes the rows of a schedule or is rejected.
//!
//! * step 1, [`repeat`] (and [`repeated_peak`], [`repeated_row`], which read the repeated rows
//!   off the block without laying them out);
//! * steps 2–5, [`schedule_block`] (laid out) and [`trimmed_rows`] (read off the block, for
//!   `M < 2P`): the warm-up rewrite [`rewrite_warm_up`] / [`warm_up_steps`], trimming
//!   [`keep_microbatches`] and [`release_early_weights`];
//! * step 6, [`rewrite_cool_down`]; step 7, [`fill_bubbles`]; step 8, [`relabel_weights`] and
//!   the authors' final check [`has_authors_order`].
//!
//! Everything here works on slots ([`Grid`]); nothing is timed.

use super::super::v_blocks::{Grid, Part, EMPTY, PERIOD};

/// The peak lifespan count of the block repeated `microbatches` times, without building the
/// rows (see [`repeated_row_peak`]).
pub(super) fn repeated_peak(starts: &[[u32; 6]], microbatches: u32) -> i32 {
    starts.iter().map(|row| repeated_row_peak(row, microbatches)).max().unwrap_or(0)
}

/// The peak lifespan count of one device's row repeated `microbatches` times, period by
/// period: part `x`, first at slot `6aₓ + rₓ`, runs once in each period `q` with
/// `aₓ ≤ q < aₓ + M`. Between two periods where a part starts or stops, the same parts run in
/// every period, so the count at the start of a period grows linearly and peaks at an end of
/// that range, and the rise within a period is the same in each.
///
/// The ranges are visited in order, the count at the start of each carried over from the
/// previous one (it grows by the running parts' net count once per period): the search reads
/// this for every block it visits.
pub(super) fn repeated_row_peak(row: &[u32; 6], microbatches: u32) -> i32 {
    let m = i64::from(microbatches);
    let first: [i64; 6] = row.map(|s| i64::from(s / PERIOD));
    let memory = Part::ALL.map(Part::memory).map(i64::from);
    // The parts in slot order within a period (insertion sort: stable, six entries).
    let mut order: [usize; 6] = [0, 1, 2, 3, 4, 5];
    for i in 1..6 {
        let mut j = i;
        while j > 0 && row[order[j - 1]] % PERIOD > row[order[j]] % PERIOD {
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut cuts = [0i64; 12];
    for (x, &a) in first.iter().enumerate() {
        cuts[2 * x] = a;
        cuts[2 * x + 1] = a + m;
    }
    cuts.sort_unstable();
    // Count at the start of period `lo`: 0 at the first start, before any part runs.
    let (mut peak, mut base) = (0i64, 0i64);
    for pair in cuts.windows(2).filter(|pair| pair[0] < pair[1]) {
        let (lo, next) = (pair[0], pair[1]);
        // The running parts' rise within a period, its highest point, and their net count.
        let (mut rise, mut highest) = (0i64, 0i64);
        for &x in &order {
            if first[x] <= lo && lo < first[x] + m {
                rise += memory[x];
                highest = highest.max(rise);
            }
        }
        let last = base + (next - 1 - lo) * rise;
        peak = peak.max(base + highest).max(last + highest);
        base = last + rise;
    }
    peak as i32
}

/// The passes of one device's row of a block repeated `microbatches` times (microbatch `k` of
/// part `x` at slot `row[x] + 6k`), in slot order from slot `from` on: `(slot, part, k)`.
pub(super) fn repeated_row(row: &[u32; 6], microbatches: u32, from: u32) -> impl Iterator<Item = (u32, Part, u32)> {
    // The six parts sit at distinct residues: per residue, the part and its first period.
    let mut by_residue = [(Part::F0, 0u32); PERIOD as usize];
    for (part, &start) in Part::ALL.iter().zip(row) {
        by_residue[(start % PERIOD) as usize] = (*part, start / PERIOD);
    }
    let end = row.iter().copied().max().unwrap_or(0) + PERIOD * microbatches.saturating_sub(1);
    (from / PERIOD..=end / PERIOD).flat_map(move |period| {
        by_residue.into_iter().enumerate().filter_map(move |(residue, (part, first))| {
            let slot = period * PERIOD + residue as u32;
            let k = period.checked_sub(first)?;
            (slot >= from && k < microbatches).then_some((slot, part, k))
        })
    })
}
/// Runs repeat–squeeze–reorder on one block for `microbatches` under a limit of `limit`
/// chunk-activations. Returns the peak the search compares with the limit and, if the block
/// works, its rows.
pub(super) fn schedule_block(starts: &[[u32; 6]], devices: u32, microbatches: u32, limit: u32) -> (i32, Option<Grid>) {
    let p = devices;
    let m = microbatches;
    let padded = m.max(2 * p);
    let cap = limit.min(2 * p) as i32;
    let grid = repeat(starts, padded);
    let mut peak = grid.peak();
    if (m == padded && peak > cap) || peak > 2 * p as i32 {
        return (peak, None);
    }
    let initial = peak;
    let Some(grid) = grid.squeeze(padded) else { return (initial, None) };
    let Some(grid) = rewrite_warm_up(grid, padded).and_then(|g| g.squeeze(padded)) else { return (initial, None) };
    let mut reference = initial;
    let warm_peak = grid.peak();
    if warm_peak > initial {
        return (initial, None);
    }
    let (mut grid, mut grid_peak) = (grid, warm_peak);
    if m < padded {
        let mut trimmed = keep_microbatches(grid, m);
        if m <= p && 2 * m as i32 <= cap {
            trimmed = release_early_weights(trimmed, warm_peak.min(2 * p as i32));
        }
        let Some(squeezed) = trimmed.squeeze(m) else { return (initial, None) };
        peak = squeezed.peak();
        reference = peak;
        if peak > cap {
            return (peak, None);
        }
        (grid, grid_peak) = (squeezed, peak);
    }
    finish_block(grid, grid_peak, p, m, reference)
}

/// Steps 2–5 for `M < 2P` (the padded block runs `2P` microbatches), read off the block
/// instead of laid out slot by slot ([`warm_up_rows`]): the rows [`schedule_block`] squeezes
/// after trimming, or `None` where it gives up before them (it then returns the initial peak
/// `initial`).
///
/// Every step between the repeat and the squeeze after trimming keeps the order of each row
/// and nothing else matters to that squeeze, so the rows are built as orders:
/// * the first squeeze keeps each row's order (that of the repeated block, whose slots already
///   satisfy every dependency, so it never fails);
/// * the warm-up rewrite replaces the passes before the first `b` by [`warm_up_steps`] and
///   leaves the rest of the row in place, so the row becomes that rewrite followed by the
///   block's own passes from its first `b` on. This holds because the rewrite ends before the
///   first `b`'s squeezed slot, and because the squeeze after it never fails: both are
///   checked for every block the search visits with `P ≤ 32` (the family's limit; the padded
///   rows do not depend on `M` below `2P`), in
///   `tests::order_based_warm_up_matches_the_laid_out_one`;
/// * trimming keeps the first `M` occurrences of each part, and moving early W to the end
///   only reorders;
/// * the peak the warm-up check compares is that of the whole padded rows: the rewritten
///   warm-up's running count, then the block's own from its first `b` on, which is periodic
///   and cannot rise one period after the row's last start (see [`repeated_peak`]).
pub(super) fn trimmed_rows(
    starts: &[[u32; 6]],
    devices: u32,
    microbatches: u32,
    initial: i32,
    cap: i32,
) -> Option<Grid> {
    let (mut grid, warm_peak) = warm_up_rows(starts, 2 * devices, microbatches, initial)?;
    if microbatches <= devices && 2 * microbatches as i32 <= cap {
        grid = release_early_weights(grid, warm_peak.min(2 * devices as i32));
    }
    Some(grid)
}

/// Steps 1–4 for `M ≥ 2P` read off the block as [`trimmed_rows`] does for fewer (nothing is
/// trimmed): the same result as [`schedule_block`], without laying out the repeated block, its
/// first squeeze and the warm-up rewrite slot by slot. Checked against it for every block,
/// limit and `M` from `2P` to `4P + 2` at `P ≤ 8` in
/// `tests::order_based_steady_steps_match_the_laid_out_ones`; at `M = 2P`, what the search
/// screens with, the facts it rests on are checked up to `P = 32`.
pub(super) fn steady_block(starts: &[[u32; 6]], devices: u32, microbatches: u32, limit: u32) -> (i32, Option<Grid>) {
    let (p, m) = (devices, microbatches);
    let cap = limit.min(2 * p) as i32;
    let initial = repeated_peak(starts, m);
    if initial > cap {
        return (initial, None);
    }
    let Some((grid, warm_peak)) = warm_up_rows(starts, m, m, initial) else { return (initial, None) };
    let Some(grid) = grid.squeeze(m) else { return (initial, None) };
    finish_block(grid, warm_peak, p, m, initial)
}

/// The rows of the block repeated `padded` times (at least `2P`) after the warm-up rewrite,
/// as orders (unsqueezed), keeping the first `microbatches` occurrences of each part, and the
/// peak of the padded rows; `None` where the rewrite fails or raises the peak above
/// `initial` (see [`trimmed_rows`] for why the orders are those [`schedule_block`] squeezes).
pub(super) fn warm_up_rows(starts: &[[u32; 6]], padded: u32, microbatches: u32, initial: i32) -> Option<(Grid, i32)> {
    let (p, m) = (starts.len(), microbatches as usize);
    let peak = initial.clamp(0, 2 * p as i32) as usize;
    let mut rows = Vec::with_capacity(p);
    let mut warm_peak = 0;
    for (i, row) in starts.iter().enumerate() {
        let first_b = row[Part::B0.index()];
        // Occurrences of a part before the first `b` (never a `w`: it follows its `b`).
        let before = |part: Part| {
            let start = row[part.index()];
            if start >= first_b {
                0
            } else {
                (first_b - start).div_ceil(PERIOD).min(padded) as usize
            }
        };
        let counts =
            WarmUpCounts { f0: before(Part::F0), f1: before(Part::F1), b1: before(Part::B1), w1: before(Part::W1) };
        let warm_up = warm_up_steps(i, p, peak, padded as usize, counts)?;
        let mut order = Vec::with_capacity(6 * m);
        let mut kept = [0usize; 6];
        let (mut count, mut highest) = (0, 0);
        for part in warm_up.into_iter().flatten() {
            count += part.memory();
            highest = highest.max(count);
            if kept[part.index()] < m {
                kept[part.index()] += 1;
                order.push(part as u8);
            }
        }
        // The block's own passes from the first `b` on: the running count continues from the
        // same value (the warm-up holds the same passes), the order keeps microbatches below `M`.
        let count_until = row.iter().copied().max().unwrap_or(0).max(first_b) + PERIOD;
        for (slot, part, k) in repeated_row(row, padded, first_b) {
            if slot < count_until {
                count += part.memory();
                highest = highest.max(count);
            } else if kept.iter().all(|&c| c >= m) {
                break;
            }
            if (k as usize) < m {
                kept[part.index()] += 1;
                order.push(part as u8);
            }
        }
        warm_peak = warm_peak.max(highest);
        rows.push(order);
    }
    if warm_peak > initial {
        return None;
    }
    let mut grid = Grid { rows };
    grid.pad();
    Some((grid, warm_peak))
}

/// Steps 6–8 on squeezed rows of `microbatches` microbatches (peaking at `peak`) under a
/// reference peak of `reference`: rewrites the cool-down, fills the bubbles, gives the W back
/// and checks the result. Returns the peak the search compares with the limit and, if the
/// block works, its rows.
pub(super) fn finish_block(
    grid: Grid,
    peak: i32,
    devices: u32,
    microbatches: u32,
    reference: i32,
) -> (i32, Option<Grid>) {
    match cool_down(grid, peak, devices, microbatches) {
        Some(grid) => fill_and_check(grid, microbatches, reference),
        None => (reference, None),
    }
}

/// Step 6 on rows peaking at `peak`, and the squeeze after it.
pub(super) fn cool_down(grid: Grid, peak: i32, devices: u32, microbatches: u32) -> Option<Grid> {
    rewrite_cool_down(grid, peak, devices, microbatches)?.squeeze(microbatches)
}

/// Steps 7–8 on the squeezed rows after the cool-down, as [`finish_block`] returns them.
pub(super) fn fill_and_check(mut grid: Grid, microbatches: u32, reference: i32) -> (i32, Option<Grid>) {
    let m = microbatches;
    // Relabelling W keeps every count (both kinds free one chunk-activation).
    let peak = fill_bubbles(&mut grid, m);
    if !relabel_weights(&mut grid, m) {
        return (reference, None);
    }
    if peak > reference {
        return (reference, None);
    }
    if !has_authors_order(&grid, m) {
        return (peak, None);
    }
    (peak, Some(grid))
}

/// The block repeated for `microbatches` microbatches: pass `x` of microbatch `k` on device
/// `d` at `starts[d][x] + 6k`.
pub(super) fn repeat(starts: &[[u32; 6]], microbatches: u32) -> Grid {
    let len = starts.iter().flatten().max().map_or(0, |&s| s + PERIOD * (microbatches - 1) + 1);
    let mut grid = Grid::empty(starts.len() as u32, len as usize);
    for (row, first) in grid.rows.iter_mut().zip(starts) {
        for part in Part::ALL {
            for k in 0..microbatches {
                row[(first[part.index()] + PERIOD * k) as usize] = part as u8;
            }
        }
    }
    grid
}

/// Step 4: rewrites every device's warm-up (its passes before its first chunk-0 input
/// gradient `b`) as [`warm_up_steps`] lays it out from slot `i` on. `None` where the authors'
/// code would stop (a W of chunk 0 in the warm-up, more `f` than `F`, or a rewrite longer than
/// the row).
pub(super) fn rewrite_warm_up(mut grid: Grid, microbatches: u32) -> Option<Grid> {
    let p = grid.devices() as usize;
    let peak = grid.peak().min(2 * p as i32).max(0) as usize;
    for (i, row) in grid.rows.iter_mut().enumerate() {
        let mut counts = WarmUpCounts::default();
        for cell in row.iter_mut() {
            match Part::from_index(*cell) {
                Some(Part::B0) => break,
                Some(Part::W0) => return None,
                Some(part) => counts.add(part),
                None => {}
            }
            *cell = EMPTY;
        }
        for (at, step) in warm_up_steps(i, p, peak, microbatches as usize, counts)?.into_iter().enumerate() {
            if let Some(part) = step {
                *row.get_mut(i + at)? = part as u8;
            }
        }
    }
    Some(grid)
}

/// How many `F`, `f`, `B` and `W` a device's warm-up holds (its passes before its first `b`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WarmUpCounts {
    pub(super) f0: usize,
    pub(super) f1: usize,
    pub(super) b1: usize,
    pub(super) w1: usize,
}

impl WarmUpCounts {
    /// Counts one more `part` (not `b` or `w`, which a warm-up never holds).
    pub(super) fn add(&mut self, part: Part) {
        match part {
            Part::F0 => self.f0 += 1,
            Part::F1 => self.f1 += 1,
            Part::B1 => self.b1 += 1,
            Part::W1 => self.w1 += 1,
            Part::B0 | Part::W0 => {}
        }
    }
}

/// The rewritten warm-up of device `i` (step 4), one entry per slot from slot `i` on, `None`
/// for a slot left empty: `2(P−1−i)` chunk-0 forwards `F`, `i+1` pairs `F f` (at most
/// `⌊peak/2⌋` of them `f`, at most `peak` passes holding memory), then rounds `B W f|F` until
/// the warm-up's passes are all placed. `None` where the authors' code stops: a round would
/// place an `f` with no `F` left before it.
pub(super) fn warm_up_steps(
    i: usize,
    devices: usize,
    peak: usize,
    microbatches: usize,
    counts: WarmUpCounts,
) -> Option<Vec<Option<Part>>> {
    let WarmUpCounts { f0, f1, b1, w1 } = counts;
    let pairs_f1 = (i + 1).min(peak / 2).min(microbatches);
    let most_f0 = (peak - pairs_f1).min(microbatches);
    let mut steps = Vec::with_capacity(2 * devices + f0 + f1 + 3 * (b1 + w1));
    let (mut u_f0, mut u_f1, mut u_b1, mut u_w1) = (0usize, 0usize, 0usize, 0usize);
    let mut put = |write: bool, part: Part, used: &mut usize| {
        steps.push(write.then_some(part));
        *used += usize::from(write);
    };
    for _ in 0..2 * (devices - 1 - i) {
        put(u_f0 < most_f0 && u_f0 < f0, Part::F0, &mut u_f0);
    }
    for _ in 0..=i {
        put(u_f0 < most_f0 && u_f0 < f0, Part::F0, &mut u_f0);
        put(u_f1 < pairs_f1 && u_f1 < f1, Part::F1, &mut u_f1);
    }
    while u_f0 < f0 || u_f1 < f1 || u_b1 < b1 || u_w1 < w1 {
        put(u_b1 < b1, Part::B1, &mut u_b1);
        put(u_w1 < w1, Part::W1, &mut u_w1);
        if u_f1 < f1 {
            if u_f1 >= u_f0 {
                return None;
            }
            put(true, Part::F1, &mut u_f1);
        } else {
            put(u_f0 < f0, Part::F0, &mut u_f0);
        }
    }
    Some(steps)
}

/// Step 5: keeps the first `microbatches` occurrences of each part in every row.
pub(super) fn keep_microbatches(mut grid: Grid, microbatches: u32) -> Grid {
    for row in &mut grid.rows {
        let mut counts = [0u32; 6];
        for cell in row.iter_mut() {
            if let Some(part) = Part::from_index(*cell) {
                if counts[part.index()] >= microbatches {
                    *cell = EMPTY;
                } else {
                    counts[part.index()] += 1;
                }
            }
        }
    }
    grid
}

/// Step 5, few microbatches: moves each device's first W to the end of its row until its peak
/// reaches `peak`, so the warm-up uses the memory the limit leaves.
pub(super) fn release_early_weights(mut grid: Grid, peak: i32) -> Grid {
    let peaks = grid.peaks();
    let least = peaks.iter().copied().min().unwrap_or(0);
    let pad = (peak - least).max(0) as usize;
    for (row, &own) in grid.rows.iter_mut().zip(&peaks) {
        let mut moved = Vec::with_capacity(pad);
        for cell in row.iter_mut() {
            if own + moved.len() as i32 >= peak {
                break;
            }
            if Part::from_index(*cell).is_some_and(Part::is_weight) {
                moved.push(*cell);
                *cell = EMPTY;
            }
        }
        moved.resize(pad, EMPTY);
        row.extend(moved);
    }
    grid
}

/// Step 6: rewrites the cool-down. Device `i`'s last `⌈peak/2⌉` chunk-0 input gradients `b`
/// and last `min(i+1, peak − ⌈peak/2⌉)` chunk-1 input gradients `B` move to a staircase after
/// device 0's last `f` (`b` at `s − i + 2P − 2k`, `B` at `s + 1 + i − 2k`); W from the tail are
/// dropped until they cover the moved passes and the peak, then re-added in the free slots
/// after the last remaining W (chunk 1 first). `peak` is the rows' peak. `None` where the
/// authors' code would stop.
pub(super) fn rewrite_cool_down(mut grid: Grid, peak: i32, devices: u32, microbatches: u32) -> Option<Grid> {
    let p = devices as i64;
    let m = microbatches as i64;
    let peak = i64::from(peak);
    if peak > 2 * p {
        return None;
    }
    let most_b0 = ((peak + 1) / 2).min(m);
    let most_b1 = (peak - most_b0).min(m);
    let mut start = None;
    for (i, row) in grid.rows.iter_mut().enumerate() {
        let i = i as i64;
        let (mut b1, mut b0, mut w1, mut w0) = (0i64, 0i64, 0i64, 0i64);
        let mut last_f1 = None;
        for (j, cell) in row.iter_mut().enumerate().rev() {
            match Part::from_index(*cell) {
                Some(Part::F1) if last_f1.is_none() => last_f1 = Some(j as i64),
                Some(Part::B1) if b1 < i + 1 && b1 < most_b1 => {
                    *cell = EMPTY;
                    b1 += 1;
                }
                Some(Part::B0) if b0 < most_b0 => {
                    *cell = EMPTY;
                    b0 += 1;
                }
                _ => {}
            }
        }
        for cell in row.iter_mut().rev() {
            if w1 >= b1 && w0 >= b0 && w1 + w0 >= peak {
                break;
            }
            match Part::from_index(*cell) {
                Some(Part::W1) => {
                    *cell = EMPTY;
                    w1 += 1;
                }
                Some(Part::W0) => {
                    *cell = EMPTY;
                    w0 += 1;
                }
                _ => {}
            }
        }
        if i == 0 {
            start = last_f1;
        }
        let s = start?;
        let len = row.len() as i64;
        for k in 0..b0 {
            let at = s - i + 2 * p - 2 * k;
            if at < 0 || at >= len || row[at as usize] != EMPTY {
                return None;
            }
            row[at as usize] = Part::B0 as u8;
        }
        for k in 0..b1 {
            let at = s + 1 + i - 2 * k;
            if at < 0 || at >= len {
                return None;
            }
            row[at as usize] = Part::B1 as u8;
        }
    }
    for row in &mut grid.rows {
        let last_w = row.iter().rposition(|&c| Part::from_index(c).is_some_and(Part::is_weight));
        let (mut w1, mut w0) = (0i64, 0i64);
        for (j, cell) in row.iter_mut().enumerate() {
            match Part::from_index(*cell) {
                Some(Part::B1) => w1 += 1,
                Some(Part::B0) => w0 += 1,
                Some(Part::W1) => w1 -= 1,
                Some(Part::W0) => w0 -= 1,
                Some(_) => {}
                None if last_w.is_none_or(|l| j > l) => {
                    if w1 > 0 {
                        *cell = Part::W1 as u8;
                        w1 -= 1;
                    } else if w0 > 0 {
                        *cell = Part::W0 as u8;
                        w0 -= 1;
                    }
                }
                None => {}
            }
        }
        row.extend(std::iter::repeat_n(Part::W1 as u8, w1.max(0) as usize));
        row.extend(std::iter::repeat_n(Part::W0 as u8, w0.max(0) as usize));
    }
    grid.pad();
    Some(grid)
}

/// Step 7: fills every empty slot, left to right and device by device, with the first later
/// pass of its row that may move there: one of each part is looked at (the first after the
/// slot), a forward only if it does not raise the peak, any pass only if what it depends on
/// is in an earlier slot.
///
/// The next pass of each part is found through the part's list of slots (a pass only ever
/// moves to the slot being filled, so the lists stay in order); the row is read only up to a
/// forward that is looked at, for the highest count it would run under. Returns the peak of
/// the filled rows.
pub(super) fn fill_bubbles(grid: &mut Grid, microbatches: u32) -> i32 {
    let p = grid.rows.len();
    let m = microbatches as usize;
    let len = grid.len();
    // Slots of the occurrences of (row, part), in order, and the rows' peak.
    // (Built one by one: `vec![v; n]` clones, and a clone drops the capacity.)
    let mut occurrences: Vec<Vec<u32>> = (0..6 * p).map(|_| Vec::with_capacity(m)).collect();
    let mut peak = 0;
    for (i, row) in grid.rows.iter().enumerate() {
        let mut count = 0;
        for (j, &cell) in row.iter().enumerate() {
            if let Some(part) = Part::from_index(cell) {
                occurrences[6 * i + part.index()].push(j as u32);
                count += part.memory();
                peak = peak.max(count);
            }
        }
    }
    let mut filled_peak = 0;
    let mut sweep = FillSweep::new(p, m);
    for j in 0..len {
        for i in 0..p {
            if let Some(part) = Part::from_index(grid.rows[i][j]) {
                filled_peak = filled_peak.max(sweep.pass(i, j, part));
                continue;
            }
            // The next pass of each part that may move here (what it depends on is in an
            // earlier slot), by slot.
            let mut next: [(usize, Part); 6] = [(usize::MAX, Part::F0); 6];
            let mut found = 0;
            for x in Part::ALL {
                let Some(&at) = occurrences[6 * i + x.index()].get(sweep.counts[i][x.index()]) else { continue };
                if sweep.ready(i, j, x) {
                    next[found] = (at as usize, x);
                    found += 1;
                }
            }
            let next = &mut next[..found];
            next.sort_unstable_by_key(|&(at, _)| at);
            // The highest count change over the slots after `j` read so far, up to `read`.
            let (mut read, mut delta, mut highest) = (j + 1, 0i32, 0i32);
            for &(at, part) in next.iter() {
                if part.is_forward() {
                    for &cell in &grid.rows[i][read..at] {
                        if let Some(between) = Part::from_index(cell) {
                            delta += between.memory();
                            highest = highest.max(delta);
                        }
                    }
                    read = at;
                    if sweep.memory[i] + highest >= peak {
                        continue;
                    }
                }
                grid.rows[i][j] = part as u8;
                grid.rows[i][at] = EMPTY;
                occurrences[6 * i + part.index()][sweep.counts[i][part.index()]] = j as u32;
                filled_peak = filled_peak.max(sweep.pass(i, j, part));
                break;
            }
        }
    }
    filled_peak
}

/// What step 7's sweep ([`fill_bubbles`], and the first version the tests keep) knows when
/// it reaches a slot, going left to right and device by device: each row's lifespan count, how
/// many of each part it has run, and the slot each (part, row, microbatch) ran at.
pub(super) struct FillSweep {
    /// Rows.
    p: usize,
    /// Microbatches.
    m: usize,
    /// Each row's lifespan count so far.
    pub(super) memory: Vec<i32>,
    /// How many of each part each row has run so far.
    pub(super) counts: Vec<[usize; 6]>,
    /// Slot of (part, row, microbatch) once reached, `usize::MAX` before.
    slot_of: Vec<usize>,
}

impl FillSweep {
    /// The sweep before slot 0 of `rows` rows of `microbatches` microbatches.
    pub(super) fn new(rows: usize, microbatches: usize) -> FillSweep {
        FillSweep {
            p: rows,
            m: microbatches,
            memory: vec![0; rows],
            counts: vec![[0; 6]; rows],
            slot_of: vec![usize::MAX; 6 * rows * microbatches],
        }
    }

    /// Records that row `row` runs `part` at slot `slot` (its next microbatch); returns the
    /// row's count after it.
    pub(super) fn pass(&mut self, row: usize, slot: usize, part: Part) -> i32 {
        let mb = self.counts[row][part.index()];
        if mb < self.m {
            self.slot_of[(part.index() * self.p + row) * self.m + mb] = slot;
        }
        self.counts[row][part.index()] += 1;
        self.memory[row] += part.memory();
        self.memory[row]
    }

    /// Whether the next `part` of row `row` may move to slot `slot`: what it depends on (see
    /// [`Part::dependency`]) ran in an earlier slot.
    pub(super) fn ready(&self, row: usize, slot: usize, part: Part) -> bool {
        let (p, m) = (self.p, self.m);
        let mb = self.counts[row][part.index()];
        let reached = |dep: Part, on: usize| mb < m && self.slot_of[(dep.index() * p + on) * m + mb] < slot;
        let counts = &self.counts[row];
        match part {
            Part::F0 | Part::B1 if row > 0 => reached(part, row - 1),
            Part::F0 => true,
            Part::B1 => counts[Part::F1.index()] > mb,
            Part::F1 | Part::B0 if row + 1 < p => reached(part, row + 1),
            Part::F1 => counts[Part::F0.index()] > mb,
            Part::B0 => counts[Part::B1.index()] > mb,
            Part::W1 => counts[Part::B1.index()] > mb,
            Part::W0 => counts[Part::B0.index()] > mb,
        }
    }
}

/// Step 8: gives every W to the oldest input gradient of its row not yet followed by one
/// (chunk 1's `B` gets `W`, chunk 0's `b` gets `w`). `false` if a row's counts do not match.
pub(super) fn relabel_weights(grid: &mut Grid, microbatches: u32) -> bool {
    let mut queue = std::collections::VecDeque::with_capacity(2 * microbatches as usize);
    for row in &mut grid.rows {
        let mut counts = [0u32; 6];
        for part in row.iter().filter_map(|&c| Part::from_index(c)) {
            counts[part.index()] += 1;
        }
        if counts.iter().any(|&c| c != microbatches) {
            return false;
        }
        for cell in row.iter_mut() {
            match Part::from_index(*cell) {
                Some(part) if part.is_input_grad() => {
                    if let Some(w) = part.weight() {
                        queue.push_back(w);
                    }
                }
                Some(part) if part.is_weight() => match queue.pop_front() {
                    Some(w) => *cell = w as u8,
                    None => return false,
                },
                _ => {}
            }
        }
        if !queue.is_empty() {
            return false;
        }
    }
    true
}

/// The authors' final check: every part `microbatches` times per row, each W after its B, and
/// the dependency order at slot level (device 0: `f` before `B`; the last device: `F` before
/// `f`, `B` before `b`; the others: their neighbours' passes first). The simulator then checks
/// the orders run.
pub(super) fn has_authors_order(grid: &Grid, microbatches: u32) -> bool {
    let p = grid.rows.len();
    let m = microbatches as usize;
    let mut slot = vec![0usize; 6 * p * m];
    let at = |part: Part, row: usize, mb: usize| (part.index() * p + row) * m + mb;
    for (i, row) in grid.rows.iter().enumerate() {
        let mut counts = [0usize; 6];
        for (j, &cell) in row.iter().enumerate() {
            if let Some(part) = Part::from_index(cell) {
                if counts[part.index()] >= m {
                    return false;
                }
                slot[at(part, i, counts[part.index()])] = j;
                counts[part.index()] += 1;
            }
        }
        if counts.iter().any(|&c| c != m) {
            return false;
        }
    }
    let before = |a: (Part, usize), b: (Part, usize), mb: usize| slot[at(a.0, a.1, mb)] < slot[at(b.0, b.1, mb)];
    for i in 0..p {
        for mb in 0..m {
            let ok = before((Part::B1, i), (Part::W1, i), mb)
                && before((Part::B0, i), (Part::W0, i), mb)
                && if i == 0 {
                    before((Part::F1, i), (Part::B1, i), mb)
                } else if i == p - 1 {
                    before((Part::F0, i), (Part::F1, i), mb) && before((Part::B1, i), (Part::B0, i), mb)
                } else {
                    before((Part::F0, i - 1), (Part::F0, i), mb)
                        && before((Part::B1, i - 1), (Part::B1, i), mb)
                        && before((Part::F1, i + 1), (Part::F1, i), mb)
                        && before((Part::B0, i + 1), (Part::B0, i), mb)
                };
            if !ok {
                return false;
            }
        }
    }
    true
}
