//! Chimera: two pipelines in opposite directions over the same devices (Li and Hoefler,
//! SC 2021, arXiv 2107.06925; peers.md §3.4).
//!
//! The "down" pipeline maps stage `s` to device `s`, the "up" pipeline maps its stage `s` to
//! device `P−1−s` ([`Placement::two_directional`]): every device holds one stage of each,
//! i.e. two model replicas' worth of weights, and every stage runs at the full share (stage
//! scale 1). Microbatches `0..M/2` go down, `M/2..M` go up
//! ([`Placement::pipeline_microbatches`]). Backward is fused (BW).
//!
//! # The order
//!
//! The paper schedules each pipeline 1F1B and merges them; with an even number of devices
//! the merge has no conflict. We build that merge in unit time slots (forward = backward =
//! 1 slot, the setting of the paper's bubble count; MindSpeed's Chimera builds the same kind
//! of slot table), then keep only each device's order (the simulator supplies the real times). The microbatches of a pipeline come
//! in *basic units* of `P/2`; microbatch `i` of unit `u` starts at slot `b = 2P·u + 2i`
//! (two slots apart, so the two directions take alternate slots), and on device `d`
//!
//! * down: forward at `b + d`, backward at `b + 2P−1−d`;
//! * up: forward at `b + P−1−d`, backward at `b + P+d`.
//!
//! The details are in `docs/schedule-families.md`, under `families/chimera.rs`.

use super::formula::{abs, floor_div, int, max, min, sym, Assumption, Explanation, Formula, Sym, Term, DERIVED_HERE};
use super::{per_device_microbatch, Family, FamilyGroup, Prediction};
use crate::error::{Field, ParamError};
use crate::params::ScheduleParams;
use crate::schedule::{Pass, Placement, Schedule};

/// The registry entry.
pub const FAMILY: Family = Family {
    name: "chimera",
    title: "Chimera",
    group: FamilyGroup::TwoDirectional,
    summary: "two pipelines in opposite directions over the same devices, each 1F1B on half the microbatches",
    reference: "Li and Hoefler, Chimera (SC 2021)",
    url: "https://arxiv.org/abs/2107.06925",
    constraints: "devices even; microbatches even; two replicas of the weights",
    passes: per_device_microbatch::<2>,
    generate: |params| {
        check_even(params)?;
        Ok(chimera(params.devices, params.microbatches))
    },
    predict,
    explain,
    ..Family::DEFAULTS
};

fn check_even(params: &ScheduleParams) -> Result<(), ParamError> {
    let (p, m) = (params.devices, params.microbatches);
    if p % 2 == 1 {
        return Err(ParamError::new(Field::Devices, format!("chimera needs an even number of devices, found {p}"))
            .hint("the two directions share every device without conflict only when devices is even")
            .hint(format!("use {} devices", even_neighbours(p))));
    }
    if m % 2 == 1 {
        return Err(ParamError::new(
            Field::Microbatches,
            format!("chimera needs an even number of microbatches, found {m}"),
        )
        .hint("each direction runs half of the microbatches")
        .hint(format!("use {} microbatches", even_neighbours(m))));
    }
    Ok(())
}

/// The even numbers next to odd `n`, for hints: "2" for 1, else "n−1 or n+1".
fn even_neighbours(n: u32) -> String {
    if n <= 1 {
        "2".to_string()
    } else {
        format!("{} or {}", n - 1, n.saturating_add(1))
    }
}

/// The Chimera orders for an even number of `devices` and `microbatches`.
pub fn chimera(devices: u32, microbatches: u32) -> Schedule {
    let placement = Placement::two_directional(devices);
    let down = placement.pipeline_microbatches(0, microbatches);
    let up = placement.pipeline_microbatches(1, microbatches);
    let mut schedule = Schedule::new(placement, microbatches);
    let (p, unit) = (u64::from(devices), u64::from(devices / 2).max(1));
    for device in 0..devices {
        let d = u64::from(device);
        let up_stage = devices + (devices - 1 - device);
        let mut slotted = Vec::with_capacity(2 * microbatches as usize);
        for (q, (down_mb, up_mb)) in down.clone().zip(up.clone()).enumerate() {
            let q = q as u64;
            let base = 2 * p * (q / unit) + 2 * (q % unit);
            slotted.push((base + d, Pass::f(device, down_mb)));
            slotted.push((base + 2 * p - 1 - d, Pass::bw(device, down_mb)));
            slotted.push((base + p - 1 - d, Pass::f(up_stage, up_mb)));
            slotted.push((base + p + d, Pass::bw(up_stage, up_mb)));
        }
        slotted.sort_unstable_by_key(|&(slot, _)| slot);
        for (_, pass) in slotted {
            schedule.push(device, pass);
        }
    }
    schedule
}

fn explain(params: &ScheduleParams) -> Option<Explanation> {
    check_even(params).ok()?;
    let (p, m) = (sym(Sym::P), sym(Sym::M));
    let (forward, backward) = (sym(Sym::F), sym(Sym::B) + sym(Sym::W));
    let bubble = Formula::new(
        BUBBLE,
        vec![
            Term::new(
                "the two directions' fill and drain, meeting in the middle",
                (p.clone() - 2) * max(forward.clone(), backward.clone()),
            ),
            Term::new(
                "each further round of P microbatches, where forwards and backwards of unequal length misalign",
                (m.clone() / p.clone() - 1) * (p.clone() - 2) * abs(backward - forward),
            ),
        ],
    );
    let half = floor_div(m, int(2));
    let d = sym(Sym::D);
    let slots = p.clone() / 2 + 1 + min(d.clone(), p.clone() - 1 - d.clone());
    let held = min(half.clone(), p - d.clone()) + min(half, d + 1);
    let memory = Formula::new(
        DERIVED_HERE,
        vec![Term::new(
            "device d holds the slots between its first forward and first backward of both directions, \
             at most the microbatches each direction has sent it",
            min(slots, held) * sym(Sym::MemF),
        )],
    );
    let multiple = params.microbatches % params.devices == 0;
    let assumptions = vec![Assumption::no_comm(params), Assumption::bubble("M a multiple of P", multiple)];
    Some(Explanation::new(params, Some(bubble), Some(memory), assumptions))
}

/// Where Chimera's bubble comes from.
const BUBBLE: &str = "Li and Hoefler, Chimera (SC 2021), bubble ratio (D−2)/(2N+D−2) when a forward and a \
                      backward take the same time; this form for any costs derived here, proven by property test";

fn predict(params: &ScheduleParams) -> Option<Prediction> {
    explain(params).map(|e| {
        e.prediction(
            "(P−2)·max(F, B+W) + (M/P−1)(P−2)·|B+W−F|, M a multiple of P; (P/2−1)(F+B+W) when F = B+W",
            "min(P/2 + 1 + min(d, P−1−d), min(M/2, P−d) + min(M/2, d+1))·mem-f on device d",
        )
    })
}

#[cfg(test)]
#[path = "chimera_tests.rs"]
mod tests;
