//! Why a replay at the fitted costs misses its measured step: a note when it misses by more
//! than [`MISS_NOTED`], naming the likely cause from what the run shows.
//!
//! - **a straggler**: most passes far above their stage's median ran on one device;
//! - **contention**: such passes ran on several devices (other processes on the same cores
//!   or GPUs slow every rank in turns);
//! - **waits outside the schedule**: the excess is in the device's time between passes, or
//!   passes waited for inputs longer than the orders and costs explain (a synchronisation,
//!   the garbage collector, a data loader);
//! - with the replay slower than the run: the fit counts time the run overlapped.
//!
//! Uses the fit and the replay; no IO.

use super::fit::{Fitted, Outlier};
use super::run::MeasuredRun;
use crate::sim::Timeline;
use crate::units::{format_micros, format_number};

/// The share of the measured step a replay may miss by before a note says so and why.
pub const MISS_NOTED: f64 = 0.15;

/// The note for a replay at `fitted`'s costs (its `timeline`, missing `run`'s step by
/// `error`, a share) that misses by more than [`MISS_NOTED`]; `None` when it lands closer.
pub fn miss_note(run: &MeasuredRun, fitted: &Fitted, error: f64, timeline: &Timeline) -> Option<String> {
    // A NaN error (no step to compare with) is no miss either.
    if error.is_nan() || error.abs() <= MISS_NOTED {
        return None;
    }
    let direction = if error < 0.0 { "below" } else { "above" };
    Some(format!(
        "the replay at the fitted costs lands {}% {direction} the measured step, more than {}%: likely {}",
        format_number(error.abs() * 100.0, 1),
        format_number(MISS_NOTED * 100.0, 0),
        likely_cause(run, fitted, error, timeline)
    ))
}

/// The likely cause of a miss, in words.
fn likely_cause(run: &MeasuredRun, fitted: &Fitted, error: f64, timeline: &Timeline) -> String {
    if error > 0.0 {
        return "time the run overlapped, which the fit counts in full: the device's time after each pass (sends, receives posted, bookkeeping) ran beside waiting for the next input".to_string();
    }
    let slow: Vec<&Outlier> = fitted.outliers.iter().filter(|o| o.ratio() > 1.0).collect();
    if !slow.is_empty() {
        // Each slow pass's excess, split into its work and the device's time after it.
        let (work_excess, gap_excess) = slow.iter().fold((0.0, 0.0), |(w, g), o| {
            let usual_work = (o.median - fitted.overhead).max(0.0);
            (w + (o.work - usual_work).max(0.0), g + (o.time - o.work - fitted.overhead).max(0.0))
        });
        if gap_excess > work_excess {
            return format!(
                "waits outside the schedule: after {} their devices paused {} in all before the next pass (a synchronisation, the garbage collector, a data loader)",
                crate::schedule::counted(slow.len() as u32, "slow pass", "slow passes"),
                format_micros(gap_excess)
            );
        }
        let devices = run.schedule.devices() as usize;
        let mut per_device = vec![0usize; devices];
        for o in &slow {
            if let Some(n) = per_device.get_mut(o.device as usize) {
                *n += 1;
            }
        }
        let (top, most) = per_device.iter().enumerate().max_by_key(|(_, n)| **n).map_or((0, 0), |(d, n)| (d, *n));
        let worst = slow.iter().map(|o| o.ratio()).fold(0.0, f64::max);
        if devices > 1 && slow.len() >= 2 && 3 * most >= 2 * slow.len() {
            return format!(
                "a straggler: device {top} ran {most} of the {} passes far above their stage's median (up to {}×)",
                slow.len(),
                format_number(worst, 1)
            );
        }
        let on = per_device.iter().filter(|n| **n > 0).count();
        return format!(
            "contention: {} on {} ran up to {}× their stage's median (other processes on the same cores or GPUs)",
            crate::schedule::counted(slow.len() as u32, "pass", "passes"),
            crate::schedule::counted(on as u32, "device", "devices"),
            format_number(worst, 1)
        );
    }
    let measured_wait: f64 = run.devices.iter().map(|d| d.wait).sum();
    let replay_wait: f64 =
        timeline.devices.iter().map(|d| d.ops.windows(2).map(|w| (w[1].start - w[0].end).max(0.0)).sum::<f64>()).sum();
    if measured_wait > replay_wait {
        return format!(
            "waits outside the schedule: the passes waited {} for inputs, where the orders at these costs wait {}",
            format_micros(measured_wait),
            format_micros(replay_wait)
        );
    }
    "passes whose times vary more than one median per stage can hold: see the spread".to_string()
}
