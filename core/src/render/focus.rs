//! What the chart picks out of the main schedule: the passes a formula's term stands for
//! (outlined, the others faded, and the waiting device's span shaded), or the passes a
//! derivation has placed so far (the later ones left out). Uses the formulas' marks, the
//! derivation's steps and the analysis.

use std::collections::{HashMap, HashSet};

use crate::analysis::Analysis;
use crate::derive::DeriveStep;
use crate::families::formula::Mark;
use crate::schedule::Pass;

/// A span of a device's row to shade: where it waits for (or works through) the outlined passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    /// The device.
    pub device: u32,
    /// Start time.
    pub start: f64,
    /// End time.
    pub end: f64,
}

/// Passes to pick out of the first panel of a chart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Focus {
    /// Passes outlined; when any are, every other pass fades.
    pub outlined: HashSet<Pass>,
    /// Passes left out of the chart.
    pub hidden: HashSet<Pass>,
    /// Spans shaded on device rows.
    pub bands: Vec<Band>,
}

impl Focus {
    /// The passes `marks` name, outlined, and each mark's device shaded over the span of its
    /// passes as `analysis` timed them (marks that name no pass of the schedule shade nothing).
    pub fn of_marks(marks: &[Mark], analysis: &Analysis) -> Focus {
        let times = pass_times(analysis);
        let mut focus = Focus::default();
        for mark in marks {
            let spans: Vec<(f64, f64)> = mark.passes.iter().filter_map(|p| times.get(p).copied()).collect();
            focus.outlined.extend(mark.passes.iter().filter(|p| times.contains_key(p)));
            let start = spans.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
            let end = spans.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
            if start.is_finite() && end > start {
                focus.bands.push(Band { device: mark.device, start, end });
            }
        }
        focus
    }

    /// Step `at` of a derivation: the passes of the steps after it left out, its own outlined.
    pub fn placing(steps: &[DeriveStep], at: usize) -> Focus {
        let mut focus = Focus::default();
        for (i, step) in steps.iter().enumerate() {
            if i > at {
                focus.hidden.extend(step.passes.iter().copied());
            } else if i == at {
                focus.outlined.extend(step.passes.iter().copied());
            }
        }
        focus
    }

    /// How many of `analysis`'s passes are outlined and how many are shown.
    pub fn counts(&self, analysis: &Analysis) -> (usize, usize) {
        let all = analysis.schedule.orders.iter().flatten().flat_map(|o| o.passes());
        all.fold((0, 0), |(outlined, shown), p| {
            (outlined + usize::from(self.outlined.contains(&p)), shown + usize::from(!self.hidden.contains(&p)))
        })
    }
}

/// When each pass ran (a pair's two passes at the pair's time).
fn pass_times(analysis: &Analysis) -> HashMap<Pass, (f64, f64)> {
    let mut out = HashMap::with_capacity(analysis.schedule.pass_count());
    for (order, device) in analysis.schedule.orders.iter().zip(&analysis.timeline.devices) {
        for (op, t) in order.iter().zip(&device.ops) {
            for p in op.passes() {
                out.insert(p, (t.start, t.end));
            }
        }
    }
    out
}
