//! Tests of the ZB-V heuristic against zero-bubble.md §9.2 and Appendix A, and against an
//! independent restatement of the authors' code ([`reference`]) under memory limits.

use super::super::v_common::testing::{held_until_w, peaks, run_ok, Setting, APPENDIX_A};
use super::*;
use crate::params::Costs;
use crate::{generate, run};

#[test]
fn reference_costs_and_bubble_rates() {
    // §9.2: 48 and zero bubble with per-chunk costs 1,1,1; 248 (0.0323) with 5,6,4; 72 at m=12;
    // 384 (0.0625) at m=12 with communication 1.
    let analysis = |s: Setting| run_ok("zb-v", &s.params()).stats;
    let unit = analysis(Setting::unit(8));
    assert_eq!((unit.cost, unit.bubble_rate), (48.0, 0.0));
    assert_eq!(format!("{:.4}", analysis(Setting::uneven(8, 0.0)).bubble_rate), "0.0323");
    assert_eq!(analysis(Setting::unit(12)).cost, 72.0);
    assert_eq!(format!("{:.4}", analysis(Setting::uneven(12, 1.0)).bubble_rate), "0.0625");
}

#[test]
fn beats_the_handcrafted_pattern_when_costs_differ() {
    // §9.2: 248 vs 252 at m=8, 384 vs 388 at m=12 with communication 1.
    for (setting, heuristic, handcrafted) in
        [(Setting::uneven(8, 0.0), 248.0, 252.0), (Setting::uneven(12, 1.0), 384.0, 388.0)]
    {
        assert_eq!(run_ok("zb-v", &setting.params()).stats.cost, heuristic);
        assert_eq!(run_ok("zb-v-handcrafted", &setting.params()).stats.cost, handcrafted);
    }
}

#[test]
fn holds_eight_chunk_activations_on_every_device() {
    // §9.2 / Appendix A: peak in flight [8, 8, 8, 8] chunk activations = 4 mem-f (= 1F1B).
    for setting in APPENDIX_A {
        let mut params = setting.params();
        params.costs = held_until_w(params.costs);
        assert_eq!(peaks(&run_ok("zb-v", &params)), vec![4.0; 4], "{setting:?}");
    }
}

#[test]
fn the_heuristic_scores_with_the_simulator_s_times() {
    // Every device does the same work, so the cost is the ideal plus the worst bubble the
    // heuristic measured on its Builder.
    for (devices, microbatches, costs) in [
        (4, 8, Costs::fbw(10.0, 12.0, 8.0)),
        (5, 9, Costs { comm: 1.5, ..Costs::fbw(3.0, 5.0, 1.0) }),
        (3, 2, Costs::fbw(1.0, 2.0, 3.0)),
    ] {
        let params = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
        let outcome = Heuristic::new(&params, limit(&params)).best().unwrap_or_else(|_| panic!("{params:?}"));
        let stats = run_ok("zb-v", &params).stats;
        assert_eq!(stats.cost, stats.ideal + outcome.worst, "{params:?}");
    }
}

#[test]
fn every_size_validates_and_simulates_within_the_limit() {
    let costs = [
        Costs::fbw(2.0, 2.0, 2.0),
        Costs { comm: 1.0, ..Costs::fbw(10.0, 12.0, 8.0) },
        Costs { mem_w: Some(0.25), ..Costs::fbw(1.0, 3.0, 0.5) },
        Costs { comm: 4.0, ..Costs::fbw(3.0, 1.0, 2.0) },
        Costs::fbw(1.0, 1.0, 0.0),
    ];
    for devices in 1..=8 {
        for microbatches in 1..=20 {
            for c in costs.clone() {
                for limit in [None, Some(f64::from(devices) * 1.5)] {
                    let mut params = ScheduleParams::new(devices, microbatches).with_costs(c.clone());
                    params.mem_limit = limit;
                    let a = run_ok("zb-v", &params);
                    assert_eq!(a.schedule.pass_count(), 6 * (devices * microbatches) as usize);
                    let cap = limit.unwrap_or(f64::from(devices));
                    assert!(a.stats.peak_memory <= cap, "{params:?}: peak {} over {cap}", a.stats.peak_memory);
                }
            }
        }
    }
}

#[test]
fn larger_pipelines_schedule() {
    for (devices, microbatches) in [(12, 30), (16, 16), (16, 40), (24, 5)] {
        let params =
            ScheduleParams::new(devices, microbatches).with_costs(Costs { comm: 0.5, ..Costs::fbw(4.0, 5.0, 3.0) });
        run_ok("zb-v", &params);
    }
}

#[test]
fn below_1f1b_memory_it_cannot_fit() {
    // 3.5 mem-f = 7 chunk activations of 0.5 on 4 devices: the warm-up needs 8.
    let err = generate("zb-v", &Setting::unit(8).params().with_mem_limit(3.5)).unwrap_err();
    assert_eq!(err.field, Field::MemLimit);
    assert_eq!(
        err.to_string(),
        "cannot fit memory: zb-v needs more than mem-limit 3.5 (room for 7 chunk activations of mem-f/2 = 0.5 per device)\n  \
         hint: zb-v fits here from mem-limit 4 (8 chunk activations); its default is 1F1B's P·mem-f = 4\n  \
         hint: to hold less than 1F1B's memory, try v-half, v-min or v-auto"
    );
    // With fewer microbatches than devices it needs less. At 6 chunk activations the warm-up
    // skips a forward the next step needs (the code fails a dependency assertion there): still
    // a memory error.
    assert!(run("zb-v", &ScheduleParams::new(4, 2).with_mem_limit(3.5)).is_ok());
    let err = generate("zb-v", &ScheduleParams::new(4, 2).with_mem_limit(3.0)).unwrap_err();
    assert_eq!(err.field, Field::MemLimit);
    assert!(err.to_string().starts_with("cannot fit memory: zb-v needs more than mem-limit 3 (room for 6"), "{err}");
    assert!(err.to_string().contains("hint: zb-v fits here from mem-limit 3.5 (7 chunk activations)"), "{err}");
    // No room at all.
    let err = generate("zb-v", &ScheduleParams::new(1, 1).with_mem_limit(0.0)).unwrap_err();
    assert!(err.to_string().starts_with("cannot fit memory: zb-v needs more than mem-limit 0 (room for 0"), "{err}");
    assert!(err.to_string().contains("hint: zb-v fits here from mem-limit 1 (2 chunk activations)"), "{err}");
}

#[test]
fn more_memory_never_hurts_and_fits_the_limit() {
    for (devices, microbatches) in [(4, 8), (4, 12), (6, 12)] {
        let base =
            ScheduleParams::new(devices, microbatches).with_costs(Costs { comm: 1.0, ..Costs::fbw(10.0, 12.0, 8.0) });
        let mut previous = f64::INFINITY;
        for extra in 0..=devices {
            let limit = f64::from(devices + extra);
            let a = run_ok("zb-v", &base.clone().with_mem_limit(limit));
            assert!(a.stats.peak_memory <= limit);
            assert!(a.stats.cost <= previous, "P={devices} M={microbatches} limit {limit}");
            previous = a.stats.cost;
        }
    }
}

#[test]
fn limits_are_counted_in_whole_chunk_activations() {
    // 1.2 / (0.3 / 2) is 7.999… in floating point: 8 chunk activations, 1F1B's memory for P=4.
    let costs = Costs { mem_f: 0.3, ..Costs::default() };
    let params = ScheduleParams::new(4, 8).with_costs(costs.clone()).with_mem_limit(1.2);
    assert_eq!(whole_chunks(limit(&params), chunk_memory(&params)), 8);
    assert!(run("zb-v", &params).is_ok());
    assert_eq!(whole_chunks(4.0, 0.0), u64::MAX);
}

#[test]
fn zero_bubble_prediction_holds_over_sizes_and_limits() {
    for devices in 1..=8 {
        for microbatches in 1..=3 * devices + 2 {
            for unit in [2.0, 3.0] {
                for limit in [None, Some(1.5 * f64::from(devices))] {
                    let mut params =
                        ScheduleParams::new(devices, microbatches).with_costs(Costs::fbw(unit, unit, unit));
                    params.mem_limit = limit;
                    let a = run_ok("zb-v", &params);
                    let bubble = a.stats.cost - a.stats.ideal;
                    match predict(&params).and_then(|p| p.bubble) {
                        Some(b) => assert_eq!(bubble, b, "{params:?}"),
                        None => assert!(bubble > 0.0, "{params:?}: zero bubble not predicted"),
                    }
                }
            }
        }
    }
}

#[test]
fn peak_prediction_holds_at_1f1b_memory() {
    let costs = [
        Costs::fbw(2.0, 2.0, 2.0),
        Costs { comm: 1.0, ..Costs::fbw(10.0, 12.0, 8.0) },
        Costs::fbw(4.0, 1.0, 1.0),
        Costs { comm: 5.0, ..Costs::fbw(1.0, 1.0, 3.0) },
    ];
    let mut predicted_cases = 0;
    for devices in 1..=8 {
        for microbatches in 1..=20 {
            for c in costs.clone() {
                let params =
                    ScheduleParams::new(devices, microbatches).with_costs(held_until_w(Costs { mem_f: 2.0, ..c }));
                if let Some(predicted) = predict(&params).and_then(|p| p.peak_memory) {
                    assert_eq!(peaks(&run_ok("zb-v", &params)), predicted, "{params:?}");
                    predicted_cases += 1;
                }
            }
        }
    }
    // Every balanced case and every case with M ≥ 2P − 1 is predicted.
    assert_eq!(predicted_cases, 8 * 20 + (1..=8).map(|p| 3 * (21 - (2 * p - 1))).sum::<u32>());
    // Not at another limit, nor when B frees memory early.
    let params = ScheduleParams::new(4, 8);
    assert!(predict(&params).and_then(|p| p.peak_memory).is_none());
    let params = ScheduleParams::new(4, 8).with_costs(held_until_w(Costs::default())).with_mem_limit(5.0);
    assert!(predict(&params).and_then(|p| p.peak_memory).is_none());
}

#[test]
fn rejects_options_it_does_not_read() {
    let err = generate("zb-v", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("zb-v does not take --chunks"), "{err}");
}

#[test]
fn counts_memory_as_the_authors_do_with_a_smaller_mem_w() {
    // Issue 13's example: the Controllable-Memory paper's profiled costs and memory, at a
    // limit that binds. Counting whole chunk activations held until W gave 3895370.
    let costs =
        Costs { comm: 1610.0, mem_f: 606_208.0, mem_w: Some(262_144.0), ..Costs::fbw(28814.0, 28760.0, 19352.0) };
    let params = ScheduleParams::new(16, 48).with_costs(costs).with_mem_limit(10_911_744.0);
    let a = run_ok("zb-v", &params);
    assert_eq!(a.stats.cost, 3_885_694.0);
    assert!(a.stats.peak_memory <= 10_911_744.0);
}

#[test]
fn matches_the_authors_heuristic_under_binding_limits() {
    // Every (P, M, costs, mem-w < mem-f, limit) where the authors' code runs to the end: the
    // same orders pass for pass, and our simulated cost is their ideal plus their worst bubble.
    let mut compared = 0;
    let mut below_1f1b = 0;
    for devices in [2, 3, 4, 5, 6, 8] {
        for microbatches in [devices - 1, devices, 2 * devices - 1, 2 * devices + 3, 3 * devices] {
            if microbatches == 0 {
                continue;
            }
            for (f, b, w, comm) in [(2.0, 2.0, 2.0, 0.0), (10.0, 12.0, 8.0, 1.0), (6.0, 2.0, 4.0, 3.0)] {
                for mem_w in [0.0, 0.5, 1.0, 1.5] {
                    // mem-f = 2: a chunk forward stores 1; 1F1B's memory is 2P.
                    for half_units in (4 * devices - 4)..=(6 * devices) {
                        let limit = f64::from(half_units) / 2.0;
                        let costs = Costs { comm, mem_f: 2.0, mem_w: Some(mem_w), ..Costs::fbw(f, b, w) };
                        let params = ScheduleParams::new(devices, microbatches).with_costs(costs).with_mem_limit(limit);
                        let Some(expected) = reference::create_schedule(&reference::Config::of(&params)) else {
                            continue;
                        };
                        let schedule = generate("zb-v", &params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
                        for (device, order) in expected.orders.iter().enumerate() {
                            assert_eq!(&schedule.notation(device as u32), order, "{params:?} device {device}");
                        }
                        let stats = run_ok("zb-v", &params).stats;
                        assert_eq!(stats.cost, stats.ideal + expected.max_bubble, "{params:?}");
                        assert!(stats.peak_memory <= limit, "{params:?}");
                        compared += 1;
                        below_1f1b += usize::from(limit < f64::from(2 * devices));
                    }
                }
            }
        }
    }
    assert!(compared > 3500, "only {compared} cases ran in the authors' code");
    // Below 1F1B's memory only M < P runs (see the module docs).
    assert!(below_1f1b > 100, "only {below_1f1b} cases below 1F1B's memory");
}

/// Asserts `generate("zb-v")` gives the reference's orders pass for pass, when the authors'
/// code runs to the end; returns whether it did.
fn agrees_with_the_reference(params: &ScheduleParams) -> bool {
    let Some(expected) = reference::create_schedule(&reference::Config::of(params)) else { return false };
    let schedule = generate("zb-v", params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
    for (device, order) in expected.orders.iter().enumerate() {
        assert_eq!(&schedule.notation(device as u32), order, "{params:?} device {device}");
    }
    true
}

#[test]
fn matches_the_reference_at_the_benchmark_size() {
    // The bench's sizes (issue 14's speed target): P = 32, M = 256 at the paper's profiled
    // costs, at uneven and at equal costs. The fast path (attempt reuse, the builder's fast
    // push) must give the straightforward code's orders.
    for costs in [
        Costs { comm: 887.0, ..Costs::fbw(18894.0, 19288.0, 14386.0) },
        Costs::fbw(10.0, 12.0, 8.0),
        Costs::fbw(2.0, 2.0, 2.0),
    ] {
        let params = ScheduleParams::new(32, 256).with_costs(costs);
        assert!(agrees_with_the_reference(&params), "{params:?}");
    }
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(96))]

    /// Random sizes, whole-number costs (so both sides round alike), memory counts and limits:
    /// the same orders as the straightforward reference wherever the authors' code finishes.
    #[test]
    fn matches_the_reference_on_random_inputs(
        devices in 1u32..=12,
        microbatches in 1u32..=40,
        f in 1u32..=30, b in 1u32..=30, w in 0u32..=30, comm in 0u32..=6,
        mem_w in proptest::option::of(0u32..=2),
        half_units in proptest::option::of(0u32..=30),
    ) {
        let costs = Costs {
            comm: f64::from(comm),
            mem_f: 2.0,
            mem_w: mem_w.map(f64::from),
            ..Costs::fbw(f64::from(2 * f), f64::from(2 * b), f64::from(2 * w))
        };
        let mut params = ScheduleParams::new(devices, microbatches).with_costs(costs);
        // Limits around 1F1B's 2P chunk activations of mem-f/2 = 1.
        params.mem_limit = half_units.map(|u| f64::from(2 * devices + u) - 12.0).filter(|l| *l > 0.0);
        agrees_with_the_reference(&params);
    }
}

/// An independent restatement of the authors' ZB-V heuristic (`zbv.py`, `try_v_schedule` and
/// `create_schedule`; zero-bubble.md §4.7) in their own terms: per-chunk costs, the memory
/// deltas `f_mem`, `b_mem`, `w_mem` and `max_mem`, times kept in plain arrays (no [`Builder`]).
/// Where their code stops on an assertion (or would loop forever) this returns `None`.
mod reference {
    use std::collections::VecDeque;

    use crate::params::ScheduleParams;

    /// The code's inputs.
    pub(super) struct Config {
        stages: usize,
        micro: usize,
        /// Per-chunk F, B, W times.
        cost: [f64; 3],
        comm: f64,
        /// Per-chunk memory deltas of F, B and W.
        mem: [f64; 3],
        max_mem: f64,
    }

    impl Config {
        /// The code's inputs for our parameters: each chunk is half a stage.
        pub(super) fn of(params: &ScheduleParams) -> Config {
            let c = &params.costs;
            let (mem_f, mem_w) = (c.mem_f / 2.0, c.mem_w() / 2.0);
            Config {
                stages: params.devices as usize,
                micro: params.microbatches as usize,
                cost: [c.f / 2.0, c.b / 2.0, c.w / 2.0],
                comm: c.comm,
                mem: [mem_f, -(mem_f - mem_w), -mem_w],
                max_mem: params.mem_limit.unwrap_or(mem_f * 2.0 * params.devices as f64),
            }
        }
    }

    /// One finished run.
    pub(super) struct Result {
        /// Each stage's order in our notation (upper case: model chunk 0).
        pub(super) orders: Vec<String>,
        bubbles: Vec<f64>,
        pub(super) max_bubble: f64,
    }

    /// The four fill settings, each refined; the strictly best worst bubble wins.
    pub(super) fn create_schedule(config: &Config) -> Option<Result> {
        let mut best: Option<Result> = None;
        for fill_b in [true, false] {
            for fill_f in [true, false] {
                let result = try_refined(config, fill_f, fill_b, None)?;
                if best.as_ref().is_none_or(|b| result.max_bubble < b.max_bubble) {
                    best = Some(result);
                }
            }
        }
        best
    }

    /// A run, then (first time, or while strictly better than its budgets) a run with its own
    /// bubbles as budgets; the better of the two.
    fn try_refined(config: &Config, fill_f: bool, fill_b: bool, approved: Option<&[f64]>) -> Option<Result> {
        let result = Run::new(config, fill_f, fill_b, approved).schedule()?;
        let max_approved = approved.map(|a| a.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        if max_approved.is_none_or(|m| result.max_bubble < m) {
            let again = try_refined(config, fill_f, fill_b, Some(&result.bubbles))?;
            if again.max_bubble < result.max_bubble {
                return Some(again);
            }
        }
        Some(result)
    }

    /// A node: (category F/B/W, chunk as the code counts it, stage, microbatch).
    type Node = (usize, usize, usize, usize);

    struct Run<'a> {
        c: &'a Config,
        fill_f: bool,
        fill_b: bool,
        approved: Vec<f64>,
        max_approved: f64,
        /// `count[stage][cat * 2 + chunk]`.
        count: Vec<[usize; 6]>,
        end: Vec<Option<f64>>,
        cur: Vec<f64>,
        mem: Vec<f64>,
        bubble: Vec<f64>,
        pending_w: Vec<VecDeque<usize>>,
        order: Vec<Vec<Node>>,
    }

    impl<'a> Run<'a> {
        fn new(c: &'a Config, fill_f: bool, fill_b: bool, approved: Option<&[f64]>) -> Run<'a> {
            let approved = approved.map_or_else(|| vec![-1.0; c.stages], <[f64]>::to_vec);
            let max_approved = approved.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Run {
                c,
                fill_f,
                fill_b,
                approved,
                max_approved,
                count: vec![[0; 6]; c.stages],
                end: vec![None; 6 * c.stages * c.micro],
                cur: vec![0.0; c.stages],
                mem: vec![0.0; c.stages],
                bubble: vec![0.0; c.stages],
                pending_w: vec![VecDeque::new(); c.stages],
                order: vec![Vec::new(); c.stages],
            }
        }

        fn id(&self, (cat, chunk, stage, micro): Node) -> usize {
            ((cat * 2 + chunk) * self.c.stages + stage) * self.c.micro + micro
        }

        fn end_of(&self, node: Node) -> Option<f64> {
            self.end[self.id(node)]
        }

        fn max_stage_bubble(&self, stage: usize) -> f64 {
            let worst = self.bubble.iter().copied().fold(0.0, f64::max);
            worst.max(self.max_approved - self.approved[stage])
        }

        fn put(&mut self, cat: usize, chunk: usize, stage: usize) -> Option<()> {
            let c = self.c;
            let n = self.count[stage][cat * 2 + chunk];
            if n >= c.micro || self.mem[stage] + c.mem[cat] > c.max_mem {
                return None;
            }
            // The pass before it on this stage: F0 → F1 → B0 → B1 (same microbatch), B → W.
            if cat == 2 {
                self.end_of((1, chunk, stage, n))?;
            } else if cat * 2 + chunk > 0 {
                let before = cat * 2 + chunk - 1;
                self.end_of((before / 2, before % 2, stage, n))?;
            }
            let no_bubble = self.cur[stage] + c.cost[cat];
            let mut end = no_bubble;
            let remote = match (cat, chunk) {
                (2, _) => None,
                (_, 1) if stage + 1 < c.stages => Some((cat, 1, stage + 1, n)),
                (_, 0) if stage > 0 => Some((cat, 0, stage - 1, n)),
                _ => None,
            };
            if let Some(dep) = remote {
                end = end.max(self.end_of(dep)? + c.comm + c.cost[cat]);
            }
            if self.count[stage][0] > 0 {
                self.bubble[stage] += end - no_bubble;
            }
            let id = self.id((cat, chunk, stage, n));
            self.end[id] = Some(end);
            self.cur[stage] = end;
            self.mem[stage] += c.mem[cat];
            self.order[stage].push((cat, chunk, stage, n));
            if cat == 1 {
                self.pending_w[stage].push_back(chunk);
            }
            self.count[stage][cat * 2 + chunk] += 1;
            Some(())
        }

        fn put_w(&mut self, stage: usize) -> Option<()> {
            let chunk = self.pending_w[stage].pop_front()?;
            self.put(2, chunk, stage)
        }

        /// Before a pass waiting for `dep` from another stage: pending Ws that end before it
        /// arrives, then one more if the wait would be the worst bubble and `extra` allows.
        fn fill(&mut self, stage: usize, dep: Option<Node>, extra: bool) -> Option<()> {
            let Some(arrival) = dep.and_then(|d| self.end_of(d)).map(|e| e + self.c.comm) else { return Some(()) };
            while !self.pending_w[stage].is_empty() && arrival >= self.cur[stage] + self.c.cost[2] {
                self.put_w(stage)?;
            }
            let gap = arrival - self.cur[stage];
            if !self.pending_w[stage].is_empty() && gap > self.max_stage_bubble(stage) - self.bubble[stage] && extra {
                self.put_w(stage)?;
            }
            Some(())
        }

        fn schedule(mut self) -> Option<Result> {
            let (p, m) = (self.c.stages, self.c.micro);
            let [mem_f, mem_b, _] = self.c.mem;
            for s in 0..p {
                self.put(0, 0, s)?;
            }
            for s in (0..p).rev() {
                if s + 1 < p {
                    let arrival = self.end_of((0, 1, s + 1, 0))? + self.c.comm;
                    while self.mem[s] + mem_f * (2 + 2 * s) as f64 <= self.c.max_mem
                        && self.cur[s] + self.c.cost[0] <= arrival
                        && self.count[s][0] < m
                    {
                        for j in 0..=s {
                            self.put(0, 0, j)?;
                        }
                    }
                }
                self.put(0, 1, s)?;
            }
            let mut chunk = 0;
            for s in 1..p {
                let mut rounds_without_a_pass = 0;
                while self.count[s][0] + self.count[s][1] < self.count[s - 1][0] + self.count[s - 1][1]
                    || (self.count[s][1] <= self.count[s - 1][1] && self.count[s - 1][1] < m)
                {
                    let before: usize = self.order.iter().map(Vec::len).sum();
                    for j in (s..p).rev() {
                        if self.count[j][chunk] < m {
                            self.put(0, chunk, j)?;
                        }
                    }
                    chunk = 1 - chunk;
                    let after: usize = self.order.iter().map(Vec::len).sum();
                    rounds_without_a_pass = if after > before { 0 } else { rounds_without_a_pass + 1 };
                    if rounds_without_a_pass >= 2 {
                        return None; // the code loops forever
                    }
                }
            }
            for _ in 0..2 * m {
                for s in 0..p {
                    while self.mem[s] + mem_b > self.c.max_mem {
                        self.put_w(s)?;
                    }
                }
                let (mut b1, mut b0) = (Vec::new(), Vec::new());
                for s in 0..p {
                    let [_, _, n0, n1, _, _] = self.count[s];
                    if n1 >= n0 {
                        b0.push(s);
                    } else if s + 1 == p || self.end_of((1, 1, s + 1, n1)).is_some() || n0 >= m {
                        b1.push(s);
                    } else {
                        b0.push(s);
                    }
                }
                let order = b1.into_iter().rev().map(|s| (s, 1)).chain(b0.into_iter().map(|s| (s, 0)));
                for (s, chunk) in order.collect::<Vec<_>>() {
                    let dep = match chunk {
                        1 if s + 1 < p => Some((1, 1, s + 1, self.count[s][3])),
                        0 if s > 0 => Some((1, 0, s - 1, self.count[s][2])),
                        _ => None,
                    };
                    let extra = chunk == 1 || self.fill_b;
                    self.fill(s, dep, extra)?;
                    self.put(1, chunk, s)?;
                }
                for s in 0..p {
                    let [n0, n1, ..] = self.count[s];
                    if n1 >= m {
                        continue;
                    }
                    let item = if n1 >= n0 {
                        0
                    } else if s + 1 == p || self.end_of((0, 1, s + 1, n1)).is_some() {
                        1
                    } else if n0 < m && (s == 0 || self.end_of((0, 0, s - 1, n0)).is_some()) {
                        0
                    } else {
                        continue;
                    };
                    while self.mem[s] + mem_f > self.c.max_mem {
                        self.put_w(s)?;
                    }
                    let dep = match item {
                        0 if s > 0 => Some((0, 0, s - 1, n0)),
                        1 if s + 1 < p => Some((0, 1, s + 1, n1)),
                        _ => None,
                    };
                    self.fill(s, dep, self.fill_f)?;
                    self.put(0, item, s)?;
                }
            }
            for s in 0..p {
                while !self.pending_w[s].is_empty() {
                    self.put_w(s)?;
                }
            }
            let max_bubble = self.bubble.iter().copied().fold(0.0, f64::max);
            let orders = self.order.iter().map(|o| notation(o)).collect();
            Some(Result { orders, bubbles: self.bubble, max_bubble })
        }
    }

    /// A stage's order in our notation: the code's B/W chunk `c` is model chunk `1 − c`.
    fn notation(order: &[Node]) -> String {
        let names = order.iter().map(|&(cat, chunk, _, micro)| {
            let model_chunk = if cat == 0 { chunk } else { 1 - chunk };
            let letter = ['F', 'B', 'W'][cat];
            let letter = if model_chunk == 0 { letter } else { letter.to_ascii_lowercase() };
            format!("{letter}{micro}")
        });
        names.collect::<Vec<_>>().join(" ")
    }
}

/// The grid [`keeps_the_orders_it_had_before_the_speedup`] hashes, one entry per device count:
/// every (M, costs, mem-w, limit) combination below, orders or error text.
fn snapshot_digest(devices: u32) -> u64 {
    let mut hash = Fnv::default();
    let p = devices;
    for microbatches in [1, p.saturating_sub(1).max(1), p + 1, 2 * p - 1, 2 * p, 3 * p + 2] {
        for (f, b, w, comm) in [
            (2.0, 2.0, 2.0, 0.0),
            (10.0, 12.0, 8.0, 1.0),
            (6.0, 2.0, 4.0, 3.0),
            (3.0, 7.0, 1.0, 0.5),
            (18894.0, 19288.0, 14386.0, 887.0),
        ] {
            for mem_w in [None, Some(0.0)] {
                for limit in [None, Some(0.75 * f64::from(p)), Some(1.2 * f64::from(p))] {
                    let mut params = ScheduleParams::new(devices, microbatches).with_costs(Costs {
                        comm,
                        mem_w,
                        ..Costs::fbw(f, b, w)
                    });
                    params.mem_limit = limit;
                    match generate("zb-v", &params) {
                        Ok(schedule) => (0..p).for_each(|d| hash.write(schedule.notation(d).as_bytes())),
                        Err(err) => hash.write(err.to_string().as_bytes()),
                    }
                    hash.write(b"\n");
                }
            }
        }
    }
    hash.0
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[test]
fn keeps_the_orders_it_had_before_the_speedup() {
    // Taken from the heuristic before attempts were reused and the builder sped up (issue 14):
    // the output must stay the same pass for pass.
    for (devices, digest) in SNAPSHOT {
        assert_eq!(snapshot_digest(devices), digest, "P = {devices}");
    }
}

#[test]
#[ignore = "prints the snapshot table"]
fn print_snapshot() {
    for devices in [1, 2, 3, 4, 5, 6, 7, 8, 12, 16] {
        println!("    ({devices}, {:#018x}),", snapshot_digest(devices));
    }
}

/// [`snapshot_digest`] per device count, printed by [`print_snapshot`].
const SNAPSHOT: [(u32, u64); 10] = [
    (1, 0x3a4b4f55a64e1a35),
    (2, 0xb69d8f7a739ecb5d),
    (3, 0x40e122826b04ef47),
    (4, 0x21d01e991e7028ef),
    (5, 0x391e3b37997e2d93),
    (6, 0x4a2c612e6a6eee5f),
    (7, 0x838ffdb52fa5fed9),
    (8, 0x1c741558be697551),
    (12, 0x6bd8f54c7e758a0d),
    (16, 0x187cce0a3a38daa7),
];

/// Unequal per-stage memory (a model's LM head, `--mem-f 1,1,1,3`): ZB-V generates at its
/// default limit, and never goes above an explicit one.
#[test]
fn keeps_its_limits_with_unequal_stage_memory() {
    super::super::v_common::testing::check_limits_with_unequal_memory(&["zb-v"], &[], 1..=8, 1..=24, 0.5..1.5, 64);
}

/// Below the memory ZB-V needs, the error says so and names a limit that works, also with a
/// model's unequal stages (the Zero Bubble paper's 1.5B model on 4 GPUs, where the default
/// limit is not a whole number of the mean's chunk activations): at 28 GiB it once reported
/// the warm-up's stall ("would run before its input") instead. Every limit that works keeps
/// the peak within it, and more memory never turns a success into a failure.
#[test]
fn too_little_memory_names_a_limit_that_works_with_unequal_stages() {
    let model = crate::model::ModelSpec::preset("zb-1.5b").resolve().unwrap();
    let costs = model.derive(4).unwrap().costs();
    let gib = (1u64 << 30) as f64;
    let base = ScheduleParams::new(4, 8).with_costs(costs);
    let (mut smallest, mut named_last) = (None, None);
    for tenths in (100..=600).step_by(5) {
        let limit = f64::from(tenths) / 10.0 * gib;
        match run("zb-v", &base.clone().with_mem_limit(limit)) {
            Ok(a) => {
                assert!(a.stats.peak_memory <= limit * (1.0 + 1e-9), "{tenths}: {} > {limit}", a.stats.peak_memory);
                smallest.get_or_insert(tenths);
            }
            Err(e) => {
                let text = e.to_string();
                assert!(smallest.is_none(), "{tenths} GiB/10 fails above a limit that works: {text}");
                assert!(text.starts_with("cannot fit memory"), "{tenths}: {text}");
                let named = text.split("zb-v fits here from mem-limit ").nth(1).and_then(|t| t.split(';').next());
                let named =
                    named.and_then(|n| crate::model::parse_bytes(&n.replace(' ', ""), crate::Field::MemLimit).ok());
                let named = named.unwrap_or_else(|| panic!("{tenths}: {text}"));
                assert!(run("zb-v", &base.clone().with_mem_limit(named)).is_ok(), "{tenths}: {named} does not work");
                assert!(named > limit, "{tenths}: {text}");
                named_last = Some(named);
            }
        }
    }
    // The least limit itself, not the next whole chunk activation above it: no further than
    // the first scanned limit that works (a step of 0.5 GiB, under a chunk activation).
    let (Some(t), Some(named)) = (smallest, named_last) else { panic!("{smallest:?} {named_last:?}") };
    assert!(named <= f64::from(t) / 10.0 * gib, "{named} above the scanned {t} GiB/10 that works");
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(32))]

    /// With F = B = W, no communication, M ≥ 2P−1, mem-w = mem-f and the default limit (1F1B's
    /// memory), ZB-V has no bubble and every device holds P·mem-f: the explanation's values
    /// are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(devices in 1u32..7, extra in 0u32..8, f in 0.1f64..4.0, mem_f in 0.5f64..3.0) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let p = params(devices, 2 * devices - 1 + extra, explained_costs(f, f, f, mem_f, mem_f));
        check_explained(&FAMILY, &p)?;
    }
}
