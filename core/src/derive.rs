//! A schedule built up step by step, in the order its generator reasons, not in time order:
//! one microbatch's path through the stages, the warm-up forwards, the first backwards, the
//! steady state, the cool-down, and the weight gradients filling the gaps. Each step is a
//! caption and the passes it adds; a chart shows the passes placed so far. Uses the schedule,
//! the simulated timeline and `units`.

use crate::analysis::Analysis;
use crate::schedule::{Op, Pass, PassKind, PlacementKind, Schedule};
use crate::units::Units;

/// One step of a derivation.
#[derive(Clone, Debug, PartialEq)]
pub struct DeriveStep {
    /// A short name ("Warm-up forwards").
    pub title: &'static str,
    /// What the step shows and why, with this run's numbers.
    pub caption: String,
    /// The passes it places.
    pub passes: Vec<Pass>,
}

/// Where an op falls in its device's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Path,
    WarmUp,
    FirstBackward,
    Steady,
    CoolDown,
    WeightGradients,
    Rest,
}

const PHASES: [Phase; 7] = [
    Phase::Path,
    Phase::WarmUp,
    Phase::FirstBackward,
    Phase::Steady,
    Phase::CoolDown,
    Phase::WeightGradients,
    Phase::Rest,
];

/// Whether the op runs a backward that sends an input gradient (B or BW, alone or paired).
fn is_backward(op: &Op) -> bool {
    op.passes().any(|p| p.kind.is_input_grad())
}

/// Whether the op runs a forward.
fn is_forward(op: &Op) -> bool {
    op.passes().any(|p| p.kind == PassKind::F)
}

/// The phase of each op of `order`.
fn phases(order: &[Op]) -> Vec<Phase> {
    let first_backward = order.iter().position(is_backward);
    let last_forward = order.iter().rposition(is_forward);
    order
        .iter()
        .enumerate()
        .map(|(i, op)| {
            let first = op.first();
            if first.kind == PassKind::W {
                return Phase::WeightGradients;
            }
            if !is_forward(op) && !is_backward(op) {
                return Phase::Rest;
            }
            if first.kind == PassKind::F && first.microbatch == 0 && !op.is_pair() {
                return Phase::Path;
            }
            match first_backward {
                None => Phase::WarmUp,
                Some(fb) if i < fb => Phase::WarmUp,
                Some(fb) if i == fb => Phase::FirstBackward,
                _ if last_forward.is_some_and(|lf| i <= lf) => Phase::Steady,
                _ => Phase::CoolDown,
            }
        })
        .collect()
}

/// The derivation of `analysis`'s schedule: the steps that place at least one pass, each
/// with its caption (times in `units`). Every pass of the schedule is placed by exactly one step.
pub fn derive(analysis: &Analysis, units: Units) -> Vec<DeriveStep> {
    let schedule = &analysis.schedule;
    let mut placed: Vec<Vec<Pass>> = vec![Vec::new(); PHASES.len()];
    let mut warm_up = Vec::with_capacity(schedule.orders.len());
    let mut cool_down = Vec::with_capacity(schedule.orders.len());
    let mut w_in_gaps = 0usize;
    let mut w_total = 0usize;
    for order in &schedule.orders {
        let ph = phases(order);
        let last_backward = order.iter().rposition(is_backward);
        warm_up.push(ph.iter().filter(|p| matches!(p, Phase::WarmUp | Phase::Path)).count());
        cool_down.push(ph.iter().filter(|p| **p == Phase::CoolDown).count());
        for (i, (op, phase)) in order.iter().zip(&ph).enumerate() {
            let k = PHASES.iter().position(|p| p == phase).unwrap_or(PHASES.len() - 1);
            placed[k].extend(op.passes());
            if *phase == Phase::WeightGradients {
                w_total += 1;
                if last_backward.is_some_and(|lb| i < lb) {
                    w_in_gaps += 1;
                }
            }
        }
    }
    let first_backward_at: Vec<f64> = schedule
        .orders
        .iter()
        .zip(&analysis.timeline.devices)
        .filter_map(|(order, times)| order.iter().position(is_backward).and_then(|i| times.ops.get(i)).map(|t| t.start))
        .collect();
    // When microbatch 0's forward leaves the last stage: the earliest a backward can start.
    let chain_end = schedule
        .orders
        .iter()
        .zip(&analysis.timeline.devices)
        .flat_map(|(order, times)| order.iter().zip(&times.ops))
        .filter(|(op, _)| op.passes().any(|p| p.kind == PassKind::F && p.microbatch == 0))
        .map(|(_, t)| t.end)
        .fold(0.0, f64::max);
    let numbers = Numbers { schedule, units, warm_up, cool_down, first_backward_at, chain_end, w_in_gaps, w_total };
    PHASES
        .iter()
        .zip(placed)
        .filter(|(_, passes)| !passes.is_empty())
        .map(|(phase, passes)| DeriveStep { title: title(*phase), caption: numbers.caption(*phase), passes })
        .collect()
}

/// The step's short name.
fn title(phase: Phase) -> &'static str {
    match phase {
        Phase::Path => "One microbatch's path",
        Phase::WarmUp => "Warm-up forwards",
        Phase::FirstBackward => "The first backward",
        Phase::Steady => "Steady state",
        Phase::CoolDown => "Cool-down",
        Phase::WeightGradients => "W fills the gaps",
        Phase::Rest => "Everything else",
    }
}

/// What the captions quote.
struct Numbers<'a> {
    schedule: &'a Schedule,
    units: Units,
    warm_up: Vec<usize>,
    cool_down: Vec<usize>,
    first_backward_at: Vec<f64>,
    chain_end: f64,
    w_in_gaps: usize,
    w_total: usize,
}

impl Numbers<'_> {
    fn caption(&self, phase: Phase) -> String {
        let p = self.schedule.devices();
        let placement = &self.schedule.placement;
        match phase {
            Phase::Path => match placement.kind() {
                PlacementKind::Linear => format!(
                    "Microbatch 0's forward runs down the pipeline, device 0 to device {}: the last device waits {} forwards before it can start.",
                    p.saturating_sub(1),
                    p.saturating_sub(1)
                ),
                PlacementKind::V => format!(
                    "The model is cut into {} stages placed as a V: down the devices, then back up. Microbatch 0's forward ends on device 0, beside its start, so the first backward starts early.",
                    placement.stages()
                ),
                PlacementKind::Interleaved => format!(
                    "Each device holds {} chunks (stage s on device s mod {p}): microbatch 0 goes round the devices {} times, each visit a smaller piece.",
                    placement.chunks_per_device(),
                    placement.chunks_per_device()
                ),
                PlacementKind::Wave => format!(
                    "Hanayo folds the V into waves: {} chunks per device, microbatch 0 runs down and up the devices in turn.",
                    placement.chunks_per_device()
                ),
                PlacementKind::TwoDirectional => {
                    "Two copies of the model run in opposite directions: one pipeline's microbatch 0 starts on device 0, the other's on the last device.".to_string()
                }
                PlacementKind::Custom => "Microbatch 0's forward through the stages, as the file places them.".to_string(),
            },
            Phase::WarmUp => format!(
                "Before its first backward each device runs {}: {} (devices 0 to {}). Each holds its activations until its backward: these are the forwards in flight.",
                if placement.chunks_per_device() > 1 { "chunk forwards" } else { "forwards" },
                list(&self.warm_up),
                p.saturating_sub(1)
            ),
            Phase::FirstBackward => {
                let first = self.first_backward_at.iter().copied().fold(f64::INFINITY, f64::min);
                let last = self.first_backward_at.iter().copied().fold(0.0, f64::max);
                let time = |v: f64| self.units.time(v);
                if !first.is_finite() {
                    "Each device's first backward.".to_string()
                } else if first > self.chain_end * (1.0 + 1e-9) + 1e-12 {
                    format!(
                        "The first backward waits for every forward to finish: it starts at {}, though microbatch 0's forward left the last stage at {}. The last device to turn starts its first backward at {}.",
                        time(first),
                        time(self.chain_end),
                        time(last)
                    )
                } else {
                    format!(
                        "The first backward starts where microbatch 0's forward chain ends ({}), then runs back up: the last device to turn starts its first backward at {}. Until then it can only run forwards or wait.",
                        time(first),
                        time(last)
                    )
                }
            }
            Phase::Steady => {
                "In the steady state each device alternates forwards and backwards, so it holds no more activations than at the end of its warm-up.".to_string()
            }
            Phase::CoolDown => format!(
                "After its last forward each device drains its backwards: {} (devices 0 to {}). The devices that turned last now wait for the gradients coming back.",
                list(&self.cool_down),
                p.saturating_sub(1)
            ),
            Phase::WeightGradients => format!(
                "The weight gradients W feed no other device, so they can wait: {} of {} sit before their device's last backward, in time it would otherwise idle.",
                self.w_in_gaps, self.w_total
            ),
            Phase::Rest => "The other passes: recompute, the vocabulary shards' passes and the rest.".to_string(),
        }
    }
}

/// `4, 3, 2, 1`: counts per device.
fn list(counts: &[usize]) -> String {
    counts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::params::{Costs, ScheduleParams};
    use std::collections::HashSet;

    fn derive_cost(a: &Analysis) -> Vec<DeriveStep> {
        derive(a, Units::Cost)
    }

    #[test]
    fn gpipes_first_backward_waits_for_every_forward() {
        let steps = derive_cost(&run("gpipe", 4, 8));
        let first = steps.iter().find(|s| s.title == "The first backward").expect("a first backward");
        // Microbatch 0's forward leaves device 3 at 4; the first backward starts after the last forward, at 11.
        assert!(
            first.caption.contains("starts at 11, though microbatch 0's forward left the last stage at 4"),
            "{}",
            first.caption
        );
        let one_f_one_b = derive_cost(&run("1f1b", 4, 8));
        assert!(one_f_one_b[2].caption.contains("chain ends (4)"), "{}", one_f_one_b[2].caption);
    }

    fn run(name: &str, p: u32, m: u32) -> Analysis {
        let params = ScheduleParams::new(p, m);
        let family = crate::registry::family(name).expect("family");
        let schedule = family.generate(&params).expect("generates");
        analyze(schedule, &Costs::default()).expect("analyzes")
    }

    #[test]
    fn every_pass_is_placed_once_in_every_family() {
        for family in crate::registry::FAMILIES {
            let params = family.own_params(&ScheduleParams::new(4, 8));
            let Ok(schedule) = family.generate(&params) else { continue };
            let Ok(a) = analyze(schedule, &Costs::default()) else { continue };
            let steps = derive(&a, Units::Cost);
            let all: Vec<Pass> = a.schedule.orders.iter().flatten().flat_map(|o| o.passes()).collect();
            let placed: Vec<Pass> = steps.iter().flat_map(|s| s.passes.iter().copied()).collect();
            assert_eq!(placed.len(), all.len(), "{}", family.name);
            assert_eq!(placed.iter().collect::<HashSet<_>>(), all.iter().collect::<HashSet<_>>(), "{}", family.name);
            assert!(steps.iter().all(|s| !s.caption.is_empty()), "{}", family.name);
        }
    }

    #[test]
    fn one_f_one_b_warms_up_p_minus_d_forwards_and_has_no_w_step() {
        let steps = derive_cost(&run("1f1b", 4, 8));
        let titles: Vec<&str> = steps.iter().map(|s| s.title).collect();
        assert_eq!(
            titles,
            ["One microbatch's path", "Warm-up forwards", "The first backward", "Steady state", "Cool-down"]
        );
        // Device d runs P − d forwards before its first backward (microbatch 0's among them).
        assert!(steps[1].caption.contains("4, 3, 2, 1"), "{}", steps[1].caption);
        assert_eq!(steps[0].passes.len(), 4);
        assert_eq!(steps[2].passes.len(), 4);
    }

    #[test]
    fn zero_bubble_places_its_w_in_a_step_of_its_own() {
        let steps = derive_cost(&run("zb-h1", 4, 8));
        let w = steps.iter().find(|s| s.title == "W fills the gaps").expect("a W step");
        assert_eq!(w.passes.len(), 4 * 8);
        assert!(w.passes.iter().all(|p| p.kind == PassKind::W));
        // ZB-H1 moves W into the cool-down's gaps: some W sits before a last backward.
        assert!(!w.caption.starts_with("0 of"), "{}", w.caption);
    }

    #[test]
    fn the_v_says_so() {
        let steps = derive_cost(&run("zb-v", 4, 8));
        assert!(steps[0].caption.contains("placed as a V"), "{}", steps[0].caption);
        assert_eq!(steps[0].passes.len(), 8, "microbatch 0's forward visits 2P stages");
    }
}
