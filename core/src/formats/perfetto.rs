//! Chrome trace (Trace Event Format) export for Perfetto: the layout is in the
//! [module docs](super).

use serde_json::{json, Value};

use crate::schedule::{Op, Pass, Schedule};
use crate::sim::{dependency, KeySpace, Timeline};

use super::FormatError;

/// The process all device tracks belong to.
const PID: u32 = 0;

/// Writes `schedule`, run as `timeline` says, as a Chrome trace for Perfetto.
///
/// One Bubblescope time unit is one microsecond of the trace.
///
/// # Errors
/// When `timeline` is not a run of `schedule` (other devices or op counts), or a pass is outside
/// the schedule's stages, microbatches or slices.
pub fn export_perfetto(schedule: &Schedule, timeline: &Timeline) -> Result<String, FormatError> {
    let fits = timeline.devices.len() == schedule.orders.len()
        && timeline.devices.iter().zip(&schedule.orders).all(|(t, order)| t.ops.len() == order.len());
    if !fits {
        return Err(FormatError::new("the timeline is not a run of this schedule: their devices or op counts differ")
            .hint("simulate the schedule and pass the timeline it returns"));
    }
    let keys =
        KeySpace::checked(schedule).map_err(|e| FormatError::new(format!("the schedule cannot be traced: {e}")))?;
    let placement = &schedule.placement;

    let mut events = Events::default();
    events.push(&json!({
        "name": "process_name", "ph": "M", "pid": PID,
        "args": {"name": format!(
            "bubblescope: {} devices, {} stages ({} placement), {} microbatches",
            schedule.devices(), placement.stages(), placement.kind().name(), schedule.microbatches
        )},
    }));
    for device in 0..schedule.devices() {
        events.push(&json!({
            "name": "thread_name", "ph": "M", "pid": PID, "tid": device, "args": {"name": format!("device {device}")},
        }));
        events.push(
            &json!({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": device, "args": {"sort_index": device}}),
        );
    }

    // Passes, and where each result (forward or input gradient) is produced.
    let mut producer: Vec<Option<(u32, f64)>> = vec![None; 2 * keys.len()];
    for (device, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        let device = device as u32;
        for (position, (op, t)) in order.iter().zip(&times.ops).enumerate() {
            for pass in op.passes() {
                let mut args = json!({
                    "kind": pass.kind.name(),
                    "stage": pass.stage,
                    "microbatch": pass.microbatch,
                    "slice": pass.slice,
                    "start": t.start,
                    "end": t.end,
                    "position": position,
                });
                if let Op::Pair(f, b) = op {
                    let other = if pass == *f { *b } else { *f };
                    args["overlapped_with"] = Value::from(name(other, schedule.slices));
                }
                events.push(&json!({
                    "name": name(pass, schedule.slices), "cat": pass.kind.name(), "ph": "X",
                    "pid": PID, "tid": device, "ts": t.start, "dur": t.end - t.start, "args": args,
                }));
                if let Some(k) = keys.provided_index(pass) {
                    producer[k].get_or_insert((device, t.start));
                }
            }
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
                let label = format!("{} → {}", name(dep.as_pass(), schedule.slices), name(pass, schedule.slices));
                events.push(&json!({
                    "name": label, "cat": "dependency", "ph": "s", "id": id, "pid": PID, "tid": from, "ts": from_start,
                }));
                events.push(&json!({
                    "name": label, "cat": "dependency", "ph": "f", "bp": "e", "id": id, "pid": PID, "tid": device,
                    "ts": t.start,
                }));
            }
        }
    }

    // Activation memory per device.
    for (device, times) in timeline.devices.iter().enumerate() {
        for point in &times.memory {
            events.push(&json!({
                "name": format!("device {device} memory"), "ph": "C", "pid": PID, "ts": point.time,
                "args": {"activation": point.value},
            }));
        }
    }
    Ok(events.finish())
}

/// A pass as the trace names it: as in the JSON format, `2F0`, `3BW1`, `0F1.2`.
fn name(pass: Pass, slices: u32) -> String {
    super::json::pass_text(pass, slices)
}

/// The trace text, written event by event so no list of values is kept.
#[derive(Default)]
struct Events {
    text: String,
    count: usize,
}

impl Events {
    fn push(&mut self, event: &Value) {
        self.text.push_str(if self.count == 0 { "{\"traceEvents\": [\n" } else { ",\n" });
        self.text.push_str(&event.to_string());
        self.count += 1;
    }

    fn finish(mut self) -> String {
        if self.count == 0 {
            self.text.push_str("{\"traceEvents\": [");
        }
        self.text.push_str(
            "\n],\n\"otherData\": {\"generator\": \"bubblescope\", \"time unit\": \"1 Bubblescope time unit = 1 microsecond\"}}\n",
        );
        self.text
    }
}
