//! How far from optimal: the lower bound holds for every family, the exact search is never
//! above a heuristic nor below the bound, and its orders re-simulate to their cost.

use std::sync::Arc;

use bubblescope::bounds::{lower_bound, problem_limit};
use bubblescope::optimal::{optimize, optimize_run, Budget};
use bubblescope::{analyze, run, validate, CostProfile, Costs, ScheduleParams, FAMILIES};
use proptest::prelude::*;

/// Costs with unequal shares: each device's F, B, W from the lists (`--f 1,2,3,4` style).
fn profiled(base: Costs, f: &[u32], b: &[u32], w: &[u32]) -> Costs {
    let devices = f.len();
    let mut profile = CostProfile::uniform(&base, devices);
    profile.f = f.iter().map(|&x| f64::from(x)).collect();
    profile.b = b.iter().map(|&x| f64::from(x)).collect();
    profile.w = w.iter().map(|&x| f64::from(x)).collect();
    Costs { profile: Some(Arc::new(profile)), ..base }
}

/// Checks the bound against one run: at least ideal, at most the cost when the run keeps the
/// problem's limit.
fn check_bound(name: &str, params: &ScheduleParams) -> Result<(), TestCaseError> {
    let family = bubblescope::family(name).unwrap();
    let p = family.own_params(params);
    let Ok(a) = run(name, &p) else { return Ok(()) };
    let limit = problem_limit(Some(family), &p, &a.stats);
    let lb = lower_bound(&a.schedule, &p.costs, Some(limit));
    let tol = 1e-9 * a.stats.cost.max(1.0);
    prop_assert!(lb.value >= a.stats.ideal - tol, "{name} {p:?}: bound {} below ideal {}", lb.value, a.stats.ideal);
    if a.stats.peak_memory <= limit + tol {
        prop_assert!(lb.value <= a.stats.cost + tol, "{name} {p:?}: bound {:?} above cost {}", lb, a.stats.cost);
    }
    // Without a limit the bound can only be lower.
    let free = lower_bound(&a.schedule, &p.costs, None);
    prop_assert!(free.value <= lb.value + tol);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn the_lower_bound_is_at_least_ideal_and_at_most_every_cost(
        devices in 1u32..7, microbatches in 1u32..14,
        (f, b, w) in (0u32..5, 0u32..5, 0u32..5), comm in 0u32..3, limit in proptest::option::of(2u32..16),
    ) {
        let f = if f + b + w == 0 { 1 } else { f };
        let costs = Costs { comm: f64::from(comm), ..Costs::fbw(f64::from(f), f64::from(b), f64::from(w)) };
        let mut params = ScheduleParams::new(devices, microbatches).with_costs(costs);
        params.mem_limit = limit.map(|l| f64::from(l) * f64::from(devices) / 4.0);
        for family in FAMILIES.iter().filter(|f| f.name != "zb-opt") {
            check_bound(family.name, &params)?;
        }
    }

    #[test]
    fn the_lower_bound_holds_for_unequal_stages(
        shares in proptest::collection::vec((1u32..6, 1u32..6, 0u32..4), 2..6), microbatches in 1u32..12,
        comm in 0u32..3,
    ) {
        let devices = shares.len() as u32;
        let f: Vec<u32> = shares.iter().map(|s| s.0).collect();
        let b: Vec<u32> = shares.iter().map(|s| s.1).collect();
        let w: Vec<u32> = shares.iter().map(|s| s.2).collect();
        let base = Costs { comm: f64::from(comm), ..Costs::default() };
        let params = ScheduleParams::new(devices, microbatches).with_costs(profiled(base, &f, &b, &w));
        for family in FAMILIES.iter().filter(|f| f.name != "zb-opt") {
            check_bound(family.name, &params)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_optimum_is_never_above_a_heuristic_nor_below_the_bound(
        devices in 2u32..5, extra in 0u32..4, (f, b, w) in (1u32..4, 1u32..4, 0u32..3), comm in 0u32..2,
        limit in 2u32..9,
    ) {
        let microbatches = devices + extra;
        let costs = Costs { comm: f64::from(comm), ..Costs::fbw(f64::from(f), f64::from(b), f64::from(w)) };
        let limit = f64::from(limit.max(devices));
        let params = ScheduleParams::new(devices, microbatches).with_costs(costs.clone()).with_mem_limit(limit);
        let base = run("zb-auto", &params).unwrap();
        let budget = Budget { nodes: 20_000, max_ops: 256 };
        let opt = optimize_run(bubblescope::family("zb-auto"), &params, &base.schedule, limit, budget).unwrap();
        // A real schedule of the same passes, within the limit, that simulates to its cost.
        prop_assert!(validate(&opt.schedule).iter().all(|d| d.severity != bubblescope::Severity::Error));
        let again = analyze(opt.schedule.clone(), &costs).unwrap();
        prop_assert_eq!(again.stats.cost, opt.cost);
        prop_assert!(again.stats.peak_memory <= limit + 1e-9);
        prop_assert!(opt.cost >= opt.lower_bound - 1e-9, "{} below the bound {}", opt.cost, opt.lower_bound);
        let plain = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
        for name in ["zb-auto", "zb-1p", "zb-2p", "zb-h1", "zb-h2"] {
            let p = if name == "zb-auto" { params.clone() } else { plain.clone() };
            let Ok(h) = run(name, &p) else { continue };
            if h.stats.peak_memory <= limit + 1e-9 {
                prop_assert!(opt.cost <= h.stats.cost, "{name}: optimum {} above {}", opt.cost, h.stats.cost);
            }
        }
        // zb-opt is the same search with its own budget: never above a heuristic either.
        let z = run("zb-opt", &params).unwrap();
        prop_assert!(z.stats.cost >= opt.lower_bound - 1e-9);
        prop_assert!(z.stats.peak_memory <= limit + 1e-9);
    }
}

#[test]
fn at_twice_one_f_one_b_memory_the_optimum_has_no_bubble_and_is_proven() {
    // P = 4, M = 8, F = B = W, no communication, limit 2P·mem-f: ZB-H2 reaches the ideal.
    let params = ScheduleParams::new(4, 8).with_mem_limit(8.0);
    for name in ["zb-auto", "zb-h1"] {
        let family = bubblescope::family(name).unwrap();
        let a = run(name, &family.own_params(&params)).unwrap();
        let opt = optimize_run(Some(family), &params, &a.schedule, 8.0, Budget::default()).unwrap();
        assert_eq!((opt.cost, opt.proven), (24.0, true), "{name}");
        assert_eq!(analyze(opt.schedule, &params.costs).unwrap().stats.cost, 24.0);
    }
    assert_eq!(run("zb-opt", &params).unwrap().stats.cost, 24.0);
}

#[test]
fn a_finished_search_proves_an_optimum_above_the_bound() {
    // P = 3, M = 6, F, B, W = 2, 3, 1 at 1F1B's memory: the bound says 42, no order reaches
    // it; the search proves 44 (ZB-H1's cost).
    let costs = Costs::fbw(2.0, 3.0, 1.0);
    let params = ScheduleParams::new(3, 6).with_costs(costs.clone()).with_mem_limit(3.0);
    let a = run("zb-auto", &params).unwrap();
    // The proof takes about 180,000 nodes, more than the default budget.
    let budget = Budget { nodes: 400_000, ..Budget::default() };
    let opt = optimize(&a.schedule, &costs, Some(3.0), &[], budget).unwrap();
    assert_eq!((opt.lower_bound, opt.cost, opt.proven), (42.0, 44.0, true));
}

#[test]
fn zb_opt_is_never_above_a_published_heuristic_on_a_grid() {
    for devices in 2..=4u32 {
        for microbatches in [devices, 2 * devices] {
            for (f, b, w, comm) in [(1.0, 1.0, 1.0, 0.0), (2.0, 3.0, 1.0, 0.0), (1.0, 1.0, 1.0, 1.0)] {
                for multiple in [1.0, 1.5, 2.0] {
                    let costs = Costs { comm, ..Costs::fbw(f, b, w) };
                    let limit = multiple * f64::from(devices);
                    let plain = ScheduleParams::new(devices, microbatches).with_costs(costs);
                    let params = plain.clone().with_mem_limit(limit);
                    let z = run("zb-opt", &params).unwrap();
                    assert!(z.stats.peak_memory <= limit + 1e-9);
                    for name in ["zb-auto", "zb-1p", "zb-2p", "zb-h1", "zb-h2"] {
                        let p = if name == "zb-auto" { &params } else { &plain };
                        let Ok(h) = run(name, p) else { continue };
                        if h.stats.peak_memory <= limit + 1e-9 {
                            assert!(
                                z.stats.cost <= h.stats.cost,
                                "P {devices} M {microbatches} {f},{b},{w} comm {comm} limit {limit}: zb-opt {} above {name} {}",
                                z.stats.cost,
                                h.stats.cost
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Every permutation of `items`.
fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let head = rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, head.clone());
            out.push(tail);
        }
    }
    out
}

#[test]
fn a_proven_optimum_is_the_least_cost_over_every_order() {
    // P = 2, M = 2: every pair of per-device orders (720 × 720), simulated; the proven
    // optimum must be the least cost among those that run and keep the limit.
    let cases = [
        (Costs::fbw(1.0, 1.0, 1.0), 2.0),
        (Costs { comm: 1.0, ..Costs::fbw(2.0, 3.0, 1.0) }, 1.5),
        (profiled(Costs { comm: 2.0, ..Costs::default() }, &[1, 4], &[1, 3], &[2, 1]), 2.0),
        (profiled(Costs::default(), &[3, 1], &[2, 1], &[1, 2]), 1.0),
    ];
    for (costs, limit) in cases {
        let params = ScheduleParams::new(2, 2).with_costs(costs.clone());
        let base = run("zb-h1", &params).unwrap();
        let opt = optimize(&base.schedule, &costs, Some(limit), &[], Budget::default()).unwrap();
        assert!(opt.proven);
        let (d0, d1) = (permutations(&base.schedule.orders[0]), permutations(&base.schedule.orders[1]));
        let mut least = f64::INFINITY;
        for a in &d0 {
            for b in &d1 {
                let mut s = base.schedule.clone();
                s.orders = vec![a.clone(), b.clone()];
                let Ok(t) = bubblescope::simulate(&s, &bubblescope::StageCosts::for_schedule(&costs, &s)) else {
                    continue;
                };
                let st = bubblescope::stats(&s, &t, &costs);
                if st.peak_memory <= limit + 1e-9 {
                    least = least.min(st.cost);
                }
            }
        }
        assert_eq!(opt.cost, least, "{costs:?} limit {limit}");
    }
}
