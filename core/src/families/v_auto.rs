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
//! The details are in `docs/schedule-families.md`, under `families/v_auto.rs`.

use super::v_blocks::{chunk_activations, cost_below, first_slots, microbatch_work, Grid, Part, EMPTY, PERIOD};
use super::{
    per_device_microbatch, BubbleQuantity, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction, SlowSearch,
};
use crate::error::{Field, ParamError};
use crate::params::Costs;
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{Placement, Schedule};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use steps::{cool_down, fill_and_check, repeated_peak, schedule_block, steady_block, trimmed_rows};

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
    // Its search simulates many candidate blocks per pass: at 16 × 20 (1,920 passes) it took
    // 51 ms on the page's size-tuned module, 27 µs a pass against zb-h1's 0.24 µs
    // (`node tests/e2e/bench.mjs dist`, quiet 2-core machine).
    page_weight: 100,
    generate,
    predict,
    ..Family::DEFAULTS
};

/// The default memory limit: 1F1B's, `P·mem-f` (V-ZB's memory).
///
/// With unequal stages (a model, `--mem-f 1,1,1,3`) the unit is the heaviest stage:
/// `P·share_mem_f` with [`share_mem_f`], so every block the search accepts fits on every
/// device.
fn default_limit(params: &ScheduleParams) -> f64 {
    f64::from(params.devices) * share_mem_f(params)
}

/// Twice the activation memory of the heaviest chunk in the V's per-stage costs (what the
/// simulator charges): `mem_f` when every stage stores alike. The search counts chunk
/// activations of half of this, so a count that fits the limit fits it on every device.
fn share_mem_f(params: &ScheduleParams) -> f64 {
    if params.costs.is_uniform() {
        return params.costs.mem_f;
    }
    let costs = StageCosts::new(&params.costs, &Placement::v_shape(params.devices));
    2.0 * costs.mem_f.iter().copied().fold(0.0, f64::max)
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
            let mem_f = share_mem_f(params);
            let given = params.mem_limit.unwrap_or_else(|| default_limit(params));
            let least = params.memory_text(f64::from(needed) * mem_f / 2.0);
            ParamError::new(
                Field::MemLimit,
                format!(
                    "cannot fit memory: v-auto needs a mem-limit of at least {least} \
                     ({needed} chunk-activations of mem-f/2) for {devices} devices and {microbatches} \
                     microbatches, found {}",
                    params.memory_text(given)
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
    let limit = params.mem_limit.unwrap_or_else(|| default_limit(params));
    match chunk_activations(limit, share_mem_f(params)) {
        Some(chunks) => chunks.min(u64::from(most)) as u32,
        None => most,
    }
}

/// The offsets `[δF⁰, δF¹, δB¹, δB⁰]` applied to `F f B b` from one device to the next.
const OFFSETS: [[i32; 4]; 5] = [[1, -1, 1, -1], [2, -1, 2, -1], [3, -1, 3, -1], [4, -1, 4, -1], [5, -1, 5, -1]];

/// How far above the least slot bubble a schedule is still simulated in the screened search.
const SCREEN_MARGIN: i64 = 1;

/// With `M ≥ 2P`, blocks are screened at `STEADY_SCREEN·P` microbatches (or a few more, see
/// [`steady_microbatches`]), whatever `M` is.
const STEADY_SCREEN: u32 = 2;

/// The microbatches a block is screened with when `M ≥ 2P`: `2P`, or as many periods as its
/// rows' first passes spread over when that is more (every part must have started before the
/// first one stops for the rows to reach their steady state; only blocks of very few devices
/// spread that far), and never more than `M`.
fn steady_microbatches(starts: &[[u32; 6]], devices: u32, microbatches: u32) -> u32 {
    let spread = starts
        .iter()
        .map(|row| {
            let (first, last) = (row.iter().min().copied().unwrap_or(0), row.iter().max().copied().unwrap_or(0));
            last / PERIOD - first / PERIOD + 1
        })
        .max()
        .unwrap_or(1);
    (STEADY_SCREEN * devices).max(spread).min(microbatches)
}

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

/// A candidate of the `M ≥ 2P` search: its rows at `2P` microbatches and its first slots, to
/// lay it out at `M` when it is simulated there.
struct SteadyCandidate {
    /// The candidate, with rows at `2P` microbatches.
    candidate: Candidate,
    /// Its first slots ([`first_slots`]).
    starts: Vec<[u32; 6]>,
    /// The microbatches its rows run ([`steady_microbatches`]).
    microbatches: u32,
}

/// A block that survived the repeat–squeeze–reorder steps.
#[derive(Clone)]
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
            self.steady_cheapest(self.screened(limit), limit)
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
        crate::units::sort::sort_by_key(&mut blocks, |b| (b.bound, b.index));
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
        crate::units::sort::sort_by_key(&mut candidates, |c| c.index);
        self.screen(candidates)
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

    /// The screened search for `M ≥ 2P`, laid out at [`steady_microbatches`] (`2P` but for
    /// blocks of very few devices) whatever `M` is: every step keeps the steady state of a block that runs `2P`
    /// microbatches or more, so its peak, whether it works and its slot bubble do not change
    /// with `M` (checked block by block for `M` from `2P` to `4P + 2`, tests). Returns the
    /// candidates with their rows at `2P` microbatches and their first slots.
    ///
    /// A block's peak is known before any step, and the §4.9 closed form at that peak is a
    /// lower bound of its slot bubble (checked for every block up to P = 12, tests). Blocks run
    /// through the steps from the highest peak down until the bound exceeds the least slot
    /// bubble found by more than [`SCREEN_MARGIN`]; only schedules within that margin are
    /// simulated (only the least with `F = B = W` and no communication, where the slot bubble
    /// is the real one). The screen keeps every winner of the exhaustive search over the sizes
    /// and costs the tests compare.
    fn screened(&self, limit: u32) -> Vec<SteadyCandidate> {
        let margin = if self.balanced() { 0 } else { SCREEN_MARGIN };
        let p = self.devices;
        let m = self.microbatches;
        let mut seen = std::collections::HashSet::new();
        let mut blocks: Vec<(i32, usize, Vec<[u32; 6]>)> = Vec::new();
        self.for_each_block(|index, starts| {
            let peak = repeated_peak(starts, steady_microbatches(starts, p, m));
            if peak > limit as i32 {
                return true;
            }
            if seen.insert(order_key(starts)) {
                blocks.push((peak, index, starts.to_vec()));
            }
            false
        });
        crate::units::sort::sort_by_key(&mut blocks, |&(peak, index, _)| (std::cmp::Reverse(peak), index));
        let mut least: Option<i64> = None;
        let mut candidates: Vec<SteadyCandidate> = Vec::new();
        for (peak, index, starts) in blocks {
            let bound = closed_form_bubble(p, peak.max(0) as u32);
            if least.is_some_and(|l| bound > l + margin) {
                break;
            }
            let m0 = steady_microbatches(&starts, p, m);
            if let (_, Some(grid)) = steady_block(&starts, p, m0, limit) {
                let bubble = slot_bubble(&grid);
                least = Some(least.map_or(bubble, |l| l.min(bubble)));
                let candidate = Candidate { index, grid: Rc::new(grid), bubble };
                candidates.push(SteadyCandidate { candidate, starts, microbatches: m0 });
                // Balanced: the first block of its peak to reach the bound wins; later blocks
                // of that peak can only tie it (and come later), lower peaks have a higher bound.
                if margin == 0 && bubble == bound && least == Some(bound) {
                    break;
                }
            }
        }
        if let Some(least) = least {
            candidates.retain(|c| c.candidate.bubble <= least + margin);
        }
        crate::units::sort::sort_by_key(&mut candidates, |c| c.candidate.index);
        candidates
    }

    /// The candidate of the `M ≥ 2P` search ([`Search::screened`]) with the shortest simulated
    /// cost at `M` microbatches, the first on ties: the schedule [`Search::cheapest`] picks
    /// from the same candidates laid out at `M`, without laying out or simulating most of them
    /// at `M`.
    ///
    /// A candidate costing `c₀` at its screening size `M₀` ([`steady_microbatches`]) costs at least `c₀ + (M − M₀)·w` at
    /// `M`, `w` the least work a device does per microbatch (the steady state repeats; checked
    /// for every block, `M` up to `4P + 2` and cost mix of
    /// `tests::steady_bound_never_exceeds_the_simulated_cost`). So the cheapest
    /// candidate at `M₀` is laid out and simulated at `M` first, then every other one is
    /// simulated at `M₀` only as far as it may still reach that bound below the best cost
    /// found, and at `M` only if it does. A candidate the first pass abandoned keeps the
    /// bound that pass proved ([`cost_below`]): it is timed at `M₀` again only when the cost
    /// to beat lies above that bound (the result is the same as timing it again).
    fn steady_cheapest(&self, candidates: Vec<SteadyCandidate>, limit: u32) -> Option<Schedule> {
        let (p, m) = (self.devices, self.microbatches);
        let work = microbatch_work(p, self.costs);
        // What a candidate adds at M to its cost at its screening size, at least.
        let extra = |c: &SteadyCandidate| f64::from(m - c.microbatches) * work;
        // Bounds of the rows already simulated at their screening size (equal rows, equal bounds).
        let mut bounds: HashMap<&Grid, f64> = HashMap::with_capacity(candidates.len());
        // What the first pass proved of the others' cost at their screening size: timing them
        // again against a cost to beat at or below it would abandon them again.
        let mut proven = vec![f64::NEG_INFINITY; candidates.len()];
        let mut first: Option<(f64, usize)> = None;
        for (i, c) in candidates.iter().enumerate() {
            let beat = first.map_or(f64::INFINITY, |(b, _)| b) - extra(c);
            match cost_below(&c.candidate.grid, c.microbatches, self.costs, beat) {
                Ok((cost, _)) => {
                    bounds.insert(&c.candidate.grid, cost + extra(c));
                    first = Some((cost + extra(c), i));
                }
                Err(bound) => proven[i] = bound,
            }
        }
        let (_, first) = first?;
        // Best so far: (cost at M, index, schedule).
        let mut best: Option<(f64, usize, Schedule)> = None;
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.swap(0, first);
        order[1..].sort_unstable();
        for i in order {
            let c = &candidates[i];
            let index = c.candidate.index;
            if let Some((cost, at, _)) = &best {
                // Rounding in either simulation must not hide a candidate: keep a small slack.
                let slack = 1e-9 * cost.abs().max(1.0);
                // An earlier candidate may tie the best, a later one must beat it.
                let reach = if index < *at { cost + slack } else { *cost };
                let reaches = match bounds.get(&*c.candidate.grid) {
                    Some(bound) => *bound < reach || index < *at && *bound <= reach,
                    None => {
                        let beat = reach - extra(c) + if index < *at { slack } else { 0.0 };
                        proven[i] < beat && cost_below(&c.candidate.grid, c.microbatches, self.costs, beat).is_ok()
                    }
                };
                if !reaches {
                    continue;
                }
            }
            let grid = if m == c.microbatches {
                (*c.candidate.grid).clone()
            } else {
                match schedule_block(&c.starts, p, m, limit) {
                    (_, Some(grid)) => grid,
                    (_, None) => continue,
                }
            };
            // A later candidate must beat the best; an earlier one may tie it.
            let beat = match &best {
                None => f64::INFINITY,
                Some((cost, at, _)) if index < *at => next_above(*cost),
                Some((cost, _, _)) => *cost,
            };
            if let Ok((cost, schedule)) = cost_below(&grid, m, self.costs, beat) {
                let wins = best.as_ref().is_none_or(|(b, at, _)| cost < *b || (cost == *b && index < *at));
                if wins {
                    best = Some((cost, index, schedule));
                }
            }
        }
        best.map(|(_, _, schedule)| schedule)
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
        crate::units::sort::sort_by_key(&mut candidates, |c| c.index);
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
            if let Ok(found) = cost_below(&candidate.grid, self.microbatches, self.costs, beat) {
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

#[path = "v_auto_steps.rs"]
mod steps;

/// The smallest float above a non-negative finite `x` (`f64::next_up`, which needs Rust 1.86).
fn next_above(x: f64) -> f64 {
    if x.is_finite() && x >= 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        x
    }
}

#[cfg(test)]
#[path = "v_auto_tests.rs"]
mod tests;
