//! Per-stage costs: uniform lists equal single numbers, and unequal stages time as an
//! independent evaluation of the same orders says.

use std::sync::Arc;

use bubblescope::{run, CostProfile, Costs, Op, PassKind, ScheduleParams, FAMILIES};
use proptest::prelude::*;

/// Costs with every device's share given as an explicit, equal list — not collapsed to the
/// single number as `Costs::with_profile` does — so the per-stage mapping itself is tested.
fn explicit_uniform(c: &Costs, devices: u32) -> Costs {
    Costs { profile: Some(Arc::new(CostProfile::uniform(c, devices as usize))), ..c.clone() }
}

proptest! {
    #![proptest_config(crate::proptest_cases(48))]

    #[test]
    fn a_list_of_equal_values_gives_what_the_single_number_gives(
        devices in 2u32..6, microbatches in 1u32..12, f in 1u32..6, b in 1u32..6, w in 1u32..6, comm in 0u32..3,
    ) {
        let scalar = Costs { comm: f64::from(comm), ..Costs::fbw(f64::from(f), f64::from(b), f64::from(w)) };
        let listed = scalar.clone().with_profile(CostProfile::uniform(&scalar, devices as usize), devices);
        let explicit = explicit_uniform(&scalar, devices);
        for family in FAMILIES {
            let base = ScheduleParams::new(devices, microbatches);
            let Ok(a) = run(family.name, &base.clone().with_costs(scalar.clone())) else { continue };
            let b = run(family.name, &base.clone().with_costs(listed.clone())).expect("the same parameters run");
            prop_assert_eq!(&a.stats, &b.stats, "{}", family.name);
            prop_assert_eq!(&a.schedule, &b.schedule, "{}", family.name);
            // The uncollapsed table: the same orders where the heuristics do not read floats
            // differently, and always the same work and a cost within rounding.
            let c = run(family.name, &base.with_costs(explicit.clone())).expect("the same parameters run");
            let tol = 1e-9 * a.stats.cost.max(1.0);
            prop_assert!((a.stats.cost - c.stats.cost).abs() <= tol, "{}: {} vs {}", family.name, a.stats.cost, c.stats.cost);
            prop_assert!((a.stats.ideal - c.stats.ideal).abs() <= tol, "{}", family.name);
        }
    }

    #[test]
    fn one_f_one_b_and_gpipe_time_unequal_stages_as_a_plain_evaluation_does(
        f in proptest::collection::vec(1u32..9, 2..6), b_scale in 1u32..3, w in 0u32..4, comm in 0u32..3,
        microbatches in 1u32..10,
    ) {
        let devices = f.len() as u32;
        let fl: Vec<f64> = f.iter().map(|&x| f64::from(x)).collect();
        let bl: Vec<f64> = fl.iter().map(|x| x * f64::from(b_scale)).collect();
        let base = Costs { comm: f64::from(comm), ..Costs::fbw(1.0, 1.0, f64::from(w)) };
        let mut profile = CostProfile::uniform(&base, devices as usize);
        profile.f = fl.clone();
        profile.b = bl.clone();
        let costs = base.with_profile(profile, devices);
        for name in ["1f1b", "gpipe"] {
            let a = run(name, &ScheduleParams::new(devices, microbatches).with_costs(costs.clone())).expect("runs");
            let expected = evaluate(&a.schedule.orders, &fl, &bl, f64::from(w), f64::from(comm), microbatches);
            prop_assert!((a.stats.makespan - expected).abs() < 1e-9, "{name}: simulated {} vs evaluated {expected}", a.stats.makespan);
            let busiest = (0..devices as usize).map(|d| f64::from(microbatches) * (fl[d] + bl[d] + f64::from(w))).fold(0.0, f64::max);
            prop_assert!((a.stats.busiest_work - busiest).abs() < 1e-9, "{name}: busiest work {} vs {busiest}", a.stats.busiest_work);
            let mean = (0..devices as usize).map(|d| f64::from(microbatches) * (fl[d] + bl[d] + f64::from(w))).sum::<f64>() / f64::from(devices);
            prop_assert!((a.stats.ideal - mean).abs() < 1e-9, "{name}: ideal {} vs mean work {mean}", a.stats.ideal);
            prop_assert!(a.stats.bubble_rate >= a.stats.bubble_rate_paper && a.stats.bubble_rate_paper >= 0.0);
        }
    }

    #[test]
    fn gpipe_forwards_end_at_the_flow_shop_bound(
        f in proptest::collection::vec(1u32..9, 2..7), microbatches in 1u32..12,
    ) {
        // Identical jobs through machines in series: the last one leaves the last machine at
        // Σ p_j + (M − 1) · max p_j (no communication).
        let devices = f.len() as u32;
        let fl: Vec<f64> = f.iter().map(|&x| f64::from(x)).collect();
        let base = Costs::fbw(1.0, 1.0, 1.0);
        let mut profile = CostProfile::uniform(&base, devices as usize);
        profile.f = fl.clone();
        let a = run("gpipe", &ScheduleParams::new(devices, microbatches).with_costs(base.with_profile(profile, devices))).expect("runs");
        let last = a.timeline.devices[devices as usize - 1].ops.iter().take(microbatches as usize).map(|o| o.end).fold(0.0, f64::max);
        let bound = fl.iter().sum::<f64>() + f64::from(microbatches - 1) * fl.iter().copied().fold(0.0, f64::max);
        prop_assert!((last - bound).abs() < 1e-9, "last forward ends at {last}, flow shop says {bound}");
    }
}

/// Times linear-pipeline orders by the textbook rule, written independently of the simulator:
/// an op starts when its device is free and its input has arrived (`comm` after the producer
/// ends on the neighbouring device); a W follows its own B. Iterates until every op is placed.
fn evaluate(orders: &[Vec<Op>], f: &[f64], b: &[f64], w: f64, comm: f64, microbatches: u32) -> f64 {
    let p = orders.len();
    let m = microbatches as usize;
    let (mut fend, mut bend) = (vec![vec![f64::NAN; m]; p], vec![vec![f64::NAN; m]; p]);
    let mut next = vec![0usize; p];
    let mut free = vec![0.0f64; p];
    loop {
        let mut progressed = false;
        for d in 0..p {
            while let Some(Op::One(pass)) = orders[d].get(next[d]) {
                let mb = pass.microbatch as usize;
                let ready = match pass.kind {
                    PassKind::F if d == 0 => Some(0.0),
                    PassKind::F => Some(fend[d - 1][mb] + comm),
                    PassKind::B | PassKind::BW if d + 1 == p => Some(fend[d][mb]),
                    PassKind::B | PassKind::BW => Some(bend[d + 1][mb] + comm),
                    PassKind::W => Some(bend[d][mb]),
                    PassKind::R => Some(fend[d][mb]),
                    // This oracle covers transformer passes only.
                    PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => None,
                };
                let Some(ready) = ready.filter(|r| !r.is_nan()) else { break };
                let start = free[d].max(ready);
                let dur = match pass.kind {
                    PassKind::F => f[d],
                    PassKind::B => b[d],
                    PassKind::W => w,
                    PassKind::BW => b[d] + w,
                    PassKind::R => f[d],
                    PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => 0.0,
                };
                free[d] = start + dur;
                match pass.kind {
                    PassKind::F => fend[d][mb] = free[d],
                    PassKind::B => bend[d][mb] = free[d],
                    PassKind::BW => bend[d][mb] = free[d],
                    PassKind::W | PassKind::R | PassKind::S | PassKind::T | PassKind::IF | PassKind::IB => {}
                }
                next[d] += 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    assert!((0..p).all(|d| next[d] == orders[d].len()), "the evaluation deadlocked");
    free.iter().copied().fold(0.0, f64::max)
}

proptest! {
    #![proptest_config(crate::proptest_cases(24))]

    #[test]
    fn attribution_parts_add_up_to_the_gap_for_every_family(
        f in proptest::collection::vec(1u32..6, 4), b in 1u32..4, comm in 0u32..3, microbatches in 2u32..10,
    ) {
        let base = Costs { comm: f64::from(comm), ..Costs::fbw(1.0, f64::from(b), 1.0) };
        let mut profile = CostProfile::uniform(&base, 4);
        profile.f = f.iter().map(|&x| f64::from(x)).collect();
        let costs = base.with_profile(profile, 4);
        for family in FAMILIES {
            let Ok(a) = run(family.name, &ScheduleParams::new(4, microbatches).with_costs(costs.clone())) else { continue };
            let parts = bubblescope::attribution::attribute(&a, &costs).expect("re-simulates");
            let gap = a.stats.cost - a.stats.ideal;
            prop_assert!((parts.overall.total() - gap).abs() <= 1e-9 * gap.abs().max(1.0), "{}: {parts:?} vs {gap}", family.name);
            for (p, d) in parts.per_device.iter().zip(&a.stats.per_device) {
                prop_assert!((p.total() - d.idle).abs() <= 1e-9 * d.idle.abs().max(1.0), "{}", family.name);
            }
            // The communication part is the difference of two simulations of the same orders.
            let free = bubblescope::analyze(a.schedule.clone(), &Costs { comm: 0.0, ..costs.clone() }).expect("runs");
            prop_assert!((parts.overall.communication - (a.stats.cost - free.stats.cost)).abs() < 1e-9);
        }
    }
}
