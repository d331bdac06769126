//! How far from optimal: the best order of a schedule's own ops, found by branch and bound.
//!
//! **The problem** is the one [`crate::bounds`] states: the same ops on the same devices, the
//! same dependencies and costs, a per-device activation-memory limit, any per-device order.
//! An order's cost is the simulator's (the longest device span), and the order found is a real
//! [`Schedule`] that [`crate::simulate`] re-times to exactly the reported cost.
//!
//! The details are in `docs/lower-bounds.md`, under `optimal/mod.rs`.

use crate::bounds::{lower_bound, LowerBound};
use crate::error::SimError;
use crate::params::{Costs, StageCosts};
use crate::schedule::Schedule;
use crate::sim::simulate;
use crate::stats::stats;

mod local;
mod relaxation;
mod search;
pub mod zb_opt;

use search::{op_key, tolerance, Search};
pub use search::{Budget, Progress, DEFAULT_MEMO_BYTES, DEFAULT_WORK, PROGRESS_NODES};

/// Why the search for the best order refuses `schedule` (generated from `params`), as an
/// error with a hint; `None` when it searches the problem this module states.
///
/// Recompute and offload add passes that are no order of F, B and W. `--a2a-overlap` fuses
/// F&B pairs: a search would keep the pairs fixed, and an optimum "proven" over paired orders
/// is no optimum over the passes, whose unpaired orders can be cheaper (1F1B -p 4 -m 8 on
/// Mixtral with --ep 2 --dp 2: 2.18 s paired, 1.45 s unpaired).
pub fn unsearchable(schedule: &Schedule, params: &crate::params::ScheduleParams) -> Option<crate::error::ParamError> {
    use crate::error::{Field, ParamError};
    if schedule.trades_memory() {
        return Some(
            ParamError::new(
                Field::Recompute,
                "--optimal searches orders of F, B and W, but this schedule recomputes or offloads",
            )
            .hint("drop --recompute and --offload to search the orders, then add them back to the order it finds"),
        );
    }
    if params.a2a_overlap {
        return Some(
            ParamError::new(
                Field::A2aOverlap,
                "--optimal searches orders of single F, B and W passes, but --a2a-overlap fuses F&B pairs: a search over orders that keep the pairs is no optimum, as unpaired orders can be cheaper",
            )
            .hint("drop --a2a-overlap to search every order of the passes (then compare its cost with the paired schedule's), or drop --optimal"),
        );
    }
    if !params.costs.p2p.is_async() {
        return Some(
            ParamError::new(
                Field::Comm,
                "--optimal times orders with asynchronous sends, but --p2p blocking makes a sender wait for its receiver: the search's optimum would be no bound for these costs",
            )
            .hint("drop --optimal, or search under --p2p async (then simulate the order it finds with --p2p blocking)"),
        );
    }
    None
}

/// Nodes per pair of devices [`tight_lower_bound`] lets the relaxation spend: a few
/// milliseconds at P = 4, M = 8 (measured up to about 30 ms for V-shaped schedules).
const QUICK_RELAXATION_NODES: u64 = 2_000;

/// [`lower_bound`] raised by the device relaxation (`relaxation.rs`, a small budget per
/// pair of devices) when the problem has at most [`Budget::max_ops`] passes: the bound
/// `simulate` and the playground print. `known` is the cost of an order of the problem
/// (the schedule's own when it fits the limit): the relaxation stops there, as no bound
/// goes higher. The raised bound keeps the closed form's in
/// [`crate::bounds::LowerBound::closed_form`] and its breakdown.
pub fn tight_lower_bound(schedule: &Schedule, costs: &Costs, limit: Option<f64>, known: Option<f64>) -> LowerBound {
    let mut lb = lower_bound(schedule, costs, limit);
    if schedule.op_count() > Budget::default().max_ops || limit.is_some_and(|l| !lb.fits(l)) {
        return lb;
    }
    let Some(search) = Search::new(schedule, costs, limit, None, lb.value) else { return lb };
    let cap = known.unwrap_or(f64::INFINITY);
    let relaxed = relaxation::device_bound(&search, lb.value, cap, QUICK_RELAXATION_NODES);
    if relaxed > lb.value + tolerance(lb.value) {
        lb.closed_form = Some(lb.value);
        lb.value = relaxed;
    }
    lb
}

/// The lower bound a run prints ([`tight_lower_bound`]): its schedule is an order of the
/// problem, and so caps the relaxation, when its peak fits `limit`.
pub fn run_lower_bound(schedule: &Schedule, costs: &Costs, limit: f64, stats: &crate::stats::Stats) -> LowerBound {
    let known = (stats.peak_memory <= limit + tolerance(limit)).then_some(stats.cost);
    tight_lower_bound(schedule, costs, Some(limit), known)
}

/// The best order found.
#[derive(Clone, Debug, PartialEq)]
pub struct Optimum {
    /// The orders: a schedule of the same ops.
    pub schedule: Schedule,
    /// Its simulated cost.
    pub cost: f64,
    /// Whether no order of the problem is cheaper: the search finished, or the cost meets
    /// the lower bound.
    pub proven: bool,
    /// Search nodes visited.
    pub nodes: u64,
    /// Work the search spent ([`Budget::work`]).
    pub work: u64,
    /// The lower bound of the problem ([`crate::bounds::lower_bound`]).
    pub lower_bound: f64,
    /// What the search proved every order costs at least: the lower bound raised by the
    /// probes it finished (the cost itself when proven).
    pub bound: f64,
    /// Whether the search ran at all: `false` past [`Budget::max_ops`] passes (or for
    /// problems it cannot state), where the answer is the best order given and the bound.
    pub searched: bool,
}

/// Why there is no optimum to report.
#[derive(Clone, Debug, PartialEq)]
pub enum OptimalError {
    /// The given schedule cannot be simulated.
    Sim(SimError),
    /// No order within the memory limit was found (none of the given orders fits it and the
    /// search found none).
    NoneFits,
}

impl std::fmt::Display for OptimalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptimalError::Sim(e) => e.fmt(f),
            OptimalError::NoneFits => {
                f.write_str("no order of these passes fits the memory limit within the search budget")
            }
        }
    }
}

impl std::error::Error for OptimalError {}

/// Whether `other` runs the same ops on the same devices as `schedule`.
pub fn same_problem(schedule: &Schedule, other: &Schedule) -> bool {
    if schedule.placement != other.placement
        || schedule.microbatches != other.microbatches
        || schedule.slices != other.slices
        || schedule.orders.len() != other.orders.len()
    {
        return false;
    }
    schedule.orders.iter().zip(&other.orders).all(|(a, b)| {
        let mut x: Vec<_> = a.iter().map(op_key).collect();
        let mut y: Vec<_> = b.iter().map(op_key).collect();
        x.sort_unstable();
        y.sort_unstable();
        x == y
    })
}

/// The simulated cost of `s` and whether its peak memory meets `limit` (within rounding):
/// how the search judges every order, its own and any other.
pub fn measure(s: &Schedule, costs: &Costs, limit: Option<f64>) -> Result<(f64, bool), SimError> {
    let t = simulate(s, &StageCosts::for_schedule(costs, s))?;
    let st = stats(s, &t, costs);
    let fits = limit.is_none_or(|l| st.peak_memory <= l + tolerance(l));
    Ok((st.cost, fits))
}

/// The best order of `schedule`'s ops under `costs` within `limit`, starting from the best of
/// `schedule` itself and `incumbents` (other orders of the same ops; others are ignored).
///
/// # Errors
/// [`OptimalError::Sim`] when `schedule` cannot run, [`OptimalError::NoneFits`] when no order
/// within the limit is known at the end.
pub fn optimize(
    schedule: &Schedule,
    costs: &Costs,
    limit: Option<f64>,
    incumbents: &[Schedule],
    budget: Budget,
) -> Result<Optimum, OptimalError> {
    optimize_with_progress(schedule, costs, limit, incumbents, budget, &mut |_| {})
}

/// [`optimize`], calling `progress` every [`PROGRESS_NODES`] nodes of the search (core has no
/// clock: the caller decides when to show it).
///
/// # Errors
/// As [`optimize`].
pub fn optimize_with_progress(
    schedule: &Schedule,
    costs: &Costs,
    limit: Option<f64>,
    incumbents: &[Schedule],
    budget: Budget,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Optimum, OptimalError> {
    let (own, own_fits) = measure(schedule, costs, limit).map_err(OptimalError::Sim)?;
    let mut best: Option<(f64, Schedule)> = own_fits.then(|| (own, schedule.clone()));
    for s in incumbents.iter().filter(|s| same_problem(schedule, s)) {
        if let Ok((c, true)) = measure(s, costs, limit) {
            if best.as_ref().is_none_or(|b| c < b.0) {
                best = Some((c, s.clone()));
            }
        }
    }
    let lb = lower_bound(schedule, costs, limit).value;
    let eps = tolerance;
    let mut search = if schedule.op_count() <= budget.max_ops {
        Search::new(schedule, costs, limit, best.as_ref().map(|b| b.0), lb)
    } else {
        None
    };
    // The device relaxation raises the root bound (and often meets the best order known).
    let cap = best.as_ref().map_or(f64::INFINITY, |b| b.0);
    let root = search.as_ref().map_or(lb, |s| relaxation::device_bound(s, lb, cap, relaxation::NODES_PER_DEVICE));
    // A local search from the best order known, unless that meets the bound already.
    if let (Some(search), Some((c, s))) = (search.as_mut(), best.as_ref()) {
        if *c > root + eps(root) {
            let improved = index_orders(search, s).and_then(|start| local::improve(search, start, local::MOVES));
            if let Some((_, orders)) = improved.filter(|(cost, _)| *cost < c - eps(*c)) {
                let found = orders_schedule(schedule, search, &orders);
                if let Ok((cost, true)) = measure(&found, costs, limit) {
                    if cost < c - eps(*c) {
                        search.best = cost;
                        best = Some((cost, found));
                    }
                }
            }
        }
    }
    if let Some((c, s)) = &best {
        if *c <= root + eps(root) {
            let searched = search.is_some();
            return Ok(Optimum {
                schedule: s.clone(),
                cost: *c,
                proven: true,
                nodes: 0,
                work: 0,
                lower_bound: lb,
                bound: *c,
                searched,
            });
        }
    }
    let (mut nodes, mut work) = (0, 0);
    let mut finished = false;
    let ran = search.is_some();
    let mut searched = root;
    if let Some(search) = search.as_mut() {
        search.root_bound = root;
        search.budget = budget.nodes;
        search.work_budget = budget.work;
        search.memo_cap = budget.memo_bytes;
        searched = search.run(root, progress);
        (nodes, work) = (search.nodes, search.work);
        finished = !search.aborted;
        if let Some(orders) = search.best_orders.take() {
            let s = orders_schedule(schedule, search, &orders);
            let (c, fits) = measure(&s, costs, limit).map_err(OptimalError::Sim)?;
            if fits && best.as_ref().is_none_or(|b| c < b.0) {
                best = Some((c, s));
            }
        }
    }
    let (cost, schedule) = best.ok_or(OptimalError::NoneFits)?;
    // A bound within the tolerance of a multiple of 1/1024 is that multiple (the memory
    // tests' tolerance shows in the last digits otherwise).
    let snapped = (searched * 1024.0).round() / 1024.0;
    let searched = if (snapped - searched).abs() <= eps(searched) { snapped } else { searched };
    let bound = if finished { cost } else { searched.min(cost) };
    let proven = finished || cost <= bound + eps(bound);
    Ok(Optimum { schedule, cost, proven, nodes, work, lower_bound: lb, bound, searched: ran })
}

/// The schedule of `orders` (op indices of `search`, per device), with `like`'s placement.
fn orders_schedule(like: &Schedule, search: &Search, orders: &[Vec<usize>]) -> Schedule {
    let mut s = Schedule::new(like.placement.clone(), like.microbatches);
    s.slices = like.slices;
    s.orders = orders.iter().map(|o| o.iter().map(|&i| search.ops[i].op).collect()).collect();
    s
}

/// `schedule`'s orders as op indices of `search` (`None` if it runs other ops).
fn index_orders(search: &Search, schedule: &Schedule) -> Option<Vec<Vec<usize>>> {
    let mut index = std::collections::HashMap::new();
    for (i, o) in search.ops.iter().enumerate() {
        index.insert((o.device, op_key(&o.op)), i);
    }
    let orders: Vec<Vec<usize>> = schedule
        .orders
        .iter()
        .enumerate()
        .map(|(d, order)| order.iter().map(|op| index.get(&(d, op_key(op))).copied()).collect::<Option<Vec<_>>>())
        .collect::<Option<_>>()?;
    (orders.iter().map(Vec::len).sum::<usize>() == search.ops.len()).then_some(orders)
}

#[cfg(test)]
mod tests {
    use std::collections::BinaryHeap;

    use super::search::{jackson, Job, PROBE_SHARE};
    use super::*;
    use crate::{run, ScheduleParams};

    /// The least `max(end + delivery)` over every non-preemptive order (each job as early as
    /// its release and the machine allow).
    fn best_order(jobs: &[Job]) -> f64 {
        fn go(jobs: &[Job], used: &mut Vec<bool>, t: f64, worst: f64, best: &mut f64) {
            if used.iter().all(|&u| u) {
                *best = best.min(worst);
                return;
            }
            for j in 0..jobs.len() {
                if !used[j] {
                    used[j] = true;
                    let end = t.max(jobs[j].release) + jobs[j].dur;
                    go(jobs, used, end, worst.max(end + jobs[j].delivery), best);
                    used[j] = false;
                }
            }
        }
        let mut best = f64::INFINITY;
        go(jobs, &mut vec![false; jobs.len()], f64::NEG_INFINITY, 0.0, &mut best);
        best
    }

    /// The exact search times orders as async: blocking sends are refused with a hint, not
    /// answered with "no order found" (issue 43, pass 6, item 6).
    #[test]
    fn blocking_sends_are_unsearchable() {
        let mut params = crate::ScheduleParams::new(4, 8);
        params.costs.comm = 0.5;
        let schedule = crate::registry::generate("1f1b", &params).unwrap();
        assert!(unsearchable(&schedule, &params).is_none());
        params.costs.p2p = crate::params::P2p::Blocking;
        let e = unsearchable(&schedule, &params).expect("refused");
        assert!(e.message.contains("--p2p blocking") && !e.hints.is_empty(), "{e}");
    }

    #[test]
    fn jacksons_preemptive_schedule_is_a_lower_bound_and_exact_when_preemption_does_not_help() {
        // Preempting the long job for the urgent one gives 11 (the urgent one ends at 3,
        // delivered at 10; the long one ends at 6, delivered at 11); no order without
        // preemption does better than 12.
        let mut heap = BinaryHeap::new();
        let jobs = [Job { release: 0.0, dur: 4.0, delivery: 5.0 }, Job { release: 1.0, dur: 2.0, delivery: 7.0 }];
        assert_eq!(jackson(&mut jobs.clone(), &mut heap), 11.0);
        assert_eq!(best_order(&jobs), 12.0);
        // Every delivery equal: the preemptive bound is the release-date bound, met by
        // running in release order.
        let same = [
            Job { release: 3.0, dur: 1.0, delivery: 2.0 },
            Job { release: 0.0, dur: 2.0, delivery: 2.0 },
            Job { release: 1.0, dur: 2.0, delivery: 2.0 },
        ];
        assert_eq!(jackson(&mut same.clone(), &mut heap), 7.0);
        assert_eq!(best_order(&same), 7.0);
        assert_eq!(jackson(&mut [], &mut heap), 0.0);
        // A pseudo-random family: never above the best order, never below any single job's
        // release + time + delivery, nor the last release plus what is released then.
        let mut seed = 12345u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % m) as f64
        };
        for _ in 0..300 {
            let n = 1 + next(6) as usize;
            let jobs: Vec<Job> = (0..n).map(|_| Job { release: next(10), dur: next(5), delivery: next(8) }).collect();
            let jps = jackson(&mut jobs.clone(), &mut heap);
            assert!(jps <= best_order(&jobs), "{jobs:?}: {jps}");
            for j in &jobs {
                assert!(jps >= j.release + j.dur + j.delivery, "{jobs:?}: {jps}");
                let later: Vec<&Job> = jobs.iter().filter(|k| k.release >= j.release).collect();
                let work: f64 = later.iter().map(|k| k.dur).sum();
                let least = later.iter().map(|k| k.delivery).fold(f64::INFINITY, f64::min);
                assert!(jps >= j.release + work + least, "{jobs:?}: {jps}");
            }
        }
    }

    #[test]
    fn zb_h2_memory_has_no_bubble_and_the_search_proves_it() {
        let p = ScheduleParams::new(4, 8);
        let a = run("zb-1p", &p).unwrap();
        let h2 = run("zb-h2", &p).unwrap();
        let opt = optimize(&a.schedule, &p.costs, Some(8.0), &[h2.schedule], Budget::default()).unwrap();
        assert_eq!((opt.cost, opt.proven), (24.0, true));
    }

    #[test]
    fn the_search_finds_better_orders_and_they_simulate_to_their_cost() {
        let p = ScheduleParams::new(3, 4).with_costs(Costs { comm: 1.0, ..Costs::fbw(2.0, 3.0, 1.0) });
        let a = run("1f1b", &p).unwrap();
        let opt = optimize(&a.schedule, &p.costs, None, &[], Budget::default()).unwrap();
        assert!(opt.proven);
        assert!(opt.cost <= a.stats.cost);
        assert!(opt.cost >= opt.lower_bound);
        let again = crate::analyze(opt.schedule.clone(), &p.costs).unwrap();
        assert_eq!(again.stats.cost, opt.cost);
    }

    /// Small problems with communication and unequal costs, one and two chunks: family, P, M
    /// and costs.
    fn mixed_problems() -> [(&'static str, u32, u32, Costs); 4] {
        [
            ("1f1b", 3, 4, Costs { comm: 1.0, ..Costs::fbw(2.0, 3.0, 1.0) }),
            ("zb-h1", 3, 4, Costs { comm: 1.0, ..Costs::fbw(1.0, 1.0, 1.0) }),
            ("zb-h1", 3, 5, Costs { comm: 0.5, ..Costs::fbw(2.0, 3.0, 1.0) }),
            ("interleaved-1f1b", 2, 4, Costs { comm: 1.0, ..Costs::fbw(1.0, 1.0, 1.0) }),
        ]
    }

    /// A family's run and, as the problem's limit, its own peak memory.
    fn at_its_peak(family: &str, devices: u32, microbatches: u32, costs: &Costs) -> (crate::Analysis, Option<f64>) {
        let a = run(family, &ScheduleParams::new(devices, microbatches).with_costs(costs.clone())).unwrap();
        let limit = Some(a.stats.peak_memory);
        (a, limit)
    }

    /// A search stopped by its budget reports a bound no order beats: never above the proven
    /// optimum (found with a large budget), never below the root bound, and raised above the
    /// root bound by the probes where the root bound is not tight.
    #[test]
    fn an_unfinished_search_proves_an_interval_around_the_optimum() {
        let mut raised = 0;
        for (family, devices, microbatches, costs) in mixed_problems() {
            let (a, limit) = at_its_peak(family, devices, microbatches, &costs);
            let full = optimize(&a.schedule, &costs, limit, &[], Budget::of_nodes(5_000_000)).unwrap();
            assert!(full.proven && full.bound == full.cost, "{family} P{devices} M{microbatches}: {full:?}");
            for nodes in [1, 10, 100, 1_000, 10_000] {
                let o = optimize(&a.schedule, &costs, limit, &[], Budget::of_nodes(nodes)).unwrap();
                let at = format!(
                    "{family} P{devices} M{microbatches}, {nodes} nodes: {} {} {}",
                    o.lower_bound, o.bound, o.cost
                );
                assert!(o.lower_bound <= o.bound && o.bound <= full.cost + 1e-9 && o.cost >= full.cost - 1e-9, "{at}");
                assert_eq!(o.proven, o.cost <= o.bound + 1e-9, "{at}");
                raised += usize::from(o.bound > o.lower_bound + 1e-9);
            }
        }
        assert!(raised > 0, "the probes never raised a bound: the test shows nothing");
    }

    /// A problem no known order fits (GPipe's own holds 4 forwards, the limit is 2) starts
    /// the search without an incumbent: its first order must not pass for optimal. At P = 3,
    /// M = 4 the optimum meets the lower bound, 21 (the first order found costs 24).
    #[test]
    fn without_an_order_that_fits_the_first_order_found_is_not_taken_for_the_optimum() {
        let p = ScheduleParams::new(3, 4);
        let a = run("gpipe", &p).unwrap();
        let o = optimize(&a.schedule, &p.costs, Some(2.0), &[], Budget::default()).unwrap();
        let lb = tight_lower_bound(&a.schedule, &p.costs, Some(2.0), None).value;
        assert_eq!((o.cost, o.proven, lb), (21.0, true, 21.0), "{o:?}");
        let again = crate::analyze(o.schedule.clone(), &p.costs).unwrap();
        assert_eq!((again.stats.cost, again.stats.peak_memory), (21.0, 2.0));
    }

    /// The whole search from the root bound alone (no incumbent, relaxation or local search),
    /// with the dominance rule on or off: the optimum and how many nodes the rule skipped.
    fn exhaustive(schedule: &Schedule, costs: &Costs, limit: Option<f64>, dominance: bool) -> (f64, u64) {
        let lb = lower_bound(schedule, costs, limit).value;
        let mut s = Search::new(schedule, costs, limit, None, lb).unwrap();
        s.dominance = dominance;
        s.budget = u64::MAX;
        let cost = s.run(lb, &mut |_| {});
        assert!(!s.aborted && s.best_orders.is_some());
        (cost, s.dominated)
    }

    /// Skipping states that are later everywhere than a searched one never changes the
    /// optimum, over families with and without memory limits, communication and unequal
    /// costs; and it does skip states (or the test shows nothing).
    #[test]
    fn the_dominance_rule_keeps_the_optimum() {
        let mut skipped = 0;
        let more = [
            ("zb-1p", 3, 5, Costs::fbw(3.0, 4.0, 2.0)),
            ("zb-v", 2, 3, Costs { comm: 0.25, ..Costs::fbw(2.0, 3.0, 1.0) }),
            ("seq1f1b", 2, 3, Costs { comm: 1.0, ..Costs::fbw(2.0, 3.0, 1.0) }),
        ];
        for (family, devices, microbatches, costs) in mixed_problems().into_iter().chain(more) {
            let (a, limit) = at_its_peak(family, devices, microbatches, &costs);
            let (with, n) = exhaustive(&a.schedule, &costs, limit, true);
            let (without, none) = exhaustive(&a.schedule, &costs, limit, false);
            assert_eq!((with, none), (without, 0), "{family} P{devices} M{microbatches}");
            assert!(with <= a.stats.cost, "{family}: {with} above the family's {}", a.stats.cost);
            skipped += n;
        }
        assert!(skipped > 0, "the rule never applied");
    }

    /// The explored states and dominance fronts stop growing at their cap (here 16 KiB), the
    /// states past it are dropped and counted, and the search still finds the optimum (a
    /// state forgotten is only searched again); progress comes every so many nodes.
    #[test]
    fn the_explored_state_table_stops_growing_at_its_cap() {
        let costs = Costs { comm: 0.5, ..Costs::fbw(2.0, 3.0, 1.0) };
        let p = ScheduleParams::new(3, 6).with_costs(costs.clone());
        let a = run("zb-h1", &p).unwrap();
        let limit = Some(a.stats.peak_memory);
        let (free, _) = exhaustive(&a.schedule, &costs, limit, true);
        let lb = lower_bound(&a.schedule, &costs, limit).value;
        let mut s = Search::new(&a.schedule, &costs, limit, None, lb).unwrap();
        let cap = 16 << 10;
        s.memo_cap = cap;
        s.progress_every = 256;
        s.budget = u64::MAX;
        let (mut reports, mut most) = (0u64, 0usize);
        let mut last = Progress { nodes: 0, work: 0, best: 0.0, bound: 0.0, memo_bytes: 0, memo_dropped: 0 };
        let cost = s.run(lb, &mut |p| {
            reports += 1;
            most = most.max(p.memo_bytes);
            last = *p;
        });
        assert_eq!(cost, free, "a capped table changed the optimum");
        assert!(s.memo_bytes <= cap && most <= cap, "{} and {most} bytes, cap {cap}", s.memo_bytes);
        assert!(s.memo_dropped > 0, "the cap never bit: the test shows nothing");
        let entries = s.seen.len() + s.fronts.values().map(Vec::len).sum::<usize>();
        assert!(entries * 8 <= cap, "{entries} entries under a cap of {cap} bytes");
        assert!(s.nodes >= 256, "too small to report progress: {} nodes", s.nodes);
        assert_eq!(reports, s.nodes / 256);
        assert!(last.bound <= cost && last.nodes <= s.nodes && last.memo_dropped <= s.memo_dropped, "{last:?}");
    }

    /// A budget of work stops the search once it is spent (plus the probes' quarter and the
    /// node in progress), whatever the family's cost per node: a two-chunk problem gets
    /// fewer nodes than a one-chunk one of the same size, and a budget of nodes is exact.
    #[test]
    fn a_budget_of_work_stops_every_family_after_about_the_same_work() {
        let costs = Costs { comm: 1.0, ..Costs::fbw(2.0, 3.0, 1.0) };
        let budget = Budget { work: 2_000_000, ..Budget::default() };
        let mut spent = Vec::new();
        for family in ["zb-h1", "zb-v"] {
            let p = ScheduleParams::new(4, 8).with_costs(costs.clone());
            let a = run(family, &p).unwrap();
            let limit = Some(a.stats.peak_memory);
            let o = optimize(&a.schedule, &costs, limit, &[], budget).unwrap();
            assert!(!o.proven, "{family}: the test needs a problem the budget does not prove");
            // The most work one node does: every op as a candidate, in the earliest starts
            // and in a one-machine bound for each pair of devices.
            let per_node = (a.schedule.op_count() * (2 + 4 * 4)) as u64;
            let most = budget.work + budget.work / PROBE_SHARE + per_node;
            assert!(o.work >= budget.work && o.work <= most, "{family}: {} work, at most {most}", o.work);
            spent.push(o.nodes);
            let exact = optimize(&a.schedule, &costs, limit, &[], Budget::of_nodes(300)).unwrap();
            assert!(exact.nodes <= 300 + 300 / PROBE_SHARE, "{family}: {} nodes", exact.nodes);
        }
        assert!(spent[1] < spent[0], "ZB-V's nodes cost more work than ZB-H1's: {spent:?}");
    }
}
