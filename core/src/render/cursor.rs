//! Playback: what a schedule is doing at one moment (passes done and running, memory in use,
//! idle devices), for the app's time cursor. Built once per timeline; each query costs
//! O(devices · log ops), so a 400,000-pass schedule answers in microseconds per frame.

use crate::schedule::Schedule;
use crate::sim::Timeline;

/// One device at the cursor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceAt {
    /// Position in the device's order of the op running at the cursor; `None` when idle.
    pub running: Option<usize>,
    /// Ops finished by the cursor.
    pub ops_done: usize,
    /// Passes finished by the cursor (an overlapped F&B pair counts two).
    pub passes_done: usize,
    /// Activation memory held at the cursor.
    pub memory: f64,
}

/// The whole schedule at the cursor.
#[derive(Clone, Debug, PartialEq)]
pub struct CursorState {
    /// The cursor time.
    pub time: f64,
    /// Per device.
    pub devices: Vec<DeviceAt>,
    /// Passes finished, over all devices.
    pub passes_done: usize,
    /// Passes running, over all devices.
    pub passes_running: usize,
    /// Passes in the schedule.
    pub passes_total: usize,
}

impl CursorState {
    /// Devices running nothing at the cursor, in order.
    pub fn idle_devices(&self) -> Vec<u32> {
        (0..self.devices.len() as u32).filter(|d| self.devices[*d as usize].running.is_none()).collect()
    }
}

/// Answers "what is happening at time t" for one schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Cursor {
    /// `prefix[d][i]`: passes in device d's first i ops.
    prefix: Vec<Vec<u32>>,
    /// The timeline it reads (cloned once: times and memory curves).
    timeline: Timeline,
}

impl Cursor {
    /// Indexes `timeline` (the simulated run of `schedule`).
    pub fn new(schedule: &Schedule, timeline: &Timeline) -> Cursor {
        let prefix = schedule
            .orders
            .iter()
            .map(|order| {
                let mut sums = Vec::with_capacity(order.len() + 1);
                let mut n = 0u32;
                sums.push(0);
                for op in order {
                    n += if op.is_pair() { 2 } else { 1 };
                    sums.push(n);
                }
                sums
            })
            .collect();
        Cursor { prefix, timeline: timeline.clone() }
    }

    /// The time the schedule ends: where the cursor stops.
    pub fn end(&self) -> f64 {
        self.timeline.end()
    }

    /// The state at time `t`: an op is done when it ended at or before `t`, running when it
    /// started at or before `t` and ends after it; memory is the step curve's value at `t`.
    pub fn at(&self, t: f64) -> CursorState {
        let mut devices = Vec::with_capacity(self.timeline.devices.len());
        let (mut done, mut running, mut total) = (0, 0, 0);
        for (d, dt) in self.timeline.devices.iter().enumerate() {
            let prefix = self.prefix.get(d).map_or(&[][..], Vec::as_slice);
            let count = |i: usize| prefix.get(i).copied().unwrap_or(0) as usize;
            let ops_done = dt.ops.partition_point(|o| o.end <= t);
            let run = dt.ops.get(ops_done).filter(|o| o.start <= t).map(|_| ops_done);
            let passes_done = count(ops_done);
            if let Some(i) = run {
                running += count(i + 1) - count(i);
            }
            done += passes_done;
            total += count(dt.ops.len());
            let m = dt.memory.partition_point(|p| p.time <= t);
            let memory = if m == 0 { 0.0 } else { dt.memory[m - 1].value };
            devices.push(DeviceAt { running: run, ops_done, passes_done, memory });
        }
        CursorState { time: t, devices, passes_done: done, passes_running: running, passes_total: total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::StageCosts;
    use crate::{family, run, Costs, ScheduleParams};

    /// The state at `t` by brute force: every pass, its own interval, memory replayed from the
    /// costs (allocated at a forward's start, released at a backward's end).
    fn brute(a: &crate::Analysis, costs: &StageCosts, t: f64) -> (usize, usize, Vec<Option<usize>>, Vec<f64>) {
        let (mut done, mut running) = (0, 0);
        let mut busy = Vec::new();
        let mut memory = Vec::new();
        for (order, dt) in a.schedule.orders.iter().zip(&a.timeline.devices) {
            let mut at = None;
            let mut m = 0.0;
            for (i, (op, timed)) in order.iter().zip(&dt.ops).enumerate() {
                for pass in op.passes() {
                    if timed.end <= t {
                        done += 1;
                    } else if timed.start <= t {
                        running += 1;
                    }
                    if timed.start <= t {
                        m += costs.alloc(pass);
                    }
                    if timed.end <= t {
                        m -= costs.release(pass);
                    }
                }
                if timed.start <= t && t < timed.end {
                    at = Some(i);
                }
            }
            busy.push(at);
            memory.push(m);
        }
        (done, running, busy, memory)
    }

    #[test]
    fn matches_a_brute_force_replay_for_every_family() {
        let params = ScheduleParams::new(4, 8).with_costs(Costs::fbw(1.0, 1.5, 0.75));
        for f in crate::FAMILIES {
            let p = f.own_params(&params);
            let Ok(a) = run(f.name, &p) else { continue };
            let costs = StageCosts::for_schedule(&p.costs, &a.schedule);
            let cursor = Cursor::new(&a.schedule, &a.timeline);
            let end = cursor.end();
            // Every op boundary, just before and after it, and a grid.
            let mut times: Vec<f64> = (0..=40).map(|i| end * f64::from(i) / 40.0).collect();
            for dt in &a.timeline.devices {
                for o in dt.ops.iter().step_by(3) {
                    times.extend([o.start, o.end, o.start - 1e-9, o.end + 1e-9]);
                }
            }
            for t in times {
                let s = cursor.at(t);
                let (done, running, busy, memory) = brute(&a, &costs, t);
                assert_eq!(s.passes_done, done, "{} at {t}", f.name);
                assert_eq!(s.passes_running, running, "{} at {t}", f.name);
                assert_eq!(s.devices.iter().map(|d| d.running).collect::<Vec<_>>(), busy, "{} at {t}", f.name);
                for (d, (got, want)) in s.devices.iter().zip(&memory).enumerate() {
                    assert!((got.memory - want).abs() < 1e-9, "{} device {d} at {t}: {} vs {want}", f.name, got.memory);
                }
                assert_eq!(s.passes_total, a.schedule.pass_count());
            }
        }
        assert!(family("dualpipe").is_some(), "pairs are covered");
    }

    #[test]
    fn before_the_start_nothing_runs_and_after_the_end_everything_is_done() {
        let a = run("zb-h1", &ScheduleParams::new(4, 8)).unwrap();
        let cursor = Cursor::new(&a.schedule, &a.timeline);
        let s = cursor.at(-1.0);
        assert_eq!((s.passes_done, s.passes_running), (0, 0));
        assert_eq!(s.idle_devices(), vec![0, 1, 2, 3]);
        let s = cursor.at(cursor.end());
        assert_eq!(s.passes_done, a.schedule.pass_count());
        assert!(s.devices.iter().all(|d| d.memory.abs() < 1e-9));
        // At time 0 of 1F1B-like schedules only device 0 works.
        let s = cursor.at(0.0);
        assert_eq!(s.idle_devices(), vec![1, 2, 3]);
        assert_eq!(s.passes_running, 1);
        assert!((s.devices[0].memory - 1.0).abs() < 1e-12);
    }
}
