use super::super::zb_h1::golden::{ZB_1P_GOLDEN, ZB_2P_GOLDEN};
use super::*;
use crate::{generate, run, simulate, Costs, Field};

#[test]
fn the_reference_units_give_the_same_orders() {
    // Appendix A's own units: mem_f = 2, mem_b = mem_w = −1, max_mem = 8 (1p) or 16 (2p).
    for (goldens, limit) in [(&ZB_1P_GOLDEN, 8.0), (&ZB_2P_GOLDEN, 16.0)] {
        for g in goldens {
            let mut params = g.params().with_mem_limit(limit);
            params.costs.mem_f = 2.0;
            params.costs.mem_w = Some(1.0);
            let schedule = generate("zb-auto", &params).unwrap();
            let orders: Vec<String> = (0..4).map(|d| schedule.notation(d)).collect();
            assert_eq!(orders, g.orders, "limit {limit}, m={}, costs {:?}", g.microbatches, g.costs);
        }
    }
}

/// The 1.5B model of the paper's Table 3 on 8 devices: Table 6's times in µs, §1.2's memory
/// per token (h = 2304, a = 24, s = 1024).
fn model_1_5b(microbatches: u32) -> ScheduleParams {
    let (h, a, s) = (2304.0, 24.0, 1024.0);
    let costs = Costs {
        comm: 601.0,
        mem_f: 34.0 * h + 5.0 * a * s,
        mem_w: Some(32.0 * h),
        ..Costs::fbw(18522.0, 18086.0, 9337.0)
    };
    ScheduleParams::new(8, microbatches).with_costs(costs.clone())
}

#[test]
fn paper_table_5_first_row() {
    let params = model_1_5b(24);
    for (family, rate) in
        [("1f1b", "0.2431"), ("zb-h1", "0.1585"), ("zb-h2", "0.1083"), ("zb-1p", "0.1585"), ("zb-2p", "0.0433")]
    {
        let stats = run(family, &params).unwrap().stats;
        assert_eq!(format!("{:.4}", stats.bubble_rate), rate, "{family}");
    }
}

#[test]
fn heuristic_times_match_the_authors_code() {
    // zero-bubble.md §2.3: the `best_time` of the authors' heuristic (the longest device span,
    // our cost) for ZB-1p and ZB-2p with Table 6's times.
    let model = |p: u32, m: u32, f: f64, b: f64, w: f64, comm: f64, h: f64, a: f64| {
        let costs = Costs { comm, mem_f: 34.0 * h + 5.0 * a * 1024.0, mem_w: Some(32.0 * h), ..Costs::fbw(f, b, w) };
        ScheduleParams::new(p, m).with_costs(costs.clone())
    };
    let cases = [
        (model_1_5b(24), 1310405.0, 1152599.0),
        (model(16, 48, 11347.0, 11248.0, 8132.0, 377.0, 5120.0, 40.0), 1714461.0, 1484721.0),
        (model(32, 96, 10419.0, 10207.0, 7715.0, 408.0, 6144.0, 48.0), 3171569.0, 2731004.0),
    ];
    for (params, one_p, two_p) in cases {
        assert_eq!(run("zb-1p", &params).unwrap().stats.cost, one_p, "zb-1p p={}", params.devices);
        assert_eq!(run("zb-2p", &params).unwrap().stats.cost, two_p, "zb-2p p={}", params.devices);
    }
}

/// The heuristic without its shortcuts: all eight runs to the end, the first strictly best.
/// Returns that run's orders as placed, before sorting by completion time.
fn best_of_all_eight_runs(params: &ScheduleParams, limit: f64) -> Run {
    let placement = Placement::linear(params.devices);
    let costs = StageCosts::new(&params.costs, &placement);
    let mut best: Option<Run> = None;
    for switches in GRID {
        let Outcome::Finished(run) =
            Heuristic::new(&placement, params.microbatches, &costs, limit, switches, params.units)
                .run(f64::INFINITY)
                .unwrap()
        else {
            panic!("a run without a bound gave up");
        };
        if best.as_ref().is_none_or(|b| run.best_time < b.best_time) {
            best = Some(*run);
        }
    }
    best.unwrap()
}

fn all_eight_runs(params: &ScheduleParams, limit: f64) -> Schedule {
    let costs = StageCosts::new(&params.costs, &Placement::linear(params.devices));
    final_orders(best_of_all_eight_runs(params, limit), &costs, limit)
}

#[test]
fn skipping_repeated_and_hopeless_runs_changes_nothing() {
    let costs = [
        Costs::fbw(1.0, 1.0, 1.0),
        Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) },
        Costs::fbw(2.0, 1.0, 1.0),
        Costs { comm: 2.0, ..Costs::fbw(1.0, 3.0, 2.0) },
        Costs { comm: 0.5, mem_w: Some(0.25), ..Costs::fbw(1.5, 2.25, 0.75) },
        Costs { comm: 0.1, ..Costs::fbw(0.3, 0.7, 0.2) },
        Costs::fbw(3.0, 3.0, 0.0),
    ];
    let mut checked = 0;
    for p in 1..=5 {
        for m in 1..=10 {
            for c in costs.clone() {
                let pf = f64::from(p);
                for limit in [1.0, 0.5 * pf + 0.5, pf, 1.5 * pf, 2.0 * pf, 3.0 * f64::from(m)] {
                    let params = ScheduleParams::new(p, m).with_costs(c.clone()).with_mem_limit(limit);
                    let expected = all_eight_runs(&params, limit);
                    assert_eq!(generate("zb-auto", &params).unwrap(), expected, "p={p} m={m} {c:?} limit {limit}");
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 5 * 10 * 7 * 6);
}

#[test]
fn never_exceeds_the_memory_limit() {
    for p in 1..=6 {
        for m in 1..=12 {
            for c in [Costs::fbw(1.0, 1.0, 1.0), Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) }] {
                for k in 2..=4 * p {
                    let limit = 0.5 * f64::from(k);
                    let params = ScheduleParams::new(p, m).with_costs(c.clone()).with_mem_limit(limit);
                    let stats = run("zb-auto", &params).unwrap().stats;
                    assert!(stats.peak_memory <= limit, "p={p} m={m} {c:?} limit {limit}: {}", stats.peak_memory);
                }
            }
        }
    }
}

#[test]
fn zb_1p_keeps_1f1b_memory_and_zb_2p_twice_that() {
    for p in 1..=8 {
        for m in [1, p, 2 * p, 3 * p + 1] {
            let params = ScheduleParams::new(p, m).with_costs(Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) });
            let one = run("zb-1p", &params).unwrap().stats;
            let two = run("zb-2p", &params).unwrap().stats;
            assert!(one.peak_memory <= f64::from(p), "p={p} m={m}");
            assert!(two.peak_memory <= f64::from(2 * p), "p={p} m={m}");
            assert!(two.cost <= one.cost, "p={p} m={m}: more memory never hurts here");
        }
    }
}

#[test]
fn zero_time_passes_are_ordered_by_completion_then_kind() {
    // With a zero-time W or B, passes tie; the code sorts the chosen run's passes by completion
    // time, then kind (F, B, W), then microbatch, and the simulator re-times that order.
    let params = ScheduleParams::new(1, 3).with_costs(Costs::fbw(2.0, 0.0, 1.0));
    // Placed as F0 B0 F1 B1 F2 W0 W1 B2 W2; B2 (zero time) ends with W1.
    assert_eq!(generate("zb-auto", &params).unwrap().notation(0), "F0 B0 F1 B1 F2 W0 B2 W1 W2");
    for (f, b, w) in [(1.0, 1.0, 0.0), (2.0, 0.0, 1.0), (1.0, 0.0, 0.0)] {
        for p in 1..=5 {
            for m in 1..=9 {
                let params = ScheduleParams::new(p, m).with_costs(Costs::fbw(f, b, w));
                let placed = best_of_all_eight_runs(&params, 3.0 * f64::from(m)).builder.finish();
                let timeline = simulate(&placed, &StageCosts::new(&params.costs, &placed.placement)).unwrap();
                let mut expected = placed.clone();
                for (order, timed) in expected.orders.iter_mut().zip(&timeline.devices) {
                    let mut keyed: Vec<_> = order.iter().zip(&timed.ops).map(|(op, t)| (t.end, *op)).collect();
                    keyed.sort_by(|(ea, a), (eb, b)| {
                        let rank = |op: &Op| {
                            [PassKind::F, PassKind::B, PassKind::W].iter().position(|&k| k == op.first().kind)
                        };
                        ea.total_cmp(eb)
                            .then(rank(a).cmp(&rank(b)))
                            .then(a.first().microbatch.cmp(&b.first().microbatch))
                    });
                    *order = keyed.into_iter().map(|(_, op)| op).collect();
                }
                assert_eq!(generate("zb-auto", &params).unwrap(), expected, "f={f} b={b} w={w} p={p} m={m}");
            }
        }
    }
}

#[test]
fn a_zero_time_forward_never_breaks_the_limit() {
    for p in 1..=5 {
        for m in 1..=9 {
            for limit in [1.0, 1.5, f64::from(p)] {
                let params = ScheduleParams::new(p, m).with_costs(Costs::fbw(0.0, 1.0, 1.0)).with_mem_limit(limit);
                let stats = run("zb-auto", &params).unwrap().stats;
                assert!(stats.peak_memory <= limit, "p={p} m={m} limit {limit}");
            }
        }
    }
}

#[test]
fn a_limit_below_one_forward_cannot_fit() {
    let params = ScheduleParams::new(4, 8).with_mem_limit(0.75);
    let err = generate("zb-auto", &params).unwrap_err();
    assert_eq!(err.field, Field::MemLimit);
    assert_eq!(
        err.to_string(),
        "cannot fit memory: one forward holds mem-f = 1 on its device, but the limit is 0.75\n  \
         hint: raise --mem-limit to at least 1; 4 (P·mem-f) is 1F1B's memory (ZB-1p), 8 (2P·mem-f) that of ZB-2p"
    );
    // The authors' code returns a schedule for a single microbatch here, above the limit.
    let err = generate("zb-auto", &ScheduleParams::new(4, 1).with_mem_limit(0.75)).unwrap_err();
    assert!(err.message.starts_with("cannot fit memory: "), "{err}");
    // One forward's worth is enough: devices then alternate F, B, W.
    let analysis = run("zb-auto", &ScheduleParams::new(4, 8).with_mem_limit(1.0)).unwrap();
    assert_eq!(
        analysis.schedule.notation(3),
        "F0 B0 W0 F1 B1 W1 F2 B2 W2 F3 B3 W3 F4 B4 W4 F5 B5 W5 F6 B6 W6 F7 B7 W7"
    );
    assert_eq!(analysis.stats.peak_memory, 1.0);
}

#[test]
fn fixed_limit_families_schedule_to_their_own_limit_whatever_mem_limit_says() {
    // A given --mem-limit is a cap to check against, as for 1F1B; it does not change ZB-2p.
    let own = generate("zb-2p", &ScheduleParams::new(4, 8)).unwrap();
    let capped = generate("zb-2p", &ScheduleParams::new(4, 8).with_mem_limit(6.0)).unwrap();
    assert_eq!(own, capped);
    let auto6 = generate("zb-auto", &ScheduleParams::new(4, 8).with_mem_limit(6.0)).unwrap();
    assert_ne!(own, auto6, "zb-auto schedules to the limit it is given");
    let err = generate("zb-auto", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("zb-auto does not take --chunks"), "{err}");
}

#[test]
fn without_a_limit_the_default_never_binds() {
    // zb-auto's default limit is the code's 3·M·mem-f: the same as any larger limit.
    let params = ScheduleParams::new(4, 12).with_costs(Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) });
    let unlimited = generate("zb-auto", &params).unwrap();
    assert_eq!(unlimited, generate("zb-auto", &params.clone().with_mem_limit(1e9)).unwrap());
    // Here it finds a shorter schedule than ZB-2p (184, §9.2) by starting B0 without a bubble.
    assert_eq!(run("zb-auto", &params).unwrap().stats.cost, 181.0);
}

#[test]
fn edge_sizes_give_valid_schedules() {
    for (p, m) in [(1, 1), (1, 5), (5, 1), (2, 1), (16, 3)] {
        let analysis = run("zb-auto", &ScheduleParams::new(p, m)).unwrap();
        assert_eq!(analysis.schedule.pass_count(), 3 * (p * m) as usize, "p={p} m={m}");
        let stage_costs = StageCosts::for_schedule(&Costs::default(), &analysis.schedule);
        assert!(simulate(&analysis.schedule, &stage_costs).is_ok());
    }
}

/// Unequal per-stage memory: zb-auto and zb-opt generate at their default limit and never go
/// above an explicit one; ZB-1p and ZB-2p fix their limit at P·mem-f and 2P·mem-f: they must
/// still generate.
#[test]
fn keeps_its_limits_with_unequal_stage_memory() {
    let (families, fixed) = (["zb-auto", "zb-opt"], ["zb-1p", "zb-2p"]);
    super::super::v_common::testing::check_limits_with_unequal_memory(&families, &fixed, 1..=6, 1..=16, 0.3..1.5, 32);
}
