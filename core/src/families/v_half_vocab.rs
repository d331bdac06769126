//! V-Half with Vocabulary Parallelism (Yeung et al., MLSys 2025): V-Half's building block with
//! its backward half moved one microbatch later, and the output and input layers split by
//! vocabulary over every device, their passes (S, T, IF, IB) at the times the authors' scheduler
//! gives them.
//!
//! Read off the authors' code (`sail-sg/zero-bubble-pipeline-parallelism`, branch
//! `v-half-vocab` at 92895b9, under `megatron/core/pipeline_parallel/zerobubble/scheduler/`):
//!
//! - `zbv_greedy.py` `stable_pattern_v_half`: V-Half's pattern with 6 more slots between the
//!   forward and the backward half (12 without backward fusion). Unlike plain V-Half,
//!   `create_schedule` does not reorder the pattern (`do_reorder=False`): each device runs its
//!   passes in slot order, with the weight gradients in the empty slots (`put_w`).
//! - `passes.py` `add_time`: each pass as early as its device and its dependency allow (a hop
//!   costs `comm`).
//! - `passes.py` `add_embedding_passes`: zero-length S, T, IF and IB at the same times on every
//!   device. S(i) is the end of microbatch i's last forward on device 0 plus the mean backward;
//!   T(i) is S(i + 1); IF(i) is S(i − ⌊P/2⌋ − 1) (the first ones before everything); IB(i) is
//!   S(i + ⌊P/2⌋ + 3) (the last ones after everything).
//! - `communication.py` `reorder_communication`: each device's passes sorted by start time;
//!   at equal times the transformer passes first, then IF, T, S and IB.
//!
//! The details are in `docs/schedule-families.md`, under `families/v_half_vocab.rs`.

use super::v_blocks::{Part, PERIOD};
use super::v_half_min::{put_w, Lists};
use super::vocab_common::vocab_costs;
use super::{per_device_microbatch, Family, FamilyGroup};
use crate::error::{Field, ParamError, SimError};
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{counted, Pass, PassKind, Placement, Schedule, VocabSplit};
use crate::sim::simulate;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "v-half-vocab",
    title: "V-Half (vocabulary)",
    group: FamilyGroup::Vocabulary,
    summary:
        "V-Half with the output and input layers split by vocabulary over every device; one barrier per microbatch",
    reference: "Yeung, Qi, Lin, Wan, Balancing Pipeline Parallelism with Vocabulary Parallelism (MLSys 2025)",
    url: "https://arxiv.org/abs/2411.05288",
    constraints: "a vocabulary (--s, --t or a model); sizes where the authors' fixed vocabulary times run \
                  (an even number of devices and at least 2 microbatches; see the docs)",
    passes: per_device_microbatch::<10>,
    generate,
    ..Family::DEFAULTS
};

/// The same with backward fusion off (`--disable-backward-fusion`): two barriers per
/// microbatch, named as Vocab-1 is (the authors' Vocab-1 is their 1F1B version without fusion).
pub const TWO_BARRIERS: Family = Family {
    name: "v-half-vocab-1",
    title: "V-Half (vocabulary, two barriers)",
    group: FamilyGroup::Vocabulary,
    summary: "V-Half with the output and input layers split by vocabulary over every device; two barriers per microbatch (backward fusion off)",
    reference: "Yeung, Qi, Lin, Wan, Balancing Pipeline Parallelism with Vocabulary Parallelism (MLSys 2025)",
    url: "https://arxiv.org/abs/2411.05288",
    constraints: "a vocabulary (--s, --t or a model); sizes where the authors' fixed vocabulary times run \
                  (an even number of devices and at least 2 microbatches, 3 on 2 devices; see the docs)",
    passes: per_device_microbatch::<10>,
    generate: generate_two_barriers,
    ..Family::DEFAULTS
};

/// Whether the output layer's backward is fused into the S barrier (the authors' default), or
/// has its own barrier after T (`--disable-backward-fusion`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fusion {
    /// One barrier per microbatch, after S.
    On,
    /// Two barriers per microbatch, after S and after T ([`TWO_BARRIERS`]).
    Off,
}

impl Fusion {
    /// Barriers per microbatch.
    fn barriers(self) -> u32 {
        match self {
            Fusion::On => 1,
            Fusion::Off => 2,
        }
    }

    /// Slots the backward half moves later than plain V-Half's: one microbatch (6 slots) per
    /// barrier.
    fn delay(self) -> u32 {
        PERIOD * self.barriers()
    }
}

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate_with(params, Fusion::On)
}

fn generate_two_barriers(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate_with(params, Fusion::Off)
}

fn generate_with(params: &ScheduleParams, fusion: Fusion) -> Result<Schedule, ParamError> {
    let family = match fusion {
        Fusion::On => &FAMILY,
        Fusion::Off => &TWO_BARRIERS,
    };
    vocab_costs(params, family.name)?;
    let placement = Placement::v_shape(params.devices);
    let costs = StageCosts::new(&params.costs, &placement);
    let schedule = v_half_vocab(params.devices, params.microbatches, fusion, &costs);
    // The vocabulary passes sit at fixed times computed from the steady state; at some sizes
    // a pass lands before one it needs. The authors' scheduler does not check it (their
    // runtime would wait for a collective that never comes); this family refuses.
    match simulate(&schedule, &StageCosts::for_schedule(&params.costs, &schedule)) {
        Ok(_) => Ok(schedule),
        Err(SimError::Deadlock(stuck)) => {
            Err(unrunnable(params, family, stuck.first().map(|s| (s.device, s.pass, s.waits_for))))
        }
        Err(SimError::Malformed(msg)) => Err(ParamError::new(
            Field::Schedule,
            format!("{} built an order the simulator cannot read (internal error): {msg}", family.name),
        )),
    }
}

/// The error for sizes where the authors' placement puts a pass before one it waits for.
fn unrunnable(params: &ScheduleParams, family: &Family, first: Option<(u32, Pass, Pass)>) -> ParamError {
    let (p, m) = (params.devices, params.microbatches);
    let what = match first {
        Some((device, pass, waits)) => {
            format!("at the authors' vocabulary times, device {device} runs {pass} before {waits}, which it waits for")
        }
        None => "at the authors' vocabulary times, a pass comes before one it waits for".to_string(),
    };
    let mut e = ParamError::new(
        if p % 2 == 1 { Field::Devices } else { Field::Microbatches },
        format!(
            "{} cannot run on {} and {}: {what}",
            family.name,
            counted(p, "device", "devices"),
            counted(m, "microbatch", "microbatches"),
        ),
    )
    .hint("add_embedding_passes places S, T, IF and IB at times read off the steady state; below it, or with an odd device count, a pass lands too early");
    let c = &params.costs;
    let equal = c.f == c.b && c.b == c.w && c.profile.is_none();
    if p % 2 == 1 {
        e = e.hint(if p == 1 {
            "use --devices 2".to_string()
        } else {
            format!("use --devices {} or {}", p - 1, p + 1)
        });
    } else if equal {
        let least = if family.name == TWO_BARRIERS.name && p == 2 { 3 } else { 2 };
        e = e.hint(format!("use more microbatches ({least} or more with equal F, B and W)"));
    } else {
        e = e.hint("their times are read off equal F, B and W (their runtime's); with these costs a pass can land early at any microbatch count: try equal F, B and W, or v-half without vocabulary parallelism");
    }
    e
}

/// Slots of microbatch 0's `F0, F1, B1, B0` on `device`: V-Half's stable pattern with the
/// backward half `fusion.delay()` slots later (`stable_pattern_v_half`).
fn pattern(devices: u32, device: u32, fusion: Fusion) -> [u32; 4] {
    let (d, i) = (devices, device);
    let gap = if d % 2 == 0 { 3 } else { 0 } + fusion.delay();
    [2 * i, 3 * d - i - 2, 3 * d + gap + 2 * i - 1, 6 * d + gap - i - 2]
}

/// Each device's transformer passes in slot order: the pattern repeated every [`PERIOD`]
/// slots, the weight gradients in the empty slots (chunk 1's first), not reordered.
fn slot_orders(devices: u32, microbatches: u32, fusion: Fusion) -> Vec<Vec<(Part, u32)>> {
    (0..devices)
        .map(|device| {
            let mut lists: Lists = pattern(devices, device, fusion)
                .iter()
                .map(|&first| (0..microbatches).map(|k| first + PERIOD * k).collect())
                .collect();
            put_w(&mut lists, true);
            let mut slots: Vec<(u32, Part, u32)> = Vec::with_capacity(6 * microbatches as usize);
            for (part, list) in Part::ALL.iter().zip(&lists) {
                slots.extend(list.iter().zip(0..).map(|(&slot, mb)| (slot, *part, mb)));
            }
            slots.sort_unstable_by_key(|&(slot, _, _)| slot);
            slots.into_iter().map(|(_, part, mb)| (part, mb)).collect()
        })
        .collect()
}

/// Start and end of every transformer pass, each as early as its device and its dependency
/// allow (the authors' `add_time`): `times[device][k]` for the `k`-th pass of `orders[device]`.
/// `None` if no device can go on (never for the fixed pattern).
fn add_time(orders: &[Vec<(Part, u32)>], microbatches: u32, costs: &StageCosts) -> Option<Vec<Vec<(f64, f64)>>> {
    let devices = orders.len() as u32;
    let m = microbatches as usize;
    let key = |part: Part, row: u32, mb: u32| (part.index() * devices as usize + row as usize) * m + mb as usize;
    let mut end = vec![None::<f64>; 6 * devices as usize * m];
    let mut times: Vec<Vec<(f64, f64)>> = orders.iter().map(|o| Vec::with_capacity(o.len())).collect();
    let mut free = vec![0.0f64; orders.len()];
    let total: usize = orders.iter().map(Vec::len).sum();
    let mut done = 0;
    while done < total {
        let mut progressed = false;
        for (device, order) in orders.iter().enumerate() {
            let k = times[device].len();
            let Some(&(part, mb)) = order.get(k) else { continue };
            let row = device as u32;
            let mut start = free[device];
            if let Some((dep, dep_row)) = part.dependency(row, devices) {
                let Some(ready) = end[key(dep, dep_row, mb)] else { continue };
                let ready = if dep_row == row { ready } else { ready + costs.hop_time(dep_row, row) };
                start = start.max(ready);
            }
            let pass = part.pass(row, mb, devices);
            let stage = pass.stage as usize;
            let cost = match pass.kind {
                PassKind::F => costs.f[stage],
                PassKind::B => costs.b[stage],
                _ => costs.w[stage],
            };
            let finish = start + cost;
            end[key(part, row, mb)] = Some(finish);
            free[device] = finish;
            times[device].push((start, finish));
            done += 1;
            progressed = true;
        }
        if !progressed {
            return None;
        }
    }
    Some(times)
}

/// The times `add_embedding_passes` gives the vocabulary passes, per microbatch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VocabTimes {
    pub(crate) s: Vec<f64>,
    pub(crate) t: Vec<f64>,
    pub(crate) input_f: Vec<f64>,
    pub(crate) input_b: Vec<f64>,
}

/// `add_embedding_passes`: S(i) is the end of F(i) on device 0's chunk 1 plus the mean
/// backward ("reserve the length of a backward pass for broadcast communication"); T(i) is
/// S(i + 1), the last T two backwards and two forwards after the last S; with `w = ⌊P/2⌋ + 1`,
/// IF(i) is S(i − w), the first `w` at `i − M` (before everything); IB(i) is S(i + w + 2), the
/// last `w + 2` one apart after the last transformer pass.
fn vocab_times(
    orders: &[Vec<(Part, u32)>],
    times: &[Vec<(f64, f64)>],
    microbatches: u32,
    costs: &StageCosts,
) -> VocabTimes {
    let devices = orders.len();
    let m = microbatches as usize;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mean_f, mean_b) = (mean(&costs.f), mean(&costs.b));
    let mut s = vec![0.0; m];
    for (&(part, mb), &(_, finish)) in orders[0].iter().zip(&times[0]) {
        if part == Part::F1 {
            s[mb as usize] = finish + mean_b;
        }
    }
    let mut t: Vec<f64> = s.iter().skip(1).copied().collect();
    if let Some(&last) = s.last() {
        t.push(last + mean_b * 2.0 + mean_f * 2.0);
    }
    let warmup = devices / 2 + 1;
    let input_f = (0..m).map(|i| if i >= warmup { s[i - warmup] } else { i as f64 - m as f64 }).collect();
    let makespan = times.iter().filter_map(|d| d.last()).map(|&(_, finish)| finish).fold(f64::NEG_INFINITY, f64::max);
    let input_b = (0..m).map(|i| if i + warmup + 2 < m { s[i + warmup + 2] } else { makespan + i as f64 }).collect();
    VocabTimes { s, t, input_f, input_b }
}

/// A vocabulary pass's constructor: shard, microbatch.
type MakePass = fn(u32, u32) -> Pass;

/// The V-Half-with-vocabulary orders of `devices` and `microbatches` for per-stage `costs`
/// (the times that place the vocabulary passes), and the vocabulary times.
pub(crate) fn v_half_vocab_with_times(
    devices: u32,
    microbatches: u32,
    fusion: Fusion,
    costs: &StageCosts,
) -> (Schedule, VocabTimes) {
    let orders = slot_orders(devices, microbatches, fusion);
    let times = add_time(&orders, microbatches, costs).unwrap_or_else(|| {
        // The pattern's slots respect every dependency, so the eager timing always finishes.
        unreachable!("the V-Half pattern is in dependency order")
    });
    let vt = vocab_times(&orders, &times, microbatches, costs);
    let mut schedule = Schedule::new(Placement::v_shape(devices), microbatches);
    for (device, (order, device_times)) in orders.iter().zip(&times).enumerate() {
        let d = device as u32;
        // The transformer passes first, then IF, T, S and IB by microbatch: the authors' list,
        // which a stable sort by start time keeps at equal times.
        let mut timed: Vec<(f64, Pass)> = order
            .iter()
            .zip(device_times)
            .map(|(&(part, mb), &(start, _))| (start, part.pass(d, mb, devices)))
            .collect();
        let vocab: [(&[f64], MakePass); 4] =
            [(&vt.input_f, Pass::input_f), (&vt.t, Pass::t), (&vt.s, Pass::s), (&vt.input_b, Pass::input_b)];
        for (at, make) in vocab {
            timed.extend(at.iter().zip(0..).map(|(&time, mb)| (time, make(d, mb))));
        }
        timed.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        for (_, pass) in timed {
            schedule.push(d, pass);
        }
    }
    schedule.vocab = Some(VocabSplit { barriers: fusion.barriers(), side_stream: true });
    (schedule, vt)
}

/// The V-Half-with-vocabulary orders (see [`v_half_vocab_with_times`]).
pub(crate) fn v_half_vocab(devices: u32, microbatches: u32, fusion: Fusion, costs: &StageCosts) -> Schedule {
    v_half_vocab_with_times(devices, microbatches, fusion, costs).0
}
