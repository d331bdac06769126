//! Chrome trace (Trace Event Format) export for Perfetto: the layout is in the
//! [module docs](super).
//!
//! The trace is written compactly, since a schedule has millions of passes: one slice per op
//! (an overlapped pair is one slice named `(3F1;3BW0)`) with no `args` (the name holds the
//! kind, stage, microbatch and slice; `ts` and `dur` the times), integers where a time is
//! whole, flow arrows named `dep`, and a memory counter point only where the value changes.
//! A trace is at most [`MAX_TRACE_BYTES`]; a larger one is refused before anything is kept.

use std::fmt::Write as _;

use crate::schedule::Schedule;
use crate::sim::{dependency, KeySpace, Timeline};
use crate::units::{without_noise, without_noise_in};

use super::FormatError;

/// The process all device tracks belong to.
const PID: u32 = 0;

/// What an export names as its `otherData.generator`: the trace reader refuses such a file as
/// a profiled run, and says what it is.
pub const GENERATOR: &str = "bubblescope";

/// Largest trace written: 512 MiB, about what Perfetto's web UI opens from a JSON file (a
/// trace is about 29 times its compute-only CSV, so a 16 MiB CSV, the largest import, makes
/// about 460 MiB).
pub const MAX_TRACE_BYTES: usize = 512 << 20;

/// Writes `schedule`, run as `timeline` says, as a Chrome trace for Perfetto.
///
/// One Bubblescope time unit is one microsecond of the trace.
///
/// # Errors
/// When `timeline` is not a run of `schedule` (other devices or op counts), a pass is outside
/// the schedule's stages, microbatches or slices, or the trace would exceed
/// [`MAX_TRACE_BYTES`].
pub fn export_perfetto(schedule: &Schedule, timeline: &Timeline) -> Result<String, FormatError> {
    export_within(schedule, timeline, MAX_TRACE_BYTES)
}

/// The thread id of `device`'s copy stream: after every device's own.
fn copy_thread(devices: u32, device: u32) -> u32 {
    devices + device
}

/// [`export_perfetto`], refusing a trace of more than `max_bytes`.
fn export_within(schedule: &Schedule, timeline: &Timeline, max_bytes: usize) -> Result<String, FormatError> {
    let fits = timeline.devices.len() == schedule.orders.len()
        && timeline.devices.iter().zip(&schedule.orders).all(|(t, order)| t.ops.len() == order.len());
    if !fits {
        return Err(FormatError::new("the timeline is not a run of this schedule: their devices or op counts differ")
            .hint("simulate the schedule and pass the timeline it returns"));
    }
    let keys =
        KeySpace::checked(schedule).map_err(|e| FormatError::new(format!("the schedule cannot be traced: {e}")))?;
    let placement = &schedule.placement;
    let slices = schedule.slices;

    let mut events = Events { text: String::new(), count: 0, max_bytes };
    let process = format!(
        "bubblescope: {} devices, {} stages ({} placement), {} microbatches",
        schedule.devices(),
        placement.stages(),
        placement.kind().name(),
        schedule.microbatches
    );
    events.push(format_args!(
        r#"{{"name":"process_name","ph":"M","pid":{PID},"args":{{"name":{}}}}}"#,
        serde_json::Value::from(process)
    ))?;
    for device in 0..schedule.devices() {
        events.push(format_args!(
            r#"{{"name":"thread_name","ph":"M","pid":{PID},"tid":{device},"args":{{"name":"device {device}"}}}}"#
        ))?;
        events.push(format_args!(
            r#"{{"name":"thread_sort_index","ph":"M","pid":{PID},"tid":{device},"args":{{"sort_index":{device}}}}}"#
        ))?;
    }

    // One slice per op, and where each result (forward or input gradient) is produced.
    let mut producer: Vec<Option<(u32, f64)>> = vec![None; 2 * keys.len()];
    for (device, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        let device = device as u32;
        for (op, t) in order.iter().zip(&times.ops) {
            events.push(format_args!(
                r#"{{"name":"{}","ph":"X","pid":{PID},"tid":{device},"ts":{},"dur":{}}}"#,
                super::json::op_text(op, slices),
                Num(without_noise(t.start)),
                Num(without_noise_in(t.end - t.start, t.end))
            ))?;
            for pass in op.passes() {
                if let Some(k) = keys.provided_index(pass) {
                    producer[k].get_or_insert((device, t.start));
                }
            }
        }
    }

    // Each device's copy stream, as its own thread under the devices: one slice per copy.
    for (device, times) in timeline.devices.iter().enumerate() {
        let copies = schedule.copies_of(device as u32);
        if copies.is_empty() {
            continue;
        }
        let tid = copy_thread(schedule.devices(), device as u32);
        events.push(format_args!(
            r#"{{"name":"thread_name","ph":"M","pid":{PID},"tid":{tid},"args":{{"name":"device {device} copies"}}}}"#
        ))?;
        events.push(format_args!(
            r#"{{"name":"thread_sort_index","ph":"M","pid":{PID},"tid":{tid},"args":{{"sort_index":{tid}}}}}"#
        ))?;
        for (c, t) in copies.iter().zip(&times.copies) {
            events.push(format_args!(
                r#"{{"name":"{} {}","ph":"X","pid":{PID},"tid":{tid},"ts":{},"dur":{}}}"#,
                c.kind.name(),
                super::json::pass_text(c.pass, slices),
                Num(without_noise(t.start)),
                Num(without_noise_in(t.end - t.start, t.end))
            ))?;
        }
    }

    // Flow arrows for dependencies between devices.
    let mut id: u64 = 0;
    for (device, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        let device = device as u32;
        for (op, t) in order.iter().zip(&times.ops) {
            for pass in op.passes() {
                let Some(dep) = dependency(placement, pass) else { continue };
                let Some((from, from_start)) = producer[keys.dep_index(dep)] else { continue };
                if from == device {
                    continue;
                }
                id += 1;
                events.push(format_args!(
                    r#"{{"name":"dep","cat":"dep","ph":"s","id":{id},"pid":{PID},"tid":{from},"ts":{}}}"#,
                    Num(without_noise(from_start))
                ))?;
                events.push(format_args!(
                    r#"{{"name":"dep","cat":"dep","ph":"f","bp":"e","id":{id},"pid":{PID},"tid":{device},"ts":{}}}"#,
                    Num(without_noise(t.start))
                ))?;
            }
        }
    }

    // Activation memory per device: the value after all changes at a time, where it changes,
    // without the float noise of its running total (no -2.2e-16 for an empty device).
    for (device, times) in timeline.devices.iter().enumerate() {
        let scale = times.memory.iter().map(|p| p.value.abs()).fold(0.0, f64::max);
        let mut last = None;
        for (i, point) in times.memory.iter().enumerate() {
            let settled = times.memory.get(i + 1).is_none_or(|next| next.time != point.time);
            let value = without_noise_in(point.value, scale);
            if settled && last != Some(value) {
                events.push(format_args!(
                    r#"{{"name":"memory {device}","ph":"C","pid":{PID},"ts":{},"args":{{"activation":{}}}}}"#,
                    Num(without_noise(point.time)),
                    Num(value)
                ))?;
                last = Some(value);
            }
        }
    }
    Ok(events.finish())
}

/// A number as the trace writes it: an integer when it is one, else the shortest decimal that
/// reads back exactly.
struct Num(f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == self.0.trunc() && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// `bytes` as limits are stated: in MiB when whole, else in bytes.
fn mebibytes(bytes: usize) -> String {
    if bytes > 0 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The trace text, written event by event so no list of values is kept.
struct Events {
    text: String,
    count: usize,
    max_bytes: usize,
}

impl Events {
    fn push(&mut self, event: std::fmt::Arguments<'_>) -> Result<(), FormatError> {
        self.text.push_str(if self.count == 0 { "{\"traceEvents\":[\n" } else { ",\n" });
        let _ = self.text.write_fmt(event);
        self.count += 1;
        if self.text.len() > self.max_bytes {
            return Err(FormatError {
                message: format!(
                    "the trace would be larger than {}, the most a perfetto export writes ({} events so far)",
                    mebibytes(self.max_bytes),
                    self.count
                ),
                hints: vec![
                    "trace fewer devices or microbatches: the bubble and the pattern show at a small size".into(),
                    "or keep the schedule as JSON or PyTorch CSV, which are far smaller".into(),
                ],
            });
        }
        Ok(())
    }

    fn finish(mut self) -> String {
        if self.count == 0 {
            self.text.push_str("{\"traceEvents\":[");
        }
        let _ = write!(
            self.text,
            "\n],\n\"otherData\":{{\"generator\":\"{GENERATOR}\",\"time unit\":\"1 Bubblescope time unit = 1 microsecond\"}}}}\n"
        );
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_integers_where_exact() {
        assert_eq!(Num(3.0).to_string(), "3");
        assert_eq!(Num(-0.0).to_string(), "0");
        assert_eq!(Num(2.5).to_string(), "2.5");
        assert_eq!(Num(0.1 + 0.2).to_string().parse::<f64>().unwrap(), 0.1 + 0.2);
    }

    #[test]
    fn a_trace_over_the_size_limit_is_refused_before_it_is_kept() {
        let params = crate::ScheduleParams::new(4, 16);
        let a = crate::run("1f1b", &params).unwrap();
        let full = export_perfetto(&a.schedule, &a.timeline).unwrap();
        assert_eq!(export_within(&a.schedule, &a.timeline, full.len()).as_ref(), Ok(&full));
        let err = export_within(&a.schedule, &a.timeline, 1000).unwrap_err();
        assert!(
            err.message.starts_with("the trace would be larger than 1000 bytes, the most a perfetto export writes"),
            "{}",
            err.message
        );
        assert_eq!(mebibytes(MAX_TRACE_BYTES), "512 MiB");
    }

    #[test]
    fn copies_are_slices_on_a_thread_of_their_own() {
        let trade = crate::Trade { offload: crate::Offload::Auto, copy_time: Some(0.1), ..crate::Trade::default() };
        let costs = crate::Costs { trade: Some(std::sync::Arc::new(trade)), ..crate::Costs::default() };
        let a = crate::run("gpipe", &crate::ScheduleParams::new(2, 4).with_costs(costs)).unwrap();
        let trace: serde_json::Value =
            serde_json::from_str(&export_perfetto(&a.schedule, &a.timeline).unwrap()).unwrap();
        let events = trace["traceEvents"].as_array().cloned().unwrap_or_default();
        let copies: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["ph"] == "X" && e["tid"] == 2 && e["name"].as_str().is_some()).collect();
        assert_eq!(copies.len(), a.schedule.copies_of(0).len());
        let first = &a.timeline.devices[0].copies[0];
        assert_eq!(copies[0]["ts"].as_f64(), Some(first.start));
        assert!(copies[0]["name"].as_str().unwrap_or_default().starts_with("offload 0F"));
        assert!(events.iter().any(|e| e["args"]["name"] == "device 0 copies"));
    }
}
