//! Interleaved 1F1B (Megatron's virtual pipeline) and looped breadth-first (BFS).
//!
//! Both cut the model into `P·V` stages and loop them over the devices: stage `s` runs on
//! device `s mod P` ([`Placement::interleaved`]), so every device holds `V` chunks and every
//! stage runs at `1/V` of the user's costs. Backward is fused (BW).
//!
//! # The order (Megatron-LM `forward_backward_pipelining_with_interleaving`)
//!
//! A device sees `M·V` *virtual microbatches*, one per (microbatch, chunk). Megatron's
//! `get_schedule_table` orders them in groups of `G` microbatches: all chunks of one group,
//! chunk by chunk, then the next group; a last group shorter than `G` takes what is left
//! ([`schedule_table`]). Virtual microbatch `k` is a forward of `table[k]`; the `k`-th
//! backward is the same microbatch on the mirrored chunk `V−1−c`, so backwards walk the
//! chunks in reverse. Device `d` runs
//!
//! * `warm-up = min(2(P−d−1) + (V−1)·G, M·V)` forwards,
//! * then one forward and one backward, alternating, until the forwards run out,
//! * then the remaining backwards.
//!
//! `G = P` (the default) is Megatron's depth-first order; `G = M` is the breadth-first order
//! of [`LOOPED_BFS`]: every chunk runs all microbatches before the next chunk starts.
//!
//! # Rules and decisions
//!
//! The details are in `docs/schedule-families.md`, under `families/interleaved.rs`.

use super::formula::{min, sym, Explanation, Formula, Sym, Term};
use super::gpipe::{fill_and_drain, Split};
use super::{count_option, one_f_one_b, per_chunk, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Op, Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "interleaved-1f1b",
    title: "Interleaved 1F1B",
    group: FamilyGroup::Classic,
    summary: "Megatron's virtual pipeline: V chunks per device cut the bubble by V at more communication",
    reference: "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters (SC 2021)",
    url: "https://arxiv.org/abs/2104.04473",
    options: &[
        FamilyOption::count(Field::Chunks, DEFAULT_CHUNKS),
        FamilyOption { field: Field::Group, default: OptionDefault::Devices },
        FamilyOption { field: Field::A2aOverlap, default: OptionDefault::Unset },
    ],
    constraints: "chunks ≥ 1 (default 2; 1 is plain 1F1B); devices ≤ group ≤ microbatches (default group = devices); \
                  microbatches mod group is 0 or ≥ devices; --a2a-overlap needs an expert all-to-all (an MoE model with EP > 1)",
    passes,
    generate,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// The registry entry.
pub const LOOPED_BFS: Family = Family {
    name: "looped-bfs",
    title: "Looped BFS",
    group: FamilyGroup::Classic,
    summary:
        "breadth-first looping: each chunk runs every microbatch before the next chunk (interleaved with group = M)",
    reference: "Lamy-Poirier, Breadth-First Pipeline Parallelism (MLSys 2023)",
    url: "https://arxiv.org/abs/2211.05953",
    options: &[FamilyOption::count(Field::Chunks, DEFAULT_CHUNKS)],
    constraints: "chunks ≥ 1 (default 2; 1 is plain 1F1B); microbatches ≥ devices when chunks ≥ 2",
    passes,
    generate: generate_looped_bfs,
    predict: predict_looped_bfs,
    explain: explain_looped_bfs,
    ..Family::DEFAULTS
};

/// Chunks per device when `--chunks` is not given.
pub const DEFAULT_CHUNKS: u32 = 2;

/// What the smallest chunk counts mean, for the error on 0 chunks.
const CHUNKS_HINT: &str = "--chunks 2 is Megatron's usual virtual pipeline; --chunks 1 is plain 1F1B";

/// A forward and a full backward per chunk (both families).
fn passes(params: &ScheduleParams) -> u64 {
    per_chunk(params, params.chunks.unwrap_or(DEFAULT_CHUNKS), 2)
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    Ok(VirtualPipeline::interleaved(params)?.schedule())
}

fn generate_looped_bfs(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    Ok(VirtualPipeline::looped_bfs(params)?.schedule())
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    VirtualPipeline::interleaved(params).ok().map(|v| v.explanation(params))
}

fn explain_looped_bfs(params: &ScheduleParams) -> Option<Explanation> {
    VirtualPipeline::looped_bfs(params).ok().map(|v| v.explanation(params))
}

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    VirtualPipeline::interleaved(params).ok().map(|v| v.prediction(params))
}

fn predict_looped_bfs(params: &ScheduleParams) -> Option<Prediction> {
    VirtualPipeline::looped_bfs(params).ok().map(|v| v.prediction(params))
}

/// Megatron's `get_schedule_table`: the (microbatch, chunk) of every virtual microbatch, in
/// groups of `group` microbatches, chunk by chunk inside a group. A last group shorter than
/// `group` takes the remaining microbatches.
pub fn schedule_table(microbatches: u32, chunks: u32, group: u32) -> Vec<(u32, u32)> {
    let group = group.max(1);
    let mut table = Vec::with_capacity(microbatches as usize * chunks as usize);
    let mut first = 0;
    while first < microbatches {
        let end = first.saturating_add(group).min(microbatches);
        for chunk in 0..chunks {
            table.extend((first..end).map(|mb| (mb, chunk)));
        }
        first = end;
    }
    table
}

/// A step whose backward consumes its own forward (the last stage's, on the last device) runs
/// as two ops: an op is one exchange's worth of work and must not wait for itself. Nothing
/// crosses between the two, so the exchange between them is empty.
fn split_own_steps(schedule: &mut Schedule) {
    for order in &mut schedule.orders {
        *order = order
            .iter()
            .flat_map(|&op| match op {
                Op::Pair(f, b) if (f.stage, f.microbatch, f.slice) == (b.stage, b.microbatch, b.slice) => {
                    vec![Op::One(f), Op::One(b)]
                }
                op => vec![op],
            })
            .collect();
    }
}

/// A checked virtual-pipeline configuration: what both families generate from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct VirtualPipeline {
    devices: u32,
    microbatches: u32,
    chunks: u32,
    group: u32,
    /// Megatron's combined 1F1B (`--a2a-overlap`): one more warm-up forward, then pairs.
    paired: bool,
    /// Blocking sends (`--p2p blocking`) with two chunks or more: Megatron's steady state
    /// runs a forward and a backward as one step and exchanges after both
    /// (`send_forward_backward_recv_forward_backward`), so each step is one op, a pair at the
    /// sum of its passes; the warm-up is unchanged.
    steps: bool,
}

impl VirtualPipeline {
    /// Reads and checks `--chunks` and `--group` for interleaved 1F1B.
    fn interleaved(params: &ScheduleParams) -> Result<VirtualPipeline, ParamError> {
        let (devices, microbatches) = (params.devices, params.microbatches);
        let chunks = checked_chunks(params)?;
        if chunks == 1 {
            if let Some(group) = params.group {
                return Err(ParamError::new(
                    Field::Group,
                    format!("group needs at least 2 chunks per device, found group {group} with chunks 1"),
                )
                .hint("with --chunks 1 the schedule is plain 1F1B; use --chunks 2 or more, or remove --group"));
            }
            return Ok(VirtualPipeline {
                devices,
                microbatches,
                chunks,
                group: devices,
                paired: params.a2a_overlap,
                steps: false,
            });
        }
        if microbatches < devices {
            return Err(too_few_microbatches(FAMILY.name, devices, microbatches));
        }
        let group = params.group.unwrap_or(devices);
        if group < devices || group > microbatches {
            return Err(ParamError::new(
                Field::Group,
                format!("group must lie between devices ({devices}) and microbatches ({microbatches}), found {group}"),
            )
            .hint(format!(
                "Megatron requires devices ≤ group ≤ microbatches: --group {devices} is its depth-first default, \
                 --group {microbatches} is breadth-first (looped-bfs)"
            )));
        }
        let rest = microbatches % group;
        if rest != 0 && rest < devices {
            let field = if params.group.is_some() { Field::Group } else { Field::Microbatches };
            let down = microbatches - rest;
            return Err(ParamError::new(
                field,
                format!(
                    "microbatches mod group must be 0 or at least devices ({devices}), \
                     found {microbatches} mod {group} = {rest}"
                ),
            )
            .hint(
                "a last group shorter than the pipeline stalls it (Megatron's \"dependency bubbles\"; \
                 some such orders deadlock)",
            )
            .hint(format!(
                "use --microbatches {down} or {}, or a group that fits, e.g. --group {}",
                down + group,
                smallest_valid_group(devices, microbatches)
            )));
        }
        let steps = params.costs.p2p == crate::params::P2p::Blocking;
        Ok(VirtualPipeline { devices, microbatches, chunks, group, paired: params.a2a_overlap, steps })
    }

    /// Reads and checks `--chunks` for looped BFS (`group = microbatches`).
    fn looped_bfs(params: &ScheduleParams) -> Result<VirtualPipeline, ParamError> {
        let (devices, microbatches) = (params.devices, params.microbatches);
        let chunks = checked_chunks(params)?;
        if chunks > 1 && microbatches < devices {
            return Err(too_few_microbatches(LOOPED_BFS.name, devices, microbatches));
        }
        Ok(VirtualPipeline { devices, microbatches, chunks, group: microbatches, paired: false, steps: false })
    }

    /// Forwards device `device` runs before its steady state: Megatron's
    /// `get_pp_rank_microbatches`, one more when paired (combined 1F1B), at most `M·V`.
    fn warm_up(&self, device: u32) -> u64 {
        let total = u64::from(self.microbatches) * u64::from(self.chunks);
        let behind = u64::from(self.devices - 1 - device);
        let warm =
            if self.chunks == 1 { behind } else { 2 * behind + u64::from(self.chunks - 1) * u64::from(self.group) };
        (warm + u64::from(self.paired)).min(total)
    }

    /// The per-device orders.
    fn schedule(&self) -> Schedule {
        let VirtualPipeline { devices, microbatches, chunks, group, paired, steps } = *self;
        if chunks == 1 {
            return one_f_one_b::generate(devices, microbatches, paired);
        }
        let table = schedule_table(microbatches, chunks, group);
        let mut schedule = Schedule::new(Placement::interleaved(devices, chunks), microbatches);
        for device in 0..devices {
            let stage = |chunk: u32| chunk * devices + device;
            let forward = |k: usize| Pass::f(stage(table[k].1), table[k].0);
            let backward = |k: usize| Pass::bw(stage(chunks - 1 - table[k].1), table[k].0);
            let warm = self.warm_up(device) as usize;
            one_f_one_b::push_orders(&mut schedule, device, warm, table.len(), paired || steps, forward, backward);
        }
        if steps && !paired {
            split_own_steps(&mut schedule);
        }
        schedule
    }

    /// The closed forms of the module documentation, at `params` with this configuration's
    /// chunks and group.
    fn explanation(&self, params: &ScheduleParams) -> Explanation {
        let mut own = params.clone();
        own.chunks = Some(self.chunks);
        let memory = if self.chunks == 1 {
            Formula::new(one_f_one_b::MEMORY, vec![one_f_one_b::in_flight()])
        } else {
            let (p, d, v, g) = (sym(Sym::P), sym(Sym::D), sym(Sym::V), sym(Sym::G));
            let warm_up = 2 * (p - d - 1) + (v.clone() - 1) * g + 1;
            let held = Term::new(
                "device d holds its 2(P−d−1) + (V−1)·G warm-up chunk forwards and one more, at most M·V chunks",
                min(warm_up, sym(Sym::M) * v.clone()) * sym(Sym::MemF) / v,
            );
            Formula::new(MEMORY, vec![held])
        };
        let mut e = fill_and_drain(&own, Split::Chunks, memory);
        e.vars.set(Sym::G, f64::from(self.group));
        e
    }

    /// The prediction `simulate` shows, from [`VirtualPipeline::explanation`].
    fn prediction(&self, params: &ScheduleParams) -> Prediction {
        let memory_formula = if self.chunks == 1 {
            "min(P−d, M)·mem-f on device d (plain 1F1B)"
        } else {
            "min(2(P−d−1) + (V−1)·G + 1, M·V)·mem-f/V on device d"
        };
        self.explanation(params).prediction("(P−1)(F+B+W)/V", memory_formula)
    }
}

/// Where the interleaved schedule's memory comes from: Megatron's warm-up count.
const MEMORY: &str = "Megatron-LM, forward_backward_pipelining_with_interleaving: warm-up = \
                      2(P−d−1) + (V−1)·G; derived here, proven by property test";

/// `--chunks`, defaulted and checked.
fn checked_chunks(params: &ScheduleParams) -> Result<u32, ParamError> {
    count_option(Field::Chunks, params.chunks, DEFAULT_CHUNKS, CHUNKS_HINT)
}

fn too_few_microbatches(family: &str, devices: u32, microbatches: u32) -> ParamError {
    ParamError::new(
        Field::Microbatches,
        format!("{family} needs at least as many microbatches as devices, found {microbatches} microbatches for {devices} devices"),
    )
    .hint(format!(
        "a chunk round needs a microbatch in flight on every device; use --microbatches {devices} or more, \
         or --chunks 1 for plain 1F1B"
    ))
}

/// The smallest group Megatron accepts for these sizes (`microbatches` itself always fits).
fn smallest_valid_group(devices: u32, microbatches: u32) -> u32 {
    (devices..=microbatches).find(|&g| microbatches % g == 0 || microbatches % g >= devices).unwrap_or(microbatches)
}

#[cfg(test)]
#[path = "interleaved_tests.rs"]
mod tests;
