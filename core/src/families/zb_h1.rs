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
//!   exact formula for every `M`; it is what [`predict`] reports.
//!
//! The authors' script asserts `M ≥ 2P`; the construction itself is valid whenever the warm-up
//! fits, `M ≥ P−1`, which is what this family accepts.

use super::formula::{int, max, min, sym, Assumption, Explanation, Expr, Formula, Mark, Sym, Term};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction, ZERO_BUBBLE};
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
    explain,
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

/// Peak activation memory of device `d` in the hand-crafted schedule with delay factor
/// `delay`, under the engine's memory model (F allocates mem-f, B releases mem-f − mem-w, W
/// releases mem-w): `min(w+1, M)·mem-f + min(max(M−w−1, 0), delay·d)·mem-w` with
/// `w = delay·(P−1−d)` warm-up forwards.
///
/// Memory only grows at a forward, so the peak is reached right after the last forward of the
/// steady phase: `w + 1` forwards are in flight and `min(steps, delay·d)` Ws pending.
pub(super) fn handcrafted_peak(delay: i64, source: &'static str) -> Formula {
    let (p, m, d) = (sym(Sym::P), sym(Sym::M), sym(Sym::D));
    let in_flight = if delay == 1 { p - d.clone() } else { delay * (p - 1 - d.clone()) + 1 };
    let delayed = if delay == 1 { d } else { delay * d };
    let pending = min(max(m.clone() - in_flight.clone(), int(0)), delayed);
    Formula::new(
        source,
        vec![
            Term::new("forwards in flight: the warm-up and one more, at most M", min(in_flight, m) * sym(Sym::MemF)),
            Term::new("delayed Ws: what their Bs left, one per microbatch of delay", pending * sym(Sym::MemW)),
        ],
    )
}

/// The hand-crafted schedules' bubble with delay factor `delay`: `(P−1)·(F+B+delay·(comm−W))`
/// (ZB-H1 at delay 1 has no communication term: its assumptions rule communication out).
pub(super) fn handcrafted_bubble(delay: i64, params: &ScheduleParams) -> Formula {
    let (p, m) = (params.devices, params.microbatches);
    let last = m.saturating_sub(1);
    let times = |e: Expr| (sym(Sym::P) - 1) * e;
    let mut terms = vec![
        Term::new("fill: the last device waits for the first forward on every device before it", times(sym(Sym::F)))
            .marking(vec![Mark { device: p - 1, passes: (0..p.saturating_sub(1)).map(|s| Pass::f(s, 0)).collect() }]),
        Term::new("drain: the first device waits for the last B on every device after it", times(sym(Sym::B)))
            .marking(vec![Mark { device: 0, passes: (1..p).map(|s| Pass::b(s, last)).collect() }]),
    ];
    if delay > 1 {
        terms.push(Term::new("the hops the longer warm-up waits for", times(delay * sym(Sym::Comm))));
    }
    let w = if delay == 1 { sym(Sym::W) } else { delay * sym(Sym::W) };
    terms.push(Term::minus("delayed Ws fill the drain", times(w)));
    Formula::new(TABLE_2, terms)
}

/// Where the Zero Bubble paper states the hand-crafted schedules' bubble and memory.
const TABLE_2: &str = "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024), Table 2";

/// An assumption that holds on a single device whatever `holds` says.
fn unless_one_device(params: &ScheduleParams, text: &str, holds: bool) -> Assumption {
    Assumption::bubble(text, params.devices == 1 || holds)
}

/// The paper's closed forms: see the module docs for where the bubble formula holds.
fn explain(params: &ScheduleParams) -> Option<Explanation> {
    check_warm_up(params, FAMILY.name, 1).ok()?;
    let c = &params.costs;
    let assumptions = vec![
        unless_one_device(params, "no communication (comm = 0)", c.comm == 0.0),
        unless_one_device(params, "W ≤ F", c.w <= c.f),
        unless_one_device(params, "M ≥ P", params.microbatches >= params.devices),
    ];
    let memory = handcrafted_peak(1, MEMORY);
    Some(Explanation::new(params, Some(handcrafted_bubble(1, params)), Some(memory), assumptions))
}

/// ZB-H1's memory: the paper's for `M ≥ P`, and exact for every `M`.
const MEMORY: &str = "Qi et al. (ICLR 2024), Table 2: (p−i+1)·M_B + (i−1)·M_W for worker i when M ≥ P; \
                      the min and max for M = P−1 derived here, proven by property test";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction("(P−1)(F+B−W), with comm 0, W ≤ F and M ≥ P", "(P−d)·mem-f + d·mem-w on device d (M ≥ P)")
    })
}

#[cfg(test)]
#[path = "zb_h1_tests.rs"]
mod tests;

/// The p = 4 golden orders of all linear Zero Bubble families, shared by their tests.
#[cfg(test)]
#[path = "zb_golden.rs"]
pub(super) mod golden;
