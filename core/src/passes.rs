//! Passes that trade memory for time, added to a generated schedule ([`apply`]): an R pass
//! before every backward on a device that recomputes, and an offload and a reload for each
//! microbatch a device sends to host memory.
//!
//! Copies are placed as PipeOffload places them (the Zero Bubble repository's
//! `offloading.py`): the offload as soon as the forward ends, the reload as late as still
//! leaves one backward's time of slack before the backward, and only where the wait between
//! forward and backward hides three round trips. The simulator times them on each device's
//! copy stream; a late reload stalls its backward there.
//!
//! May use the engine (`sim`, `params`, `trade`) and below.

use crate::error::ParamError;
use crate::params::{Costs, StageCosts};
use crate::schedule::{CopyKind, CopyOp, Op, Pass, PassKind, Schedule};
use crate::sim::{simulate, Timeline};
use crate::trade::Trade;

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
    let copies = (0..schedule.devices()).map(|d| device_copies(&schedule, &timeline, &stage_costs, trade, d)).collect();
    Ok(Schedule { copies, ..schedule })
}

/// What a PyTorch schedule file says of a schedule that recomputes or offloads: it holds the
/// compute orders only.
pub const PYTORCH_NOTE: &str = "the PyTorch file holds the compute orders only: PyTorch's runtime has no recompute or offload action; set recomputation on the stage module (activation checkpointing, torch.utils.checkpoint) and offload with a custom action";

/// `schedule` without its R passes and copies: the compute orders a runtime without recompute
/// or offload actions runs.
pub fn compute_orders(schedule: &Schedule) -> Schedule {
    let orders = schedule
        .orders
        .iter()
        .map(|order| order.iter().filter(|op| !matches!(op, Op::One(p) if p.kind == PassKind::R)).copied().collect())
        .collect();
    Schedule { orders, copies: Vec::new(), ..schedule.clone() }
}

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
    let free_copies = StageCosts { copy_time: 0.0, ..stage_costs.clone() };
    let quick = simulate(schedule, &free_copies).ok()?;
    let plain_schedule = compute_orders(schedule);
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
    let copying = traded.devices.iter().map(|d| d.copies.iter().map(|c| c.end - c.start).sum()).collect();
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
/// the devices the trade recomputes on.
fn with_recompute(mut schedule: Schedule, trade: &Trade) -> Schedule {
    for (device, order) in schedule.orders.iter_mut().enumerate() {
        if trade.shape_of(device as u32).is_none() {
            continue;
        }
        let mut out = Vec::with_capacity(order.len() * 5 / 4);
        for op in order.drain(..) {
            if let Some(back) = op.passes().find(|p| p.kind.is_input_grad()) {
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
/// issue order.
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
    let forwards = order.iter().flat_map(Op::passes).filter(|p| p.kind == PassKind::F).count();
    let mut candidates = candidates(order, times, costs);
    candidates.retain(Candidate::hides_round_trips);
    // The longest waits first: they hold the most memory for the longest.
    candidates.sort_by(|a, b| b.wait().total_cmp(&a.wait()).then(a.after_forward.cmp(&b.after_forward)));
    if let Some(fraction) = trade.offload_of(device) {
        candidates.truncate((fraction * forwards as f64).round() as usize);
    }
    // (copy, the position that orders it among copies issued at the same position)
    let mut copies = Vec::with_capacity(2 * candidates.len());
    for c in &candidates {
        copies.push((CopyOp { kind: CopyKind::Offload, pass: c.forward, at: c.after_forward as u32 }, c.after_forward));
        // Issue the reload at the last position whose issue time still leaves it the copy's
        // time (and the backward's slack) before the activation is needed.
        let latest = c.needed_by - c.copy;
        let issue = (c.after_forward..=c.needed_at)
            .take_while(|&p| p == c.after_forward || times.ops.get(p - 1).is_some_and(|t| t.end <= latest))
            .last()
            .unwrap_or(c.after_forward);
        copies.push((CopyOp { kind: CopyKind::Reload, pass: c.forward, at: issue as u32 }, c.needed_at));
    }
    copies.sort_by_key(|(c, then)| (c.at, c.kind == CopyKind::Reload, *then));
    copies.into_iter().map(|(c, _)| c).collect()
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
                PassKind::W => {}
            }
        }
    }
    found.retain(|c| c.needed_at != usize::MAX);
    found
}

#[cfg(test)]
#[path = "passes_tests.rs"]
mod tests;
