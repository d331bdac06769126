//! Data parallelism and sharding on a simulated pipeline: each device's gradient reduction,
//! in buckets, from the end of its last weight gradient; ZeRO-3's parameter gathers, in the
//! order the device runs its chunks; and the memory each ZeRO stage leaves on a device.
//! Uses the schedule, its timeline and the model's links.

use crate::model::parallel::{ring_time, Collective};
use crate::schedule::{PassKind, Schedule};
use crate::sim::Timeline;

/// Gradients per bucket, in parameters (Megatron's default `--ddp-bucket-size`, 40M).
pub const BUCKET_PARAMS: f64 = 40e6;

/// A span of time on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Span {
    /// Start, µs.
    pub start: f64,
    /// End, µs.
    pub end: f64,
}

/// One collective group's link: bus bandwidth and latency per ring step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// GB/s of bus bandwidth.
    pub gbps: f64,
    /// µs per ring step.
    pub latency: f64,
    /// GPUs in the group.
    pub group: u32,
}

impl Link {
    /// µs of `kind` of `bytes` over the group.
    pub fn time(&self, kind: Collective, bytes: f64) -> f64 {
        ring_time(kind, bytes, self.group, self.gbps, self.latency)
    }

    /// µs of `kind` of `bytes` sent in buckets of [`BUCKET_PARAMS`] parameters of
    /// `bytes_per_param` bytes each: one ring per bucket.
    pub fn bucketed(&self, kind: Collective, bytes: f64, bytes_per_param: f64) -> f64 {
        if bytes <= 0.0 || self.group <= 1 {
            return 0.0;
        }
        let bucket = BUCKET_PARAMS * bytes_per_param;
        let full = (bytes / bucket).floor();
        let rest = bytes - full * bucket;
        full * self.time(kind, bucket) + if rest > 0.0 { self.time(kind, rest) } else { 0.0 }
    }
}

/// When device `d` finishes its last weight gradient (its last W or fused backward; its last
/// op when it has neither).
pub fn last_weight_gradient(schedule: &Schedule, timeline: &Timeline, d: usize) -> f64 {
    let (Some(order), Some(times)) = (schedule.orders.get(d), timeline.devices.get(d)) else { return 0.0 };
    let is_w = |op: &crate::schedule::Op| op.passes().any(|p| matches!(p.kind, PassKind::W | PassKind::BW));
    order
        .iter()
        .zip(&times.ops)
        .filter(|(op, _)| is_w(op))
        .map(|(_, t)| t.end)
        .fold(None, |most: Option<f64>, e| Some(most.map_or(e, |m| m.max(e))))
        .or_else(|| times.ops.last().map(|t| t.end))
        .unwrap_or(0.0)
}

/// ZeRO-3's gathers on one device: how many, their time, and what the passes before them
/// could not hide.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "wire", derive(serde::Serialize, serde::Deserialize))]
pub struct Gathers {
    /// Gathers per step.
    pub count: u32,
    /// µs of all of them.
    pub time: f64,
    /// µs of them the op before each (which prefetches it) does not cover.
    pub exposed: f64,
}

/// The gathers device `d` makes under ZeRO-3: it holds one chunk's parameters gathered at a
/// time (FSDP frees them after use), so every F, B or R of another chunk than the last one
/// gathered gathers that chunk again; W needs no parameters. A gather is prefetched during
/// the op before it; the part the op does not cover is exposed. `gather(chunk)` is the µs of
/// one gather of that chunk.
pub fn zero3_gathers(schedule: &Schedule, timeline: &Timeline, d: usize, gather: &dyn Fn(u32) -> f64) -> Gathers {
    let (Some(order), Some(times)) = (schedule.orders.get(d), timeline.devices.get(d)) else {
        return Gathers::default();
    };
    let placement = &schedule.placement;
    let mut held: Option<u32> = None;
    let mut out = Gathers::default();
    let mut before = 0.0;
    for (op, t) in order.iter().zip(&times.ops) {
        for pass in op.passes() {
            if pass.kind == PassKind::W {
                continue;
            }
            let chunk = placement.chunk_of(pass.stage);
            if held != Some(chunk) {
                held = Some(chunk);
                let g = gather(chunk);
                out.count += 1;
                out.time += g;
                out.exposed += (g - before).max(0.0);
            }
        }
        before = t.end - t.start;
    }
    out
}

/// Bytes per parameter a device keeps under ZeRO stage `zero` over `dp` replicas: 16-bit
/// weights (2), gradients (`grad_bytes`: 4 in fp32, 2 in fp16) and Adam's fp32 master weights
/// and two moments (12); stage 1 shards the optimizer state, 2 the gradients too, 3 the
/// weights too.
pub fn static_bytes_per_param(zero: u32, dp: u32, grad_bytes: f64) -> f64 {
    let d = f64::from(dp.max(1));
    let (w, g, o) = (2.0, grad_bytes, 12.0);
    match zero {
        0 => w + g + o,
        1 => w + g + o / d,
        2 => w + (g + o) / d,
        _ => (w + g + o) / d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_zero_stage_shards_more() {
        let bytes: Vec<f64> = (0..4).map(|z| static_bytes_per_param(z, 8, 4.0)).collect();
        assert_eq!(bytes[0], 18.0, "Megatron's 18 bytes per parameter");
        assert_eq!(bytes[1], 6.0 + 12.0 / 8.0, "the distributed optimizer: 6 + 12/d");
        assert!(bytes.windows(2).all(|w| w[1] < w[0]), "{bytes:?}");
        assert_eq!(static_bytes_per_param(3, 1, 4.0), 18.0, "one replica shards nothing");
    }

    #[test]
    fn buckets_add_a_latency_each_and_the_same_bytes() {
        let link = Link { gbps: 100.0, latency: 10.0, group: 4 };
        let one = link.time(Collective::AllReduce, 1e9);
        let split = link.bucketed(Collective::AllReduce, 1e9, 2.0);
        // 1 GB in 80 MB buckets: 12.5 buckets, 13 rings of 6 latency steps each.
        assert!((split - one - 12.0 * 6.0 * 10.0).abs() < 1e-6, "{split} vs {one}");
        assert_eq!(Link { group: 1, ..link }.bucketed(Collective::AllReduce, 1e9, 2.0), 0.0);
    }
}
