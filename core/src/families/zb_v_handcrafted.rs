//! ZB-V (handcrafted): the fixed Zero Bubble V pattern.
//!
//! Source: Qi et al., *Zero Bubble Pipeline Parallelism* (arXiv v2, §6) and the authors'
//! `handcrafted_zb_v.py` (zero-bubble.md §4.6). Two chunks per device in a V; device `r`
//! (0-based) runs, with `n = max(2P − 1, M)` microbatches:
//!
//! 1. warm-up: `2(P − r) − 1` forwards of chunk 0, then `r` pairs (chunk-1 forward, chunk-0
//!    forward), then `P − r` groups (F, B, W) of chunk 1;
//! 2. steady state: while chunk 0 has forwards left or chunk 1 lags behind, one chunk-0 forward
//!    (if any is left), B and W of chunk 0, then F, B, W of chunk 1;
//! 3. cool-down: `r` pairs (B chunk 0, B chunk 1) with their Ws deferred, `P − r` pairs (B chunk
//!    0, the oldest deferred W of chunk 0), then the deferred Ws of chunk 1, then of chunk 0.
//!
//! The pattern is generated for `n` microbatches and every pass of a microbatch `≥ M` is then
//! dropped, so any `M ≥ 1` works: dropping whole microbatches from every device keeps the
//! orders deadlock-free.
//!
//! The details are in `docs/schedule-families.md`, under `families/zb_v_handcrafted.rs`.

use super::formula::{int, min, sym, Assumption, Explanation, Formula, Sym, Term, DERIVED_HERE};
use super::v_common::{fbw_index, Chunk, VPass};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction, ZERO_BUBBLE_V};
use crate::params::ScheduleParams;
use crate::schedule::{PassKind, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-v-handcrafted",
    title: "ZB-V (handcrafted)",
    group: FamilyGroup::VShape,
    summary: "the fixed ZB-V pattern: zero bubble when F = B = W, at 1F1B's memory",
    constraints: "any devices and microbatches (zero bubble needs F = B = W and M ≥ 2P − 1)",
    passes: per_device_microbatch::<6>,
    generate: |params| Ok(zb_v_handcrafted(params.devices, params.microbatches)),
    predict,
    explain,
    ..Family::citing(ZERO_BUBBLE_V)
};

/// The handcrafted ZB-V orders for `devices` devices and `microbatches` microbatches.
pub fn zb_v_handcrafted(devices: u32, microbatches: u32) -> Schedule {
    let v = VPass { devices };
    let mut schedule = Schedule::new(v.placement(), microbatches);
    let generated = microbatches.max((2 * devices).saturating_sub(1));
    for device in 0..devices {
        let mut order = DeviceOrder { v, device, microbatches, next: [[0; 2]; 3], schedule: &mut schedule };
        order.run(generated);
    }
    schedule
}

/// One device's order under construction: the next microbatch of every (kind, chunk).
struct DeviceOrder<'a> {
    v: VPass,
    device: u32,
    /// The real microbatch count; passes of later microbatches are dropped.
    microbatches: u32,
    /// `next[kind][chunk]` for kinds F, B, W.
    next: [[u32; 2]; 3],
    schedule: &'a mut Schedule,
}

impl DeviceOrder<'_> {
    /// Emits the whole pattern for `generated` microbatches (`max(2P − 1, M)`).
    fn run(&mut self, generated: u32) {
        let (p, r) = (self.v.devices, self.device);
        use Chunk::{Down, Up};
        use PassKind::{B, F, W};
        // Warm-up.
        for _ in 0..2 * (p - r) - 1 {
            self.emit(F, Down);
        }
        for _ in 0..r {
            self.emit(F, Up);
            self.emit(F, Down);
        }
        for _ in 0..p - r {
            self.emit_all(&[(F, Up), (B, Up), (W, Up)]);
        }
        // Steady state: alternate one F-B-W group of each chunk. Ends after at most
        // `generated` rounds: each round adds a chunk-1 forward, and it stops once both chunks
        // have all `generated` forwards (chunk 1 never overtakes chunk 0).
        while self.count(F, Up) < self.count(F, Down) || self.count(F, Down) < generated {
            if self.count(F, Down) < generated {
                self.emit(F, Down);
            }
            self.emit_all(&[(B, Down), (W, Down), (F, Up), (B, Up), (W, Up)]);
        }
        // Cool-down: backwards first, weight gradients fill in behind.
        for _ in 0..r {
            self.emit_all(&[(B, Down), (B, Up)]);
        }
        for _ in 0..p - r {
            self.emit_all(&[(B, Down), (W, Down)]);
        }
        for chunk in [Up, Down] {
            while self.count(W, chunk) < self.count(B, chunk) {
                self.emit(W, chunk);
            }
        }
    }

    /// How many passes of `kind` on `chunk` have been emitted (including dropped ones).
    fn count(&self, kind: PassKind, chunk: Chunk) -> u32 {
        self.next[fbw_index(kind)][chunk.index()]
    }

    /// Emits the next pass of `kind` on `chunk`, unless its microbatch is past `M`.
    fn emit(&mut self, kind: PassKind, chunk: Chunk) {
        let slot = &mut self.next[fbw_index(kind)][chunk.index()];
        let microbatch = *slot;
        *slot += 1;
        if microbatch < self.microbatches {
            self.schedule.push(self.device, self.v.on(kind, chunk, self.device, microbatch));
        }
    }

    /// Emits each pass of `passes` in turn.
    fn emit_all(&mut self, passes: &[(PassKind, Chunk)]) {
        for &(kind, chunk) in passes {
            self.emit(kind, chunk);
        }
    }
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    let c = &params.costs;
    let (p, m) = (params.devices, params.microbatches);
    let bubble =
        Formula::new(BUBBLE, vec![Term::new("none: the pattern's second chunk and Ws fill every gap", int(0))]);
    let (two_p, two_m) = (2 * sym(Sym::P), 2 * sym(Sym::M));
    let held = min(min(two_p, two_m), sym(Sym::M) + sym(Sym::D) + 1) * sym(Sym::MemF) / 2;
    let memory = Formula::new(
        DERIVED_HERE,
        vec![Term::new("chunk activations of mem-f/2: 1F1B's 2P once M ≥ 2P−1, fewer before", held)],
    );
    let assumptions = vec![
        Assumption::bubble("F = B = W", c.f == c.b && c.b == c.w),
        Assumption::no_comm(params),
        Assumption::bubble("M ≥ 2P−1", m + 1 >= 2 * p),
        Assumption::memory("mem-w = mem-f", c.mem_w() == c.mem_f),
    ];
    Some(Explanation::new(params, Some(bubble), Some(memory), assumptions))
}

/// Where the paper states the pattern's bubble.
const BUBBLE: &str = "Qi et al., Zero Bubble Pipeline Parallelism (arXiv v2), §6: the handcrafted ZB-V pattern has \
                      zero bubble when F = B = W";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "0 when F = B = W, no communication and M ≥ 2P − 1",
            "min(2P, 2M, M + d + 1)·mem-f/2 on device d (P·mem-f once M ≥ 2P − 1), when mem-w = mem-f",
        )
    })
}

#[cfg(test)]
#[path = "zb_v_handcrafted_tests.rs"]
mod tests;
