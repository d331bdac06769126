//! ZB-H1: 1F1B with the backward split into B (input gradient) and W (weight gradient), the
//! Ws of device `d` delayed by `d` microbatches so every device holds 1F1B's `P` microbatches
//! of activations while a third of 1F1B's bubble is filled (Qi et al., *Zero Bubble Pipeline
//! Parallelism*, ICLR 2024, §2.1; the authors' `efficiency.get_hand_schedule(warmup_c=1)`).
//!
//! Device `d` runs `P−1−d` warm-up forwards, then `M` steps of "F (while any are left), B, and
//! W once the warm-up plus the step count reaches `P−1`", then flushes the `d` delayed Ws. The
//! Ws run in FIFO order, so device `d` runs the W of microbatch `j` right after the B of
//! microbatch `j+d`. [`handcrafted`] builds this family and ZB-H2 (delay factor 2).
//!
//! Closed forms ([`predict`]), checked over ranges of sizes and integer costs in the tests:
//! * bubble `cost − M(F+B+W) = (P−1)(F+B−W)` (paper Table 2) holds when there is no
//!   communication, `W ≤ F` and `M ≥ P` (W may exceed B), and on a single device. We found this
//!   range by simulating every `P ≤ 6`, `P−1 ≤ M ≤ 3P+1` and integer costs `0..=4`: inside it
//!   the formula is exact, outside it fails except at `W = 0` (where it also holds for
//!   `M = P−1`); with communication it held nowhere in that range. Outside the range no bubble
//!   is predicted;
//! * peak activation memory of device `d` is `(P−d)·mem-f + d·mem-w` (the paper's
//!   `(p−i+1)M_B + (i−1)M_W` for the 1-based worker `i`) when `M ≥ P`; at `M = P−1` the last
//!   forward comes one step earlier and the peaks are lower. [`handcrafted_peak`] gives the
//!   exact value for every `M`; it is what [`predict`] reports.
//!
//! The authors' script asserts `M ≥ 2P`; the construction itself is valid whenever the warm-up
//! fits, `M ≥ P−1`, which is what this family accepts.

use super::{per_device_microbatch, BubbleQuantity, Family, FamilyGroup, Prediction, ZERO_BUBBLE};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "zb-h1",
    title: "ZB-H1",
    group: FamilyGroup::ZeroBubble,
    summary: "1F1B with split backward; W delayed so every device keeps 1F1B's memory: a third of its bubble",
    constraints: "microbatches ≥ devices − 1",
    passes: per_device_microbatch::<3>,
    generate: |params| handcrafted(params, FAMILY.name, 1),
    predict,
    ..Family::citing(ZERO_BUBBLE)
};

/// Checks that the first device's `delay·(P−1)` warm-up forwards fit in the microbatches.
pub(super) fn check_warm_up(params: &ScheduleParams, family: &str, delay: u32) -> Result<(), ParamError> {
    let needed = u64::from(delay) * u64::from(params.devices.saturating_sub(1));
    if u64::from(params.microbatches) >= needed {
        return Ok(());
    }
    let formula = if delay == 1 { "devices − 1".to_string() } else { format!("{delay}·(devices − 1)") };
    Err(ParamError::new(
        Field::Microbatches,
        format!(
            "{family} needs microbatches ≥ {formula} = {needed} for {} devices, found {}",
            params.devices, params.microbatches
        ),
    )
    .hint(format!("use at least {needed} microbatches, or fewer devices"))
    .hint("zb-1p, zb-2p and zb-auto accept any number of microbatches"))
}

/// The hand-crafted Zero Bubble orders with W delay factor `delay` (1 for ZB-H1, 2 for
/// ZB-H2): device `d` runs `delay·(P−1−d)` warm-up forwards and delays its Ws by `delay·d`
/// microbatches, flushing them at the tail.
///
/// Refuses, naming `family`, fewer than `delay·(devices − 1)` microbatches ([`check_warm_up`]):
/// with fewer the first devices would get fewer passes than microbatches.
pub(super) fn handcrafted(params: &ScheduleParams, family: &str, delay: u32) -> Result<Schedule, ParamError> {
    check_warm_up(params, family, delay)?;
    let (devices, microbatches) = (params.devices, params.microbatches);
    let mut schedule = Schedule::new(Placement::linear(devices), microbatches);
    let last_warm_up = delay * (devices - 1);
    for d in 0..devices {
        let warm_up = delay * (devices - 1 - d);
        let (mut forwards, mut weights) = (0, 0);
        for _ in 0..warm_up {
            schedule.push(d, Pass::f(d, forwards));
            forwards += 1;
        }
        for step in 0..microbatches {
            if warm_up + step < microbatches {
                schedule.push(d, Pass::f(d, forwards));
                forwards += 1;
            }
            schedule.push(d, Pass::b(d, step));
            if warm_up + step >= last_warm_up {
                schedule.push(d, Pass::w(d, weights));
                weights += 1;
            }
        }
        for mb in weights..microbatches {
            schedule.push(d, Pass::w(d, mb));
        }
    }
    Ok(schedule)
}

/// Peak activation memory of `device` in the hand-crafted schedule with delay factor `delay`,
/// under the engine's memory model (F allocates mem-f, B releases mem-f − mem-w, W releases
/// mem-w).
///
/// Memory only grows at a forward, so the peak is reached right after the last forward of the
/// steady phase: `warm-up + 1` forwards are in flight and `min(step, delay·d)` Ws pending.
pub(super) fn handcrafted_peak(params: &ScheduleParams, device: u32, delay: u32) -> f64 {
    let (p, m) = (params.devices, params.microbatches);
    let (mem_f, mem_w) = (params.costs.mem_f, params.costs.mem_w());
    let warm_up = delay * (p - 1 - device);
    if m <= warm_up {
        return f64::from(m) * mem_f;
    }
    let last_step = m - warm_up - 1;
    f64::from(warm_up + 1) * mem_f + f64::from(last_step.min(delay * device)) * mem_w
}

/// The paper's closed forms: see the module docs for where the bubble formula holds.
fn predict(params: &ScheduleParams) -> Option<Prediction> {
    if check_warm_up(params, FAMILY.name, 1).is_err() {
        return None;
    }
    let c = &params.costs;
    let (p, m) = (params.devices, params.microbatches);
    let holds = p == 1 || (c.comm == 0.0 && c.w <= c.f && m >= p);
    Some(Prediction {
        bubble: holds.then(|| f64::from(p - 1) * (c.f + c.b - c.w)),
        bubble_formula: "(P−1)(F+B−W), with comm 0, W ≤ F and M ≥ P",
        bubble_quantity: BubbleQuantity::CostMinusIdeal,
        peak_memory: Some((0..p).map(|d| handcrafted_peak(params, d, 1)).collect()),
        memory_formula: "(P−d)·mem-f + d·mem-w on device d (M ≥ P)",
    })
}

#[cfg(test)]
#[path = "zb_h1_tests.rs"]
mod tests;

/// The p = 4 golden orders of all linear Zero Bubble families, shared by their tests.
#[cfg(test)]
#[path = "zb_golden.rs"]
pub(super) mod golden;
