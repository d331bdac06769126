//! Better orders before the search: a local search over the per-device orders.
//!
//! The exact search prunes against the best order known, and a search that runs out of nodes
//! reports it; so a good order early is worth a lot. Starting from the best order known (the
//! given schedule or a published heuristic), this moves one op a few places within its
//! device's order, times the orders as the simulator does, and keeps the move when the cost
//! does not rise — with the sum of the device spans, then of their ends, as the tie-breakers
//! that let it cross plateaus. It is deterministic (a fixed pseudo-random sequence, no clock)
//! and only proposes: what it finds is simulated and checked like any order before it is
//! kept.

use super::search::{tolerance, Search};

/// Order evaluations the local search spends.
pub(super) const MOVES: u32 = 100_000;

/// Moves without a new best before the search kicks the best orders, and the kick's size.
const STALE: u32 = 4_000;
const KICK: u32 = 6;

/// How an order set scores: cost first, then the tie-breakers (smaller is better).
type Score = (f64, f64, f64);

/// Times per-device orders (op indices) as the simulator does — each device runs its order,
/// each op as soon as its device is free and its dependencies have arrived — by placing them
/// in the search's own state, which it leaves empty. `None` when the orders deadlock or break
/// the memory limit.
fn score(search: &mut Search, orders: &[Vec<usize>]) -> Option<Score> {
    search.reset();
    let mut next = vec![0usize; orders.len()];
    let total: usize = orders.iter().map(Vec::len).sum();
    let mut timed = true;
    while timed && search.placed_count < total {
        let before = search.placed_count;
        for (d, order) in orders.iter().enumerate() {
            while let Some(&o) = order.get(next[d]) {
                let Some(start) = search.start_of(o) else { break };
                if !search.fits(o) {
                    timed = false;
                    break;
                }
                search.place(o, start);
                next[d] += 1;
            }
        }
        timed &= search.placed_count > before;
    }
    let spans = (0..orders.len()).map(|d| search.first[d].map_or(0.0, |f| search.free[d] - f));
    let score = (spans.clone().fold(0.0, f64::max), spans.sum(), search.free.iter().sum());
    search.reset();
    timed.then_some(score)
}

fn better(a: Score, b: Score) -> bool {
    let eps = tolerance(b.0);
    a.0 < b.0 - eps || (a.0 <= b.0 + eps && (a.1, a.2) <= (b.1, b.2))
}

/// The best orders (op indices per device) the local search reaches from `start`, and their
/// cost; `None` when `start` itself cannot be timed within the limit.
pub(super) fn improve(search: &mut Search, start: Vec<Vec<usize>>, moves: u32) -> Option<(f64, Vec<Vec<usize>>)> {
    let mut current = start;
    let mut now = score(search, &current)?;
    let mut best = (now.0, current.clone());
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m.max(1) as u64) as usize
    };
    let devices = current.len();
    let mut stale = 0;
    for _ in 0..moves {
        stale += 1;
        if stale > STALE {
            // Stuck: kick the best orders with a few random moves that keep them valid.
            stale = 0;
            current = best.1.clone();
            for _ in 0..KICK {
                let d = random(devices);
                let len = current[d].len();
                if len < 2 {
                    continue;
                }
                let (i, j) = (random(len), random(len));
                let op = current[d].remove(i);
                current[d].insert(j, op);
                if score(search, &current).is_none() {
                    let op = current[d].remove(j);
                    current[d].insert(i, op);
                }
            }
            now = score(search, &current)?;
        }
        let d = random(devices);
        let len = current[d].len();
        if len < 2 {
            continue;
        }
        let i = random(len);
        let reach = 1 + random(4);
        let j = if random(2) == 0 { i.saturating_sub(reach) } else { (i + reach).min(len - 1) };
        if i == j {
            continue;
        }
        let op = current[d].remove(i);
        current[d].insert(j, op);
        match score(search, &current) {
            Some(s) if better(s, now) => {
                now = s;
                if now.0 < best.0 - tolerance(best.0) {
                    best = (now.0, current.clone());
                    stale = 0;
                }
            }
            _ => {
                let op = current[d].remove(j);
                current[d].insert(i, op);
            }
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimal::{index_orders, orders_schedule};
    use crate::{analyze, run, Costs, ScheduleParams};

    /// The local search's timing is the simulator's, and what it returns is never worse than
    /// where it started and costs what the simulator says: for one- and two-chunk families,
    /// slices and bidirectional pipelines, with communication and unequal passes.
    #[test]
    fn the_local_search_times_orders_as_the_simulator_does_and_never_gets_worse() {
        let mut improved = 0;
        for family in ["1f1b", "zb-h1", "interleaved-1f1b", "1f1b-v", "zb-v", "seq1f1b", "chimera"] {
            for (devices, microbatches, costs) in [
                (3, 4, Costs { comm: 1.0, ..Costs::fbw(1.0, 1.0, 1.0) }),
                (4, 6, Costs { comm: 0.5, ..Costs::fbw(2.0, 3.0, 1.0) }),
            ] {
                let p = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
                let Ok(a) = run(family, &p) else { continue };
                let limit = a.stats.peak_memory;
                let mut search = Search::new(&a.schedule, &costs, Some(limit), None, 0.0).unwrap();
                let start = index_orders(&search, &a.schedule).unwrap();
                let at = format!("{family} P{devices} M{microbatches}");
                let timed = score(&mut search, &start).unwrap();
                assert_eq!(timed.0, a.stats.cost, "{at}");
                let (cost, orders) = improve(&mut search, start, 3_000).unwrap();
                assert_eq!(search.placed_count, 0, "{at}: the search's state is left empty");
                let found = analyze(orders_schedule(&a.schedule, &search, &orders), &costs).unwrap();
                assert_eq!(found.stats.cost, cost, "{at}");
                assert!(cost <= a.stats.cost, "{at}: {cost} above {}", a.stats.cost);
                assert!(found.stats.peak_memory <= limit + 1e-9, "{at}");
                improved += usize::from(cost < a.stats.cost);
            }
        }
        assert!(improved > 0, "the local search never improved an order: the test shows nothing");
    }

    /// Orders that deadlock or break the limit are not timed.
    #[test]
    fn deadlocked_or_over_limit_orders_are_refused() {
        let p = ScheduleParams::new(2, 2);
        let a = run("1f1b", &p).unwrap();
        let mut search = Search::new(&a.schedule, &p.costs, Some(a.stats.peak_memory), None, 0.0).unwrap();
        let mut orders = index_orders(&search, &a.schedule).unwrap();
        // The last device's backward first: it waits for its own forward, which waits behind it.
        let last = orders.len() - 1;
        orders[last].reverse();
        assert!(score(&mut search, &orders).is_none());
        // Every forward first on device 0 at a limit of one forward.
        let mut tight = Search::new(&a.schedule, &p.costs, Some(1.0), None, 0.0).unwrap();
        let mut forwards_first = index_orders(&tight, &a.schedule).unwrap();
        forwards_first[0].sort_by_key(|&o| tight.ops[o].priority != 1);
        assert!(score(&mut tight, &forwards_first).is_none());
    }
}
