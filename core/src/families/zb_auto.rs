//! Automatic Zero Bubble scheduling: the greedy heuristic of Qi et al., *Zero Bubble Pipeline
//! Parallelism* (ICLR 2024, §3.1), as the authors' code runs it (`zb.py::Graph.manual_order`
//! and `initial_solution`, identical in `auto_schedule.py` of release v0.1.0). ZB-1p and ZB-2p
//! are the same heuristic with the memory limit at 1F1B's memory (`P·mem-f`) and twice that.
//!
//! The details are in `docs/schedule-families.md`, under `families/zb_auto.rs`.

use super::{per_device_microbatch, Family, FamilyGroup, FamilyOption, OptionDefault, ZERO_BUBBLE};
use crate::error::{Field, ParamError};
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{Op, Pass, PassKind, Placement, Schedule};
use crate::sim::{simulate, Builder};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-auto",
    title: "ZB (automatic)",
    group: FamilyGroup::ZeroBubble,
    summary: "the Zero Bubble paper's automatic scheduling heuristic: least bubble under --mem-limit",
    reference: "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024), §3.1",
    url: "https://arxiv.org/abs/2401.10241",
    options: &[FamilyOption { field: Field::MemLimit, default: OptionDefault::Derived(default_limit) }],
    constraints: "mem-limit ≥ mem-f (default 3·M·mem-f, no limit)",
    passes: per_device_microbatch::<3>,
    generate: generate_auto,
    ..Family::DEFAULTS
};

/// The registry entry.
pub const ZB_1P: Family = Family {
    name: "zb-1p",
    title: "ZB-1p",
    group: FamilyGroup::ZeroBubble,
    summary: "automatic Zero Bubble at 1F1B's memory (limit P·mem-f)",
    passes: per_device_microbatch::<3>,
    generate: generate_1p,
    ..Family::citing(ZERO_BUBBLE)
};

/// The registry entry: ZB-1p's facts but for its name, summary and memory limit.
pub const ZB_2P: Family = Family {
    name: "zb-2p",
    title: "ZB-2p",
    summary: "automatic Zero Bubble at twice 1F1B's memory (limit 2P·mem-f): near-zero bubble",
    generate: generate_2p,
    ..ZB_1P
};

fn generate_auto(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    zero_bubble_auto(params, params.mem_limit.unwrap_or_else(|| default_limit(params)))
}

/// zb-auto's default limit, `3·M·mem-f` of the heaviest stage: more than any schedule holds,
/// so no limit.
pub(crate) fn default_limit(params: &ScheduleParams) -> f64 {
    3.0 * f64::from(params.microbatches) * heaviest_stage_mem_f(params)
}

/// 1F1B's memory on its heaviest device: device `d` holds `P − d` forwards of its stage,
/// `max over d of (P − d)·mem-f[d]` in the simulator's per-stage costs (`P·mem-f` when every
/// stage stores alike).
fn one_f_one_b_memory(params: &ScheduleParams) -> f64 {
    let p = params.devices;
    if params.costs.is_uniform() {
        return params.one_f_one_b_memory();
    }
    let costs = StageCosts::new(&params.costs, &Placement::linear(p));
    (0..p).map(|d| f64::from(p - d) * costs.mem_f[d as usize]).fold(0.0, f64::max)
}

/// The largest per-stage `mem-f` the simulator charges (`mem-f` itself when every stage
/// stores alike; a model's LM-head stage holds more than the mean share).
fn heaviest_stage_mem_f(params: &ScheduleParams) -> f64 {
    if params.costs.is_uniform() {
        return params.costs.mem_f;
    }
    let costs = StageCosts::new(&params.costs, &Placement::linear(params.devices));
    costs.mem_f.iter().copied().fold(0.0, f64::max)
}

fn generate_1p(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate_at_multiple(params, 1)
}

fn generate_2p(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    generate_at_multiple(params, 2)
}

/// ZB-1p / ZB-2p: the heuristic with the limit at `multiple·P·mem-f` ([`one_f_one_b_memory`]). These families fix
/// their limit: like every family that does not schedule to `--mem-limit`, they treat a given
/// one as a cap to check the result against (the CLI and the app flag devices above it), not
/// as an input — use `zb-auto --mem-limit L` to schedule to another limit.
fn generate_at_multiple(params: &ScheduleParams, multiple: u32) -> Result<Schedule, ParamError> {
    let limit = f64::from(multiple) * one_f_one_b_memory(params);
    zero_bubble_auto(params, limit)
}

/// The heuristic's three switches, named as in the authors' code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Switches {
    /// The warm-up may add a forward that ends after the first B arrives (a bubble shorter
    /// than one F before the first B); otherwise it stops as soon as the B could start.
    allow_bubble_before_first_b: bool,
    /// A device two or more forwards ahead of the next one may skip its forward to run its
    /// B sooner.
    prioritize_b: bool,
    /// Fill a gap shorter than a W with a W even when it is no worse than the worst bubble.
    no_bubble_greedy: bool,
}

impl Switches {
    /// The switches, in the code's order.
    const fn new(allow_bubble_before_first_b: bool, prioritize_b: bool, no_bubble_greedy: bool) -> Switches {
        Switches { allow_bubble_before_first_b, prioritize_b, no_bubble_greedy }
    }

    /// Whether a run with these switches makes the same decisions as an `earlier` run in
    /// which only the switches in `decisive` ever changed a decision: then it is the same run.
    fn repeats(self, earlier: Switches, decisive: Switches) -> bool {
        (!decisive.allow_bubble_before_first_b
            || self.allow_bubble_before_first_b == earlier.allow_bubble_before_first_b)
            && (!decisive.prioritize_b || self.prioritize_b == earlier.prioritize_b)
            && (!decisive.no_bubble_greedy || self.no_bubble_greedy == earlier.no_bubble_greedy)
    }
}

/// The grid the code searches, in its order: each switch `true` before `false`, nested as
/// `allow_bubble_before_first_b`, `prioritize_b`, `no_bubble_greedy`.
const GRID: [Switches; 8] = [
    Switches::new(true, true, true),
    Switches::new(true, true, false),
    Switches::new(true, false, true),
    Switches::new(true, false, false),
    Switches::new(false, true, true),
    Switches::new(false, true, false),
    Switches::new(false, false, true),
    Switches::new(false, false, false),
];

/// The automatic Zero Bubble schedule for `params` under the per-device activation memory
/// `limit` (in the unit of mem-f): the best of the heuristic's eight runs.
///
/// # Errors
/// A [`ParamError`] on [`Field::MemLimit`] starting with `cannot fit memory: ` when the limit
/// is below one forward's activations.
fn zero_bubble_auto(params: &ScheduleParams, limit: f64) -> Result<Schedule, ParamError> {
    let placement = Placement::linear(params.devices);
    let costs = StageCosts::new(&params.costs, &placement);
    check_limit(params, &costs, limit)?;
    let exact = exact_arithmetic(&costs, params.microbatches);
    let mut best: Option<Run> = None;
    // The switches of every run so far, and those that changed one of its decisions.
    let mut tried: Vec<(Switches, Switches)> = Vec::with_capacity(GRID.len());
    for switches in GRID {
        if tried.iter().any(|&(earlier, decisive)| switches.repeats(earlier, decisive)) {
            continue;
        }
        // A run is kept only if strictly better, so it may stop once it cannot be. Without
        // exact arithmetic it must be worse by more than any rounding.
        let give_up_at = best.as_ref().map_or(f64::INFINITY, |b| {
            if exact {
                b.best_time
            } else {
                b.best_time + 1e-6 * b.best_time.abs()
            }
        });
        let heuristic = Heuristic::new(&placement, params.microbatches, &costs, limit, switches, params.units);
        match heuristic.run(give_up_at)? {
            Outcome::Finished(run) => {
                tried.push((switches, run.decisive));
                if best.as_ref().is_none_or(|b| run.best_time < b.best_time) {
                    best = Some(*run);
                }
            }
            Outcome::GaveUp { decisive } => tried.push((switches, decisive)),
        }
    }
    // The first run has no bound to give up at, so `best` is set.
    best.map(|run| final_orders(run, &costs, limit))
        .ok_or_else(|| ParamError::new(Field::Schedule, "no run of the zero bubble heuristic finished"))
}

/// Whether every time the heuristic computes is an integer below 2^53, so float arithmetic
/// is exact: integer pass times and comm, and the sum of all pass times and hops fits.
fn exact_arithmetic(costs: &StageCosts, microbatches: u32) -> bool {
    let integral = |v: &[f64]| v.iter().all(|x| x.fract() == 0.0);
    let work: f64 = (0..costs.f.len()).map(|s| costs.f[s] + costs.b[s] + costs.w[s] + 3.0 * costs.comm).sum();
    integral(&costs.f)
        && integral(&costs.b)
        && integral(&costs.w)
        && costs.comm.fract() == 0.0
        && work * f64::from(microbatches) < 2f64.powi(53)
}

/// Rejects a limit below one forward's activations: no schedule can run a single forward.
fn check_limit(params: &ScheduleParams, costs: &StageCosts, limit: f64) -> Result<(), ParamError> {
    let needed = costs.mem_f.iter().copied().fold(0.0, f64::max);
    if needed <= limit {
        return Ok(());
    }
    let p = f64::from(params.devices);
    let mem = |v: f64| params.memory_text(v);
    Err(ParamError::new(
        Field::MemLimit,
        format!(
            "cannot fit memory: one forward holds mem-f = {} on its device, but the limit is {}",
            mem(needed),
            mem(limit)
        ),
    )
    .hint(format!(
        "raise --mem-limit to at least {}; {} (P·mem-f) is 1F1B's memory (ZB-1p), {} (2P·mem-f) that of ZB-2p",
        mem(needed),
        mem(p * needed),
        mem(2.0 * p * needed)
    )))
}

/// How a run of the heuristic ended.
enum Outcome {
    /// It placed every pass.
    Finished(Box<Run>),
    /// It stopped early: some device's span was sure to reach the best run's cost. `decisive`
    /// are the switches that changed a decision before it stopped.
    GaveUp { decisive: Switches },
}

/// One finished run of the heuristic.
struct Run {
    /// The orders, simulated as they were built.
    builder: Builder,
    /// The code's `best_time`: the longest span of a device.
    best_time: f64,
    /// Whether some pass ended at the same time as the one before it on its device (only
    /// possible with zero-time passes), so sorting by completion time needs a tie-break.
    ties: bool,
    /// The switches that changed at least one decision: flipping any other gives this run.
    decisive: Switches,
}

/// The state of one run of the heuristic (the code's `manual_order`).
struct Heuristic<'a> {
    builder: Builder,
    costs: &'a StageCosts,
    devices: u32,
    microbatches: u32,
    limit: f64,
    switches: Switches,
    /// Passes of each kind placed so far per device: the next microbatch of that kind.
    forwards: Vec<u32>,
    backwards: Vec<u32>,
    weights: Vec<u32>,
    /// The largest [`Builder::idle`] of any device (the code's `get_max_bubble()`).
    max_idle: f64,
    /// See [`Run::ties`].
    ties: bool,
    /// See [`Run::decisive`].
    decisive: Switches,
    /// How its error writes memory ([`ScheduleParams::memory_text`]).
    units: crate::units::Units,
}

impl<'a> Heuristic<'a> {
    fn new(
        placement: &Placement,
        microbatches: u32,
        costs: &'a StageCosts,
        limit: f64,
        switches: Switches,
        units: crate::units::Units,
    ) -> Self {
        let devices = placement.devices();
        let n = devices as usize;
        Heuristic {
            builder: Builder::new(placement.clone(), microbatches, 1, costs.clone()),
            costs,
            devices,
            microbatches,
            limit,
            switches,
            forwards: vec![0; n],
            backwards: vec![0; n],
            weights: vec![0; n],
            max_idle: 0.0,
            ties: false,
            decisive: Switches::new(false, false, false),
            units,
        }
    }

    /// Runs the heuristic to the end, or gives up after a round in which some device's span
    /// becomes sure to reach `give_up_at`.
    ///
    /// A device's span is its busy time `M·(F+B+W)` plus its idle time, and idle time only
    /// grows, so `M·(F+B+W) + idle so far` bounds the final span from below. (Giving up also
    /// skips the rest of the run's memory checks; those cannot fail once the limit holds one
    /// forward, see [`check_limit`], up to float rounding of fractional memory sizes.)
    fn run(mut self, give_up_at: f64) -> Result<Outcome, ParamError> {
        let busy: Vec<f64> = (0..self.devices)
            .map(|d| {
                let pass_costs = self.cost(PassKind::F, d) + self.cost(PassKind::B, d) + self.cost(PassKind::W, d);
                f64::from(self.microbatches) * pass_costs
            })
            .collect();
        let hopeless = |h: &Self| (0..h.devices).any(|d| busy[d as usize] + h.builder.idle(d) >= give_up_at);
        self.warm_up();
        let mut wants = vec![false; self.devices as usize];
        for round in 1..self.microbatches {
            if hopeless(&self) {
                return Ok(Outcome::GaveUp { decisive: self.decisive });
            }
            self.steady_round(round, &mut wants)?;
        }
        for d in 0..self.devices {
            while self.weights[d as usize] < self.microbatches {
                self.put(d, PassKind::W);
            }
        }
        let best_time = (0..self.devices).map(|d| self.span(d)).fold(0.0, f64::max);
        Ok(Outcome::Finished(Box::new(Run {
            builder: self.builder,
            best_time,
            ties: self.ties,
            decisive: self.decisive,
        })))
    }

    /// The code's per-stage time `t[W(d, M−1)] − t[F(d, 0)] + cost_F(d)`: the last W is the
    /// device's last pass.
    fn span(&self, d: u32) -> f64 {
        let first_end = self.builder.end_of(Pass::f(d, 0)).unwrap_or(0.0);
        self.builder.free_at(d) - first_end + self.cost(PassKind::F, d)
    }

    /// The duration of a pass of `kind` on device `d` (the heuristic places no BW).
    fn cost(&self, kind: PassKind, d: u32) -> f64 {
        let d = d as usize;
        match kind {
            PassKind::F => self.costs.f[d],
            PassKind::B => self.costs.b[d],
            PassKind::W => self.costs.w[d],
            PassKind::BW => self.costs.b[d] + self.costs.w[d],
            PassKind::R => self.costs.f[d],
            PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => 0.0,
        }
    }

    /// The memory change a pass of `kind` makes on device `d` (the code's `mem_f`, `mem_b`,
    /// `mem_w`).
    fn mem_delta(&self, kind: PassKind, d: u32) -> f64 {
        let (mem_f, mem_w) = (self.costs.mem_f[d as usize], self.costs.mem_w[d as usize]);
        match kind {
            PassKind::F => mem_f,
            PassKind::B => -(mem_f - mem_w),
            PassKind::W => -mem_w,
            PassKind::BW => -mem_f,
            PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => 0.0,
        }
    }

    /// Appends the next pass of `kind` on device `d` (the code's `put`).
    fn put(&mut self, d: u32, kind: PassKind) {
        let counter = match kind {
            PassKind::F | PassKind::R | PassKind::S | PassKind::IF => &mut self.forwards[d as usize],
            PassKind::B | PassKind::BW | PassKind::T | PassKind::IB => &mut self.backwards[d as usize],
            PassKind::W => &mut self.weights[d as usize],
        };
        let pass = Pass::new(kind, d, *counter);
        *counter += 1;
        let before = self.builder.free_at(d);
        if self.builder.push(d, pass) == before {
            self.ties = true;
        }
        self.max_idle = self.max_idle.max(self.builder.idle(d));
    }

    /// Whether device `d` has run a B whose W has not run yet.
    fn pending_weights(&self, d: u32) -> bool {
        self.weights[d as usize] < self.backwards[d as usize]
    }

    /// Microbatch 0: F0 everywhere, the extra warm-up forwards, then B0 from the last device.
    fn warm_up(&mut self) {
        let (p, m) = (self.devices, self.microbatches);
        for d in 0..p {
            self.put(d, PassKind::F);
        }
        let comm = self.costs.comm;
        let mut extra = vec![0u32; p as usize];
        // When B0 of the device after `d` ends.
        let mut last_t = 0.0;
        for d in (0..p).rev() {
            if d == p - 1 {
                last_t = self.builder.end_of(Pass::f(d, 0)).unwrap_or(0.0) + self.cost(PassKind::B, d);
                continue;
            }
            let (cost_f, mem_f) = (self.cost(PassKind::F, d), self.mem_delta(PassKind::F, d));
            let mut memory = self.builder.memory(d);
            let mut time = self.builder.free_at(d);
            let count = &mut extra[d as usize];
            while self.forwards[d as usize] + *count < m && memory + mem_f <= self.limit {
                let loose = time + cost_f > last_t + comm;
                let strict = time >= last_t + comm;
                self.decisive.allow_bubble_before_first_b |= loose != strict;
                let stop = if self.switches.allow_bubble_before_first_b { loose } else { strict };
                if stop {
                    break;
                }
                memory += mem_f;
                time += cost_f;
                *count += 1;
            }
            last_t = time.max(last_t + comm) + self.cost(PassKind::B, d);
        }
        // No device runs more forwards than the one before it (a forward needs the previous
        // device's), nor as many unless both run all `M`. (With unequal stage memory a lighter
        // device may fit all `M` where the one before it cannot.)
        for d in 1..p as usize {
            let all = |run: &Self, extra: &[u32], i: usize| run.forwards[i] + extra[i] >= m;
            while extra[d] > 0 && extra[d] >= extra[d - 1] && (!all(self, &extra, d) || !all(self, &extra, d - 1)) {
                extra[d] -= 1;
            }
        }
        for d in 0..p {
            for _ in 0..extra[d as usize] {
                self.put(d, PassKind::F);
            }
        }
        for d in (0..p).rev() {
            self.put(d, PassKind::B);
        }
    }

    /// Microbatch `round` ≥ 1: maybe one F per device (first to last), then B (last to first).
    fn steady_round(&mut self, round: u32, wants: &mut [bool]) -> Result<(), ParamError> {
        let p = self.devices;
        for d in 0..p {
            wants[d as usize] = self.wants_forward(d);
        }
        for d in (0..(p as usize).saturating_sub(1)).rev() {
            wants[d] = wants[d] && wants[d + 1];
        }
        for d in 0..p {
            if !wants[d as usize] {
                continue;
            }
            self.free_memory(d, PassKind::F)?;
            if d > 0 {
                let ready = self.ready_at(d, Pass::f(d, self.forwards[d as usize]));
                self.fill_weights(d, ready);
            }
            self.put(d, PassKind::F);
        }
        for d in (0..p).rev() {
            debug_assert_eq!(self.backwards[d as usize], round);
            self.free_memory(d, PassKind::B)?;
            if d + 1 < p {
                let ready = self.ready_at(d, Pass::b(d, round));
                self.fill_weights(d, ready);
            }
            if d == 0 && self.forwards[0] == self.microbatches {
                while self.pending_weights(d) {
                    self.put(d, PassKind::W);
                }
            }
            self.put(d, PassKind::B);
        }
        Ok(())
    }

    /// When the result `pass` waits for arrives on device `d` (the code's `t[dep] + comm`;
    /// the code reads 0 for a pass not placed yet, which the warm-up's ordering rules out).
    fn ready_at(&self, d: u32, pass: Pass) -> f64 {
        self.builder.ready_at(d, pass).unwrap_or(self.costs.comm)
    }

    /// Whether device `d` wants a forward this round.
    fn wants_forward(&mut self, d: u32) -> bool {
        let i = d as usize;
        if self.forwards[i] >= self.microbatches {
            return false;
        }
        if d + 1 == self.devices || self.forwards[i] < self.forwards[i + 1] + 2 {
            return true;
        }
        // Evaluated with the switch off too, to learn whether it matters in this run.
        let skip = self.prefers_backward(d);
        self.decisive.prioritize_b |= skip;
        !(skip && self.switches.prioritize_b)
    }

    /// Whether device `d`, two or more forwards ahead of the next device, should skip its
    /// forward to wait for the next B (which needs that device's F and B).
    fn prefers_backward(&self, d: u32) -> bool {
        let i = d as usize;
        let next = d + 1;
        let next_plus_fw =
            self.builder.free_at(next) + self.cost(PassKind::F, next) + self.cost(PassKind::B, next) + self.costs.comm;
        let free = self.builder.free_at(d);
        if free >= next_plus_fw {
            return true;
        }
        // The Ws that must run first to make room for the forward.
        let mut memory = self.builder.memory(d) + self.mem_delta(PassKind::F, d);
        let (mut w_cost, mut w_count) = (0.0, 0);
        while memory > self.limit && self.weights[i] + w_count < self.backwards[i] {
            w_cost += self.cost(PassKind::W, d);
            memory += self.mem_delta(PassKind::W, d);
            w_count += 1;
        }
        if free + self.cost(PassKind::F, d) + w_cost <= next_plus_fw {
            return false;
        }
        // Skip the forward when the wait is no worse than the worst bubble so far.
        next_plus_fw - free <= self.max_idle - self.builder.idle(d)
    }

    /// Runs Ws on device `d` until a pass of `kind` fits under the limit.
    fn free_memory(&mut self, d: u32, kind: PassKind) -> Result<(), ParamError> {
        let delta = self.mem_delta(kind, d);
        while self.builder.memory(d) + delta > self.limit {
            if !self.pending_weights(d) {
                return Err(self.cannot_fit(d, kind, delta));
            }
            self.put(d, PassKind::W);
        }
        Ok(())
    }

    fn cannot_fit(&self, d: u32, kind: PassKind, delta: f64) -> ParamError {
        let held = self.builder.memory(d);
        let mem = |v: f64| self.units.memory_in_message(v);
        ParamError::new(
            Field::MemLimit,
            format!(
                "cannot fit memory: device {d} holds {} and its next {} needs {} more, above the limit {}, \
                 with no weight gradient left to free",
                mem(held),
                kind.long_name(),
                mem(delta),
                mem(self.limit)
            ),
        )
        .hint(format!("raise --mem-limit to at least {}", mem(held + delta)))
    }

    /// Fills the wait of device `d` for a result arriving at `ready` with pending Ws: every W
    /// that fits, then one more if the remaining gap would be the worst bubble so far, or
    /// always with `no_bubble_greedy`.
    fn fill_weights(&mut self, d: u32, ready: f64) {
        let cost_w = self.cost(PassKind::W, d);
        while self.pending_weights(d) && self.builder.free_at(d) + cost_w <= ready {
            self.put(d, PassKind::W);
        }
        let free = self.builder.free_at(d);
        if self.pending_weights(d) && free < ready {
            let no_worse = ready - free <= self.max_idle - self.builder.idle(d);
            self.decisive.no_bubble_greedy |= no_worse;
            if !no_worse || self.switches.no_bubble_greedy {
                self.put(d, PassKind::W);
            }
        }
    }
}

/// The orders of the chosen run, sorted by completion time as the code does (see the module
/// docs for zero-time passes).
fn final_orders(run: Run, costs: &StageCosts, limit: f64) -> Schedule {
    let schedule = run.builder.finish();
    if !run.ties {
        return schedule;
    }
    let Ok(timeline) = simulate(&schedule, costs) else {
        return schedule;
    };
    let mut sorted = schedule.clone();
    for (order, device) in sorted.orders.iter_mut().zip(&timeline.devices) {
        let mut keyed: Vec<(f64, u8, u32, Op)> = order
            .iter()
            .zip(&device.ops)
            .map(|(op, timed)| {
                let pass = op.first();
                let rank = match pass.kind {
                    PassKind::F | PassKind::R | PassKind::S | PassKind::IF => 0,
                    PassKind::B | PassKind::BW | PassKind::T | PassKind::IB => 1,
                    PassKind::W => 2,
                };
                (timed.end, rank, pass.microbatch, *op)
            })
            .collect();
        crate::units::sort::sort_by(&mut keyed, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        *order = keyed.into_iter().map(|k| k.3).collect();
    }
    if sorted.orders.iter().all(|order| order_peak(order, costs) <= limit) {
        sorted
    } else {
        schedule
    }
}

/// Peak activation memory of one device's order (memory only grows at a forward's start).
fn order_peak(order: &[Op], costs: &StageCosts) -> f64 {
    let (mut memory, mut peak) = (0.0, 0.0f64);
    for pass in order.iter().flat_map(Op::passes) {
        memory += costs.alloc(pass);
        peak = peak.max(memory);
        memory -= costs.release(pass);
    }
    peak
}

#[cfg(test)]
#[path = "zb_auto_tests.rs"]
mod tests;
