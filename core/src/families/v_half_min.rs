//! V-Half and V-Min: the Controllable-Memory V schedules at about 1/2 and 1/3 of 1F1B's
//! activation memory.
//!
//! The details are in `docs/schedule-families.md`, under `families/v_half_min.rs`.

use super::formula::{floor_div, int, max, sym, Assumption, Explanation, Expr, Formula, Sym, Term, DERIVED_HERE};
use super::v_blocks::{Grid, Part, EMPTY, PERIOD};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Placement, Schedule};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The registry entry.
pub const V_HALF: Family = Family {
    name: "v-half",
    title: "V-Half",
    group: FamilyGroup::VShape,
    summary: "V-shape building block at about half of 1F1B's activation memory, about half its bubble",
    reference: "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024)",
    url: "https://arxiv.org/abs/2405.15362",
    constraints: "any devices (up to 256) and microbatches",
    passes: per_device_microbatch::<6>,
    generate: generate_v_half,
    predict: predict_v_half,
    explain: explain_v_half,
    ..Family::DEFAULTS
};

/// The registry entry: V-Half's facts but for its name, summary and generator.
pub const V_MIN: Family = Family {
    name: "v-min",
    title: "V-Min",
    summary: "V-shape building block at about a third of 1F1B's activation memory",
    generate: generate_v_min,
    predict: predict_v_min,
    explain: explain_v_min,
    ..V_HALF
};

/// Largest device count accepted: the size the greedy reordering is measured at (about 30 ms for
/// 256 devices and 16 microbatches).
const MAX_MEASURED_DEVICES: u32 = 256;

/// Which of the two fixed building blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Setup {
    /// About half of 1F1B's activation memory.
    Half,
    /// About a third of 1F1B's activation memory.
    Min,
}

impl Setup {
    /// The family name.
    fn name(self) -> &'static str {
        match self {
            Setup::Half => "v-half",
            Setup::Min => "v-min",
        }
    }

    /// Slots of microbatch 0's `F0, F1, B1, B0` on `device` of `devices`: the stable pattern.
    fn pattern(self, devices: u32, device: u32) -> [u32; 4] {
        let (d, i) = (devices, device);
        match self {
            Setup::Min => {
                let gap = if d % 3 == 0 { 2 } else { 0 };
                [i, 2 * d - i - 1, 2 * d + gap + i, 4 * d + gap - i - 1]
            }
            Setup::Half => {
                let gap = if d % 2 == 0 { 3 } else { 0 };
                [2 * i, 3 * d - i - 2, 3 * d + gap + 2 * i - 1, 6 * d + gap - i - 2]
            }
        }
    }
}

fn generate_v_half(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate(params, Setup::Half)
}

fn generate_v_min(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate(params, Setup::Min)
}

fn generate(params: &ScheduleParams, setup: Setup) -> Result<Schedule, ParamError> {
    if params.devices > MAX_MEASURED_DEVICES {
        return Err(ParamError::new(
            Field::Devices,
            format!("{} supports at most {MAX_MEASURED_DEVICES} devices, found {}", setup.name(), params.devices),
        )
        .hint("its greedy reordering of warm-up and cool-down is measured up to 256 devices")
        .hint("use fewer devices"));
    }
    greedy_schedule(params.devices, params.microbatches, setup).ok_or_else(|| {
        // The fixed patterns are valid for every size; reaching this is a bug, reported
        // instead of panicking.
        ParamError::new(
            Field::Schedule,
            format!(
                "{} could not order {} devices and {} microbatches (internal error)",
                setup.name(),
                params.devices,
                params.microbatches
            ),
        )
    })
}

/// Slot lists of one device: `lists[t][k]` is the slot of microbatch `k`'s pass of type `t`.
///
/// Types `0..4` are [`Part`] indices (`F0 F1 B1 B0`); type 4 is every W when the chunks' W
/// share one list, or chunk 1's W with type 5 chunk 0's when they are apart.
pub(super) type Lists = Vec<Vec<u32>>;

/// The V-Half or V-Min schedule, or `None` if a step fails (never for valid sizes).
pub(super) fn greedy_schedule(devices: u32, microbatches: u32, setup: Setup) -> Option<Schedule> {
    let stable: Vec<Lists> = (0..devices)
        .map(|device| {
            let pattern = setup.pattern(devices, device);
            pattern.iter().map(|&first| (0..microbatches).map(|k| first + PERIOD * k).collect()).collect()
        })
        .collect();
    let pass_one = reorder(stable, true, microbatches)?;
    let pass_two = reorder(strip_w(pass_one), false, microbatches)?;
    let mut schedule = Schedule::new(Placement::v_shape(devices), microbatches);
    for (device, mut lists) in strip_w(pass_two).into_iter().enumerate() {
        put_w(&mut lists, true);
        let mut slots: Vec<(u32, Part, u32)> = Vec::with_capacity(6 * microbatches as usize);
        for (part, list) in Part::ALL.iter().zip(&lists) {
            slots.extend(list.iter().zip(0..).map(|(&slot, mb)| (slot, *part, mb)));
        }
        slots.sort_unstable();
        for (_, part, mb) in slots {
            schedule.push(device as u32, part.pass(device as u32, mb, devices));
        }
    }
    Some(schedule)
}

/// Drops the W lists, keeping `F0 F1 B1 B0`.
fn strip_w(state: Vec<Lists>) -> Vec<Lists> {
    state
        .into_iter()
        .map(|mut lists| {
            lists.truncate(4);
            lists
        })
        .collect()
}

/// The type at every slot of a device, up to its last pass.
fn occupancy(lists: &[Vec<u32>]) -> Vec<u8> {
    let bound = lists.iter().filter_map(|l| l.last()).max().map_or(0, |&b| b as usize + 1);
    let mut at = vec![EMPTY; bound];
    for (t, list) in lists.iter().enumerate() {
        for &slot in list {
            at[slot as usize] = t as u8;
        }
    }
    at
}

/// Places the weight gradients of `F0 F1 B1 B0` lists (the authors' `put_w`): walking the
/// slots, each input gradient adds a pending W and each empty slot takes the oldest pending W;
/// what is left goes after the last pass. `split` keeps chunk 1's W (from `B1`, preferred) and
/// chunk 0's (from `B0`) in two lists; otherwise one list holds both.
pub(super) fn put_w(lists: &mut Lists, split: bool) {
    let at = occupancy(&lists[..4]);
    let mut pending = [0u32; 2];
    let mut placed: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    for (slot, &t) in at.iter().enumerate() {
        if t == EMPTY {
            if let Some(w) = (0..2).find(|&w| pending[w] > 0) {
                placed[w].push(slot as u32);
                pending[w] -= 1;
            }
        } else if t == Part::B1 as u8 || t == Part::B0 as u8 {
            pending[if split { usize::from(t) - 2 } else { 0 }] += 1;
        }
    }
    let mut slot = at.len().saturating_sub(1) as u32;
    for w in 0..2 {
        for _ in 0..pending[w] {
            slot += 1;
            placed[w].push(slot);
        }
    }
    let [first, second] = placed;
    lists.push(first);
    if split {
        lists.push(second);
    }
}

/// Lifespan count after each slot when the W sit in slots (type 4: −1).
fn explicit_counts(at: &[u8]) -> Vec<i32> {
    let mut current = 0;
    at.iter()
        .map(|&t| {
            current += match t {
                0 | 1 => 1,
                4 => -1,
                _ => 0,
            };
            current
        })
        .collect()
}

/// Running state of the lifespan count when W are implicit: every empty slot retires one
/// pending W (the authors' `mem_of_stage` without a W list).
#[derive(Clone, Copy, Default)]
struct Implicit {
    current: i32,
    pending: i32,
    peak: i32,
}

impl Implicit {
    fn step(mut self, t: u8) -> Implicit {
        match t {
            0 | 1 => self.current += 1,
            2 | 3 => self.pending += 1,
            _ if self.pending > 0 => {
                self.current -= 1;
                self.pending -= 1;
            }
            _ => {}
        }
        self.peak = self.peak.max(self.current);
        self
    }
}

/// The implicit-W state after each slot.
fn implicit_states(at: &[u8]) -> Vec<Implicit> {
    let mut state = Implicit::default();
    at.iter()
        .map(|&t| {
            state = state.step(t);
            state
        })
        .collect()
}

/// The peak with implicit W, recomputed from slot `from` on (`states` holds the state after
/// every slot before the change).
fn implicit_peak_from(at: &[u8], states: &[Implicit], from: usize) -> i32 {
    let mut state = if from == 0 { Implicit::default() } else { states[from - 1] };
    for &t in &at[from..] {
        state = state.step(t);
    }
    state.peak
}

/// The peak lifespan count of a device's lists (the authors' `mem_of_stage`).
fn peak_of(lists: &[Vec<u32>]) -> i32 {
    let at = occupancy(lists);
    if lists.len() > 4 {
        explicit_counts(&at).into_iter().max().unwrap_or(0).max(0)
    } else {
        implicit_states(&at).last().map_or(0, |s| s.peak)
    }
}

/// The earliest slot a pass may take: one after the latest of its dependencies at slot level
/// (its chain predecessor on the neighbouring device, the previous type of the same microbatch
/// on this device, its own previous microbatch, and for a W the input gradient it retires).
fn earliest_slot(state: &[Lists], device: usize, t: usize, mb: usize) -> u32 {
    let devices = state.len();
    let mut latest: Option<u32> = None;
    let mut after = |slot: u32| latest = Some(latest.map_or(slot, |l: u32| l.max(slot)));
    if (t == 0 || t == 2) && device > 0 {
        after(state[device - 1][t][mb]);
    }
    if (t == 1 || t == 3) && device + 1 < devices {
        after(state[device + 1][t][mb]);
    }
    if (1..4).contains(&t) {
        after(state[device][t - 1][mb]);
    }
    if t == 4 {
        after(nth_smallest(&state[device][2], &state[device][3], mb));
    }
    if mb > 0 {
        after(state[device][t][mb - 1]);
    }
    latest.map_or(0, |l| l + 1)
}

/// The `n`-th smallest slot of two sorted lists together.
fn nth_smallest(a: &[u32], b: &[u32], n: usize) -> u32 {
    let (mut i, mut j) = (0, 0);
    loop {
        let take_a = j >= b.len() || (i < a.len() && a[i] <= b[j]);
        let value = if take_a { a[i] } else { b[j] };
        if i + j == n {
            return value;
        }
        if take_a {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// Which passes of the global slot order may move.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    WarmUp,
    Stable,
    CoolDown,
}

/// One reordering pass (the authors' `reorder`), then a squeeze. With `with_w`, W are placed
/// first and warm-up and cool-down move; without, only the cool-down moves and W stay
/// implicit. Returns the squeezed lists with one W list.
fn reorder(mut state: Vec<Lists>, with_w: bool, microbatches: u32) -> Option<Vec<Lists>> {
    if with_w {
        for lists in &mut state {
            put_w(lists, false);
        }
    }
    let limit = state.iter().map(|l| peak_of(l)).max().unwrap_or(0);
    let mut at: Vec<Vec<u8>> = state.iter().map(|l| occupancy(l)).collect();
    let mut occupied: Vec<Vec<bool>> = at.iter().map(|a| vec![false; a.len()]).collect();
    let mut explicit: Vec<Vec<i32>> = if with_w { at.iter().map(|a| explicit_counts(a)).collect() } else { Vec::new() };
    let mut implicit: Vec<Vec<Implicit>> =
        if with_w { Vec::new() } else { at.iter().map(|a| implicit_states(a)).collect() };

    let mut heap = BinaryHeap::new();
    for (d, lists) in state.iter().enumerate() {
        for (t, list) in lists.iter().enumerate() {
            if let Some(&first) = list.first() {
                heap.push(Reverse((first, d, t, 0usize)));
            }
        }
    }
    let last_mb = microbatches as usize - 1;
    let mut phase = Phase::WarmUp;
    while let Some(Reverse((slot, d, t, mb))) = heap.pop() {
        if let Some(&next) = state[d][t].get(mb + 1) {
            heap.push(Reverse((next, d, t, mb + 1)));
        }
        if phase == Phase::WarmUp && t == Part::B0 as usize && d == 0 {
            phase = Phase::Stable;
        }
        let fixed = match phase {
            Phase::Stable => {
                if t == Part::F0 as usize && mb == last_mb {
                    phase = Phase::CoolDown;
                }
                true
            }
            Phase::WarmUp => !with_w,
            Phase::CoolDown => false,
        };
        let old = slot as usize;
        let mut chosen = old;
        if !fixed {
            let earliest = earliest_slot(&state, d, t, mb) as usize;
            if earliest > old {
                return None; // a dependency after the pass: the input was not a valid order
            }
            let row = &mut at[d];
            if with_w {
                // Moving a forward earlier raises the count on [x, old) by one; B and W never
                // raise it.
                let counts = &explicit[d];
                let mut room = vec![true; old - earliest];
                if t <= 1 {
                    let mut highest = i32::MIN;
                    for x in (earliest..old).rev() {
                        highest = highest.max(counts[x]);
                        room[x - earliest] = highest < limit;
                    }
                }
                if let Some(x) = (earliest..old).find(|&x| !occupied[d][x] && room[x - earliest]) {
                    chosen = x;
                }
            } else {
                row[old] = EMPTY;
                for x in earliest..old {
                    if occupied[d][x] {
                        continue;
                    }
                    row[x] = t as u8;
                    let fits = implicit_peak_from(row, &implicit[d], x) <= limit;
                    row[x] = EMPTY;
                    if fits {
                        chosen = x;
                        break;
                    }
                }
                row[old] = t as u8;
            }
            if chosen != old {
                row[old] = EMPTY;
                row[chosen] = t as u8;
                if with_w {
                    let delta = match t {
                        0 | 1 => 1,
                        4 => -1,
                        _ => 0,
                    };
                    for count in &mut explicit[d][chosen..old] {
                        *count += delta;
                    }
                } else {
                    let mut state_before = if chosen == 0 { Implicit::default() } else { implicit[d][chosen - 1] };
                    for (s, &cell) in row.iter().enumerate().skip(chosen) {
                        state_before = state_before.step(cell);
                        implicit[d][s] = state_before;
                    }
                }
                state[d][t][mb] = chosen as u32;
            }
        }
        occupied[d][chosen] = true;
    }
    if !with_w {
        for lists in &mut state {
            put_w(lists, false);
        }
    }
    squeeze_lists(&state, microbatches)
}

/// Squeezes five-list devices (one W list) through a [`Grid`] and reads them back.
fn squeeze_lists(state: &[Lists], microbatches: u32) -> Option<Vec<Lists>> {
    let mut grid = Grid { rows: state.iter().map(|l| occupancy(l)).collect() };
    grid.pad();
    let squeezed = grid.squeeze(microbatches)?;
    Some(
        squeezed
            .rows
            .iter()
            .map(|row| {
                let mut lists: Lists = (0..5).map(|_| Vec::with_capacity(microbatches as usize)).collect();
                for (slot, &cell) in row.iter().enumerate() {
                    if cell != EMPTY {
                        lists[usize::from(cell).min(4)].push(slot as u32);
                    }
                }
                lists
            })
            .collect(),
    )
}

fn predict_v_half(params: &ScheduleParams) -> Option<Prediction> {
    predict(params, Setup::Half)
}

fn predict_v_min(params: &ScheduleParams) -> Option<Prediction> {
    predict(params, Setup::Min)
}

fn explain_v_half(params: &ScheduleParams) -> Option<Explanation> {
    Some(explain(params, Setup::Half))
}

fn explain_v_min(params: &ScheduleParams) -> Option<Explanation> {
    Some(explain(params, Setup::Min))
}

/// The closed forms, checked against the generator for P ≤ 12 (tests):
///
/// * peak: every device holds `k` microbatches of mem-f, `k = (P+2)//2` (V-Half) or
///   `(P+4)//3` (V-Min), once `M ≥ 2k−1`, for any `mem_f/2 ≤ mem_w ≤ mem_f`. For V-Min with
///   `P ≡ 2 (mod 3)` device 0 holds half a chunk less (given for `mem_w = mem_f` only);
/// * bubble with `F = B = W` and no communication, `M ≥ 2P`, in chunk passes (`F/2`):
///   V-Half `3P−4` (odd P), `3P−7` (even P ≥ 4); V-Min `4P−5`, or `4P−7` when `3 | P`. These are
///   the adaptive scheduler's minimum bubble (zero-bubble.md §4.9) at the blocks' memory,
///   except V-Min with `P ≡ 2 (mod 3)`, 4 slots above it.
fn explain(params: &ScheduleParams, setup: Setup) -> Explanation {
    let (p, m) = (params.devices, params.microbatches);
    let c = &params.costs;
    let k = peak_microbatches(setup, p);
    let bubble =
        Formula::new(DERIVED_HERE, vec![Term::new(slots_name(setup, p), bubble_slots(setup, p) * sym(Sym::F) / 2)]);
    let (top, per) = match setup {
        Setup::Half => (sym(Sym::P) + 2, 2),
        Setup::Min => (sym(Sym::P) + 4, 3),
    };
    let mut held =
        vec![Term::new("k microbatches of mem-f on every device", floor_div(top, int(per)) * sym(Sym::MemF))];
    let short = setup == Setup::Min && p % 3 == 2;
    if short {
        // max(1−d, 0) is 1 on device 0 and 0 elsewhere.
        held.push(Term::minus("device 0 holds half a chunk less", max(1 - sym(Sym::D), int(0)) * sym(Sym::MemF) / 2));
    }
    let mut assumptions = vec![
        Assumption::bubble("F = B = W", c.f == c.b && c.b == c.w),
        Assumption::no_comm(params),
        Assumption::bubble("M ≥ 2P", m >= 2 * p),
        Assumption::memory(format!("M ≥ 2k−1 = {}", 2 * k - 1), m + 1 >= 2 * k),
        Assumption::memory("mem-f/2 ≤ mem-w ≤ mem-f", c.mem_w() >= c.mem_f / 2.0 && c.mem_w() <= c.mem_f),
    ];
    if short {
        assumptions.push(Assumption::memory("mem-w = mem-f (P ≡ 2 mod 3)", c.mem_w() == c.mem_f));
    }
    Explanation::new(params, Some(bubble), Some(Formula::new(MEMORY, held)), assumptions)
}

/// Where the blocks' memory comes from.
const MEMORY: &str = "Qi et al., Pipeline Parallelism with Controllable Memory (NeurIPS 2024): about 1/2 (V-Half) \
                      and 1/3 (V-Min) of 1F1B's; the exact counts derived here, proven by property test";

/// The bubble's chunk-pass slots for `devices`, as an expression in P.
fn bubble_slots(setup: Setup, devices: u32) -> Expr {
    let p = || sym(Sym::P);
    match (setup, devices) {
        (_, 1) => int(0),
        (Setup::Half, 2) => int(1),
        (Setup::Half, d) if d % 2 == 0 => 3 * p() - 7,
        (Setup::Half, _) => 3 * p() - 4,
        (Setup::Min, d) if d % 3 == 0 => 4 * p() - 7,
        (Setup::Min, _) => 4 * p() - 5,
    }
}

/// What the bubble's slots are, in words.
fn slots_name(setup: Setup, devices: u32) -> &'static str {
    match (setup, devices) {
        (_, 1) => "none on one device",
        (Setup::Half, 2) => "one chunk-pass slot (two devices)",
        (Setup::Half, d) if d % 2 == 0 => "chunk-pass slots of F/2 left idle by the V-Half blocks (even P)",
        (Setup::Half, _) => "chunk-pass slots of F/2 left idle by the V-Half blocks (odd P)",
        (Setup::Min, d) if d % 3 == 0 => "chunk-pass slots of F/2 left idle by the V-Min blocks (3 divides P)",
        (Setup::Min, _) => "chunk-pass slots of F/2 left idle by the V-Min blocks",
    }
}

fn predict(params: &ScheduleParams, setup: Setup) -> Option<Prediction> {
    Some(explain(params, setup).prediction(
        match setup {
            Setup::Half => "(3P−4)·F/2, or (3P−7)·F/2 for even P ≥ 4, when F = B = W and M ≥ 2P",
            Setup::Min => "(4P−5)·F/2, or (4P−7)·F/2 when 3 | P, when F = B = W and M ≥ 2P",
        },
        match setup {
            Setup::Half => "(P+2)//2·mem-f on every device",
            Setup::Min => "(P+4)//3·mem-f on every device (device 0: ½ chunk less when P ≡ 2 mod 3)",
        },
    ))
}

/// Microbatches' worth of activations each device holds at the peak.
fn peak_microbatches(setup: Setup, devices: u32) -> u32 {
    match setup {
        Setup::Half => (devices + 2) / 2,
        Setup::Min => (devices + 4) / 3,
    }
}

#[cfg(test)]
#[path = "v_half_min_tests.rs"]
mod tests;
