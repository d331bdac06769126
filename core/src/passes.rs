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

/// What a run that asked to offload but copies nothing says.
pub const NOTHING_OFFLOADED: &str = "nothing was offloaded: no wait between a forward and its backward hides three round trips of its copy (a faster host link, or more microbatches, leaves room)";

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
    let forwards = order.iter().flat_map(Op::passes).filter(|p| p.kind == PassKind::F).count();
    let mut candidates = candidates(order, times, costs);
    candidates.retain(Candidate::hides_round_trips);
    candidates.sort_by(|a, b| b.wait().total_cmp(&a.wait()).then(a.after_forward.cmp(&b.after_forward)));
    let most = trade.offload_of(device).map_or(usize::MAX, |f| (f * forwards as f64).round() as usize);
    let mut stream = Stream::default();
    // (copy, its planned start): the stream runs them in that order.
    let mut copies = Vec::new();
    for c in candidates {
        if copies.len() / 2 >= most {
            break;
        }
        let Some(out) = stream.first_free(c.free_from, c.copy) else { continue };
        let Some(back) = stream.last_free(out + c.copy, c.needed_by, c.copy) else { continue };
        stream.take(out, c.copy);
        stream.take(back, c.copy);
        copies.push((CopyOp { kind: CopyKind::Offload, pass: c.forward, at: c.after_forward as u32 }, out));
        // Issued at the last position the compute reaches by the slot's start.
        let issue = (c.after_forward..=c.needed_at)
            .take_while(|&p| p == c.after_forward || times.ops.get(p - 1).is_some_and(|t| t.end <= back))
            .last()
            .unwrap_or(c.after_forward);
        copies.push((CopyOp { kind: CopyKind::Reload, pass: c.forward, at: issue as u32 }, back));
    }
    // The stream runs copies in list order: by planned start. Each is issued at its position
    // or at the one before it in the list, whichever comes later; both are reached by its
    // planned start, so no copy starts after it was planned to.
    copies.sort_by(|(a, ta), (b, tb)| {
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

/// The busy intervals planned on a copy stream, sorted by start.
#[derive(Default)]
struct Stream {
    busy: Vec<(f64, f64)>,
}

impl Stream {
    /// The earliest start from `from` on where `length` fits.
    fn first_free(&self, from: f64, length: f64) -> Option<f64> {
        let mut start = from;
        for &(s, e) in &self.busy {
            if start + length <= s {
                break;
            }
            start = start.max(e);
        }
        start.is_finite().then_some(start)
    }

    /// The latest start from `from` on at which `length` ends by `by`.
    fn last_free(&self, from: f64, by: f64, length: f64) -> Option<f64> {
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

    fn take(&mut self, start: f64, length: f64) {
        let at = self.busy.partition_point(|&(s, _)| s < start);
        self.busy.insert(at, (start, start + length));
    }
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
