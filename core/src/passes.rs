//! Passes that trade memory for time, added to a generated schedule ([`apply`]): an R pass
//! before every backward on a device that recomputes, and an offload and a reload for each
//! microbatch a device sends to host memory.
//!
//! Copies are placed in one of two ways. `auto` and fractions follow PipeOffload's rules in a
//! form that fits any family: the offload as soon as the forward ends, the reload as late as
//! still leaves one backward's time of slack before the backward, and only where the wait
//! between forward and backward hides three round trips. `pipeoffload`
//! ([`pipeoffload_copies`]) is the authors' own placement for their grouped interleaved
//! schedule (the Zero Bubble repository's `offloading.py`): postponed warm-up forwards, a slot
//! grid shared by each pair of devices, a solo warm-up; it gives their positions exactly, and
//! each copy's slot ([`CopySlot`]: its planned start and time). The trade's chunk limit
//! ([`Trade::chunks`]) restricts both recompute and offload to each device's first chunks.
//! The simulator times the copies on each device's copy stream, a slotted copy no earlier than
//! its slot and for its slot's time; a late reload stalls its backward there.
//!
//! May use the engine (`sim`, `params`, `trade`) and below.

use std::sync::Arc;

use crate::error::{Field, ParamError};
use crate::params::{CostProfile, Costs, ScheduleParams, StageCosts};
use crate::schedule::{CopyKind, CopyOp, CopySlot, Op, Pass, PassKind, Placement, Schedule};
use crate::sim::{simulate, Stream, Timeline};
use crate::trade::{Offload, Recompute, Trade};

/// A round trip, a copy out and back, must fit this many times in the wait between a forward
/// and its backward (less one backward's time) for the microbatch to be offloaded: the
/// authors' margin.
pub const ROUND_TRIPS: f64 = 3.0;

/// `schedule` with the passes `costs.trade` asks for; unchanged when it trades nothing.
///
/// # Errors
/// A [`ParamError`] when the trade does not fit the schedule: a per-device list of the wrong
/// length, a fraction outside 0 to 1, or offload with no copy time.
pub fn apply(schedule: Schedule, costs: &Costs) -> Result<Schedule, ParamError> {
    let Some(trade) = costs.trade.as_deref().filter(|t| !t.is_none()) else {
        return Ok(schedule);
    };
    trade.check(schedule.devices())?;
    let schedule = with_recompute(schedule, trade);
    if !trade.offloads() {
        return Ok(schedule);
    }
    let stage_costs = StageCosts::for_schedule(costs, &schedule);
    // A schedule that cannot run gets no copies: validation and the simulator say why.
    let Ok(timeline) = simulate(&schedule, &stage_costs) else {
        return Ok(schedule);
    };
    let copies = if trade.offload == Offload::PipeOffload {
        pipeoffload_copies(&schedule, &timeline, &stage_costs, trade)?
    } else {
        (0..schedule.devices()).map(|d| device_copies(&schedule, &timeline, &stage_costs, trade, d)).collect()
    };
    Ok(Schedule { copies, ..schedule })
}

/// Refuses a schedule whose copies take their time from a copy rate (those without a slot)
/// when `costs` give none: a file's copies would otherwise run in no time.
///
/// # Errors
/// A [`ParamError`] on `copy-time`, with the hint to give one (or a model's host link).
pub fn check_copy_rate(schedule: &Schedule, costs: &Costs) -> Result<(), ParamError> {
    let unslotted = schedule.copies.iter().flatten().filter(|c| c.slot.is_none()).count();
    let rate = costs.trade.as_deref().and_then(|t| t.copy_time);
    if unslotted == 0 || rate.is_some() {
        return Ok(());
    }
    Err(ParamError::new(
        Field::CopyTime,
        format!("the schedule's {unslotted} copies to and from the host have no time of their own, and no copy time is given"),
    )
    .hint("with plain costs give --copy-time T, the time one forward's activation (mem-f) takes to copy (copy-time= in a link)")
    .hint("with a model give --host-gbps G, its host link's GB/s each way (PCIe Gen4 x16 moves about 25): --copy-time is for plain costs"))
}

/// Refuses recompute or offload settings for a schedule that holds its own R passes or
/// copies (a file): it runs as it says, so the settings would change nothing.
///
/// # Errors
/// A [`ParamError`] on the setting given, with the hint to drop it or trade on the compute
/// orders.
pub fn check_no_second_trade(schedule: &Schedule, costs: &Costs) -> Result<(), ParamError> {
    let Some(t) = costs.trade.as_deref() else { return Ok(()) };
    let recomputes = t.recompute.iter().any(|r| *r != Recompute::None);
    if !schedule.trades_memory() || (!recomputes && t.offload == Offload::None) {
        return Ok(());
    }
    let field = if recomputes { Field::Recompute } else { Field::Offload };
    Err(ParamError::new(
        field,
        "the schedule already holds its own R passes or copies and runs as it says: recompute and offload settings do not apply",
    )
    .hint("drop --recompute and --offload to run the file as it is")
    .hint("or write its compute orders (convert FILE orders.csv) and give --recompute and --offload on those"))
}

/// The schedule `generate` makes for `params`, with the passes its trade asks for. The
/// generator sees no trade: it plans compute orders, and [`apply`] adds R passes and copies.
///
/// A memory-aware family (`memory_aware`, under a limit) whose trade recomputes on every
/// device also plans with what a recomputing forward holds ([`planning_params`]): less
/// memory each, so more forwards fit in flight. That schedule is kept when its simulated
/// peak is within the limit on every device and its step is shorter than planning without
/// the trade, as the authors' scheduler plans with the activation memory a forward
/// measures under the run's recomputation. Offload is placed after, as theirs does.
///
/// # Errors
/// The generator's errors, or [`apply`]'s.
pub fn generate_with_trade(
    params: &ScheduleParams,
    generate: fn(&ScheduleParams) -> Result<Schedule, ParamError>,
    memory_aware: bool,
) -> Result<Schedule, ParamError> {
    let bare = ScheduleParams { costs: Costs { trade: None, ..params.costs.clone() }, ..params.clone() };
    let without = generate(&bare).and_then(|s| apply(s, &params.costs));
    let (true, Some(planning), Some(limit)) = (memory_aware, planning_params(params), params.mem_limit) else {
        return without;
    };
    let Ok(planned) = generate(&planning).and_then(|s| apply(s, &params.costs)) else {
        return without;
    };
    let run = |s: &Schedule| {
        let t = simulate(s, &StageCosts::for_schedule(&params.costs, s)).ok()?;
        let cost = crate::stats::stats(s, &t, &params.costs).cost;
        Some((cost, t.devices.iter().map(|d| d.peak_memory).fold(0.0, f64::max)))
    };
    let Some((cost, _)) = run(&planned).filter(|&(_, peak)| peak <= limit * (1.0 + 1e-9) + 1e-12) else {
        return without;
    };
    match without.as_ref().ok().and_then(run) {
        Some((other, _)) if other <= cost * (1.0 + 1e-9) => without,
        _ => Ok(planned),
    }
}

/// What a memory-aware family plans with when every device recomputes: each forward holds
/// `max(keep·mem-f, mem-w)` (what the recompute keeps, and at least what the weight
/// gradient holds after B, so B never adds memory), with `keep` the largest any device keeps;
/// the limit is lowered by the most an R pass adds before its backward, `mem-f` less that,
/// on one device's stage. `None` when there is no limit, or some device or chunk does not
/// recompute.
pub fn planning_params(params: &ScheduleParams) -> Option<ScheduleParams> {
    let limit = params.mem_limit?;
    let keep = params.costs.trade.as_deref()?.recompute_keep(params.devices)?;
    let held = |mem_f: f64, mem_w: f64| (keep * mem_f).max(mem_w);
    let costs = &params.costs;
    let mut planning = Costs { trade: None, ..costs.clone() };
    planning.mem_f = held(costs.mem_f, costs.mem_w());
    planning.mem_w = Some(costs.mem_w());
    planning.profile = costs.profile.as_deref().map(|p| Arc::new(held_profile(p, &held)));
    let stages = StageCosts::new(costs, &Placement::linear(params.devices));
    let added = stages.mem_f.iter().zip(&stages.mem_w).map(|(&f, &w)| f - held(f, w)).fold(0.0, f64::max);
    Some(ScheduleParams { costs: planning, mem_limit: Some(limit - added), ..params.clone() })
}

/// `profile` (and its finer cuts) with each piece's forward memory what `held` says it holds.
fn held_profile(profile: &CostProfile, held: &dyn Fn(f64, f64) -> f64) -> CostProfile {
    CostProfile {
        mem_f: profile.mem_f.iter().zip(&profile.mem_w).map(|(&f, &w)| held(f, w)).collect(),
        finer: profile.finer.iter().map(|p| Arc::new(held_profile(p, held))).collect(),
        ..profile.clone()
    }
}

/// What a run that asked to offload but copies nothing says.
pub const NOTHING_OFFLOADED: &str = "nothing was offloaded: no wait between a forward and its backward hides three round trips of its copy (a faster host link, or more microbatches, leaves room)";

/// The error for offload fractions so small that every device's rounds to none of its
/// forwards (`offload 1e-320` of 8), when `schedule` (with `trade` applied) copies nothing:
/// the fraction, not the waits, offloaded nothing. `None` otherwise.
pub fn offload_rounds_to_none(trade: &Trade, schedule: &Schedule) -> Option<ParamError> {
    let Offload::Fractions(given) = &trade.offload else { return None };
    if schedule.has_copies() || given.iter().all(|f| *f == 0.0) {
        return None;
    }
    let forwards: Vec<usize> = (0..schedule.devices()).map(|d| forwards_of(schedule, d)).collect();
    let offloaded =
        |d: u32| trade.offload_of(d).map_or(1, |f| offload_count(f, forwards.get(d as usize).copied().unwrap_or(0)));
    if (0..schedule.devices()).any(|d| offloaded(d) > 0) {
        return None;
    }
    let most = forwards.iter().copied().max().unwrap_or(0).max(1);
    let shown: Vec<String> = given.iter().map(|f| crate::units::short_number(*f)).collect();
    Some(
        ParamError::new(
            Field::Offload,
            format!(
                "offload {} rounds to none of the {most} forwards a device runs, so nothing is offloaded",
                shown.join(",")
            ),
        )
        .hint(format!(
            "offload at least {} to copy one forward of {most}, or drop offload",
            crate::units::short_number(0.5 / most as f64)
        )),
    )
}

/// The forwards device `device` of `schedule` runs (one per stage it holds and microbatch, a
/// slice each for sliced families).
fn forwards_of(schedule: &Schedule, device: u32) -> usize {
    schedule
        .orders
        .get(device as usize)
        .map_or(0, |order| order.iter().flat_map(Op::passes).filter(|p| p.kind == PassKind::F).count())
}

/// How many of `forwards` an offload fraction `fraction` copies.
fn offload_count(fraction: f64, forwards: usize) -> usize {
    (fraction * forwards as f64).round() as usize
}

/// What a PyTorch schedule file says of a schedule that recomputes or offloads: it holds the
/// compute orders only.
pub const PYTORCH_NOTE: &str = "the PyTorch file holds the compute orders only: PyTorch's runtime has no recompute or offload action; set recomputation on the stage module (activation checkpointing, torch.utils.checkpoint) and offload with a custom action";

/// What a PyTorch schedule file says of a run with blocking sends (`--p2p blocking`): it holds
/// no send mode, and reads back with asynchronous sends.
pub const PYTORCH_BLOCKING_NOTE: &str = "the PyTorch file holds no send mode: PyTorch's runtime posts its own sends, and `simulate --from` reads the file with asynchronous sends unless --p2p blocking is given again";

/// What a schedule's recompute and offload cost and save, each against the same schedule
/// simulated without them: the difference of two independent runs.
#[derive(Clone, Debug, PartialEq)]
pub struct TradeReport {
    /// Per device: time its R passes take.
    pub recompute: Vec<f64>,
    /// Per device: microbatches it offloads.
    pub offloaded: Vec<usize>,
    /// Per device: time its copy stream is busy.
    pub copying: Vec<f64>,
    /// Step time the copies add: the cost less the cost with copies that take no time.
    pub stall: f64,
    /// Step time recompute and offload add: the cost less the compute orders' cost.
    pub time: f64,
    /// Memory they save: the worst device's peak of the compute orders less this peak.
    pub saved: f64,
}

/// The [`TradeReport`] of `schedule` under `costs` (`None` when it trades nothing, or does
/// not simulate).
pub fn report(schedule: &Schedule, costs: &Costs) -> Option<TradeReport> {
    if !schedule.trades_memory() {
        return None;
    }
    let stage_costs = StageCosts::for_schedule(costs, schedule);
    let traded = simulate(schedule, &stage_costs).ok()?;
    // Copies that take no time: no stage copy time, and no slots.
    let free_copies = StageCosts { copy_time: 0.0, ..stage_costs.clone() };
    let quick = simulate(&schedule.without_slots(), &free_copies).ok()?;
    let plain_schedule = schedule.compute_orders();
    let plain_costs = Costs { trade: None, ..costs.clone() };
    let plain = simulate(&plain_schedule, &StageCosts::for_schedule(&plain_costs, &plain_schedule)).ok()?;
    let cost = |t: &Timeline| crate::stats::stats(schedule, t, costs).cost;
    let peak = |t: &Timeline| t.devices.iter().map(|d| d.peak_memory).fold(0.0, f64::max);
    let plain_cost = crate::stats::stats(&plain_schedule, &plain, &plain_costs).cost;
    let recompute = schedule
        .orders
        .iter()
        .zip(&traded.devices)
        .map(|(order, d)| {
            order
                .iter()
                .zip(&d.ops)
                .filter(|(op, _)| matches!(op, Op::One(p) if p.kind == PassKind::R))
                .map(|(_, t)| t.end - t.start)
                .sum()
        })
        .collect();
    let offloaded = (0..schedule.devices())
        .map(|d| schedule.copies_of(d).iter().filter(|c| c.kind == CopyKind::Offload).count())
        .collect();
    // Each copy's own time (its slot's, or its activation at the copy rate), summed exactly:
    // the timeline's end − start carries the rounding of the times around it.
    let copying = (0..schedule.devices())
        .map(|d| {
            let times = schedule.copies_of(d).iter().map(|c| c.slot.map_or(stage_costs.copy(c.pass.stage), |s| s.time));
            crate::units::without_noise(crate::sim::RunningTotal::sum(times))
        })
        .collect();
    Some(TradeReport {
        recompute,
        offloaded,
        copying,
        stall: cost(&traded) - cost(&quick),
        time: cost(&traded) - plain_cost,
        saved: peak(&plain) - peak(&traded),
    })
}

/// `schedule` with an R pass right before every backward (B, BW, or the backward of a pair) on
/// the devices the trade recomputes on, of the chunks it covers ([`Trade::chunks`]).
fn with_recompute(mut schedule: Schedule, trade: &Trade) -> Schedule {
    let chunk_of = schedule.placement.chunk_table();
    let covered = |stage: u32| trade.covers_chunk(chunk_of.get(stage as usize).copied().unwrap_or(0));
    for (device, order) in schedule.orders.iter_mut().enumerate() {
        if trade.shape_of(device as u32).is_none() {
            continue;
        }
        let mut out = Vec::with_capacity(order.len() * 5 / 4);
        for op in order.drain(..) {
            if let Some(back) = op.passes().find(|p| p.kind.is_input_grad() && covered(p.stage)) {
                out.push(Op::One(Pass { kind: PassKind::R, ..back }));
            }
            out.push(op);
        }
        *order = out;
    }
    schedule
}

/// One microbatch that could be offloaded: where its forward ends and its activation is next
/// needed, and how long it waits in between.
struct Candidate {
    forward: Pass,
    /// Position right after the forward, and the position of the first pass that needs the
    /// activation again (R or the backward).
    after_forward: usize,
    needed_at: usize,
    /// The end of the forward and the start of the pass that needs it, less one backward.
    free_from: f64,
    needed_by: f64,
    copy: f64,
}

impl Candidate {
    fn wait(&self) -> f64 {
        self.needed_by - self.free_from
    }

    fn hides_round_trips(&self) -> bool {
        self.wait() > ROUND_TRIPS * 2.0 * self.copy
    }
}

/// The copies of `device`: the candidates it offloads, each with its offload and reload, in
/// issue order. Candidates are taken longest wait first (they hold the most memory for the
/// longest) while the device's one copy stream has room: the offload in the first free slot
/// after the forward, the reload in the last free slot that ends before the activation is
/// needed. A candidate with no room for both is not offloaded, so the copies planned never
/// queue behind each other on the stream.
fn device_copies(
    schedule: &Schedule,
    timeline: &Timeline,
    costs: &StageCosts,
    trade: &Trade,
    device: u32,
) -> Vec<CopyOp> {
    let (Some(order), Some(times)) = (schedule.orders.get(device as usize), timeline.devices.get(device as usize))
    else {
        return Vec::new();
    };
    let forwards = forwards_of(schedule, device);
    let mut candidates = candidates(order, times, costs);
    let chunk_of = schedule.placement.chunk_table();
    candidates.retain(|c| trade.covers_chunk(chunk_of.get(c.forward.stage as usize).copied().unwrap_or(0)));
    candidates.retain(Candidate::hides_round_trips);
    crate::units::sort::sort_by(&mut candidates, |a, b| {
        b.wait().total_cmp(&a.wait()).then(a.after_forward.cmp(&b.after_forward))
    });
    let most = trade.offload_of(device).map_or(usize::MAX, |f| offload_count(f, forwards));
    let mut stream = Stream::default();
    // (copy, its planned start): the stream runs them in that order.
    let mut copies = Vec::new();
    for c in candidates {
        if copies.len() / 2 >= most {
            break;
        }
        let Some(out) = stream.first_free(c.free_from, c.copy, 0.0) else { continue };
        let Some(back) = stream.last_free(out + c.copy, c.needed_by, c.copy) else { continue };
        stream.take(out, c.copy);
        stream.take(back, c.copy);
        copies.push((CopyOp::new(CopyKind::Offload, c.forward, c.after_forward as u32), out));
        // Issued at the last position the compute reaches by the slot's start.
        let issue = (c.after_forward..=c.needed_at)
            .take_while(|&p| p == c.after_forward || times.ops.get(p - 1).is_some_and(|t| t.end <= back))
            .last()
            .unwrap_or(c.after_forward);
        copies.push((CopyOp::new(CopyKind::Reload, c.forward, issue as u32), back));
    }
    // The stream runs copies in list order: by planned start. Each is issued at its position
    // or at the one before it in the list, whichever comes later; both are reached by its
    // planned start, so no copy starts after it was planned to.
    crate::units::sort::sort_by(&mut copies, |(a, ta), (b, tb)| {
        ta.total_cmp(tb).then((a.kind == CopyKind::Reload).cmp(&(b.kind == CopyKind::Reload)))
    });
    let mut at = 0;
    copies
        .into_iter()
        .map(|(mut c, _)| {
            at = at.max(c.at);
            c.at = at;
            c
        })
        .collect()
}

/// Every forward on the device whose activation is needed again later on it.
fn candidates(order: &[Op], times: &crate::sim::DeviceTimeline, costs: &StageCosts) -> Vec<Candidate> {
    let mut found: Vec<Candidate> = Vec::new();
    let mut open: std::collections::HashMap<(u32, u32, u32), usize> = std::collections::HashMap::new();
    for (position, (op, timed)) in order.iter().zip(&times.ops).enumerate() {
        for pass in op.passes() {
            let key = (pass.stage, pass.microbatch, pass.slice);
            match pass.kind {
                PassKind::F => {
                    open.insert(key, found.len());
                    found.push(Candidate {
                        forward: pass,
                        after_forward: position + 1,
                        needed_at: usize::MAX,
                        free_from: timed.end,
                        needed_by: f64::NEG_INFINITY,
                        copy: costs.copy(pass.stage),
                    });
                }
                PassKind::R | PassKind::B | PassKind::BW => {
                    if let Some(i) = open.remove(&key) {
                        let slack = costs.pass(Pass { kind: PassKind::B, ..pass });
                        found[i].needed_at = position;
                        found[i].needed_by = timed.start - slack;
                    }
                }
                PassKind::W | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => {}
            }
        }
    }
    found.retain(|c| c.needed_at != usize::MAX);
    found
}

/// PipeOffload's copy time when only one device of a pair copies (its warm-up), as a fraction
/// of the time when both share the host link: the authors' `solo_offload_time` factor.
pub const PIPEOFFLOAD_SOLO: f64 = 0.7;

/// PipeOffload's placement (`Offload::PipeOffload`), written from the authors' rules in the Zero
/// Bubble repository's `offloading.py` (their code is not used):
///
/// 1. **Planned times.** The simulated times, with the warm-up forwards after the last chunk's
///    first forward moved as late as they can go: each no later than the next stage's copy of
///    it less the communication, nor than the next op on its device (the first backward less
///    its own time), devices from the last to the first (`postpone_forward_in_warmup`).
/// 2. **Which.** Every forward of the chunks the trade covers whose backward starts more than
///    three round trips, plus the backward's own time, after the forward's planned end.
/// 3. **Slots.** Devices `2i` and `2i + 1` share one host link, cut into slots of one copy
///    time `c` from the end of device `2i`'s first forward: even slots are device `2i`'s
///    offloads and odd ones its reloads; device `2i + 1` uses the same grid `c` later. Each
///    offload takes the first free even slot from its forward's end on; walking back from the
///    step's end, each reload takes the latest odd slot that ends before its backward's start
///    less the backward's time.
/// 4. **Warm-up.** Until the pair's first reload, its offloads run alone on the link, back to
///    back as their forwards end, at [`PIPEOFFLOAD_SOLO`] of the copy time.
/// 5. **Positions.** An offload is issued before the first op (in planned time) that ends
///    after it starts; a reload before the first op that starts at or after it starts.
///
/// Each copy carries its slot ([`CopySlot`]): the simulator starts it no earlier than the
/// slot's start (the authors' barrier between the pair's devices) and gives it the slot's time
/// (solo or shared), so simulated copy times are the authors' planned ones.
///
/// # Errors
/// A [`ParamError`] on `offload` when the devices are not in pairs, or a reload finds no slot
/// after its offload (the authors' "reduce --offload-chunk-num").
pub fn pipeoffload_copies(
    schedule: &Schedule,
    timeline: &Timeline,
    costs: &StageCosts,
    trade: &Trade,
) -> Result<Vec<Vec<CopyOp>>, ParamError> {
    let plan = pipeoffload_plan(schedule, timeline, costs, trade)?;
    Ok(plan.into_iter().map(|device| device.into_iter().map(|p| p.copy).collect()).collect())
}

/// A copy [`pipeoffload_copies`] places, with the start and end the authors' slot grid plans
/// for it (the copy's slot holds the same).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedCopy {
    /// The copy and its position.
    pub copy: CopyOp,
    /// Its planned start.
    pub start: f64,
    /// Its planned end.
    pub end: f64,
}

/// [`pipeoffload_copies`] with each copy's planned start and end.
///
/// # Errors
/// As [`pipeoffload_copies`].
pub fn pipeoffload_plan(
    schedule: &Schedule,
    timeline: &Timeline,
    costs: &StageCosts,
    trade: &Trade,
) -> Result<Vec<Vec<PlannedCopy>>, ParamError> {
    let devices = schedule.devices();
    if devices % 2 != 0 {
        return Err(ParamError::new(
            Field::Offload,
            format!("PipeOffload pairs devices on a host link and needs an even number of them, found {devices}"),
        )
        .hint("use an even --devices, or --offload auto"));
    }
    let planned = planned_times(schedule, timeline, costs);
    let chunk_of = schedule.placement.chunk_table();
    let mut out = Vec::with_capacity(devices as usize);
    for pair in 0..devices / 2 {
        let first = 2 * pair;
        let origin = planned[first as usize].first().map_or(0.0, |t| t.1);
        let copy = (first..first + 2)
            .flat_map(|d| schedule.orders[d as usize].iter().flat_map(Op::passes))
            .filter(|p| p.kind == PassKind::F)
            .map(|p| costs.copy(p.stage))
            .fold(0.0, f64::max);
        let mut slots = [Vec::new(), Vec::new()];
        for (k, device) in (first..first + 2).enumerate() {
            let d = device as usize;
            let covered = |p: Pass| trade.covers_chunk(chunk_of.get(p.stage as usize).copied().unwrap_or(0));
            slots[k] = pair_slots(&schedule.orders[d], &planned[d], origin + k as f64 * copy, copy, covered)?;
        }
        solo_warm_up(&mut slots, &planned[first as usize..], copy * PIPEOFFLOAD_SOLO);
        for (k, device) in (first..first + 2).enumerate() {
            out.push(positions(&schedule.orders[device as usize], &planned[device as usize], &slots[k]));
        }
    }
    Ok(out)
}

/// One copy in the slot grid: its slot, what it moves, where the forward or backward it belongs
/// to sits in the order, and its planned start and end.
#[derive(Clone, Copy, Debug)]
struct Slot {
    index: i64,
    kind: CopyKind,
    forward: Pass,
    /// The op the copy belongs to: the forward (offload) or the backward (reload).
    op: usize,
    start: f64,
    end: f64,
    /// The copy's own time, `end − start` without the rounding of the times around it.
    time: f64,
}

/// Each op's planned start and end (step 1 of [`pipeoffload_copies`]).
pub(crate) fn planned_times(schedule: &Schedule, timeline: &Timeline, costs: &StageCosts) -> Vec<Vec<(f64, f64)>> {
    let mut planned: Vec<Vec<(f64, f64)>> =
        timeline.devices.iter().map(|d| d.ops.iter().map(|t| (t.start, t.end)).collect()).collect();
    let mut at = std::collections::HashMap::new();
    for (d, order) in schedule.orders.iter().enumerate() {
        for (i, op) in order.iter().enumerate() {
            for p in op.passes() {
                at.insert((p.kind, p.stage, p.microbatch, p.slice), (d, i));
            }
        }
    }
    let last_chunk = schedule.placement.chunks_per_device().saturating_sub(1);
    let chunk_of = schedule.placement.chunk_table();
    for d in (0..schedule.orders.len()).rev() {
        let order = &schedule.orders[d];
        let Some(first_back) = order.iter().position(|op| op.passes().any(|p| p.kind.is_input_grad())) else {
            continue;
        };
        let (start, end) = planned[d][first_back];
        let mut latest = start - (end - start);
        for i in (0..first_back).rev() {
            let pass = order[i].first();
            if pass.kind == PassKind::F
                && pass.microbatch == 0
                && chunk_of.get(pass.stage as usize).copied() == Some(last_chunk)
            {
                break;
            }
            let Some(&(nd, ni)) = at.get(&(pass.kind, pass.stage + 1, pass.microbatch, pass.slice)) else {
                break;
            };
            let (start, end) = planned[d][i];
            let cost = end - start;
            let moved = (planned[nd][ni].0 - costs.comm - cost).min(latest - cost);
            if moved > start {
                planned[d][i] = (moved, moved + cost);
            }
            latest = planned[d][i].0;
        }
    }
    planned
}

/// Steps 2 and 3 of [`pipeoffload_copies`] for one device: its offloads and reloads in the slot
/// grid starting at `origin`, in slot order.
fn pair_slots(
    order: &[Op],
    planned: &[(f64, f64)],
    origin: f64,
    copy: f64,
    covered: impl Fn(Pass) -> bool,
) -> Result<Vec<Slot>, ParamError> {
    let round_trip = copy + copy;
    let mut forward_at = std::collections::HashMap::new();
    let mut pairs = Vec::new();
    for (i, op) in order.iter().enumerate() {
        let p = op.first();
        match p.kind {
            PassKind::F if covered(p) => {
                forward_at.insert((p.stage, p.microbatch, p.slice), i);
            }
            PassKind::B => {
                if let Some(f) = forward_at.remove(&(p.stage, p.microbatch, p.slice)) {
                    let (start, end) = planned[i];
                    if start - (end - start) - planned[f].1 > ROUND_TRIPS * round_trip {
                        pairs.push((f, i, Pass { kind: PassKind::F, ..p }));
                    }
                }
            }
            _ => {}
        }
    }
    let (mut now, mut index) = (origin, 0i64);
    let mut offloads = Vec::with_capacity(pairs.len());
    let mut by_forward: Vec<_> = pairs.clone();
    crate::units::sort::sort_by_key(&mut by_forward, |&(f, _, _)| f);
    for &(f, _, forward) in &by_forward {
        while now < planned[f].1 {
            now += round_trip;
            index += 2;
        }
        offloads.push(Slot { index, kind: CopyKind::Offload, forward, op: f, start: now, end: now + copy, time: copy });
        now += round_trip;
        index += 2;
    }
    while planned.last().is_some_and(|t| now < t.1) {
        now += round_trip;
        index += 2;
    }
    let mut reloads = Vec::with_capacity(pairs.len());
    let mut by_backward = pairs;
    crate::units::sort::sort_by_key(&mut by_backward, |&(_, b, _)| std::cmp::Reverse(b));
    for (_, b, forward) in by_backward {
        let (start, end) = planned[b];
        while now > start - (end - start) {
            now -= round_trip;
            index -= 2;
        }
        let sent = offloads.iter().find(|s| s.forward == forward).map_or(f64::NEG_INFINITY, |s| s.end);
        if now - copy <= sent {
            return Err(ParamError::new(
                Field::Offload,
                format!("PipeOffload finds no reload slot after the offload of {forward}"),
            )
            .hint("offload fewer chunks (a smaller trade chunk limit), or make copies quicker"));
        }
        let slot =
            Slot { index: index - 1, kind: CopyKind::Reload, forward, op: b, start: now - copy, end: now, time: copy };
        reloads.push(slot);
        now -= round_trip;
        index -= 2;
    }
    reloads.reverse();
    let mut slots = offloads;
    slots.extend(reloads);
    crate::units::sort::sort_by_key(&mut slots, |s| s.index);
    Ok(slots)
}

/// Step 4 of [`pipeoffload_copies`]: the pair's offloads before its first reload, one after
/// another as their forwards end, at the solo copy time.
fn solo_warm_up(slots: &mut [Vec<Slot>; 2], planned: &[Vec<(f64, f64)>], solo: f64) {
    let Some(last) = slots[0].last().map(|s| s.index) else { return };
    let first_reload = (0..2)
        .flat_map(|k| slots[k].iter().filter(|s| s.index % 2 != 0).map(move |s| s.index + k as i64))
        .fold(last, i64::min);
    let Some(first) = slots[0].first().copied() else { return };
    let (mut now, mut index, mut next) = (first.start, first.index, [0usize; 2]);
    while index < first_reload {
        for k in 0..2 {
            let Some(slot) = slots[k].get_mut(next[k]) else { continue };
            if slot.index + k as i64 != index {
                continue;
            }
            now = now.max(planned[k][slot.op].1);
            slot.start = now;
            slot.end = now + solo;
            slot.time = solo;
            next[k] += 1;
            now += solo;
        }
        index += 1;
    }
}

/// Step 5 of [`pipeoffload_copies`]: each copy's position in the order, in issue order. The
/// starts of offloads and the buffer preparations of reloads form one queue, placed before the
/// first op that ends after them; the ends of offloads and the starts of reloads another,
/// placed before the first op that starts at or after them. Neither queue passes itself.
fn positions(order: &[Op], planned: &[(f64, f64)], slots: &[Slot]) -> Vec<PlannedCopy> {
    let (mut first_queue, mut second_queue) = (0usize, 0usize);
    let mut copies: Vec<PlannedCopy> = Vec::with_capacity(slots.len());
    for slot in slots {
        while first_queue < order.len() && planned[first_queue].1 <= slot.start {
            first_queue += 1;
        }
        let second_time = match slot.kind {
            CopyKind::Offload => slot.end,
            CopyKind::Reload => slot.start,
        };
        while second_queue < order.len() && planned[second_queue].0 < second_time {
            second_queue += 1;
        }
        let at = match slot.kind {
            CopyKind::Offload => first_queue,
            CopyKind::Reload => second_queue,
        };
        let planned = CopySlot { start: slot.start, time: slot.time };
        let copy = CopyOp { slot: Some(planned), ..CopyOp::new(slot.kind, slot.forward, at as u32) };
        copies.push(PlannedCopy { copy, start: slot.start, end: slot.end });
    }
    // At one position: by planned start, an offload before a reload that starts with it.
    crate::units::sort::sort_by(&mut copies, |a, b| {
        (a.copy.at.cmp(&b.copy.at))
            .then(a.start.total_cmp(&b.start))
            .then((a.copy.kind == CopyKind::Reload).cmp(&(b.copy.kind == CopyKind::Reload)))
    });
    copies
}

#[cfg(test)]
#[path = "passes_tests.rs"]
mod tests;
