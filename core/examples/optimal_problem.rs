//! One problem of the exact search as JSON, with the search's answer, for an independent
//! solver to check (`tools/cp-sat-check.sh`):
//! `cargo run --release -p bubblescope --example optimal_problem -- FAMILY P M F B W COMM`.
//!
//! The problem is what [`bubblescope::optimal`] orders: every op of the family's schedule on
//! its device, with its time, the activation memory it allocates as it starts and releases
//! as it ends, the dependency keys it waits for and those it provides (a key's producer is
//! the first op that provides it; an op waits for a key's producer to end, plus `comm` when
//! the producer runs on another device), and the family's memory limit (`null`: none). The
//! cost of per-device orders is the longest device span when every op starts as soon as
//! possible. `search` is what `simulate --optimal` answers with the default budget.
//! `optimal_problem --families` lists the families the search takes (one per line).
//! `optimal_problem --time FAMILY P M F B W COMM < orders.json` reads per-device orders of
//! the problem's ops (`[[op index, …], …]`, indices into `ops`) and prints what Bubblescope's
//! simulator makes of them: `{"cost", "fits"}`, judged by [`bubblescope::optimal::measure`]
//! exactly as the search judges its own orders.

use bubblescope::bounds::problem_limit;
use bubblescope::optimal::{measure, same_problem, Budget};
use bubblescope::registry::optimize_run;
use bubblescope::sim::{dependency, KeySpace};
use bubblescope::{family, run, Costs, Schedule, ScheduleParams, StageCosts, FAMILIES};
use serde_json::json;
use std::io::Read;

fn main() {
    if let Err(e) = problem() {
        eprintln!("error: {e}\n  hint: optimal_problem FAMILY P M F B W COMM, e.g. zb-h1 4 8 2 3 1 1");
        std::process::exit(2);
    }
}

fn problem() -> Result<(), String> {
    let mut a: Vec<String> = std::env::args().skip(1).collect();
    if a.first().is_some_and(|a| a == "--families") {
        FAMILIES.iter().filter(|f| f.name != "zb-opt").for_each(|f| println!("{}", f.name));
        return Ok(());
    }
    let time_orders = a.first().is_some_and(|a| a == "--time");
    if time_orders {
        a.remove(0);
    }
    let num = |i: usize| -> Result<f64, String> {
        let v = a.get(i).ok_or("expected seven arguments")?;
        v.parse().map_err(|_| format!("`{v}` is not a number"))
    };
    let count = |i: usize| -> Result<u32, String> {
        let v = a.get(i).ok_or("expected seven arguments")?;
        v.parse().map_err(|_| format!("`{v}` is not a whole number"))
    };
    let name = a.first().ok_or("expected seven arguments")?;
    let f = family(name).ok_or_else(|| format!("unknown family `{name}`"))?;
    let costs = Costs { comm: num(6)?, ..Costs::fbw(num(3)?, num(4)?, num(5)?) };
    let params = f.own_params(&ScheduleParams::new(count(1)?, count(2)?).with_costs(costs));
    let r = run(name, &params).map_err(|e| e.to_string())?;
    let limit = problem_limit(Some(f), &params, &r.stats);
    let s = &r.schedule;
    let keys = KeySpace::checked(s).map_err(|e| e.to_string())?;
    if time_orders {
        return time(s, &params.costs, limit);
    }
    let table = StageCosts::for_schedule(&params.costs, s);
    let mut ops = Vec::new();
    for (d, order) in s.orders.iter().enumerate() {
        for op in order {
            let deps: Vec<usize> =
                op.passes().filter_map(|p| dependency(&s.placement, p)).map(|dep| keys.dep_index(dep)).collect();
            let provides: Vec<usize> = op.passes().filter_map(|p| keys.provided_index(p)).collect();
            ops.push(json!({
                "device": d,
                "time": table.op(op),
                "alloc": op.passes().map(|p| table.alloc(p)).sum::<f64>(),
                "release": op.passes().map(|p| table.release(p)).sum::<f64>(),
                "deps": deps,
                "provides": provides,
                "op": op.to_string(),
            }));
        }
    }
    let o = optimize_run(Some(f), &params, s, limit, Budget::default()).map_err(|e| e.to_string())?;
    let out = json!({
        "family": name,
        "own_cost": r.stats.cost,
        "comm": table.comm,
        "limit": limit.is_finite().then_some(limit),
        "ops": ops,
        "search": {"bound": o.bound, "cost": o.cost, "proven": o.proven},
    });
    println!("{out}");
    Ok(())
}

/// Prints the simulated cost of the per-device orders on stdin (indices into the problem's
/// ops, numbered device by device in `s`'s order) and whether they fit `limit`.
fn time(s: &Schedule, costs: &Costs, limit: f64) -> Result<(), String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text).map_err(|e| e.to_string())?;
    let orders: Vec<Vec<usize>> = serde_json::from_str(&text).map_err(|e| format!("orders on stdin: {e}"))?;
    let ops: Vec<_> = s.orders.iter().flatten().copied().collect();
    let op = |i: usize| ops.get(i).copied().ok_or(format!("op {i} does not exist"));
    let picked: Result<Vec<Vec<_>>, String> = orders.iter().map(|o| o.iter().map(|&i| op(i)).collect()).collect();
    let given = Schedule { orders: picked?, ..s.clone() };
    if !same_problem(s, &given) {
        return Err("the orders do not run the problem's ops on their devices".into());
    }
    let (cost, fits) = measure(&given, costs, limit.is_finite().then_some(limit)).map_err(|e| e.to_string())?;
    println!("{}", json!({"cost": cost, "fits": fits}));
    Ok(())
}
