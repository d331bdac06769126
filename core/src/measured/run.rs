//! The ranks of one run put together: the executed orders as a [`Schedule`], every pass's
//! measured times, each device's time split, and replays through the simulator.
//!
//! A pass's span starts when the runtime begins the action; its work starts with its first
//! operator. Before that it waits for an input from another device (a receive posted earlier
//! and waited for here) or, with no such input, runs the runtime's own code. So, per pass:
//! `lead` is the device's time from the previous pass's end to the span's start (to the work's
//! start when nothing could be awaited), `waited` the rest up to the work's start, `duration`
//! the work itself, and `hop` the time from the awaited input's end to the work's start.

use std::collections::BTreeMap;

use super::label::{kind_of, op_cell, Kind};
use super::trace::{RankTrace, Span, Step, Track, Window};
use super::TraceError;
use crate::formats::{import, Dialect, Format, ImportOptions};
use crate::schedule::{Op, Schedule};
use crate::sim::{dependency, KeySpace, PerOpTimes};
use crate::units::format_micros;

/// One executed pass (or overlapped pair), times in µs from the step's start.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct MeasuredOp {
    /// The action as the trace names it (`0F3`, `(0F7;7B3)OVERLAP_F_B`, `Forward 3`).
    pub label: String,
    /// When the runtime began the action.
    pub span_start: f64,
    /// When its work began: its first operator (allocations and receives aside).
    pub work_start: f64,
    /// When it ended.
    pub end: f64,
    /// Of `span_start..work_start`, the time spent waiting for an input from another device.
    pub waited: f64,
    /// The device's time before the pass on other work (runtime, sends, receives posted).
    pub lead: f64,
    /// From the awaited input's end on its device to `work_start` (0 with no such input;
    /// negative when the producer's span holds its send, as GPipe's does).
    pub hop: f64,
    /// The op on another device whose result it waited for last: (device, position).
    pub input_from: Option<(u32, u32)>,
}

impl MeasuredOp {
    /// The work's time.
    pub fn duration(&self) -> f64 {
        self.end - self.work_start
    }
}

/// One device's step, split.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct DeviceSplit {
    /// The device (rank).
    pub device: u32,
    /// Its first pass's start, µs from the step's start.
    pub start: f64,
    /// Its last pass's end.
    pub end: f64,
    /// Time its passes computed.
    pub compute: f64,
    /// Time in send, receive and wait-for-send actions between its passes.
    pub communication: f64,
    /// Time its passes waited for inputs from other devices.
    pub wait: f64,
    /// The rest of `end − start`: the runtime's own work between passes.
    pub overhead: f64,
    /// The executed order, as the trace names the actions.
    pub order: Vec<String>,
}

/// A run as measured.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct MeasuredRun {
    /// The trace file of each rank.
    pub sources: Vec<String>,
    /// The profiler step read, if the traces have steps.
    pub step: Option<u64>,
    /// Where the pipeline's spans came from.
    pub track: Track,
    /// The executed orders.
    pub schedule: Schedule,
    /// Each device's passes, parallel to the schedule's orders.
    pub ops: Vec<Vec<MeasuredOp>>,
    /// Each device's time, split.
    pub devices: Vec<DeviceSplit>,
    /// From the first pass's start to the last pass's end, over all devices (µs).
    pub step_time: f64,
    /// The clock offset added to each rank's times to align them (0 on one host).
    pub offsets: Vec<f64>,
    /// What a reader should know about how the run was read.
    pub notes: Vec<String>,
}

/// Puts the ranks of one run together, at profiler step `step` (default: the last step every
/// rank completed).
///
/// # Errors
/// A [`TraceError`] naming the file and rank: ranks missing or given twice, traces of
/// different runs, no pipeline labels, a step a rank cut off, labels that are no PyTorch
/// action, orders that do not form a schedule.
pub fn assemble(traces: Vec<RankTrace>, step: Option<u64>) -> Result<MeasuredRun, TraceError> {
    let ranks = order_ranks(traces)?;
    let track = if ranks.iter().any(|r| r.spans.iter().any(|s| s.track == Track::Gpu && is_pipeline(s))) {
        Track::Gpu
    } else {
        Track::Cpu
    };
    let classified: Vec<Vec<(Span, Kind)>> =
        ranks.iter().enumerate().map(|(r, t)| classify(t, r as u32, track)).collect::<Result<_, _>>()?;
    let (step, windows) = choose_step(&ranks, &classified, step)?;
    let mut notes = Vec::new();
    if track == Track::Gpu {
        notes.push("times are the device's: the pipeline's spans on the GPU timeline".to_string());
    }
    // Each rank's compute and communication spans inside the step.
    let in_window = |r: usize| {
        let w = windows[r];
        classified[r].iter().filter(move |(s, _)| s.start >= w.0 - 1e-6 && s.end <= w.1 + 1e-6)
    };
    let compute: Vec<Vec<(&Span, Op)>> = (0..ranks.len())
        .map(|r| {
            in_window(r)
                .filter_map(|(s, k)| match k {
                    Kind::Compute(op) => Some((s, *op)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    super::damage::check_complete(&super::damage::StepView {
        ranks: &ranks,
        track,
        windows: &windows,
        compute: &compute,
        step,
    })?;
    let schedule = executed_schedule(&ranks, &compute)?;
    let offsets = align(&ranks, &compute, &schedule)?;
    if offsets.iter().any(|&o| o != 0.0) {
        let moved: Vec<String> = offsets
            .iter()
            .enumerate()
            .filter(|(_, o)| **o != 0.0)
            .map(|(r, o)| format!("rank {r} by {}", format_micros(*o)))
            .collect();
        notes.push(format!("the ranks' clocks disagree: aligned {}", moved.join(", ")));
    }
    let origin = compute
        .iter()
        .enumerate()
        .flat_map(|(r, ops)| {
            let offset = offsets[r];
            ops.iter().map(move |(s, _)| s.start + offset)
        })
        .fold(f64::INFINITY, f64::min);
    let ops = measure_ops(&compute, &schedule, &offsets, origin);
    let devices = split_devices(&ops, &classified, &windows, &offsets, origin);
    let step_time = ops.iter().flatten().map(|o| o.end).fold(0.0, f64::max);
    Ok(MeasuredRun {
        sources: ranks.iter().map(|r| r.source.clone()).collect(),
        step,
        track,
        schedule,
        ops,
        devices,
        step_time,
        offsets,
        notes,
    })
}

fn is_pipeline(span: &Span) -> bool {
    !span.label.starts_with("Forward ") && !span.label.starts_with("Backward ") || span.track == Track::Cpu
}

/// The traces in rank order, each rank once, all of one run.
fn order_ranks(traces: Vec<RankTrace>) -> Result<Vec<RankTrace>, TraceError> {
    if traces.is_empty() {
        return Err(TraceError::run("no trace files were given")
            .hint("give the folder torch.profiler wrote, or one file per rank"));
    }
    let single = traces.len() == 1;
    let mut by_rank: BTreeMap<u32, RankTrace> = BTreeMap::new();
    let mut world: Option<(u32, String)> = None;
    for t in traces {
        let rank = match (t.rank, single) {
            (Some(r), _) => r,
            (None, true) => 0,
            (None, false) => {
                return Err(TraceError::file(&t.source, "it does not say which rank wrote it (no `distributedInfo.rank`)")
                    .hint("torch.profiler writes distributedInfo when torch.distributed is initialised: profile inside the pipeline's processes"));
            }
        };
        if let Some(size) = t.world_size {
            match &world {
                Some((w, first)) if *w != size => {
                    return Err(TraceError::file(
                        &t.source,
                        format!("it comes from a run of {size} ranks, but {first} from one of {w}: these are traces of different runs"),
                    )
                    .hint("give the traces of one run, one file per rank"));
                }
                Some(_) => {}
                None => world = Some((size, t.source.clone())),
            }
        }
        if let Some(other) = by_rank.get(&rank) {
            return Err(TraceError::rank(&t.source, rank, format!("rank {rank} is also in {}", other.source))
                .hint("give each rank's trace once, all from one run"));
        }
        by_rank.insert(rank, t);
    }
    let expected = world.as_ref().map_or(by_rank.len() as u32, |(w, _)| *w);
    if let Some((&rank, t)) = by_rank.iter().find(|(r, _)| **r >= expected) {
        return Err(TraceError::rank(&t.source, rank, format!("rank {rank} is outside a run of {expected} ranks"))
            .hint("give the traces of one run, one file per rank"));
    }
    let missing: Vec<String> = (0..expected).filter(|r| !by_rank.contains_key(r)).map(|r| r.to_string()).collect();
    if !missing.is_empty() {
        let (noun, verb) = if missing.len() == 1 { ("rank", "is") } else { ("ranks", "are") };
        return Err(TraceError::run(format!("{noun} {} of the run's {expected} {verb} missing", missing.join(", ")))
            .hint("give every rank's trace: torch.profiler writes one file per rank"));
    }
    Ok(by_rank.into_values().collect())
}

/// The rank's top-level pipeline spans of `track`, each with what it is.
fn classify(trace: &RankTrace, rank: u32, track: Track) -> Result<Vec<(Span, Kind)>, TraceError> {
    let mut out: Vec<(Span, Kind)> = Vec::new();
    let mut last_end = f64::NEG_INFINITY;
    // The first pass nested inside another span, with the span holding it.
    let (mut holder, mut held): (Option<&Span>, Option<(&Span, &Span)>) = (None, None);
    for span in trace.spans.iter().filter(|s| s.track == track) {
        if span.end <= last_end {
            // Nested inside the previous span.
            if held.is_none() && matches!(kind_of(&span.label, rank), Ok(Kind::Compute(_))) {
                held = holder.map(|h| (h, span));
            }
            continue;
        }
        holder = Some(span);
        let kind = kind_of(&span.label, rank).map_err(|(why, hint)| {
            TraceError::rank(
                &trace.source,
                rank,
                format!("the label `{}` is no pipeline action: {why}", crate::units::clean_text(&span.label)),
            )
            .hint(hint)
        })?;
        last_end = span.end;
        out.push((span.clone(), kind));
    }
    if !out.iter().any(|(_, k)| matches!(k, Kind::Compute(_))) {
        if let Some((h, pass)) = held {
            // Its passes are there, inside one span that lasts over them: that dur is damaged.
            use crate::units::format_number;
            return Err(TraceError::rank(
                &trace.source,
                rank,
                format!(
                    "the event {} at ts {} lasts dur {} µs, so it holds every pass after it, from {} at ts {}: a span cannot hold a pass, so its dur is damaged",
                    super::trace::event_name(&h.label),
                    format_number(h.start, 3),
                    format_number(h.end - h.start, 3),
                    super::trace::event_name(&pass.label),
                    format_number(pass.start, 3)
                ),
            )
            .hint(super::damage::DAMAGED));
        }
        return Err(TraceError::rank(&trace.source, rank, "the trace has no pipeline labels (no `PP:` ranges)")
            .hint("Schedule1F1B records none in torch 2.15: load the same order from a CSV into _PipelineScheduleRuntime (_load_csv), whose actions are all labelled")
            .hint("profile a step of the pipeline itself: torch.profiler.profile(...) around schedule.step(), with prof.step() after each step"));
    }
    Ok(out)
}

/// The step to read and each rank's time window for it.
fn choose_step(
    ranks: &[RankTrace],
    classified: &[Vec<(Span, Kind)>],
    asked: Option<u64>,
) -> Result<(Option<u64>, Vec<Window>), TraceError> {
    let with_steps = ranks.iter().filter(|r| !r.steps.is_empty()).count();
    if with_steps == 0 {
        if let Some(n) = asked {
            return Err(TraceError::run(format!("--step {n} was asked, but the traces have no profiler steps"))
                .hint("call prof.step() after each schedule.step() to mark steps, or leave out --step"));
        }
        return Ok((None, vec![(f64::NEG_INFINITY, f64::INFINITY); ranks.len()]));
    }
    if with_steps < ranks.len() {
        let r = ranks.iter().position(|r| r.steps.is_empty()).unwrap_or(0);
        return Err(TraceError::rank(
            &ranks[r].source,
            r as u32,
            "it has no profiler steps, but other ranks' traces have them: these are traces of different runs",
        )
        .hint("give the traces of one run, profiled the same way"));
    }
    let window = |r: usize, n: u64| ranks[r].steps.iter().find(|s| s.number == n).map(|s: &Step| (s.start, s.end));
    let has_compute = |r: usize, w: (f64, f64)| {
        classified[r].iter().any(|(s, k)| matches!(k, Kind::Compute(_)) && s.start >= w.0 - 1e-6 && s.end <= w.1 + 1e-6)
    };
    let chosen = choose_window(ranks, asked, window, has_compute)?;
    same_run(ranks, &chosen.1)?;
    Ok(chosen)
}

/// Refuses ranks of one host whose steps do not overlap in time: traces of different runs.
fn same_run(ranks: &[RankTrace], windows: &[Window]) -> Result<(), TraceError> {
    let host = ranks[0].host.as_deref();
    if host.is_none() || ranks.iter().any(|r| r.host.as_deref() != host) {
        return Ok(()); // Other hosts may run other clocks: `align` takes care of them.
    }
    let latest_start = windows.iter().map(|w| w.0).fold(f64::NEG_INFINITY, f64::max);
    let earliest_end = windows.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
    if latest_start > earliest_end {
        let late = windows.iter().position(|w| w.0 == latest_start).unwrap_or(0);
        return Err(TraceError::rank(
            &ranks[late].source,
            late as u32,
            "its step does not overlap the other ranks' steps on the same host: these are traces of different runs",
        )
        .hint("give the traces of one run, one file per rank"));
    }
    Ok(())
}

/// The step and its windows (see [`choose_step`]).
fn choose_window(
    ranks: &[RankTrace],
    asked: Option<u64>,
    window: impl Fn(usize, u64) -> Option<Window>,
    has_compute: impl Fn(usize, Window) -> bool,
) -> Result<(Option<u64>, Vec<Window>), TraceError> {
    if let Some(n) = asked {
        let mut windows = Vec::new();
        for (r, rank) in ranks.iter().enumerate() {
            let Some(w) = window(r, n) else {
                let have: Vec<String> = rank.steps.iter().map(|s| s.number.to_string()).collect();
                return Err(TraceError::rank(&rank.source, r as u32, format!("it has no profiler step {n}"))
                    .hint(format!("its steps are {}", have.join(", "))));
            };
            windows.push(w);
        }
        return Ok((Some(n), windows));
    }
    // The last step every rank has and ran pipeline work in.
    let mut numbers: Vec<u64> = ranks[0].steps.iter().map(|s| s.number).collect();
    numbers.sort_unstable();
    for &n in numbers.iter().rev() {
        let windows: Option<Vec<(f64, f64)>> = (0..ranks.len()).map(|r| window(r, n)).collect();
        if let Some(windows) = windows {
            if (0..ranks.len()).all(|r| has_compute(r, windows[r])) {
                return Ok((Some(n), windows));
            }
        }
    }
    Err(TraceError::run("no profiler step holds pipeline work on every rank")
        .hint("profile whole steps: call prof.step() after each schedule.step()"))
}

/// The executed orders as a schedule: one row of compute actions per rank, read by the
/// PyTorch CSV importer (which infers the placement and checks the orders).
fn executed_schedule(ranks: &[RankTrace], compute: &[Vec<(&Span, Op)>]) -> Result<Schedule, TraceError> {
    let mut csv = String::new();
    for ops in compute {
        let cells: Vec<String> = ops.iter().map(|(_, op)| op_cell(op)).collect();
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    let options = ImportOptions { dialect: Some(Dialect::Current), merge_bw: false, source: None };
    let imported = import(&csv, Format::PytorchCsv, &options);
    let first_error = imported.diagnostics.iter().find(|d| d.severity == crate::error::Severity::Error);
    let (Some(schedule), None) = (imported.schedule, first_error) else {
        let why = first_error.map_or_else(|| "it could not be read".to_string(), |d| d.message.clone());
        let hint = "give the traces of one step of one run; each rank's trace must hold all of its actions";
        // The event at the place the error names, by rank and ts, as the damage checks name one.
        let at = first_error.and_then(|d| {
            let r = d.device? as usize;
            let (span, _) = compute.get(r)?.get(d.position?)?;
            Some((r, *span))
        });
        if let Some((r, span)) = at {
            return Err(TraceError::rank(
                &ranks[r].source,
                r as u32,
                format!(
                    "the executed orders do not form one pipeline schedule at the event {} (ts {}): {why}",
                    super::trace::event_name(&span.label),
                    crate::units::format_number(span.start, 3)
                ),
            )
            .hint("an event's ts or dur may be damaged: profile the step again, or give the trace as torch.profiler wrote it")
            .hint(hint));
        }
        return Err(TraceError::run(format!("the executed orders do not form one pipeline schedule: {why}")).hint(hint));
    };
    for (r, ops) in compute.iter().enumerate() {
        if schedule.orders.get(r).map(Vec::len) != Some(ops.len()) {
            return Err(TraceError::rank(
                &ranks[r].source,
                r as u32,
                "its actions could not be matched to the schedule read from them",
            )
            .hint("report this trace: the reader expected one schedule op per action"));
        }
    }
    Ok(schedule)
}

/// Per-rank clock offsets so that no pass ends before an input it takes from another rank has
/// ended (ranks on one host share a clock and need none). The end, not the work's start: a
/// pass may begin with operators that need no input (a buffer for the receive) before it
/// waits.
fn align(ranks: &[RankTrace], compute: &[Vec<(&Span, Op)>], schedule: &Schedule) -> Result<Vec<f64>, TraceError> {
    let n = ranks.len();
    // (from rank, to rank, the least offset[to] − offset[from]).
    let mut edges: Vec<(usize, usize, f64)> = Vec::new();
    for_each_remote_input(compute, schedule, |to, (span, _), from, position| {
        edges.push((from, to, compute[from][position].0.end - span.end));
    });
    // Tolerance: a microsecond of rounding in the files.
    if edges.iter().all(|&(_, _, need)| need <= 1.0) {
        return Ok(vec![0.0; n]);
    }
    let mut offsets = vec![0.0f64; n];
    for _ in 0..=n {
        let mut changed = false;
        for &(from, to, need) in &edges {
            if offsets[to] - offsets[from] < need - 1e-9 {
                offsets[to] = offsets[from] + need;
                changed = true;
            }
        }
        if !changed {
            return Ok(offsets);
        }
    }
    Err(TraceError::run("the ranks' clocks cannot be aligned: passes on one rank need inputs that another rank produced after them, both ways")
        .hint("give traces of one run; ranks of one host share a clock"))
}

/// Calls `f(device, op, producer's device, producer's span)` for every input an op takes
/// from another device.
fn for_each_remote_input<'a>(
    compute: &'a [Vec<(&'a Span, Op)>],
    schedule: &Schedule,
    mut f: impl FnMut(usize, &'a (&'a Span, Op), usize, usize),
) {
    let Ok(keys) = KeySpace::checked(schedule) else { return };
    let mut producer: Vec<Option<(usize, usize)>> = vec![None; 2 * keys.len()];
    for (d, ops) in compute.iter().enumerate() {
        for (i, (_, op)) in ops.iter().enumerate() {
            for p in op.passes() {
                if let Some(k) = keys.provided_index(p) {
                    producer[k].get_or_insert((d, i));
                }
            }
        }
    }
    for (d, ops) in compute.iter().enumerate() {
        for entry in ops {
            for p in entry.1.passes() {
                let Some(dep) = dependency(&schedule.placement, p) else { continue };
                if let Some((pd, pi)) = producer[keys.dep_index(dep)] {
                    if pd != d {
                        f(d, entry, pd, pi);
                    }
                }
            }
        }
    }
}

/// An input from another device: when it ended, and where it ran (device, position).
type Input = (f64, (u32, u32));

/// Each op's measured times, from the step's start.
fn measure_ops(
    compute: &[Vec<(&Span, Op)>],
    schedule: &Schedule,
    offsets: &[f64],
    origin: f64,
) -> Vec<Vec<MeasuredOp>> {
    // The latest input from another device, per op: its end and where it ran.
    let mut remote: Vec<Vec<Option<Input>>> = compute.iter().map(|ops| vec![None; ops.len()]).collect();
    let index: Vec<BTreeMap<*const Span, usize>> =
        compute.iter().map(|ops| ops.iter().enumerate().map(|(i, (s, _))| (*s as *const Span, i)).collect()).collect();
    for_each_remote_input(compute, schedule, |d, (span, _), pd, pi| {
        let end = compute[pd][pi].0.end + offsets[pd] - origin;
        let i = index[d][&(*span as *const Span)];
        let slot = &mut remote[d][i];
        if slot.is_none_or(|(e, _)| end > e) {
            *slot = Some((end, (pd as u32, pi as u32)));
        }
    });
    compute
        .iter()
        .enumerate()
        .map(|(d, ops)| {
            let mut previous_end = 0.0;
            ops.iter()
                .enumerate()
                .map(|(i, (span, op))| {
                    let shift = offsets[d] - origin;
                    let (start, end) = (span.start + shift, span.end + shift);
                    // A pass that ran no operator (stage 0's input gradient: nothing needs it) did no work.
                    let first = span.first_work.map_or(end, |w| w + shift).clamp(start, end);
                    let input = remote[d][i];
                    let work_start = first;
                    // The hop is negative when the producer's span goes on after its result left
                    // (GPipe's `Forward i` holds its send).
                    let (lead, waited, hop) = match input {
                        Some((produced, _)) => {
                            ((start - previous_end).max(0.0), work_start - start, work_start - produced)
                        }
                        None => ((work_start - previous_end).max(0.0), 0.0, 0.0),
                    };
                    previous_end = end;
                    MeasuredOp {
                        label: op_cell(op),
                        span_start: start,
                        work_start,
                        end,
                        waited,
                        lead,
                        hop,
                        input_from: input.map(|(_, from)| from),
                    }
                })
                .collect()
        })
        .collect()
}

/// Each device's time split.
fn split_devices(
    ops: &[Vec<MeasuredOp>],
    classified: &[Vec<(Span, Kind)>],
    windows: &[(f64, f64)],
    offsets: &[f64],
    origin: f64,
) -> Vec<DeviceSplit> {
    ops.iter()
        .enumerate()
        .map(|(d, ops)| {
            let start = ops.first().map_or(0.0, |o| o.span_start);
            let end = ops.last().map_or(0.0, |o| o.end);
            // `+ 0.0`: an empty float sum is −0, which would print as "-0".
            let compute = ops.iter().map(MeasuredOp::duration).sum::<f64>() + 0.0;
            let wait = ops.iter().map(|o| o.waited).sum::<f64>() + 0.0;
            let shift = offsets[d] - origin;
            let (w0, w1) = windows[d];
            let communication: f64 = classified[d]
                .iter()
                .filter(|(s, k)| matches!(k, Kind::Communication) && s.start >= w0 - 1e-6 && s.end <= w1 + 1e-6)
                .map(|(s, _)| ((s.end + shift).min(end) - (s.start + shift).max(start)).max(0.0))
                .sum::<f64>()
                + 0.0;
            let overhead = (end - start - compute - wait - communication).max(0.0);
            DeviceSplit {
                device: d as u32,
                start,
                end,
                compute,
                communication,
                wait,
                overhead,
                order: ops.iter().map(|o| o.label.clone()).collect(),
            }
        })
        .collect()
}

impl MeasuredRun {
    /// Stages, microbatches and passes (an overlapped pair counts as its two passes).
    pub fn sizes(&self) -> (u32, u32, usize) {
        (self.schedule.placement.stages(), self.schedule.microbatches, self.schedule.pass_count())
    }

    /// The measured times as the simulator takes them: each op's duration, lead and hop, and
    /// each device's first pass's start.
    pub fn op_times(&self) -> PerOpTimes {
        let list = |f: fn(&MeasuredOp) -> f64| self.ops.iter().map(|ops| ops.iter().map(f).collect()).collect();
        PerOpTimes {
            durations: list(MeasuredOp::duration),
            leads: list(|o| o.lead),
            hops: list(|o| o.hop),
            starts: self.devices.iter().map(|d| d.start).collect(),
        }
    }
}
