//! ZB-H2: ZB-H1 with twice the warm-up forwards and the Ws reordered to the tail, turning
//! 1F1B's trapezoid into a parallelogram: near-zero bubble at about twice 1F1B's activation
//! memory (Qi et al., *Zero Bubble Pipeline Parallelism*, ICLR 2024, §2.2; the authors'
//! `efficiency.get_hand_schedule(warmup_c=2)`).
//!
//! Device `d` runs `2(P−1−d)` warm-up forwards, then `M` steps of "F (while any are left), B,
//! and W once the warm-up plus the step count reaches `2(P−1)`", then flushes its `2d` delayed
//! Ws (the generator is shared with ZB-H1: [`super::zb_h1`]).
//!
//! Closed forms ([`predict`]), checked over ranges of sizes and integer costs in the tests:
//! * bubble `cost − M(F+B+W) = (P−1)(F+B+2·comm−2W)` (the authors' assertion in
//!   `efficiency.py`; paper Table 2 without communication) holds when `W ≤ F`,
//!   `2W ≤ F+B+2·comm`, `2·comm ≤ F+B` and `M ≥ 2P−1`, and on a single device. We found this
//!   range by simulating every `P ≤ 6`, `2(P−1) ≤ M ≤ 3P+1`, integer costs `0..=4` and comm
//!   `0..=2`: inside it the formula is exact; the cases outside it where the formula also
//!   holds have a zero F, B or W, or two devices and a large comm. Outside the range no bubble
//!   is predicted;
//! * peak activation memory of device `d` is `(2P−2d−1)·mem-f + 2d·mem-w` (the paper's
//!   `(2p−2i+1)M_B + (2i−2)M_W` for the 1-based worker `i`) when `M ≥ 2P−1`; at `M = 2(P−1)`
//!   the peaks are lower, and [`predict`] reports the exact value for every `M`.
//!
//! The cost is the longest per-device span (the papers' metric): device 0 starts first and the
//! last device ends last, so the makespan is longer than the cost.

use super::formula::{Assumption, Explanation};
use super::zb_h1::{check_warm_up, handcrafted, handcrafted_bubble, handcrafted_peak};
use super::{Family, Prediction};
use crate::params::ScheduleParams;

/// The registry entry: ZB-H1's construction with twice the delay, so its group, pass count
/// and paper.
pub const FAMILY: Family = Family {
    name: "zb-h2",
    title: "ZB-H2",
    summary: "more warm-up forwards and W reordered to the tail: near-zero bubble at about twice 1F1B's memory",
    constraints: "microbatches ≥ 2(devices − 1)",
    generate: |params| handcrafted(params, FAMILY.name, 2),
    predict,
    explain,
    ..super::zb_h1::FAMILY
};

/// The closed forms: see the module docs for where the bubble formula holds.
fn explain(params: &ScheduleParams) -> Option<Explanation> {
    check_warm_up(params, FAMILY.name, 2).ok()?;
    let c = &params.costs;
    let one = params.devices == 1;
    let bubble = |text: &str, holds: bool| Assumption::bubble(text, one || holds);
    let assumptions = vec![
        bubble("W ≤ F", c.w <= c.f),
        bubble("2W ≤ F+B+2·comm", 2.0 * c.w <= c.f + c.b + 2.0 * c.comm),
        bubble("2·comm ≤ F+B", 2.0 * c.comm <= c.f + c.b),
        bubble("M ≥ 2P−1", params.microbatches >= 2 * params.devices - 1),
    ];
    let memory = handcrafted_peak(2, MEMORY);
    Some(Explanation::new(params, Some(handcrafted_bubble(2, params)), Some(memory), assumptions))
}

/// ZB-H2's memory: the paper's for `M ≥ 2P−1`, and exact for every `M`.
const MEMORY: &str = "Qi et al. (ICLR 2024), Table 2: (2p−2i+1)·M_B + (2i−2)·M_W for worker i when M ≥ 2P−1; \
                      the min and max for M = 2P−2 derived here, proven by property test";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "(P−1)(F+B+2·comm−2W), with W ≤ F, 2W ≤ F+B+2·comm, 2·comm ≤ F+B and M ≥ 2P−1",
            "(2P−2d−1)·mem-f + 2d·mem-w on device d (M ≥ 2P−1)",
        )
    })
}

#[cfg(test)]
#[path = "zb_h2_tests.rs"]
mod tests;
