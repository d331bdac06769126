//! Why each idle gap is there: every gap on every device, with the pass it waited for and its
//! split into communication, imbalance and schedule.
//!
//! A gap is the idle time before a device's op: from the end of the previous op (for the
//! device's first op, from the start of the whole run) to the op's start; the tail gap runs
//! from the device's last op to the end of the whole run. The gaps between a device's first
//! and last op add up to its idle time ([`crate::DeviceStats::idle`]); with the lead and the
//! tail they add up to `makespan − busy`.
//!
//! The split is the one [`crate::attribution`] defines per device: the same gap — the gap
//! before the same op on the same device — compared across three simulations of the same
//! orders: as given (`g₀`), without communication (`g₁`) and without communication at mean
//! stage costs (`g₂`):
//!
//! * communication = `g₀ − g₁`, imbalance = `g₁ − g₂`, schedule = `g₂`.
//!
//! The details are in `docs/bubble-causes.md`, under `gaps.rs`.

use crate::analysis::Analysis;
use crate::attribution::{gap_before, split_gap, tiny_gap, Attribution, Parts, RunSpan, Runs};
use crate::error::SimError;
use crate::params::Costs;
use crate::schedule::{Op, Pass, Schedule};
use crate::sim::{dependency, provides, OpRef};

/// The pass a gap waited for.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Waited {
    /// The op that ran it: its device and position.
    pub op: OpRef,
    /// The awaited pass (the one in `op` that the next op depends on).
    pub pass: Pass,
    /// The pass of the op after the gap that depends on it.
    pub by: Pass,
    /// How much of the gap was the hop from the awaited pass's device (0 on the same device).
    pub communication: f64,
}

/// One idle gap on a device.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Gap {
    /// The device.
    pub device: u32,
    /// Start time.
    pub start: f64,
    /// End time.
    pub end: f64,
    /// Position of the op the gap precedes in the device's order; `None` for the tail.
    pub before: Option<u32>,
    /// What the op after the gap waited for; `None` for the tail.
    pub waited: Option<Waited>,
    /// Its split: parts `≥ 0` that sum to `end − start`.
    pub parts: Parts,
    /// Of `parts.schedule`, the time a measured runtime was busy with its own work before the
    /// op (posting sends, bookkeeping: the op's lead in [`crate::sim::PerOpTimes`]), right at
    /// the gap's start; 0 for a plan.
    pub overhead: f64,
}

impl Gap {
    /// Its length.
    pub fn len(&self) -> f64 {
        self.end - self.start
    }

    /// Whether it has no length.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// One line saying what the gap waited for and why, e.g. `idle 3.2 before B5 on device 2 —
    /// waited for B5 on device 3 (0.9 communication); schedule 1.1 · imbalance 1.2 ·
    /// communication 0.9`, numbers as `number` writes them.
    pub fn describe(&self, schedule: &Schedule, number: impl Fn(f64) -> String) -> String {
        let what = match self.before.and_then(|i| schedule.orders.get(self.device as usize)?.get(i as usize)) {
            Some(op) => format!("before {}", op_name(op)),
            None => "after its last pass".to_string(),
        };
        let mut s = format!("idle {} {what} on device {}", number(self.len()), self.device);
        match self.waited {
            Some(w) => {
                s.push_str(&format!(" — waited for {} on device {}", pass_name(w.pass), w.op.device));
                if w.communication > 0.0 {
                    s.push_str(&format!(" ({} communication)", number(w.communication)));
                }
            }
            None if self.before.is_none() => s.push_str(" — until the last device finishes"),
            None => {}
        }
        let p = self.parts;
        let overhead = if self.overhead > 0.0 {
            format!(" (of it runtime overhead {})", number(self.overhead))
        } else {
            String::new()
        };
        s.push_str(&format!(
            "; schedule {}{overhead} · imbalance {} · communication {}",
            number(p.schedule),
            number(p.imbalance),
            number(p.communication)
        ));
        s
    }
}

/// A pass as the chart labels it: kind and microbatch (`B5`), with the slice when split (`B5.1`).
fn pass_name(p: Pass) -> String {
    if p.slice > 0 {
        format!("{}{}.{}", p.kind.name(), p.microbatch, p.slice)
    } else {
        format!("{}{}", p.kind.name(), p.microbatch)
    }
}

fn op_name(op: &Op) -> String {
    match *op {
        Op::One(p) => pass_name(p),
        Op::Pair(f, b) => format!("{}&{}", pass_name(f), pass_name(b)),
    }
}

/// Every gap of a schedule with its cause, and the schedule's [`Attribution`] from the same
/// simulations.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Causes {
    /// `cost − ideal` and each device's idle time, split (as [`crate::attribution::attribute`]).
    pub attribution: Attribution,
    /// Per device, its gaps of positive length in time order (lead, between ops, tail).
    pub devices: Vec<Vec<Gap>>,
    /// How many gaps had a part clamped (see the module docs).
    pub clamped: usize,
}

impl Causes {
    /// The gap on `device` at time `t`, if the device is idle then (hit testing).
    pub fn gap_at(&self, device: u32, t: f64) -> Option<&Gap> {
        let gaps = self.devices.get(device as usize)?;
        let i = gaps.partition_point(|g| g.end <= t);
        gaps.get(i).filter(|g| g.start <= t && t < g.end)
    }

    /// Every gap, device by device.
    pub fn gaps(&self) -> impl Iterator<Item = &Gap> {
        self.devices.iter().flatten()
    }
}

/// What op `position` on `device` waited for, from the simulator's record.
fn waited(analysis: &Analysis, device: usize, position: usize, gap_start: f64) -> Option<Waited> {
    let timed = analysis.timeline.devices[device].ops[position];
    let r = timed.waited_for?;
    let producer = analysis.schedule.orders.get(r.device as usize)?.get(r.position as usize)?;
    let op = analysis.schedule.orders[device][position];
    let placement = &analysis.schedule.placement;
    let (by, pass) = op.passes().find_map(|p| {
        let dep = dependency(placement, p)?;
        let q = producer.passes().find(|q| {
            provides(q.kind) == Some(dep.class)
                && (q.stage, q.microbatch, q.slice) == (dep.stage, dep.microbatch, dep.slice)
        })?;
        Some((p, q))
    })?;
    let done = analysis.timeline.devices[r.device as usize].ops[r.position as usize].end;
    let communication = if r.device as usize == device { 0.0 } else { (timed.start - done.max(gap_start)).max(0.0) };
    Some(Waited { op: r, pass, by, communication })
}

/// Every idle gap of `analysis` (simulated under `costs`) with its cause, and the schedule's
/// attribution, from two re-simulations of the same orders.
///
/// # Errors
/// A [`SimError`] if a re-simulation cannot finish (it cannot when the original did).
pub fn causes(analysis: &Analysis, costs: &Costs) -> Result<Causes, SimError> {
    let schedule = &analysis.schedule;
    let runs = Runs::of(analysis, costs)?;
    let attribution = runs.attribution(analysis, costs);
    let ts = runs.timelines(&analysis.timeline);
    let spans = ts.map(RunSpan::of);
    let eps = tiny_gap(spans[0]);
    let mut clamped = 0;
    let mut devices = Vec::with_capacity(schedule.orders.len());
    for (d, dt) in analysis.timeline.devices.iter().enumerate() {
        let mut gaps = Vec::new();
        for i in 0..=dt.ops.len() {
            let g0 = gap_before(ts[0], spans[0], d, i);
            if g0 <= eps || dt.ops.is_empty() {
                continue;
            }
            let (g1, g2) = (gap_before(ts[1], spans[1], d, i), gap_before(ts[2], spans[2], d, i));
            let (parts, was_clamped) = split_gap(g0, g1, g2);
            clamped += usize::from(was_clamped);
            let end = dt.ops.get(i).map_or(spans[0].end, |o| o.start);
            let start = end - g0;
            let before = (i < dt.ops.len()).then_some(i as u32);
            let waited = before.and_then(|_| waited(analysis, d, i, start));
            // A measured run's lead is in every re-simulation, so it is schedule time.
            let lead = analysis.times.as_ref().and_then(|t| t.leads.get(d)?.get(i).copied()).unwrap_or(0.0);
            let overhead = lead.clamp(0.0, parts.schedule);
            gaps.push(Gap { device: d as u32, start, end, before, waited, parts, overhead });
        }
        devices.push(gaps);
    }
    Ok(Causes { attribution, devices, clamped })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::CostProfile;
    use crate::{run, PassKind, ScheduleParams};

    fn costs(f: &[f64], comm: f64) -> Costs {
        let base = Costs { comm, ..Costs::default() };
        let mut profile = CostProfile::uniform(&base, f.len());
        profile.f = f.to_vec();
        base.with_profile(profile, f.len() as u32)
    }

    #[test]
    fn equal_stages_without_communication_are_all_schedule() {
        let a = run("1f1b", &ScheduleParams::new(4, 8)).unwrap();
        let c = causes(&a, &Costs::default()).unwrap();
        assert_eq!(c.clamped, 0);
        for g in c.gaps() {
            assert_eq!(g.parts, Parts { communication: 0.0, imbalance: 0.0, schedule: g.len() }, "{g:?}");
        }
        // Device 3 waits 3 forwards before its first pass: F0 from device 2.
        let lead = c.devices[3][0];
        assert_eq!((lead.start, lead.end, lead.before), (0.0, 3.0, Some(0)));
        let w = lead.waited.unwrap();
        assert_eq!((w.op.device, w.pass.kind, w.pass.microbatch, w.by.kind), (2, PassKind::F, 0, PassKind::F));
    }

    #[test]
    fn the_hop_shows_as_communication_and_in_the_text() {
        let cs = costs(&[1.0, 1.0, 1.0, 3.0], 0.5);
        let a = run("1f1b", &ScheduleParams::new(4, 8).with_costs(cs.clone())).unwrap();
        let c = causes(&a, &cs).unwrap();
        // Device 1's first forward waits for F0 on device 0 plus one hop.
        let lead = c.devices[1][0];
        assert_eq!(lead.len(), 1.5);
        let w = lead.waited.unwrap();
        assert_eq!((w.op.device, w.communication), (0, 0.5));
        assert_eq!(lead.parts, Parts { communication: 0.5, imbalance: 0.0, schedule: 1.0 });
        let text = lead.describe(&a.schedule, |v| crate::units::format_number(v, 4));
        assert_eq!(
            text,
            "idle 1.5 before F0 on device 1 — waited for F0 on device 0 (0.5 communication); schedule 1 · imbalance 0 · communication 0.5"
        );
        // The light devices wait for the heavy last stage: imbalance, in the steady state.
        let imbalance: f64 = c.devices[0].iter().map(|g| g.parts.imbalance).sum();
        assert!(imbalance > 10.0, "{imbalance}");
        let tail = c.devices[3].last().unwrap();
        assert!(tail.before.is_none() && tail.waited.is_none());
    }

    #[test]
    fn clamping_keeps_parts_positive_and_summing() {
        for (g0, g1, g2) in [(1.0, 2.0, 0.5), (1.0, 0.5, 3.0), (2.0, 1.0, 0.5), (1.0, -1.0, 0.0)] {
            let (p, _) = split_gap(g0, g1, g2);
            assert!(p.communication >= 0.0 && p.imbalance >= 0.0 && p.schedule >= 0.0, "{p:?}");
            assert!((p.total() - g0).abs() < 1e-12, "{p:?}");
        }
        assert_eq!(split_gap(2.0, 1.0, 0.5), (Parts { communication: 1.0, imbalance: 0.5, schedule: 0.5 }, false));
        assert!(split_gap(1.0, 2.0, 0.5).1);
    }
}
