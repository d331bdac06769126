//! Adaptive V: the Controllable-Memory scheduler that picks the best V building block for a
//! memory limit, from V-Min's memory up to V-ZB's zero bubble at 1F1B's memory.
//!
//! Source: Qi, Wan, Amar, Lin, *Pipeline Parallelism with Controllable Memory* (NeurIPS 2024),
//! App. A "repeat–squeeze–reorder", and the authors' `v_auto_schedule.py` (zero-bubble.md §4.9).
//! Runs on a V placement ([`Placement::v_shape`]) with split backward.
//!
//! **Building blocks.** A block gives, for every device, the slots (mod 6) of one microbatch's
//! six passes `F f B b W w` (chunk-0 and chunk-1 forward, chunk-1 and chunk-0 input gradient,
//! their weight gradients; see [`Part`]). Device 0's block has `F` at 0 and `f B b` at distinct
//! slots in 1..5 (60 blocks); each W takes the first free slot after its B. Device `i+1` shifts
//! device `i`'s `F f B b` by one of the uniform offsets `[k, −1, k, −1]` (`k` = 1..5): offset
//! `k₀` for the first `len₀` devices, `k₁ ≤ k₀` after, for `len₀` in `1..P`. Blocks whose
//! shifted slots collide are skipped.
//!
//! **Repeat, squeeze, reorder** (per block, with `M' = max(M, 2P)` microbatches):
//! 1. repeat the block every 6 slots; microbatch 0 of each pass is its first slot after the
//!    pass it depends on (the chain `F` down, `f` up, `B` down, `b` up);
//! 2. reject the block if its peak lifespan count (`F` +1, `W` −1 chunk-activations) exceeds the
//!    limit (only with `M = M'`; the count is checked again after trimming) or `2P`;
//! 3. squeeze (every pass as early as its order and dependency allow, one slot each);
//! 4. rewrite the warm-up (everything before a device's first `b`): device `i` runs
//!    `2(P−1−i)` chunk-0 forwards, then `i+1` pairs `F f` (at most `peak/2` of them `f`), then
//!    rounds of `B W f|F` until the warm-up's passes are all placed; squeeze; reject if the
//!    peak rose;
//! 5. with `M < M'`, keep the first `M` microbatches; when `M ≤ P` and `2M` fits the limit, move
//!    each device's first W to the end until its count reaches the peak; squeeze;
//! 6. rewrite the cool-down: the last `⌈peak/2⌉` `b` and `min(i+1, peak − that)` `B` of
//!    device `i` move to a tight staircase after device 0's last `f`, the tail's W are dropped
//!    and re-added in the first free slots after the last remaining W; squeeze;
//! 7. fill every empty slot, left to right, with the first later pass of the device that may
//!    move there without breaking a dependency or raising the peak;
//! 8. give the W back to their B first in, first out; check every count and dependency.
//!
//! **Selection.** The schedule with the shortest simulated longest-device-span wins (the first
//! in the enumeration order above on ties); times come from the simulator's incremental
//! [`crate::sim::Builder`], pushing passes in slot order and abandoning a schedule once one of
//! its devices cannot finish in time to win. Along `len₀` the search stops at the first block
//! over the limit, as the authors' does.
//!
//! **Pruning** (the search runs on every slider move in the app). Evaluating every block costs
//! `O(P²·(M+P))` per block for about `60·15·P` blocks, so:
//! * *Slot screen*: only schedules whose slot bubble (the authors' `calc_bubble`) is within 1
//!   of the least are simulated; with `F = B = W` and no communication the slot bubble is the
//!   real one and only the least are simulated, stopping at the first whose cost meets it.
//!   Over 870 exhaustive comparisons (P = 3..8, limits, ten cost mixes incl. communication)
//!   the real-cost winner never had a slot bubble more than 1 above the least.
//! * *Peak bound* (`M ≥ 2P`): a block's peak is known before any step, and the §4.9 closed form
//!   at that peak bounds its slot bubble from below (every block, P = 2..8 in the tests and up
//!   to 12 when this was written). Blocks run from the highest peak down and the search stops
//!   once the bound exceeds the least slot bubble plus the screen's margin.
//! * With `M < 2P` the padded microbatches are trimmed after the warm-up, so a block's final
//!   peak is only known after most steps: every block runs (only the simulations are
//!   screened). This is the slow case: about 0.3 s at P = 16, M = 24.
//!
//! Measured (CPU time, `--profile bench`, see `benches/v_auto.rs`): P = 8, M = 32: 3 ms at the
//! default limit, 13 ms with costs 10, 12, 8 and limit 5; P = 16, M = 64: 11 ms at the default
//! limit, 69 ms with costs 10, 12, 8 and limit 12.
//!
//! **Units.** `--mem-limit` is in mem-f per device; a chunk's forward holds `mem_f/2`, so the
//! scheduler may hold `⌊2·limit/mem_f⌋` chunk-activations (capped at `2P`, V-ZB's need: more
//! memory does not help). The count frees a chunk's activation only at its W, as the papers
//! do; with `--mem-w` below `--mem-f` the input gradient already frees part of it, so the
//! simulated peak is at or below the limit. Default limit: `P·mem_f` (V-ZB). Below V-Min's
//! memory no block fits: the error names the least limit that works.
//!
//! **Where this differs from the authors' code.** Their script stops with an assertion on a
//! block whose rewritten warm-up or cool-down does not fit; here such a block is skipped. A
//! pass order that would deadlock is found by the simulator and skipped too. Blocks whose
//! repeated rows order the passes alike are evaluated once. For `P = 1` the `len₀` range is
//! empty in their code; here the single-device block is evaluated once per starting pattern.
//! The pruning above may pick another schedule of the same cost than theirs on ties between
//! blocks it did not simulate. None of this changes their published results: the costs and
//! orders of zero-bubble.md Appendix B and the closed form of §4.9 / Appendix C are reproduced
//! (tests).
//!
//! **Closed form** (§4.9): with `F = B = W` per chunk and no communication, the minimum
//! per-device bubble at a peak of `k` chunk-activations, `P ≤ k ≤ 2P`, is
//! `3P − 1 − 3k + max(3P, P − 1 + 2(1 + ⌊(k+1)/2⌋))` chunk passes; `k = 2P` gives 0 (V-ZB),
//! `k = P` gives `3P − 1`.

use super::v_blocks::{chunk_activations, cost_below, Grid, Part, EMPTY, PERIOD};
use super::{
    per_device_microbatch, BubbleQuantity, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction, SlowSearch,
};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::Schedule;
use crate::Costs;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "v-auto",
    title: "Adaptive V",
    group: FamilyGroup::VShape,
    summary: "the adaptive V scheduler: the best building block for any --mem-limit, up to V-ZB's zero bubble",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024), App. A",
    url: "https://arxiv.org/abs/2405.15362",
    options: &[FamilyOption { field: Field::MemLimit, default: OptionDefault::Derived(default_limit) }],
    constraints:
        "up to 32 devices; mem-limit ≥ V-Min's memory ((P+4)//3·mem-f); P·mem-f or more gives V-ZB (default P·mem-f)",
    passes: per_device_microbatch::<6>,
    slow_search: Some(SlowSearch {
        what: "the adaptive V search at unequal costs",
        size: search_size,
        live_limit: 6144,
        unit: "devices × microbatches",
        hint: "use fewer microbatches (past 2 × devices the steady state only repeats), or equal F, B and W",
    }),
    generate,
    predict,
};

/// The default memory limit: 1F1B's, `P·mem-f` (V-ZB's memory).
fn default_limit(params: &ScheduleParams) -> f64 {
    f64::from(params.devices) * params.costs.mem_f
}

/// The size of the search at unequal costs, `P·M`, where it simulates every near-best block
/// (about half a second in a browser at P = 32, M = 192); with F = B = W and no communication
/// it stops at the first block that reaches its bound and stays fast.
fn search_size(params: &ScheduleParams) -> Option<u64> {
    (!params.costs.balanced()).then(|| u64::from(params.devices) * u64::from(params.microbatches))
}

/// Largest device count accepted: the search grows with the cube of the devices.
const MAX_SEARCH_DEVICES: u32 = 32;

/// Largest `P·(M + 4P)` accepted: every evaluated block is laid out over that many slots.
const MAX_SLOTS: u64 = 1 << 18;

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let (devices, microbatches) = (params.devices, params.microbatches);
    if devices > MAX_SEARCH_DEVICES {
        return Err(ParamError::new(
            Field::Devices,
            format!("v-auto supports at most {MAX_SEARCH_DEVICES} devices, found {devices}"),
        )
        .hint("its building-block search grows with the cube of the devices")
        .hint("use v-half, v-min or zb-v for larger pipelines"));
    }
    let slots = u64::from(devices) * (u64::from(microbatches) + 4 * u64::from(devices));
    if slots > MAX_SLOTS {
        let most = MAX_SLOTS / u64::from(devices) - 4 * u64::from(devices);
        return Err(ParamError::new(
            Field::Microbatches,
            format!("v-auto supports at most {most} microbatches on {devices} devices, found {microbatches}"),
        )
        .hint("its building-block search lays every candidate out over all microbatches")
        .hint("use fewer microbatches: the building block repeats, so the bubble stops changing after a few P"));
    }
    let limit = chunk_limit(params);
    let search = Search { devices, microbatches, costs: &params.costs };
    if let Some(schedule) = search.run(limit) {
        return Ok(schedule);
    }
    Err(match search.least_limit(limit) {
        Some(needed) => {
            let mem_f = params.costs.mem_f;
            let given = params.mem_limit.unwrap_or(f64::from(devices) * mem_f);
            let least = f64::from(needed) * mem_f / 2.0;
            ParamError::new(
                Field::MemLimit,
                format!(
                    "cannot fit memory: v-auto needs a mem-limit of at least {least} \
                     ({needed} chunk-activations of mem-f/2) for {devices} devices and {microbatches} \
                     microbatches, found {given}"
                ),
            )
            .hint(format!("raise --mem-limit to {least} or more (V-Min's memory is the least any V block needs)"))
        }
        None => ParamError::new(
            Field::Microbatches,
            format!("v-auto found no building block that schedules {devices} devices and {microbatches} microbatches"),
        )
        .hint("try more microbatches, or v-half / v-min"),
    })
}

/// The chunk-activation limit the search runs with: `⌊2·limit/mem_f⌋`, at most `2P`.
fn chunk_limit(params: &ScheduleParams) -> u32 {
    let most = 2 * params.devices;
    let limit = params.mem_limit.unwrap_or(f64::from(params.devices) * params.costs.mem_f);
    match chunk_activations(limit, params.costs.mem_f) {
        Some(chunks) => chunks.min(u64::from(most)) as u32,
        None => most,
    }
}

/// The offsets `[δF⁰, δF¹, δB¹, δB⁰]` applied to `F f B b` from one device to the next.
const OFFSETS: [[i32; 4]; 5] = [[1, -1, 1, -1], [2, -1, 2, -1], [3, -1, 3, -1], [4, -1, 4, -1], [5, -1, 5, -1]];

/// How far above the least slot bubble a schedule is still simulated in the screened search.
const SCREEN_MARGIN: i64 = 1;

/// The building-block search for one size and cost table.
struct Search<'a> {
    devices: u32,
    microbatches: u32,
    costs: &'a Costs,
}

/// A block of the search for `M < 2P` waiting for steps 2–8.
struct FewBlock {
    /// Lower bound of its slot bubble ([`few_microbatch_bound`]).
    bound: i64,
    /// Position in the enumeration.
    index: usize,
    /// Peak of its padded rows.
    initial: i32,
    /// Its first slots ([`first_slots`]).
    starts: Vec<[u32; 6]>,
    /// Its squeezed, trimmed rows when they were needed already.
    rows: Option<Grid>,
}

/// Steps 7–8 for one cooled-down grid: its slot bubble and rows, or `None` when it fails.
type Finished = Option<(i64, Rc<Grid>)>;

/// A block that survived the repeat–squeeze–reorder steps.
struct Candidate {
    /// Position in the enumeration (ties go to the first).
    index: usize,
    /// Its rows (shared by the blocks that end in the same rows).
    grid: Rc<Grid>,
    /// Its slot bubble.
    bubble: i64,
}

impl Search<'_> {
    /// The best schedule under a limit of `limit` chunk-activations, if any block fits.
    fn run(&self, limit: u32) -> Option<Schedule> {
        if self.microbatches >= 2 * self.devices {
            self.cheapest(self.screened(limit), self.balanced())
        } else {
            self.cheapest(self.few_microbatches(limit), false)
        }
    }

    /// Visits the blocks in the authors' order: starting pattern, offset pair, `len₀`. `visit`
    /// returns `true` to stop the `len₀` loop (the block is over the limit).
    fn for_each_block(&self, mut visit: impl FnMut(usize, &[[u32; 6]]) -> bool) {
        let p = self.devices;
        let pairs: Vec<(usize, usize)> = if p == 1 {
            vec![(0, 0)]
        } else {
            (0..OFFSETS.len()).flat_map(|i0| (0..=i0).map(move |i1| (i0, i1))).collect()
        };
        let mut index = 0;
        for pattern in starting_patterns() {
            for &(i0, i1) in &pairs {
                // With equal offsets every len₀ gives the same block.
                let lengths = if i0 == i1 { 1..2 } else { 1..p.max(2) };
                for len0 in lengths {
                    let Some(block) = building_block(pattern, OFFSETS[i0], OFFSETS[i1], len0, p) else {
                        continue;
                    };
                    index += 1;
                    if visit(index, &first_slots(&block)) {
                        break;
                    }
                }
            }
        }
    }

    /// The screened candidates for `M < 2P`: those [`Search::every_block`] would keep, found
    /// without running every block through every step.
    ///
    /// 1. The blocks are visited in the authors' order with their stop along `len₀`. That stop
    ///    needs a block's peak after trimming only when its padded peak is over the limit
    ///    (trimming never raises the peak); only those blocks are trimmed here.
    /// 2. The others run in the order of [`few_microbatch_bound`], a lower bound of their slot
    ///    bubble from their padded peak, until the bound exceeds the least slot bubble found
    ///    by more than the screen's margin: no block left can then pass the screen, nor lower
    ///    the least.
    /// 3. Steps 2–5 are read off the block ([`trimmed_rows`]) instead of laid out over `2P`
    ///    microbatches.
    fn few_microbatches(&self, limit: u32) -> Vec<Candidate> {
        let (p, m) = (self.devices, self.microbatches);
        let cap = limit.min(2 * p) as i32;
        let trim = |starts: &[[u32; 6]], initial: i32| trimmed_rows(starts, p, m, initial, cap)?.squeeze(m);
        let mut seen: HashMap<Vec<u16>, bool> = HashMap::new();
        let mut blocks: Vec<FewBlock> = Vec::new();
        self.for_each_block(|index, starts| {
            let key = order_key(starts);
            if let Some(&over) = seen.get(&key) {
                return over;
            }
            let initial = repeated_peak(starts, 2 * p);
            let (over, rows) = if initial > 2 * p as i32 {
                (true, None)
            } else if initial > limit as i32 {
                // Failing before trimming returns the padded peak, over the limit too.
                match trim(starts, initial) {
                    Some(rows) if rows.peak() <= cap => (false, Some(rows)),
                    _ => (true, None),
                }
            } else {
                (false, None)
            };
            seen.insert(key, over);
            if !over {
                let bound = few_microbatch_bound(p, m, initial as u32);
                blocks.push(FewBlock { bound, index, initial, starts: starts.to_vec(), rows });
            }
            over
        });
        blocks.sort_by_key(|b| (b.bound, b.index));
        let margin = if self.balanced() { 0 } else { SCREEN_MARGIN };
        let mut least: Option<i64> = None;
        let mut candidates = Vec::new();
        // Steps 7–8 by their input: with few microbatches most blocks reach the same rows
        // after the cool-down.
        let mut finished: HashMap<(i32, Grid), Finished> = HashMap::new();
        for block in blocks {
            if least.is_some_and(|l| block.bound > l + margin) {
                break;
            }
            let Some(rows) = block.rows.or_else(|| trim(&block.starts, block.initial)) else { continue };
            let reference = rows.peak();
            if reference > cap {
                continue;
            }
            let Some(cooled) = cool_down(rows, reference, p, m) else { continue };
            let finished = finished.entry((reference, cooled)).or_insert_with_key(|(reference, cooled)| {
                let (_, grid) = fill_and_check(cooled.clone(), m, *reference);
                grid.map(|grid| (slot_bubble(&grid), Rc::new(grid)))
            });
            if let Some((bubble, grid)) = finished {
                least = Some(least.map_or(*bubble, |l| l.min(*bubble)));
                candidates.push(Candidate { index: block.index, grid: Rc::clone(grid), bubble: *bubble });
            }
        }
        candidates.sort_by_key(|c| c.index);
        self.screen(candidates)
    }

    /// Every block through every step, as the authors' search; only the screened candidates
    /// are simulated. The reference [`Search::few_microbatches`] is tested against.
    #[cfg(test)]
    fn exhaustive(&self, limit: u32) -> Vec<Candidate> {
        self.screen(self.every_block(limit))
    }

    /// Every block that works under the limit, in the authors' order and with their stop
    /// along `len₀`.
    #[cfg(test)]
    fn every_block(&self, limit: u32) -> Vec<Candidate> {
        let mut seen: HashMap<Vec<u16>, i32> = HashMap::new();
        let mut candidates = Vec::new();
        self.for_each_block(|index, starts| {
            let key = order_key(starts);
            if let Some(&peak) = seen.get(&key) {
                return peak > limit as i32;
            }
            let (peak, grid) = schedule_block(starts, self.devices, self.microbatches, limit);
            seen.insert(key, peak);
            if peak > limit as i32 {
                return true;
            }
            candidates.extend(grid.map(|grid| Candidate { index, bubble: slot_bubble(&grid), grid: Rc::new(grid) }));
            false
        });
        candidates
    }

    /// Keeps the candidates worth simulating: those within the margin of the least slot
    /// bubble (the least only, with balanced costs).
    fn screen(&self, mut candidates: Vec<Candidate>) -> Vec<Candidate> {
        let margin = if self.balanced() { 0 } else { SCREEN_MARGIN };
        if let Some(least) = candidates.iter().map(|c| c.bubble).min() {
            candidates.retain(|c| c.bubble <= least + margin);
        }
        candidates
    }

    /// The screened search for `M ≥ 2P`. A block's peak is known before any step, and the §4.9
    /// closed form at that peak is a lower bound of its slot bubble (checked for every block
    /// up to P = 12, tests). Blocks run through the steps from the highest peak down until
    /// the bound exceeds the least slot bubble found by more than [`SCREEN_MARGIN`]; only
    /// schedules within that margin are simulated (only the least with `F = B = W` and no
    /// communication, where the slot bubble is the real one). The screen keeps every winner of
    /// the exhaustive search over the sizes and costs the tests compare.
    fn screened(&self, limit: u32) -> Vec<Candidate> {
        let margin = if self.balanced() { 0 } else { SCREEN_MARGIN };
        let (p, m) = (self.devices, self.microbatches);
        let mut seen = std::collections::HashSet::new();
        let mut blocks: Vec<(i32, usize, Vec<[u32; 6]>)> = Vec::new();
        self.for_each_block(|index, starts| {
            let peak = repeated_peak(starts, m);
            if peak > limit as i32 {
                return true;
            }
            if seen.insert(order_key(starts)) {
                blocks.push((peak, index, starts.to_vec()));
            }
            false
        });
        blocks.sort_by_key(|&(peak, index, _)| (std::cmp::Reverse(peak), index));
        let mut least: Option<i64> = None;
        let mut candidates: Vec<Candidate> = Vec::new();
        for (peak, index, starts) in blocks {
            let bound = closed_form_bubble(p, peak.max(0) as u32);
            if least.is_some_and(|l| bound > l + margin) {
                break;
            }
            if let (_, Some(grid)) = schedule_block(&starts, p, m, limit) {
                let bubble = slot_bubble(&grid);
                least = Some(least.map_or(bubble, |l| l.min(bubble)));
                candidates.push(Candidate { index, grid: Rc::new(grid), bubble });
                // Balanced: the first block of its peak to reach the bound wins; later blocks
                // of that peak can only tie it (and come later), lower peaks have a higher bound.
                if margin == 0 && bubble == bound && least == Some(bound) {
                    break;
                }
            }
        }
        self.screen(candidates)
    }

    /// Whether every chunk pass takes the same time and nothing is spent communicating: then a
    /// schedule's real bubble is its slot bubble times the pass time.
    fn balanced(&self) -> bool {
        self.costs.balanced()
    }

    /// The candidate with the shortest simulated cost (the first in enumeration order on
    /// ties); candidates whose orders deadlock are skipped. With `balanced` costs no schedule
    /// runs faster than its slot bubble allows, so the search stops at the first candidate that
    /// reaches the least slot bubble's cost. Rows equal to an earlier candidate's are not
    /// simulated again: they cost the same and lose the tie.
    fn cheapest(&self, mut candidates: Vec<Candidate>, balanced: bool) -> Option<Schedule> {
        candidates.sort_by_key(|c| c.index);
        let least = candidates.iter().map(|c| c.bubble).min()?;
        let pass_time = self.costs.f / 2.0;
        let floor = (6 * i64::from(self.microbatches) + least) as f64 * pass_time;
        let mut best: Option<(f64, Schedule)> = None;
        let mut simulated: HashSet<&Grid> = HashSet::with_capacity(candidates.len());
        for candidate in &candidates {
            if !simulated.insert(&candidate.grid) {
                continue;
            }
            let beat = best.as_ref().map_or(f64::INFINITY, |(b, _)| *b);
            if let Some(found) = cost_below(&candidate.grid, self.microbatches, self.costs, beat) {
                best = Some(found);
            }
            if balanced && best.as_ref().is_some_and(|(b, _)| *b <= floor) {
                break;
            }
        }
        best.map(|(_, schedule)| schedule)
    }

    /// The least chunk-activation limit above `limit` under which some block works, if any.
    fn least_limit(&self, limit: u32) -> Option<u32> {
        (limit + 1..=2 * self.devices).find(|&l| self.run(l).is_some())
    }
}

/// The upstream `calc_bubble`: the worst device's empty slots between its first and last pass
/// (device `i` cannot start before slot `i`).
fn slot_bubble(grid: &Grid) -> i64 {
    grid.rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let len = row.iter().rposition(|&c| c != EMPTY).map_or(0, |l| l + 1) as i64;
            let count = row.iter().filter(|&&c| c != EMPTY).count() as i64;
            len - count - i as i64
        })
        .max()
        .unwrap_or(0)
}

/// The peak lifespan count of the block repeated `microbatches` times, without building the
/// rows (see [`repeated_row_peak`]).
fn repeated_peak(starts: &[[u32; 6]], microbatches: u32) -> i32 {
    starts.iter().map(|row| repeated_row_peak(row, microbatches)).max().unwrap_or(0)
}

/// The peak lifespan count of one device's row repeated `microbatches` times, period by
/// period: part `x`, first at slot `6aₓ + rₓ`, runs once in each period `q` with
/// `aₓ ≤ q < aₓ + M`. Between two periods where a part starts or stops, the same parts run in
/// every period, so the count at the start of a period grows linearly and peaks at an end of
/// that range, and the rise within a period is the same in each.
fn repeated_row_peak(row: &[u32; 6], microbatches: u32) -> i32 {
    let m = i64::from(microbatches);
    let first: [i64; 6] = row.map(|s| i64::from(s / PERIOD));
    let memory = Part::ALL.map(Part::memory).map(i64::from);
    // The parts in slot order within a period.
    let mut order: [usize; 6] = [0, 1, 2, 3, 4, 5];
    order.sort_by_key(|&x| row[x] % PERIOD);
    // Count at the start of period q.
    let base = |q: i64| (0..6).map(|x| memory[x] * (q - first[x]).clamp(0, m)).sum::<i64>();
    let mut cuts = [0i64; 12];
    for (x, &a) in first.iter().enumerate() {
        cuts[2 * x] = a;
        cuts[2 * x + 1] = a + m;
    }
    cuts.sort_unstable();
    let mut peak = 0i64;
    for pair in cuts.windows(2).filter(|pair| pair[0] < pair[1]) {
        let (lo, hi) = (pair[0], pair[1] - 1);
        let (mut rise, mut highest) = (0i64, 0i64);
        for &x in &order {
            if first[x] <= lo && lo < first[x] + m {
                rise += memory[x];
                highest = highest.max(rise);
            }
        }
        peak = peak.max(base(lo) + highest).max(base(hi) + highest);
    }
    peak as i32
}

/// The passes of one device's row of a block repeated `microbatches` times (microbatch `k` of
/// part `x` at slot `row[x] + 6k`), in slot order from slot `from` on: `(slot, part, k)`.
fn repeated_row(row: &[u32; 6], microbatches: u32, from: u32) -> impl Iterator<Item = (u32, Part, u32)> {
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

/// Device 0's 60 starting blocks: `F` at 0, `f B b` at distinct slots in 1..5, each W at the
/// first free slot after its B.
fn starting_patterns() -> Vec<[u8; 6]> {
    let mut patterns = Vec::with_capacity(60);
    for f1 in 1..6u8 {
        for b1 in 1..6u8 {
            for b0 in 1..6u8 {
                if f1 != b1 && f1 != b0 && b1 != b0 {
                    patterns.push(with_weights([0, f1, b1, b0]));
                }
            }
        }
    }
    patterns
}

/// Completes `F f B b` slots with `W` and `w`, each at the first free slot after its B.
fn with_weights(slots: [u8; 4]) -> [u8; 6] {
    let mut used = [false; PERIOD as usize];
    for &s in &slots {
        used[usize::from(s)] = true;
    }
    let mut block = [slots[0], slots[1], slots[2], slots[3], 0, 0];
    for (b, w) in [(Part::B1, Part::W1), (Part::B0, Part::W0)] {
        let from = block[b.index()];
        if let Some(slot) = (1..PERIOD as u8).map(|j| (from + j) % PERIOD as u8).find(|&s| !used[usize::from(s)]) {
            used[usize::from(slot)] = true;
            block[w.index()] = slot;
        }
    }
    block
}

/// Every device's block (slots mod 6), or `None` if two passes of a device collide.
fn building_block(
    first: [u8; 6],
    offset0: [i32; 4],
    offset1: [i32; 4],
    len0: u32,
    devices: u32,
) -> Option<Vec<[u8; 6]>> {
    let mut block = Vec::with_capacity(devices as usize);
    block.push(first);
    for i in 0..devices.saturating_sub(1) {
        let offset = if i < len0 { offset0 } else { offset1 };
        let last = block[i as usize];
        let mut slots = [0u8; 4];
        let mut used = [false; PERIOD as usize];
        for v in 0..4 {
            let slot = (i32::from(last[v]) + offset[v]).rem_euclid(PERIOD as i32) as u8;
            if std::mem::replace(&mut used[usize::from(slot)], true) {
                return None;
            }
            slots[v] = slot;
        }
        block.push(with_weights(slots));
    }
    Some(block)
}

/// The absolute slot of every device's microbatch-0 passes when the block repeats every 6 slots
/// from slot 6: each pass at its first slot after the pass it follows in the chain
/// `F` down, `f` up, `B` down, `b` up; each W at its first slot after its B.
fn first_slots(block: &[[u8; 6]]) -> Vec<[u32; 6]> {
    let devices = block.len();
    let mut starts = vec![[0u32; 6]; devices];
    let next = |from: u32, residue: u8| from + (u32::from(residue) + PERIOD - from % PERIOD) % PERIOD;
    let mut cursor = PERIOD;
    for part in [Part::F0, Part::F1, Part::B1, Part::B0] {
        let rows: Vec<usize> =
            if matches!(part, Part::F0 | Part::B1) { (0..devices).collect() } else { (0..devices).rev().collect() };
        for d in rows {
            let slot = next(cursor, block[d][part.index()]);
            starts[d][part.index()] = slot;
            cursor = slot + 1;
            if let Some(w) = part.weight() {
                starts[d][w.index()] = next(cursor, block[d][w.index()]);
            }
        }
    }
    starts
}

/// A key equal for two blocks exactly when their repeated rows order the passes alike: per
/// device, each pass's period offset from the device's first pass and the rank of its slot
/// within the period.
fn order_key(starts: &[[u32; 6]]) -> Vec<u16> {
    let mut key = Vec::with_capacity(starts.len() * 12);
    for row in starts {
        let first = row.iter().copied().min().unwrap_or(0);
        let residues = row.map(|s| (s - first) % PERIOD);
        for &s in row {
            let rel = s - first;
            let rank = residues.iter().filter(|&&r| r < rel % PERIOD).count();
            key.push((rel / PERIOD) as u16);
            key.push(rank as u16);
        }
    }
    key
}

/// Runs repeat–squeeze–reorder on one block for `microbatches` under a limit of `limit`
/// chunk-activations. Returns the peak the search compares with the limit and, if the block
/// works, its rows.
fn schedule_block(starts: &[[u32; 6]], devices: u32, microbatches: u32, limit: u32) -> (i32, Option<Grid>) {
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
/// instead of laid out slot by slot: the squeezed, trimmed rows [`schedule_block`] reaches, or
/// `None` where it gives up before them (it then returns the initial peak `initial`).
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
fn trimmed_rows(starts: &[[u32; 6]], devices: u32, microbatches: u32, initial: i32, cap: i32) -> Option<Grid> {
    let padded = 2 * devices;
    let (p, m) = (devices as usize, microbatches as usize);
    let peak = initial.clamp(0, 2 * devices as i32) as usize;
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
    if m <= p && 2 * microbatches as i32 <= cap {
        grid = release_early_weights(grid, warm_peak.min(2 * devices as i32));
    }
    Some(grid)
}

/// Steps 6–8 on squeezed rows of `microbatches` microbatches (peaking at `peak`) under a
/// reference peak of `reference`: rewrites the cool-down, fills the bubbles, gives the W back
/// and checks the result. Returns the peak the search compares with the limit and, if the
/// block works, its rows.
fn finish_block(grid: Grid, peak: i32, devices: u32, microbatches: u32, reference: i32) -> (i32, Option<Grid>) {
    match cool_down(grid, peak, devices, microbatches) {
        Some(grid) => fill_and_check(grid, microbatches, reference),
        None => (reference, None),
    }
}

/// Step 6 on rows peaking at `peak`, and the squeeze after it.
fn cool_down(grid: Grid, peak: i32, devices: u32, microbatches: u32) -> Option<Grid> {
    rewrite_cool_down(grid, peak, devices, microbatches)?.squeeze(microbatches)
}

/// Steps 7–8 on the squeezed rows after the cool-down, as [`finish_block`] returns them.
fn fill_and_check(mut grid: Grid, microbatches: u32, reference: i32) -> (i32, Option<Grid>) {
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
fn repeat(starts: &[[u32; 6]], microbatches: u32) -> Grid {
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
fn rewrite_warm_up(mut grid: Grid, microbatches: u32) -> Option<Grid> {
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
struct WarmUpCounts {
    f0: usize,
    f1: usize,
    b1: usize,
    w1: usize,
}

impl WarmUpCounts {
    /// Counts one more `part` (not `b` or `w`, which a warm-up never holds).
    fn add(&mut self, part: Part) {
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
fn warm_up_steps(
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
fn keep_microbatches(mut grid: Grid, microbatches: u32) -> Grid {
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
fn release_early_weights(mut grid: Grid, peak: i32) -> Grid {
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
fn rewrite_cool_down(mut grid: Grid, peak: i32, devices: u32, microbatches: u32) -> Option<Grid> {
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
fn fill_bubbles(grid: &mut Grid, microbatches: u32) -> i32 {
    let p = grid.rows.len();
    let m = microbatches as usize;
    let len = grid.len();
    // Slots of the occurrences of (row, part), in order, and the rows' peak.
    let mut occurrences: Vec<Vec<u32>> = vec![Vec::with_capacity(m); 6 * p];
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
    let mut memory = vec![0i32; p];
    let mut counts = vec![[0usize; 6]; p];
    // Slot of (part, row, microbatch) once reached by the sweep.
    let mut slot_of = vec![usize::MAX; 6 * p * m];
    let index = |part: usize, row: usize, mb: usize| (part * p + row) * m + mb;
    for j in 0..len {
        for i in 0..p {
            if let Some(part) = Part::from_index(grid.rows[i][j]) {
                let mb = counts[i][part.index()];
                if mb < m {
                    slot_of[index(part.index(), i, mb)] = j;
                }
                counts[i][part.index()] += 1;
                memory[i] += part.memory();
                filled_peak = filled_peak.max(memory[i]);
                continue;
            }
            // The next pass of each part that may move here (what it depends on is in an
            // earlier slot), by slot.
            let reached = |dep: Part, row: usize, mb: usize| mb < m && slot_of[index(dep.index(), row, mb)] < j;
            let mut next: [(usize, Part); 6] = [(usize::MAX, Part::F0); 6];
            let mut found = 0;
            for x in Part::ALL {
                let mb = counts[i][x.index()];
                let Some(&at) = occurrences[6 * i + x.index()].get(mb) else { continue };
                let ready = match x {
                    Part::F0 | Part::B1 if i > 0 => reached(x, i - 1, mb),
                    Part::F0 => true,
                    Part::B1 => counts[i][Part::F1.index()] > mb,
                    Part::F1 | Part::B0 if i + 1 < p => reached(x, i + 1, mb),
                    Part::F1 => counts[i][Part::F0.index()] > mb,
                    Part::B0 => counts[i][Part::B1.index()] > mb,
                    Part::W1 => counts[i][Part::B1.index()] > mb,
                    Part::W0 => counts[i][Part::B0.index()] > mb,
                };
                if ready {
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
                    if memory[i] + highest >= peak {
                        continue;
                    }
                }
                let mb = counts[i][part.index()];
                grid.rows[i][j] = part as u8;
                grid.rows[i][at] = EMPTY;
                if mb < m {
                    slot_of[index(part.index(), i, mb)] = j;
                }
                occurrences[6 * i + part.index()][mb] = j as u32;
                counts[i][part.index()] += 1;
                memory[i] += part.memory();
                filled_peak = filled_peak.max(memory[i]);
                break;
            }
        }
    }
    filled_peak
}

/// Step 8: gives every W to the oldest input gradient of its row not yet followed by one
/// (chunk 1's `B` gets `W`, chunk 0's `b` gets `w`). `false` if a row's counts do not match.
fn relabel_weights(grid: &mut Grid, microbatches: u32) -> bool {
    for row in &mut grid.rows {
        let mut counts = [0u32; 6];
        for part in row.iter().filter_map(|&c| Part::from_index(c)) {
            counts[part.index()] += 1;
        }
        if counts.iter().any(|&c| c != microbatches) {
            return false;
        }
        let mut queue = std::collections::VecDeque::with_capacity(2 * microbatches as usize);
        for cell in row.iter_mut() {
            match Part::from_index(*cell) {
                Some(part) if part.is_input_grad() => queue.extend(part.weight()),
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
fn has_authors_order(grid: &Grid, microbatches: u32) -> bool {
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

/// The §4.9 closed form: the least per-device bubble, in chunk passes, of a block holding
/// `peak` chunk-activations (`P ≤ peak ≤ 2P`, `F = B = W`, no communication).
fn closed_form_bubble(devices: u32, peak: u32) -> i64 {
    let (p, k) = (i64::from(devices), i64::from(peak));
    3 * p - 1 - 3 * k + (3 * p).max(p - 1 + 2 * (1 + (k + 1) / 2))
}

/// The least slot bubble any schedule of `microbatches < 2·devices` microbatches can have,
/// from the dependencies alone (so every block's, whatever its peak). Slot bubble counts
/// device 0 from slot 0; its chain for microbatch 0 (`F` down, `f` up) puts its first `f` at
/// slot `2P−1` or later.
/// * Before that slot device 0 can only run its `M` chunk-0 forwards: `2P−1−M` empty slots.
/// * Its `M` `f` and `M` `B` all lie between its first `f` and its last `B` (slot `2P+2M−2` or
///   later); its last `b` follows `2P−1` slots later (`B` down, `b` up), its last `w` after
///   that: the row ends at slot `4P+2M−2` or later, `4P−4M−1` empty slots among `6M` passes.
fn fill_floor(devices: u32, microbatches: u32) -> i64 {
    let (p, m) = (i64::from(devices), i64::from(microbatches));
    (2 * p - 1 - m).max(4 * p - 4 * m - 1).max(0)
}

/// A lower bound of the slot bubble of a block whose padded rows (`2P` microbatches) peak at
/// `peak`, for `M < 2P` microbatches:
/// * [`fill_floor`], which no schedule beats;
/// * the §4.9 closed form at that peak when `peak < 2M` (with `2M` chunk-activations or more,
///   trimming to `M` microbatches frees the memory the closed form pays for);
/// * for `P < M`, `fill_floor + 2⌈(2P−3−peak)/2⌉` when `peak ≤ 2P−3`: below that peak the
///   rewritten warm-up of device 0 cannot fill its first `2P−1` slots and the cool-down adds
///   the same again.
///
/// These bounds are the least slot bubble the search reaches at each peak, checked against
/// every block for every `M < 2P` and limit at `P ≤ 8` in
/// `tests::few_microbatch_bound_holds_for_every_block` and for every `P ≤ 32`, the family's
/// limit, by its `--ignored` twin.
fn few_microbatch_bound(devices: u32, microbatches: u32, peak: u32) -> i64 {
    let floor = fill_floor(devices, microbatches);
    let mut bound = floor;
    if peak < 2 * microbatches {
        bound = bound.max(closed_form_bubble(devices, peak));
    }
    if microbatches > devices && peak + 3 <= 2 * devices {
        bound = bound.max(floor + 2 * i64::from((2 * devices - 3 - peak).div_ceil(2)));
    }
    bound
}

/// The least peak any block reaches with `M ≥ 2P`: V-Min's, `2⌊(P+4)/3⌋` chunk-activations
/// (checked against the search, tests).
fn least_peak(devices: u32) -> u32 {
    2 * ((devices + 4) / 3)
}

/// With `F = B = W` and no communication the bubble is the §4.9 closed form at the limit's
/// chunk-activation count `k`, for `k` from V-Min's peak to `2P` and `M ≥ 2P` (the search
/// reaches the bound at every such peak and never beats it, tests).
fn predict(params: &ScheduleParams) -> Option<Prediction> {
    let c = &params.costs;
    let (p, m) = (params.devices, params.microbatches);
    let k = chunk_limit(params);
    let balanced = c.balanced();
    let in_range = k >= least_peak(p) && m >= 2 * p && p <= MAX_SEARCH_DEVICES;
    Some(Prediction {
        bubble: (balanced && in_range).then(|| closed_form_bubble(p, k) as f64 * c.f / 2.0),
        bubble_formula: "(3P − 1 − 3k + max(3P, P + 1 + 2⌊(k+1)/2⌋))·F/2 for k = ⌊2·limit/mem-f⌋ chunk-activations, F = B = W, M ≥ 2P",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: None,
        memory_formula: "at most ⌊2·limit/mem-f⌋ chunk-activations of mem-f/2 (≤ mem-limit)",
    })
}

#[cfg(test)]
#[path = "v_auto_tests.rs"]
mod tests;
