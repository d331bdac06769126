//! Hanayo: the wave-like placement with one model copy (Liu et al., SC 2023,
//! arXiv 2308.15762; peers.md §3.5).
//!
//! The model is cut into `2W·P` stages that zig-zag over the devices, `W` = `--waves`
//! (default 2): down the devices, back up, down again… ([`Placement::wave`]; `W = 1` is the
//! V placement). Every device holds `2W` chunks, every stage runs at `1/(2W)` of the user's
//! costs, and backward is fused (BW). The paper's own scheduling rules and closed form are
//! not public beyond its abstract, so this is our design, in the spirit of an interleaved
//! 1F1B over `2W` chunks.
//!
//! # Why not Megatron's order
//!
//! Megatron's interleaved order (rounds of `P` microbatches, chunk by chunk) relies on every
//! chunk-to-chunk hop going around the same loop of `P` devices. On a zig-zag the hop from
//! one leg to the next takes `2(P−1−d)+1` stages on device `d` at the bottom turn and `2d+1`
//! at the top, so Megatron's table stalls, and with its warm-up it deadlocks.
//!
//! # The ideal slot table
//!
//! The details are in `docs/schedule-families.md`, under `families/hanayo.rs`.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::formula::{sym, Assumption, Explanation, Formula, Sym, Term, DERIVED_HERE};
use super::{count_option, per_chunk, Family, FamilyGroup, FamilyOption, Prediction};
use crate::error::{Field, ParamError};
use crate::params::{ScheduleParams, StageCosts};
use crate::schedule::{Pass, PassKind, Placement, Schedule};
use crate::sim::Builder;

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "hanayo",
    title: "Hanayo",
    group: FamilyGroup::VShape,
    summary: "wave-like placement: the V folded --waves times, one model copy",
    reference: "Liu et al., Hanayo: Harnessing Wave-like Pipeline Parallelism (SC 2023)",
    url: "https://arxiv.org/abs/2308.15762",
    options: &[FamilyOption::count(Field::Waves, DEFAULT_WAVES)],
    constraints: "waves ≥ 1 (default 2; 1 is the V placement); at most 2P microbatches in flight",
    passes,
    generate: hanayo,
    predict,
    explain,
    ..Family::DEFAULTS
};

/// Waves when `--waves` is not given.
pub const DEFAULT_WAVES: u32 = 2;

/// What the smallest wave counts mean, for the error on 0 waves.
const WAVES_HINT: &str = "--waves 1 is the V placement (2 chunks per device); each further wave adds 2 chunks";

/// 2W chunks per device, a forward and a backward each.
fn passes(params: &ScheduleParams) -> u64 {
    per_chunk(params, params.waves.unwrap_or(DEFAULT_WAVES).saturating_mul(2), 2)
}

/// The Hanayo orders for `params` (sizes checked; the waves are checked here).
fn hanayo(params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let waves = count_option(Field::Waves, params.waves, DEFAULT_WAVES, WAVES_HINT)?;
    let placement = Placement::wave(params.devices, waves);
    let costs = StageCosts::new(&params.costs, &placement);
    let table = SlotTable::new(&placement, params.microbatches);
    let mut run = ListScheduler::new(Builder::new(placement, params.microbatches, 1, costs), table);
    run.run();
    Ok(run.builder.finish())
}

/// A pass's place in the ideal slot table; earlier is more urgent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Priority {
    /// The ideal slot.
    slot: u64,
    /// Backwards first on a tie (a remainder folded into the last round can tie).
    forward: bool,
    microbatch: u32,
    stage: u32,
}

/// The ideal unit-slot table of the module documentation.
#[derive(Clone, Copy, Debug)]
struct SlotTable {
    devices: u64,
    stages: u64,
    full_rounds: u64,
}

impl SlotTable {
    fn new(placement: &Placement, microbatches: u32) -> SlotTable {
        let devices = u64::from(placement.devices());
        SlotTable { devices, stages: u64::from(placement.stages()), full_rounds: u64::from(microbatches) / devices }
    }

    /// The slot at which microbatch `microbatch` enters stage 0.
    fn entry(&self, microbatch: u32) -> u64 {
        let mb = u64::from(microbatch);
        let round = (mb / self.devices).min(self.full_rounds.saturating_sub(1));
        2 * self.stages * round + 2 * (mb - round * self.devices)
    }

    fn priority(&self, pass: Pass) -> Priority {
        let (entry, stage) = (self.entry(pass.microbatch), u64::from(pass.stage));
        let forward = pass.kind == PassKind::F;
        let slot = if forward { entry + stage } else { entry + 2 * self.stages - 1 - stage };
        Priority { slot, forward, microbatch: pass.microbatch, stage: pass.stage }
    }
}

/// A time read from the [`Builder`], ordered totally so it can key a heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Relative slack within which an input counts as arrived (rounding in sums of costs).
const ARRIVAL_SLACK: f64 = 1e-9;

/// The passes one device may run next: each is the next pass of an in-flight microbatch.
#[derive(Debug, Default)]
struct Candidates {
    /// Passes whose input arrives later than the device was last asked.
    arriving: BinaryHeap<Reverse<(Time, Priority, Pass)>>,
    /// Passes whose input has arrived, most urgent first.
    arrived: BinaryHeap<Reverse<(Priority, Pass)>>,
}

impl Candidates {
    fn add(&mut self, arrival: f64, priority: Priority, pass: Pass) {
        self.arriving.push(Reverse((Time(arrival), priority, pass)));
    }

    /// When the device, free at `free`, can start its next pass, if it has one.
    fn next_start(&self, free: f64) -> Option<f64> {
        if !self.arrived.is_empty() {
            return Some(free);
        }
        self.arriving.peek().map(|Reverse((arrival, ..))| arrival.0.max(free))
    }

    /// The most urgent pass that has arrived by `now`, up to rounding: an input that ends at
    /// `now` in exact arithmetic may be summed along another device's passes to a few ulps
    /// later, and must still beat a less urgent pass that has long been waiting.
    fn take(&mut self, now: f64) -> Option<Pass> {
        let by = now + ARRIVAL_SLACK * now.abs();
        while let Some(Reverse((arrival, ..))) = self.arriving.peek() {
            if arrival.0 > by {
                break;
            }
            if let Some(Reverse((_, priority, pass))) = self.arriving.pop() {
                self.arrived.push(Reverse((priority, pass)));
            }
        }
        self.arrived.pop().map(|Reverse((_, pass))| pass)
    }
}

/// Event-driven list scheduling over a [`Builder`]: all times come from the builder.
struct ListScheduler {
    builder: Builder,
    table: SlotTable,
    candidates: Vec<Candidates>,
    /// Per device, the version of its newest event; older events are stale.
    version: Vec<u64>,
    events: BinaryHeap<Reverse<(Time, u32, u64)>>,
    microbatches: u32,
    in_flight_limit: u32,
    admitted: u32,
    finished: u32,
}

impl ListScheduler {
    fn new(builder: Builder, table: SlotTable) -> ListScheduler {
        let devices = builder.placement().devices();
        let microbatches = builder.schedule().microbatches;
        ListScheduler {
            builder,
            table,
            candidates: (0..devices).map(|_| Candidates::default()).collect(),
            version: vec![0; devices as usize],
            events: BinaryHeap::new(),
            microbatches,
            in_flight_limit: 2 * devices,
            admitted: 0,
            finished: 0,
        }
    }

    /// Places every pass.
    fn run(&mut self) {
        self.admit();
        while let Some(Reverse((Time(now), device, version))) = self.events.pop() {
            if version != self.version[device as usize] {
                continue;
            }
            let Some(pass) = self.candidates[device as usize].take(now) else { continue };
            let end = self.builder.push(device, pass);
            self.follow(pass, end);
            self.admit();
            self.reschedule(device);
        }
    }

    /// Makes the pass after `pass` in its microbatch's chain a candidate.
    fn follow(&mut self, pass: Pass, end: f64) {
        let last_stage = self.builder.placement().stages() - 1;
        let next = match pass.kind {
            PassKind::F if pass.stage < last_stage => Some(Pass::f(pass.stage + 1, pass.microbatch)),
            PassKind::F => Some(Pass::bw(pass.stage, pass.microbatch)),
            _ if pass.stage > 0 => Some(Pass::bw(pass.stage - 1, pass.microbatch)),
            _ => {
                self.finished += 1;
                None
            }
        };
        if let Some(next) = next {
            self.offer(next, end);
        }
    }

    /// Starts new microbatches on stage 0 while fewer than the limit are in flight.
    fn admit(&mut self) {
        while self.admitted < self.microbatches && self.admitted - self.finished < self.in_flight_limit {
            self.offer(Pass::f(0, self.admitted), 0.0);
            self.admitted += 1;
        }
    }

    /// Adds `pass` to its device's candidates; `fallback` is used only if the builder does
    /// not know the arrival time (it always does: the pass's input has just been placed).
    fn offer(&mut self, pass: Pass, fallback: f64) {
        let Some(device) = self.builder.placement().device_of(pass.stage) else { return };
        let arrival = self.builder.ready_at(device, pass).unwrap_or(fallback);
        let priority = self.table.priority(pass);
        self.candidates[device as usize].add(arrival, priority, pass);
        self.reschedule(device);
    }

    /// Replaces `device`'s pending event by one at its next possible start.
    fn reschedule(&mut self, device: u32) {
        let d = device as usize;
        self.version[d] += 1;
        if let Some(start) = self.candidates[d].next_start(self.builder.free_at(device)) {
            self.events.push(Reverse((Time(start), device, self.version[d])));
        }
    }
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let waves = params.waves.unwrap_or(DEFAULT_WAVES);
    if waves == 0 {
        return None;
    }
    let mut own = params.clone();
    own.waves = Some(waves);
    let c = &params.costs;
    let (p, chunks) = (sym(Sym::P), 2 * sym(Sym::Waves));
    let bubble = Formula::new(
        DERIVED_HERE,
        vec![Term::new(
            "one fill and drain of a chunk: 1F1B's over the 2·waves chunks",
            (p.clone() - 1) * (sym(Sym::F) + sym(Sym::B) + sym(Sym::W)) / chunks.clone(),
        )],
    );
    let memory = if params.microbatches == params.devices {
        let early = (p.clone() - 1 - sym(Sym::D)) / chunks;
        Term::new(
            "one round: device d starts its backwards before its last P−1−d chunk forwards",
            (p - early) * sym(Sym::MemF),
        )
    } else {
        Term::new("P microbatches in flight on every device", p * sym(Sym::MemF))
    };
    let assumptions = vec![
        Assumption::new("no communication (comm = 0)", c.comm == 0.0),
        Assumption::new("F = B+W", c.f == c.b + c.w),
        Assumption::new("M a multiple of P", params.microbatches % params.devices == 0),
    ];
    Some(Explanation::new(&own, Some(bubble), Some(Formula::new(DERIVED_HERE, vec![memory])), assumptions))
}

/// The closed forms where they hold: none at all elsewhere.
fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).filter(Explanation::all_hold).map(|e| {
        e.prediction(
            "(P−1)(F+B+W)/(2W), when F = B+W and M is a multiple of P",
            "P·mem-f on every device (one round, M = P: (P − (P−1−d)/(2W))·mem-f), when F = B+W",
        )
    })
}

#[cfg(test)]
#[path = "hanayo_tests.rs"]
mod tests;
