//! ZB-V: the Zero Bubble paper's cost-aware V schedule.
//!
//! Source: Qi et al., *Zero Bubble Pipeline Parallelism* (arXiv v2, §6) and the authors'
//! `zbv.py` / `v_schedule.py` (`PipelineGraph.try_v_schedule`, zero-bubble.md §4.7). Two chunks
//! per device in a V ([`crate::Placement::v_shape`]); backward split into B and W.
//!
//! # The heuristic
//!
//! The details are in `docs/schedule-families.md`, under `families/zb_v.rs`.

use std::collections::VecDeque;

use super::formula::{int, min, sym, Assumption, Explanation, Formula, Sym, Term};
use super::v_common::{fbw_index, Chunk, VPass};
use super::{per_device_microbatch, Family, FamilyGroup, FamilyOption, OptionDefault, Prediction, ZERO_BUBBLE_V};
use crate::error::{Field, ParamError};
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{Pass, PassKind, Schedule};
use crate::sim::{dependency, Builder};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-v",
    title: "ZB-V",
    group: FamilyGroup::VShape,
    summary:
        "Zero Bubble V: two chunks per device in a V, cost-aware heuristic under --mem-limit (default 1F1B's memory)",
    options: &[FamilyOption { field: Field::MemLimit, default: OptionDefault::Derived(default_limit) }],
    constraints: "mem-limit ≥ P·mem-f, 1F1B's memory (the default); less fits only when M < P",
    passes: per_device_microbatch::<6>,
    generate,
    predict,
    explain,
    ..Family::citing(ZERO_BUBBLE_V)
};

/// Most refinement rounds per (fill-B, fill-F) setting.
pub const MAX_REFINEMENTS: usize = 64;

fn generate(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let heuristic = Heuristic::new(params, limit(params));
    match heuristic.best() {
        Ok(outcome) => Ok(outcome.schedule),
        Err(failure) => Err(failure.into_error(params, &heuristic)),
    }
}

/// The default memory limit: room for 1F1B's `2P` chunk activations (the heuristic's
/// published memory) of the heaviest chunk, `2P · max mem-f[stage]` in the simulator's
/// per-stage costs — `P·mem-f` when every stage stores alike. (With unequal stages a device
/// does not hold its two chunks half and half: the warm-up holds more of the down chunk.)
fn default_limit(params: &ScheduleParams) -> f64 {
    let v = VPass { devices: params.devices };
    let costs = StageCosts::new(&params.costs, &v.placement());
    f64::from(2 * params.devices) * costs.mem_f.iter().copied().fold(0.0, f64::max)
}

/// The larger of what one forward of `device`'s two chunks stores (`mem-f/2` when they store
/// alike).
fn heavier_chunk_memory(costs: &StageCosts, v: VPass, device: u32) -> f64 {
    let alloc = |chunk| costs.alloc(v.on(PassKind::F, chunk, device, 0));
    alloc(Chunk::Down).max(alloc(Chunk::Up))
}

/// Memory one chunk's forward stores: `mem-f/2`.
fn chunk_memory(params: &ScheduleParams) -> f64 {
    params.costs.mem_f / 2.0
}

/// The memory limit of one device: `--mem-limit`, or 1F1B's memory.
fn limit(params: &ScheduleParams) -> f64 {
    params.mem_limit.unwrap_or_else(|| default_limit(params))
}

/// Relative slack of the limit checks, for rounding in sums and quotients.
const LIMIT_SLACK: f64 = 1e-9;

/// How many chunk activations of `chunk` fit in `limit`; unlimited when forwards store
/// nothing.
fn whole_chunks(limit: f64, chunk: f64) -> u64 {
    if chunk <= 0.0 {
        return u64::MAX;
    }
    // `as` saturates; the slack absorbs rounding in the division (1.2 / 0.15 = 7.999…).
    (limit / chunk + LIMIT_SLACK).floor() as u64
}

/// The direction a pass travels across the devices (the code's chunk index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    /// Device 0 to `P−1`: chunk-0 forwards, chunk-1 backwards.
    Down = 0,
    /// Device `P−1` to 0: chunk-1 forwards, chunk-0 backwards.
    Up = 1,
}

impl Lane {
    /// The other lane.
    fn other(self) -> Lane {
        match self {
            Lane::Down => Lane::Up,
            Lane::Up => Lane::Down,
        }
    }

    /// The model chunk a pass of `kind` on this lane belongs to.
    fn chunk(self, kind: PassKind) -> Chunk {
        match (kind, self) {
            (PassKind::F, Lane::Down) | (PassKind::B | PassKind::W | PassKind::BW, Lane::Up) => Chunk::Down,
            _ => Chunk::Up,
        }
    }
}

/// Why an attempt stopped.
#[derive(Clone, Debug, PartialEq)]
enum Failure {
    /// A forward would not fit in memory and no W could free any.
    Memory,
    /// An invariant of the heuristic broke (the code stops on an assertion). With too little
    /// memory this happens too: the warm-up then skips forwards a later step relies on.
    Stuck(String),
}

impl Failure {
    /// The user-facing error. A failure that a larger limit (up to 1F1B's) avoids is a memory
    /// error, with the smallest limit that fits.
    fn into_error(self, params: &ScheduleParams, heuristic: &Heuristic) -> ParamError {
        let chunk = chunk_memory(params);
        let fits = heuristic.smallest_capacity_that_fits(chunk);
        match (self, fits) {
            (Failure::Stuck(why), None) => ParamError::new(
                Field::Schedule,
                format!(
                    "zb-v's heuristic cannot schedule {} devices and {} microbatches: {why}",
                    params.devices, params.microbatches
                ),
            )
            .hint("try zb-v-handcrafted, or other sizes"),
            (_, fits) => {
                let limit = heuristic.limit;
                let mem = |v: f64| params.memory_text(v);
                let mut err = ParamError::new(
                    Field::MemLimit,
                    format!(
                        "cannot fit memory: zb-v needs more than mem-limit {} (room for {} chunk activations \
                         of mem-f/2 = {} per device)",
                        mem(limit),
                        whole_chunks(limit, chunk),
                        mem(chunk)
                    ),
                );
                if let Some(fits) = fits {
                    let uniform = params.costs.is_uniform();
                    let default =
                        if uniform { "1F1B's P·mem-f" } else { "2P chunk activations of the heaviest stage" };
                    // With unequal stages the limits that work do not start at a whole number
                    // of the mean's chunk activations: name the least limit itself.
                    let from = if uniform {
                        format!("{} ({fits} chunk activations)", mem(fits as f64 * chunk))
                    } else {
                        let above = fits.saturating_sub(1) as f64 * chunk;
                        mem(heuristic.least_limit_between(above, fits as f64 * chunk))
                    };
                    err = err.hint(format!(
                        "zb-v fits here from mem-limit {from}; its default is {default} = {}",
                        mem(default_limit(params))
                    ));
                }
                err.hint("to hold less than 1F1B's memory, try v-half, v-min or v-auto")
            }
        }
    }
}

/// The heuristic for one set of parameters.
struct Heuristic {
    v: VPass,
    microbatches: u32,
    costs: StageCosts,
    /// The memory limit of one device, in the units of `mem-f`.
    limit: f64,
    /// The default limit, 1F1B's memory on the heaviest device (the error's search bound).
    default_limit: f64,
}

/// One attempt's result.
struct Outcome {
    schedule: Schedule,
    /// Idle time of each device after its first pass.
    idle: Vec<f64>,
    /// The largest of `idle`.
    worst: f64,
}

/// The settings of one attempt.
#[derive(Clone, Copy)]
struct Settings<'a> {
    /// Allow the extra W before a down-lane B.
    fill_b: bool,
    /// Allow the extra W before a forward.
    fill_f: bool,
    /// Per-device bubble budgets from the previous attempt.
    approved: Option<&'a [f64]>,
}

impl Settings<'_> {
    /// The largest approved budget (0 without budgets).
    fn max_approved(&self) -> f64 {
        self.approved.map_or(0.0, |a| a.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    }

    /// The worst bubble `device` is measured against when the worst so far is `worst_idle`:
    /// that, or its budget gap when refining.
    fn allowance(&self, max_approved: f64, worst_idle: f64, device: u32) -> f64 {
        match self.approved {
            Some(approved) => worst_idle.max(max_approved - approved[device as usize]),
            None => worst_idle,
        }
    }

    /// Whether the extra W is allowed before a pass of `gate`.
    fn extra(&self, gate: Gate) -> bool {
        match gate {
            Gate::Always => true,
            Gate::FillB => self.fill_b,
            Gate::FillF => self.fill_f,
        }
    }
}

/// What allows the extra W before a pass.
#[derive(Clone, Copy)]
enum Gate {
    /// Always (an up-lane B).
    Always,
    /// *fill-B* (a down-lane B).
    FillB,
    /// *fill-F* (a forward).
    FillF,
}

/// One point where the settings decide (the extra-W test with a W pending), with what it
/// was decided on. Replaying these tells whether other settings would run the same.
struct Decision {
    device: u32,
    gate: Gate,
    /// The wait for the remote input after the Ws that fit.
    wait: f64,
    /// The device's idle time then.
    idle: f64,
    /// The worst idle time of any device then.
    worst_idle: f64,
    /// Whether the extra W was run.
    taken: bool,
}

impl Decision {
    /// The rule: an extra W goes in when allowed and the wait would exceed the allowance.
    fn takes(extra: bool, wait: f64, allowance: f64, idle: f64) -> bool {
        extra && wait > allowance - idle
    }
}

/// A finished attempt and the decisions its settings made.
struct Done {
    outcome: Outcome,
    decisions: Vec<Decision>,
}

impl Done {
    /// Whether an attempt with `settings` would decide every point as this one did, and so
    /// (everything else being the same) run exactly as this one.
    fn decides_alike(&self, settings: Settings<'_>) -> bool {
        let max_approved = settings.max_approved();
        self.decisions.iter().all(|d| {
            let allowance = settings.allowance(max_approved, d.worst_idle, d.device);
            Decision::takes(settings.extra(d.gate), d.wait, allowance, d.idle) == d.taken
        })
    }
}

impl Heuristic {
    /// The heuristic for `params` under the memory limit `limit` per device.
    fn new(params: &ScheduleParams, limit: f64) -> Heuristic {
        let v = VPass { devices: params.devices };
        let costs = StageCosts::new(&params.costs, &v.placement());
        Heuristic { v, microbatches: params.microbatches, costs, limit, default_limit: default_limit(params) }
    }

    /// Whether a device holding `memory` stays within the limit (up to rounding: the slack
    /// absorbs sums like 8 · 0.15 = 1.2000000000000002).
    fn fits(&self, memory: f64) -> bool {
        memory <= self.limit + LIMIT_SLACK * self.limit.abs()
    }

    /// The best attempt over the four fill settings, each refined. A schedule without bubble
    /// ends the search: later attempts must be strictly better to count.
    fn best(&self) -> Result<Outcome, Failure> {
        let mut done = Vec::new();
        let mut best: Option<usize> = None;
        let mut first_failure = None;
        let settings = [(true, true), (true, false), (false, true), (false, false)];
        for (fill_b, fill_f) in settings {
            let worst = |i: usize, done: &[Done]| done[i].outcome.worst;
            if best.is_some_and(|b| worst(b, &done) <= 0.0) {
                break;
            }
            match self.refined(fill_b, fill_f, &mut done) {
                Ok(i) if best.is_none_or(|b| worst(i, &done) < worst(b, &done)) => best = Some(i),
                Ok(_) => {}
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                }
            }
        }
        match best {
            Some(i) => Ok(done.swap_remove(i).outcome),
            None => Err(first_failure.unwrap_or_else(|| Failure::Stuck("no attempt ran".into()))),
        }
    }

    /// An attempt, re-run with its own bubbles as budgets while that strictly helps; the
    /// index of the best in `done`.
    fn refined(&self, fill_b: bool, fill_f: bool, done: &mut Vec<Done>) -> Result<usize, Failure> {
        let mut best = self.attempt(Settings { fill_b, fill_f, approved: None }, done)?;
        for _ in 0..MAX_REFINEMENTS {
            if done[best].outcome.worst <= 0.0 {
                break;
            }
            let approved = done[best].outcome.idle.clone();
            let Ok(next) = self.attempt(Settings { fill_b, fill_f, approved: Some(&approved) }, done) else { break };
            if done[next].outcome.worst < done[best].outcome.worst {
                best = next;
            } else {
                break;
            }
        }
        Ok(best)
    }

    /// One run of the heuristic (`try_v_schedule` without its recursion); its index in
    /// `done`. Settings that would decide every point as an attempt already done run exactly
    /// as it did: that one is the answer, without running again.
    fn attempt(&self, settings: Settings<'_>, done: &mut Vec<Done>) -> Result<usize, Failure> {
        if let Some(same) = done.iter().position(|d| d.decides_alike(settings)) {
            return Ok(same);
        }
        let mut run = Attempt::new(self, settings);
        run.warm_up()?;
        run.steady()?;
        run.flush()?;
        done.push(run.finish());
        Ok(done.len() - 1)
    }

    /// The least limit in `(fails, works]` at which an attempt succeeds, to a millionth of the
    /// interval (bisection, as [`Heuristic::smallest_capacity_that_fits`]).
    fn least_limit_between(&self, mut fails: f64, mut works: f64) -> f64 {
        for _ in 0..20 {
            let mid = fails + (works - fails) / 2.0;
            if (Heuristic { limit: mid, costs: self.costs.clone(), ..*self }).best().is_ok() {
                works = mid;
            } else {
                fails = mid;
            }
        }
        works
    }

    /// The smallest number of chunk activations of `chunk` = `mem-f/2` above what the limit
    /// holds at which an attempt succeeds, searched up to one more than the whole number at or
    /// below the default limit, 1F1B's memory (bisection: success is monotone in the limit in every
    /// case we tried; the value returned always succeeds). With unequal stages the default
    /// counts the heaviest stage's chunks and `chunk` is the mean's, so the default is rarely
    /// a whole number of them: rounding it down once made a model's 1.5B-parameter run at
    /// 28 GiB report the warm-up's stall instead of the memory it needs.
    fn smallest_capacity_that_fits(&self, chunk: f64) -> Option<u64> {
        if chunk <= 0.0 {
            return None;
        }
        let fits = |capacity: u64| {
            let h = Heuristic { limit: capacity as f64 * chunk, costs: self.costs.clone(), ..*self };
            h.best().is_ok()
        };
        // Up to 1F1B's memory on the heaviest device (`2P` chunk activations when the chunks
        // store alike).
        let one_f_one_b = whole_chunks(self.default_limit, chunk).saturating_add(1).max(2 * u64::from(self.v.devices));
        let capacity = whole_chunks(self.limit, chunk);
        let (mut lo, mut hi) = (capacity, one_f_one_b.max(capacity.saturating_add(1)));
        if lo == u64::MAX || !fits(hi) {
            return None;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

/// The state of one attempt.
struct Attempt<'a> {
    heuristic: &'a Heuristic,
    settings: Settings<'a>,
    builder: Builder,
    /// `count[device][kind][lane]`: passes placed so far.
    count: Vec<[[u32; 2]; 3]>,
    /// Memory each device holds in the code's count: F `+mem-f/2`, B `−(mem-f − mem-w)/2`,
    /// W `−mem-w/2`.
    held: Vec<f64>,
    /// Ws waiting on each device, oldest first, by lane.
    pending_w: Vec<VecDeque<Lane>>,
    /// The largest idle time of any device so far.
    worst_idle: f64,
    /// The largest approved budget, if any.
    max_approved: f64,
    /// The points where the settings decided, in order.
    decisions: Vec<Decision>,
    /// The current backward round's (device, lane) order (a buffer reused every round).
    round: Vec<(u32, Lane)>,
}

impl<'a> Attempt<'a> {
    fn new(heuristic: &'a Heuristic, settings: Settings<'a>) -> Attempt<'a> {
        let devices = heuristic.v.devices as usize;
        let v = heuristic.v;
        let mut builder = Builder::new(v.placement(), heuristic.microbatches, 1, heuristic.costs.clone());
        builder.reserve_whole_schedule();
        let max_approved = settings.max_approved();
        Attempt {
            heuristic,
            settings,
            builder,
            count: vec![[[0; 2]; 3]; devices],
            held: vec![0.0; devices],
            pending_w: vec![VecDeque::new(); devices],
            worst_idle: 0.0,
            max_approved,
            decisions: Vec::with_capacity(4 * devices * heuristic.microbatches as usize),
            round: Vec::with_capacity(devices),
        }
    }

    fn devices(&self) -> u32 {
        self.heuristic.v.devices
    }

    fn microbatches(&self) -> u32 {
        self.heuristic.microbatches
    }

    /// Passes of `kind` on `lane` placed on `device`.
    fn count(&self, device: u32, kind: PassKind, lane: Lane) -> u32 {
        self.count[device as usize][fbw_index(kind)][lane as usize]
    }

    /// Forwards of both lanes placed on `device`.
    fn forwards(&self, device: u32) -> u32 {
        self.count(device, PassKind::F, Lane::Down) + self.count(device, PassKind::F, Lane::Up)
    }

    /// The next pass of `kind` on `lane` for `device` (microbatch = how many are placed); an
    /// error once all `M` are.
    ///
    /// (Hot: the pass is built from the count in registers and the error made out of line, so
    /// no `Result<Pass, Failure>` goes through memory.)
    #[inline(always)]
    fn next_pass(&self, device: u32, kind: PassKind, lane: Lane) -> Result<Pass, Failure> {
        let microbatch = self.count(device, kind, lane);
        if microbatch >= self.microbatches() {
            return Err(no_pass_left(device, kind));
        }
        Ok(self.heuristic.v.on(kind, lane.chunk(kind), device, microbatch))
    }

    /// Whether the pass `kind`/`lane` number `microbatch` on `device` has been placed (each
    /// device places a kind and lane in microbatch order, so counting tells).
    fn placed(&self, device: u32, kind: PassKind, lane: Lane, microbatch: u32) -> bool {
        microbatch < self.count(device, kind, lane)
    }

    /// Whether the input of F or B number `microbatch` on `lane` comes from another device:
    /// the down lane receives from the device before, the up lane from the one after; where
    /// a lane turns, the input is local or there is none.
    fn remote_input(&self, device: u32, lane: Lane) -> bool {
        match lane {
            Lane::Down => device > 0,
            Lane::Up => device + 1 < self.devices(),
        }
    }

    /// Whether the input of the pass `kind`/`lane` number `microbatch` on `device` has been
    /// placed (a W's B always has: Ws are put from the pending list).
    fn input_placed(&self, device: u32, kind: PassKind, lane: Lane, microbatch: u32) -> bool {
        let last = self.devices() - 1;
        match (kind, lane) {
            (PassKind::W, _) => true,
            (_, Lane::Down) if device > 0 => self.placed(device - 1, kind, lane, microbatch),
            (_, Lane::Up) if device < last => self.placed(device + 1, kind, lane, microbatch),
            // The first stage's forward has no input.
            (PassKind::F, Lane::Down) => true,
            // Stage P−1 to stage P, both on the last device.
            (PassKind::F, Lane::Up) => self.placed(last, PassKind::F, Lane::Down, microbatch),
            // The loss stage's backward after its forward, on device 0.
            (_, Lane::Down) => self.placed(0, PassKind::F, Lane::Up, microbatch),
            // Stage P's backward to stage P−1, on the last device.
            (_, Lane::Up) => self.placed(last, PassKind::B, Lane::Down, microbatch),
        }
    }

    /// Appends the next pass of `kind` on `lane` to `device` (the code's `put`).
    fn put(&mut self, device: u32, kind: PassKind, lane: Lane) -> Result<(), Failure> {
        let pass = self.next_pass(device, kind, lane)?;
        let d = device as usize;
        let costs = self.builder.costs();
        let delta = costs.alloc(pass) - costs.release(pass);
        if kind == PassKind::F && !self.heuristic.fits(self.held[d] + delta) {
            return Err(Failure::Memory);
        }
        let ready = self.input_placed(device, kind, lane, pass.microbatch);
        debug_assert_eq!(ready, kind == PassKind::W || self.builder.ready_at(device, pass).is_some(), "{pass}");
        if !ready {
            return Err(Failure::Stuck(format!("{pass} would run before its input")));
        }
        self.builder.push(device, pass);
        self.worst_idle = self.worst_idle.max(self.builder.idle(device));
        self.count[d][fbw_index(kind)][lane as usize] += 1;
        self.held[d] += delta;
        if kind == PassKind::B {
            self.pending_w[d].push_back(lane);
        }
        Ok(())
    }

    /// Runs the oldest pending W of `device`, if any.
    fn put_w(&mut self, device: u32) -> Result<bool, Failure> {
        match self.pending_w[device as usize].pop_front() {
            Some(lane) => self.put(device, PassKind::W, lane).map(|()| true),
            None => Ok(false),
        }
    }

    /// When the input of `pass` (F or B on `lane`) arrives on `device` from another device;
    /// `None` when its input is local or none (no wait to fill) or not placed yet.
    fn remote_arrival(&self, device: u32, pass: Pass, lane: Lane) -> Option<f64> {
        let remote = self.remote_input(device, lane);
        debug_assert_eq!(
            remote,
            dependency(self.builder.placement(), pass)
                .is_some_and(|dep| self.builder.placement().device_of(dep.stage) != Some(device)),
            "{pass}"
        );
        if remote {
            self.builder.ready_at(device, pass)
        } else {
            None
        }
    }

    /// Before `pass` (F or B on `lane`) on `device`: fills the wait for its remote input with
    /// pending Ws that end in time, then one more if the wait would exceed the bubble
    /// allowance and `gate` allows.
    fn fill_wait(&mut self, device: u32, pass: Pass, lane: Lane, gate: Gate) -> Result<(), Failure> {
        let Some(arrival) = self.remote_arrival(device, pass, lane) else { return Ok(()) };
        let w_cost = self.builder.cost(Pass::w(device, 0));
        let pending = |run: &Self| !run.pending_w[device as usize].is_empty();
        while pending(self) && arrival >= self.builder.free_at(device) + w_cost {
            self.put_w(device)?;
        }
        if !pending(self) {
            return Ok(());
        }
        let wait = arrival - self.builder.free_at(device);
        let idle = self.builder.idle(device);
        let allowance = self.settings.allowance(self.max_approved, self.worst_idle, device);
        let taken = Decision::takes(self.settings.extra(gate), wait, allowance, idle);
        self.decisions.push(Decision { device, gate, wait, idle, worst_idle: self.worst_idle, taken });
        if taken {
            self.put_w(device)?;
        }
        Ok(())
    }

    /// Steps 1–3: the warm-up forwards.
    fn warm_up(&mut self) -> Result<(), Failure> {
        let (p, m) = (self.devices(), self.microbatches());
        for device in 0..p {
            self.put(device, PassKind::F, Lane::Down)?;
        }
        // Step 2: extra chunk-0 forwards that fit before the first chunk-1 forward arrives.
        for device in (0..p).rev() {
            if device + 1 < p {
                let first_up = self.next_pass(device, PassKind::F, Lane::Up)?;
                let arrival = self
                    .builder
                    .ready_at(device, first_up)
                    .ok_or_else(|| Failure::Stuck("the first chunk-1 forward is missing".into()))?;
                // Room for 2 + 2d more chunk activations of the device's heavier chunk.
                let reserve =
                    f64::from(2 + 2 * device) * heavier_chunk_memory(self.builder.costs(), self.heuristic.v, device);
                let f_cost = self.builder.cost(Pass::f(device, 0));
                while self.heuristic.fits(self.held[device as usize] + reserve)
                    && self.builder.free_at(device) + f_cost <= arrival
                    && self.count(device, PassKind::F, Lane::Down) < m
                {
                    for below in 0..=device {
                        self.put(below, PassKind::F, Lane::Down)?;
                    }
                }
            }
            self.put(device, PassKind::F, Lane::Up)?;
        }
        // Step 3: each device catches up with the one before it, alternating lanes.
        let mut lane = Lane::Down;
        for device in 1..p {
            let mut idle_rounds = 0;
            let ups = |run: &Self, d: u32| run.count(d, PassKind::F, Lane::Up);
            while self.forwards(device) < self.forwards(device - 1)
                || (ups(self, device) <= ups(self, device - 1) && ups(self, device - 1) < m)
            {
                let mut progressed = false;
                for below in (device..p).rev() {
                    if self.count(below, PassKind::F, lane) < m {
                        self.put(below, PassKind::F, lane)?;
                        progressed = true;
                    }
                }
                lane = lane.other();
                idle_rounds = if progressed { 0 } else { idle_rounds + 1 };
                if idle_rounds >= 2 {
                    return Err(Failure::Stuck(format!("device {device} cannot catch up in the warm-up")));
                }
            }
        }
        Ok(())
    }

    /// Step 4: `2M` rounds of one backward and one forward per device.
    fn steady(&mut self) -> Result<(), Failure> {
        for _ in 0..2 * self.microbatches() {
            self.backward_round()?;
            self.forward_round()?;
        }
        Ok(())
    }

    /// One backward per device: the up lane where it lags and its input is there (from the
    /// last device up), then the down lane (from device 0 down).
    fn backward_round(&mut self) -> Result<(), Failure> {
        let (p, m) = (self.devices(), self.microbatches());
        // The round's order, in a buffer kept across rounds: up-lane devices from the last
        // up, then down-lane ones from device 0.
        let mut order = std::mem::take(&mut self.round);
        order.clear();
        for device in (0..p).rev() {
            if self.up_lane_first(device, p, m) {
                order.push((device, Lane::Up));
            }
        }
        for device in 0..p {
            if !self.up_lane_first(device, p, m) {
                order.push((device, Lane::Down));
            }
        }
        let result = order.iter().try_for_each(|&(device, lane)| {
            let pass = self.next_pass(device, PassKind::B, lane)?;
            let gate = if lane == Lane::Up { Gate::Always } else { Gate::FillB };
            self.fill_wait(device, pass, lane, gate)?;
            self.put(device, PassKind::B, lane)
        });
        self.round = order;
        result
    }

    /// Whether `device`'s backward this round is on the up lane: it lags there and its input
    /// is placed (read before the round places anything).
    fn up_lane_first(&self, device: u32, p: u32, m: u32) -> bool {
        let done_down = self.count(device, PassKind::B, Lane::Down);
        let done_up = self.count(device, PassKind::B, Lane::Up);
        let up_ready = device + 1 == p || done_down >= m || self.placed(device + 1, PassKind::B, Lane::Up, done_up);
        done_up < done_down && up_ready
    }

    /// One forward per device (from device 0 down), on the lane that lags if its input is
    /// there; devices with nothing ready skip the round.
    fn forward_round(&mut self) -> Result<(), Failure> {
        let (p, m) = (self.devices(), self.microbatches());
        for device in 0..p {
            let done_down = self.count(device, PassKind::F, Lane::Down);
            let done_up = self.count(device, PassKind::F, Lane::Up);
            if done_up >= m {
                continue;
            }
            let down_ready = device == 0 || self.placed(device - 1, PassKind::F, Lane::Down, done_down);
            let lane = if done_up >= done_down {
                Lane::Down
            } else if device + 1 == p || self.placed(device + 1, PassKind::F, Lane::Up, done_up) {
                Lane::Up
            } else if done_down < m && down_ready {
                Lane::Down
            } else {
                continue;
            };
            let pass = self.next_pass(device, PassKind::F, lane)?;
            while !self.heuristic.fits(self.held[device as usize] + self.builder.costs().alloc(pass)) {
                if !self.put_w(device)? {
                    return Err(Failure::Memory);
                }
            }
            self.fill_wait(device, pass, lane, Gate::FillF)?;
            self.put(device, PassKind::F, lane)?;
        }
        Ok(())
    }

    /// Step 5: every remaining W.
    fn flush(&mut self) -> Result<(), Failure> {
        for device in 0..self.devices() {
            while self.put_w(device)? {}
        }
        Ok(())
    }

    fn finish(self) -> Done {
        let idle: Vec<f64> = (0..self.devices()).map(|d| self.builder.idle(d)).collect();
        let worst = idle.iter().copied().fold(0.0, f64::max);
        Done { outcome: Outcome { schedule: self.builder.finish(), idle, worst }, decisions: self.decisions }
    }
}

/// The failure of asking `device` for one more pass of `kind` than there are microbatches.
#[cold]
#[inline(never)]
fn no_pass_left(device: u32, kind: PassKind) -> Failure {
    Failure::Stuck(format!("device {device} has no {} pass left", kind.name()))
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let c = &params.costs;
    let (p, m) = (params.devices, params.microbatches);
    let capacity = whole_chunks(limit(params), chunk_memory(params));
    let one_f_one_b = 2 * u64::from(p);
    let balanced = c.f == c.b && c.b == c.w;
    let bubble = Formula::new(
        BUBBLE,
        vec![Term::new("none: the V's second chunk fills the warm-up and Ws fill the drain", int(0))],
    );
    let memory = Formula::new(
        MEMORY,
        vec![Term::new(
            "1F1B's in-flight microbatches, 2P chunk activations of mem-f/2",
            min(sym(Sym::P), sym(Sym::M)) * sym(Sym::MemF),
        )],
    );
    let assumptions = vec![
        Assumption::bubble("F = B = W", balanced),
        Assumption::no_comm(params),
        Assumption::bubble("M ≥ 2P−1", m + 1 >= 2 * p),
        Assumption::bubble("mem-limit ≥ P·mem-f (1F1B's memory, the default)", capacity >= one_f_one_b),
        Assumption::memory("mem-limit = P·mem-f (1F1B's memory, the default)", capacity == one_f_one_b),
        Assumption::memory("mem-w = mem-f", c.mem_w() == c.mem_f),
        Assumption::memory("M ≥ 2P−1, or F = B = W without communication", m + 1 >= 2 * p || c.balanced()),
    ];
    Some(Explanation::new(params, Some(bubble), Some(memory), assumptions))
}

/// Where the Zero Bubble paper states ZB-V's bubble.
const BUBBLE: &str = "Qi et al., Zero Bubble Pipeline Parallelism (arXiv v2), §6: zero bubble when F = B = W, at \
                      1F1B's memory";

/// Where its memory comes from.
const MEMORY: &str = "Qi et al. (arXiv v2), §6: the same peak as 1F1B; exact counts derived here, proven by \
                      property test";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "0 when F = B = W, no communication, M ≥ 2P − 1 and mem-limit ≥ P·mem-f",
            "P·mem-f on every device once M ≥ 2P − 1 (min(P, M)·mem-f for any M when F = B = W \
             without communication), at mem-limit P·mem-f with mem-w = mem-f",
        )
    })
}

#[cfg(test)]
#[path = "zb_v_tests.rs"]
mod tests;
