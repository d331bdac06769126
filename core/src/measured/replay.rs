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
    pub fn replay_measured(&self) -> Result<Replay, crate::SimError> {
        let memory = StageCosts::for_schedule(&self.fitted().costs(self.schedule.devices()), &self.schedule);
        let timeline = simulate_timed(&self.schedule, &OpTimes { times: self.op_times(), memory })?;
        Ok(self.replay_of(timeline, true))
    }

    /// The orders replayed at the fitted costs: the prediction a plan makes for this run.
    ///
    /// # Errors
    /// As [`MeasuredRun::replay_measured`].
    pub fn replay_fitted(&self) -> Result<Replay, crate::SimError> {
        let costs = self.fitted().costs(self.schedule.devices());
        let timeline = simulate(&self.schedule, &StageCosts::for_schedule(&costs, &self.schedule))?;
        Ok(self.replay_of(timeline, false))
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
        Replay { timeline, step_time, error }
    }
}

impl MeasuredRun {
    /// The run's sizes and fitted costs as parameters (times in µs, memory in mem-f's unit).
    pub fn params(&self) -> crate::ScheduleParams {
        let mut params = crate::ScheduleParams::new(self.schedule.devices(), self.schedule.microbatches)
            .with_costs(self.fitted().costs(self.schedule.devices()));
        params.units = crate::units::Units::Measured;
        params
    }

    /// The run as measured, as every schedule is analysed: the orders, the timeline of the
    /// measured replay (which is the run's own), and its stats.
    ///
    /// # Errors
    /// As [`MeasuredRun::replay_measured`].
    pub fn analysis(&self) -> Result<crate::Analysis, crate::SimError> {
        let replay = self.replay_measured()?;
        let costs = self.fitted().costs(self.schedule.devices());
        let stats = crate::stats::stats(&self.schedule, &replay.timeline, &costs);
        Ok(crate::Analysis { schedule: self.schedule.clone(), timeline: replay.timeline, stats })
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
