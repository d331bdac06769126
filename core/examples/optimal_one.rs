//! One exact search, timed, as `simulate --optimal` runs it (the family's problem limit):
//! `cargo run --release -p bubblescope --example optimal_one -- FAMILY P M F B W COMM [NODES]`
//! (defaults: zb-v 4 8 2 3 1.5 0.5 and the default budget).
use std::time::Instant;

use bubblescope::bounds::problem_limit;
use bubblescope::optimal::Budget;
use bubblescope::registry::optimize_run;
use bubblescope::{family, run, Costs, ScheduleParams};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: f64| a.get(i).and_then(|v| v.parse().ok()).unwrap_or(d);
    let name = a.first().map_or("zb-v", String::as_str);
    let Some(f) = family(name) else {
        eprintln!("error: unknown family `{name}`\n  hint: `bubblescope list` prints them");
        std::process::exit(2);
    };
    let costs = Costs { comm: num(6, 0.5), ..Costs::fbw(num(3, 2.0), num(4, 3.0), num(5, 1.5)) };
    let params = f.own_params(&ScheduleParams::new(num(1, 4.0) as u32, num(2, 8.0) as u32).with_costs(costs));
    let r = match run(name, &params) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let limit = problem_limit(Some(f), &params, &r.stats);
    let budget = a.get(7).and_then(|v| v.parse().ok()).map_or(Budget::default(), Budget::of_nodes);
    let t = Instant::now();
    let o = match optimize_run(Some(f), &params, &r.schedule, limit, budget) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{name}: own {} lb {} bound {} opt {} proven {} nodes {} in {:.1} ms",
        r.stats.cost,
        o.lower_bound,
        o.bound,
        o.cost,
        o.proven,
        o.nodes,
        t.elapsed().as_secs_f64() * 1e3
    );
}
