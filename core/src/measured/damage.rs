//! Why a step's passes do not add up to one forward and one backward per stage and
//! microbatch, said with the event at fault (its name and `ts`) where one is to blame: a
//! pass of a stage or microbatch far outside the others (a damaged name), a pass run twice,
//! a pass outside the step (a damaged `ts`), or a pass whose span holds the next one (a
//! damaged `dur`). Otherwise the missing pass is named: the step is cut off or mixed.

use super::label::{kind_of, op_cell, Kind};
use super::trace::{event_name, RankTrace, Span, Track, Window};
use super::TraceError;
use crate::schedule::{Op, Pass, PassKind};
use crate::units::format_number;

/// One step of a run, as the ranks' traces hold it.
pub(super) struct StepView<'a> {
    /// The ranks' traces, in rank order.
    pub ranks: &'a [RankTrace],
    /// Where the pipeline's spans were read.
    pub track: Track,
    /// Each rank's window for the step.
    pub windows: &'a [Window],
    /// Each rank's compute spans inside its window, with their ops.
    pub compute: &'a [Vec<(&'a Span, Op)>],
    /// The profiler step, if the traces have steps.
    pub step: Option<u64>,
}

impl StepView<'_> {
    /// The step as messages name it: `profiler step 2`, or `the trace`.
    fn at(&self) -> String {
        self.step.map_or_else(|| "the trace".to_string(), |n| format!("profiler step {n}"))
    }

    /// Every pass of the step: its rank, its span and the pass.
    fn passes(&self) -> impl Iterator<Item = (usize, &Span, Pass)> + '_ {
        self.compute
            .iter()
            .enumerate()
            .flat_map(|(r, ops)| ops.iter().flat_map(move |(s, op)| op.passes().map(move |p| (r, *s, p))))
    }

    /// An error about rank `rank`, with the hints every damaged step gets.
    fn error(&self, rank: usize, message: String, first_hint: &str) -> TraceError {
        let source = self.ranks.get(rank).map_or("", |r| r.source.as_str());
        TraceError::rank(source, rank as u32, message).hint(first_hint).hint("--step N reads another step")
    }
}

/// The hint for a step a rank cut off or mixed with another run's.
const WHOLE_STEPS: &str = "profile whole steps (the profiler's schedule with active steps that end after schedule.step()), and give traces of one run";

/// The hint for an event whose fields were damaged after the profiler wrote it.
pub(super) const DAMAGED: &str = "the event was changed after the profiler wrote it: profile the step again, or give the trace as torch.profiler wrote it";

/// Refuses a step some rank cut off or whose events were damaged: every stage runs every
/// microbatch's forward once, and its backward once (whole, or as its input and weight
/// parts).
pub(super) fn check_complete(view: &StepView) -> Result<(), TraceError> {
    if let Some(e) = stray_pass(view) {
        return Err(e);
    }
    let m = view.passes().map(|(_, _, p)| p.microbatch as usize + 1).max().unwrap_or(0);
    let stages = view.passes().map(|(_, _, p)| p.stage as usize + 1).max().unwrap_or(0);
    // The rank that ran each stage (the first seen).
    let mut device_of = vec![0usize; stages];
    let all: Vec<(usize, &Span, Pass)> = view.passes().collect();
    for (r, _, p) in all.iter().rev() {
        device_of[p.stage as usize] = *r;
    }
    // counts[stage][mb] = [F, B, W, BW]
    let mut counts = vec![vec![[0u32; 4]; m]; stages];
    for (_, _, p) in &all {
        if let Some(c) = counts.get_mut(p.stage as usize).and_then(|s| s.get_mut(p.microbatch as usize)) {
            c[p.kind.index()] += 1;
        }
    }
    let split = all.iter().any(|(_, _, p)| matches!(p.kind, PassKind::B | PassKind::W));
    for (stage, per_mb) in counts.iter().enumerate() {
        let short = per_mb.iter().position(|c| {
            let [f, b, w, bw] = *c;
            !(f == 1 && ((bw == 1 && b == 0 && w == 0) || (bw == 0 && b == 1 && w == 1)))
        });
        let Some(mb) = short else { continue };
        let device = device_of[stage];
        let [f, b, w, bw] = per_mb[mb];
        let pass = |kind| Pass::new(kind, stage as u32, mb as u32);
        let kinds = [PassKind::F, PassKind::B, PassKind::W, PassKind::BW];
        if let Some(kind) = kinds.into_iter().find(|k| per_mb[mb][k.index()] > 1) {
            return Err(run_twice(view, pass(kind)));
        }
        let missing = match () {
            () if f == 0 => Some(PassKind::F),
            () if bw == 0 && b == 1 && w == 0 => Some(PassKind::W),
            () if bw == 0 && b == 0 && w == 1 => Some(PassKind::B),
            () if bw == 0 && b == 0 && w == 0 => Some(if split { PassKind::B } else { PassKind::BW }),
            () => None,
        };
        if let Some(e) = missing.and_then(|kind| misplaced(view, device, pass(kind))) {
            return Err(e);
        }
        let counted = format!(
            "stage {stage} runs microbatch {mb} with {f} forward, {b} input-gradient, {w} weight-gradient and {bw} full backward passes, where a step runs one forward and one backward"
        );
        let message = match missing {
            Some(kind) => format!(
                "{} is cut off or mixed: it has no {}: {counted}",
                view.at(),
                event_name(&op_cell(&Op::One(pass(kind))))
            ),
            None => format!("{} is cut off or mixed: {counted}", view.at()),
        };
        return Err(view.error(device, message, WHOLE_STEPS));
    }
    Ok(())
}

/// A pass of a stage or microbatch far past every other pass's (`PP:7F0` among stages 0 to
/// 3): one that holds fewer than half the passes of the fullest, and lies more than one past
/// the rest (a step cut off loses its last microbatches next to the others, not apart).
fn stray_pass(view: &StepView) -> Option<TraceError> {
    let stage = (|p: &Pass| p.stage) as fn(&Pass) -> u32;
    for (what, whats, of) in [("stage", "stages", stage), ("microbatch", "microbatches", |p: &Pass| p.microbatch)] {
        let mut count = std::collections::BTreeMap::<u32, usize>::new();
        for (_, _, p) in view.passes() {
            *count.entry(of(&p)).or_default() += 1;
        }
        let most = count.values().copied().max().unwrap_or(0);
        let usual: Vec<u32> = count.iter().filter(|(_, n)| 2 * **n >= most).map(|(k, _)| *k).collect();
        let (Some(&low), Some(&high)) = (usual.first(), usual.last()) else { continue };
        let stray = view
            .passes()
            .filter(|(_, _, p)| of(p) > high + 1 && 2 * count.get(&of(p)).copied().unwrap_or(0) < most)
            .min_by(|a, b| a.1.start.total_cmp(&b.1.start));
        if let Some((rank, span, p)) = stray {
            let message = format!(
                "the event {} at ts {} names {what} {}, but {}'s other passes run {whats} {low} to {high}: its name is damaged",
                event_name(&span.label),
                format_number(span.start, 3),
                of(&p),
                view.at()
            );
            return Some(view.error(rank, message, DAMAGED));
        }
    }
    None
}

/// The error for `span`, on `rank`, that starts inside the step but lasts past its end `to`.
fn past_the_step(view: &StepView, rank: usize, span: &Span, to: f64) -> TraceError {
    view.error(
        rank,
        format!(
            "the event {} at ts {} lasts dur {} µs, past the end of {} at ts {}: a pass ends inside its step, so its dur (or its ts) is damaged",
            event_name(&span.label),
            format_number(span.start, 3),
            format_number(span.end - span.start, 3),
            view.at(),
            format_number(to, 3)
        ),
        DAMAGED,
    )
}

/// The error for `pass` run twice in the step: both events, at their `ts`.
fn run_twice(view: &StepView, pass: Pass) -> TraceError {
    let twice: Vec<(usize, &Span)> = view.passes().filter(|(_, _, p)| *p == pass).map(|(r, s, _)| (r, s)).collect();
    let rank = twice.last().map_or(0, |t| t.0);
    let at: Vec<String> = twice.iter().map(|(r, s)| format!("ts {} (rank {r})", format_number(s.start, 3))).collect();
    let name = twice.first().map_or_else(|| event_name(&op_cell(&Op::One(pass))), |(_, s)| event_name(&s.label));
    view.error(
        rank,
        format!(
            "{name} runs {} times in {}, at {}, where a step runs it once: one of the events is misnamed",
            twice.len(),
            view.at(),
            at.join(" and ")
        ),
        DAMAGED,
    )
}

/// Where `pass`, missing from the step on rank `rank`, went, when its event is in the trace:
/// outside the step's window (a damaged `ts`), or inside another pass's span (that span's
/// `dur` damaged). `None` when the trace has no such event, or only other steps' events.
fn misplaced(view: &StepView, rank: usize, pass: Pass) -> Option<TraceError> {
    let trace = view.ranks.get(rank)?;
    let window = *view.windows.get(rank)?;
    let holds = |s: &Span| match kind_of(&s.label, rank as u32) {
        Ok(Kind::Compute(op)) => op.passes().any(|p| p == pass),
        _ => false,
    };
    let found: Vec<&Span> = trace.spans.iter().filter(|s| s.track == view.track && holds(s)).collect();
    let inside = |s: &Span| s.start >= window.0 - 1e-6 && s.end <= window.1 + 1e-6;
    if let Some(span) = found.iter().find(|s| inside(s)) {
        let holds =
            |h: &Span| h.start <= span.start && span.end <= h.end && !std::ptr::eq(h, *span) && h.label != span.label;
        let Some(holder) = view.compute.get(rank)?.iter().map(|(s, _)| *s).find(|h| holds(h)) else {
            // A holder the step left out, as it runs past the step's end: its dur is damaged.
            let long = trace.spans.iter().find(|h| h.track == view.track && holds(h) && h.end > window.1 + 1e-6)?;
            return Some(past_the_step(view, rank, long, window.1));
        };
        return Some(view.error(
            rank,
            format!(
                "the event {} at ts {} lasts dur {} µs, so it holds the next pass {} at ts {}: a pass cannot hold another, so its dur is damaged",
                event_name(&holder.label),
                format_number(holder.start, 3),
                format_number(holder.end - holder.start, 3),
                event_name(&span.label),
                format_number(span.start, 3)
            ),
            DAMAGED,
        ));
    }
    // An event that starts in the step and lasts past its end: its dur is damaged.
    let (from, to) = window;
    let past = |s: &&&Span| s.start >= from - 1e-6 && s.start <= to + 1e-6 && s.end > to + 1e-6;
    if let Some(long) = found.iter().find(past) {
        return Some(past_the_step(view, rank, long, to));
    }
    // An event inside another profiler step is that step's; one in none was moved.
    let in_no_step = |s: &&&Span| !trace.steps.iter().any(|w| s.start >= w.start - 1e-6 && s.end <= w.end + 1e-6);
    let outside = found.iter().find(in_no_step)?;
    Some(view.error(
        rank,
        format!(
            "the event {} at ts {} lies outside {} (ts {} to {}), where its stage and microbatch run: its ts is damaged, or the step is cut off",
            event_name(&outside.label),
            format_number(outside.start, 3),
            view.at(),
            format_number(from, 3),
            format_number(to, 3)
        ),
        DAMAGED,
    ))
}
