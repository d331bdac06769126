//! The measured orders run again through the simulator: at the measured times (which
//! reproduce the step) or at the costs fitted from them (the prediction a plan makes).

use super::fit::Fitted;
use super::run::MeasuredRun;
use crate::params::StageCosts;
use crate::sim::{simulate, simulate_timed, OpTimes, Timeline};

/// The same orders run through the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    /// When every op ran.
    pub timeline: Timeline,
    /// From the first op's start to the last op's end (µs).
    pub step_time: f64,
    /// `(step_time − measured) / measured`.
    pub error: f64,
    /// The passes whose time differs most between the run and the replay, largest first
    /// (at most [`Replay::DEVIATIONS`]): where a prediction went wrong.
    pub deviations: Vec<Deviation>,
    /// What a reader should know about the replay: at the fitted costs, why it misses the
    /// measured step when it misses by more than [`super::MISS_NOTED`].
    pub notes: Vec<String>,
}

/// One pass's time in the run and in a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Deviation {
    /// Its device.
    pub device: u32,
    /// The action, as the trace names it.
    pub label: String,
    /// Its device time in the run: its work and the device's time after it before the next
    /// pass (what the fitted costs stand for).
    pub measured: f64,
    /// Its time in the replay.
    pub predicted: f64,
}

impl Replay {
    /// How many deviations a replay lists.
    pub const DEVIATIONS: usize = 5;
}

impl MeasuredRun {
    /// The costs fitted from the run.
    pub fn fitted(&self) -> Fitted {
        Fitted::of(self)
    }

    /// The orders replayed at the measured times: reproduces the measured step (and every
    /// pass's work start and end).
    ///
    /// # Errors
    /// Never for a run [`assemble`] built (its orders are a checked schedule).
    pub fn replay_measured(&self) -> Result<Replay, crate::error::SimError> {
        let memory = StageCosts::for_schedule(&self.fitted().costs(self.schedule.devices()), &self.schedule);
        let timeline = simulate_timed(&self.schedule, &OpTimes { times: self.op_times(), memory })?;
        Ok(self.replay_of(timeline, true))
    }

    /// The orders replayed at the fitted costs: the prediction a plan makes for this run.
    ///
    /// # Errors
    /// As [`MeasuredRun::replay_measured`].
    pub fn replay_fitted(&self) -> Result<Replay, crate::error::SimError> {
        let fitted = self.fitted();
        let costs = fitted.costs(self.schedule.devices());
        let timeline = simulate(&self.schedule, &StageCosts::for_schedule(&costs, &self.schedule))?;
        let mut replay = self.replay_of(timeline, false);
        replay.notes.extend(super::miss::miss_note(self, &fitted, replay.error, &replay.timeline));
        Ok(replay)
    }

    fn replay_of(&self, timeline: Timeline, from_zero: bool) -> Replay {
        let first = if from_zero {
            0.0
        } else {
            timeline.devices.iter().filter_map(|d| d.ops.first()).map(|o| o.start).fold(f64::INFINITY, f64::min)
        };
        let first = if first.is_finite() { first } else { 0.0 };
        let step_time = timeline.end() - first;
        let error = if self.step_time > 0.0 { (step_time - self.step_time) / self.step_time } else { 0.0 };
        let mut deviations: Vec<Deviation> = Vec::new();
        for (d, (ops, timed)) in self.ops.iter().zip(&timeline.devices).enumerate() {
            for (i, (o, t)) in ops.iter().zip(&timed.ops).enumerate() {
                let tail = ops.get(i + 1).map_or(0.0, |n| n.lead);
                let measured = if from_zero { o.duration() } else { o.duration() + tail };
                deviations.push(Deviation {
                    device: d as u32,
                    label: o.label.clone(),
                    measured,
                    predicted: t.end - t.start,
                });
            }
        }
        crate::units::sort::sort_by(&mut deviations, |a, b| {
            (b.measured - b.predicted).abs().total_cmp(&(a.measured - a.predicted).abs())
        });
        deviations.truncate(Replay::DEVIATIONS);
        Replay { timeline, step_time, error, deviations, notes: Vec::new() }
    }
}

impl MeasuredRun {
    /// The run's sizes and fitted costs as parameters (times in µs, memory in mem-f's unit).
    pub fn params(&self) -> crate::params::ScheduleParams {
        let mut params = crate::params::ScheduleParams::new(self.schedule.devices(), self.schedule.microbatches)
            .with_costs(self.fitted().costs(self.schedule.devices()));
        params.units = crate::units::Units::Measured;
        params
    }

    /// The run as measured, as every schedule is analysed: the orders, the timeline of the
    /// measured replay (which is the run's own), and its stats.
    ///
    /// # Errors
    /// As [`MeasuredRun::replay_measured`].
    pub fn analysis(&self) -> Result<crate::analysis::Analysis, crate::error::SimError> {
        let costs = self.fitted().costs(self.schedule.devices());
        crate::analysis::analyze_timed(self.schedule.clone(), &costs, &self.op_times()).map_err(|e| match e {
            crate::analysis::AnalyzeError::Sim(e) => e,
            other => crate::error::SimError::Malformed(other.to_string()),
        })
    }

    /// A heading: `measured run (ProfilerStep#2) · 2 devices · 4 microbatches`.
    pub fn label(&self) -> String {
        let step = self.step.map_or_else(String::new, |n| format!(" (ProfilerStep#{n})"));
        format!(
            "measured run{step} · {} · {}",
            crate::schedule::counted(self.schedule.devices(), "device", "devices"),
            crate::schedule::counted(self.schedule.microbatches, "microbatch", "microbatches")
        )
    }
}
