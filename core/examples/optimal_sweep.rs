//! How often the exact search proves its optimum at small sizes, and how long it takes:
//! `cargo run --release -p bubblescope --example optimal_sweep [max-devices] [max-microbatches]`.
//!
//! Every family that generates at P ∈ {2..max-devices}, M ∈ {P..max-microbatches} (defaults 4
//! and 8), under a few cost sets (balanced, communication, unequal F/B/W), solved as
//! `simulate --optimal` solves it (the family's problem limit, the default budget). Prints
//! the instances not proven, the fraction proven and the slowest instance.

use std::time::Instant;

use bubblescope::bounds::problem_limit;
use bubblescope::optimal::Budget;
use bubblescope::registry::optimize_run;
use bubblescope::{run, Costs, ScheduleParams, FAMILIES};

fn main() {
    let args: Vec<u32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let max_p = args.first().copied().unwrap_or(4);
    let max_m = args.get(1).copied().unwrap_or(8);
    let cost_sets_all =
        [(1.0, 1.0, 1.0, 0.0), (1.0, 1.0, 1.0, 1.0), (2.0, 3.0, 1.0, 0.0), (2.0, 3.0, 1.0, 1.0), (3.0, 4.0, 2.0, 1.0)];
    let min_p = std::env::var("MINP").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let pick: Option<usize> = std::env::var("COSTS").ok().and_then(|v| v.parse().ok());
    let cost_sets: Vec<_> =
        cost_sets_all.iter().enumerate().filter(|(i, _)| pick.is_none_or(|p| p == *i)).map(|(_, c)| *c).collect();
    let (mut total, mut proven) = (0, 0);
    let mut worst = (0.0f64, String::new());
    let mut nodes_max = 0u64;
    for p in min_p..=max_p {
        for m in p..=max_m {
            for &(f, b, w, comm) in &cost_sets {
                let costs = Costs { comm, ..Costs::fbw(f, b, w) };
                let only = std::env::var("ONLY").ok();
                let only: Option<Vec<&str>> = only.as_deref().map(|o| o.split(',').collect());
                for family in
                    FAMILIES.iter().filter(|f| f.name != "zb-opt" && only.as_ref().is_none_or(|o| o.contains(&f.name)))
                {
                    let params = family.own_params(&ScheduleParams::new(p, m).with_costs(costs.clone()));
                    let Ok(a) = run(family.name, &params) else { continue };
                    let limit = problem_limit(Some(family), &params, &a.stats);
                    let t = Instant::now();
                    let budget = std::env::var("NODES")
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .map_or(Budget::default(), Budget::of_nodes);
                    let Ok(o) = optimize_run(Some(family), &params, &a.schedule, limit, budget) else {
                        println!("{} P{p} M{m} {f},{b},{w} c{comm}: no optimum", family.name);
                        continue;
                    };
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    total += 1;
                    proven += usize::from(o.proven);
                    nodes_max = nodes_max.max(o.nodes);
                    let label = format!(
                        "{} P{p} M{m} {f},{b},{w} c{comm} ops {}: own {} lb {} bound {} opt {} proven {} nodes {} {ms:.1} ms",
                        family.name,
                        a.schedule.op_count(),
                        a.stats.cost,
                        o.lower_bound,
                        o.bound,
                        o.cost,
                        o.proven,
                        o.nodes
                    );
                    if !o.proven || std::env::var_os("ALL").is_some() {
                        println!("{label}");
                    }
                    if ms > worst.0 {
                        worst = (ms, label);
                    }
                }
            }
        }
    }
    println!("proven {proven}/{total} ({:.1}%), most nodes {nodes_max}", 100.0 * proven as f64 / total.max(1) as f64);
    println!("slowest: {}", worst.1);
}
