//! Tests of the ZB-V heuristic against zero-bubble.md §9.2 and Appendix A.

use super::super::v_common::testing::{assert_orders, held_until_w, peaks, run_ok, Setting};
use super::*;
use crate::params::Costs;
use crate::{generate, run};

/// Appendix A golden orders of ZB-V (v_schedule (p=4): setting, cost (max span), orders of devices 0..4.
const GOLDEN: [(Setting, f64, [&str; 4]); 4] = [
    (
        Setting::unit(8),
        48.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 B4 w7 B5 W4 B6 W5 B7 W6 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 B4 b7 B5 w6 B6 W4 B7 w7 W5 W6 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
        ],
    ),
    (
        Setting::unit(12),
        72.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 W5 f9 b9 w9 B6 W6 f10 b10 w10 B7 W7 f11 b11 B8 w11 B9 W8 B10 W9 B11 W10 W11",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 W6 f10 b9 w9 B7 W7 f11 b10 B8 b11 B9 w10 B10 W8 B11 w11 W9 W10 W11",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 W7 f11 b9 B8 b10 B9 b11 B10 w9 B11 W8 w10 W9 w11 W10 W11",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 B8 b9 B9 b10 B10 b11 B11 w8 W8 w9 W9 w10 W10 w11 W11",
        ],
    ),
    (
        Setting::uneven(8, 0.0),
        248.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 B4 w7 W4 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 B4 b7 B5 w6 W4 B6 w7 B7 W5 W6 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
        ],
    ),
    (
        Setting::uneven(12, 1.0),
        384.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 f9 b9 W5 w9 B6 f10 b10 W6 w10 B7 f11 b11 W7 B8 w11 W8 B9 W9 B10 W10 B11 W11",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 f10 b9 W6 w9 B7 f11 b10 B8 b11 W7 B9 w10 B10 W8 w11 B11 W9 W10 W11",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 f11 b9 B8 b10 B9 b11 B10 W7 w9 B11 W8 w10 W9 w11 W10 W11",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 B8 b9 B9 b10 B10 b11 B11 w8 W8 w9 W9 w10 W10 w11 W11",
        ],
    ),
];

#[test]
fn reproduces_the_golden_orders_and_costs() {
    for (setting, cost, golden) in GOLDEN {
        let a = run_ok("zb-v", &setting.params());
        assert_orders(&a.schedule, &golden);
        assert_eq!(a.stats.cost, cost, "{setting:?}");
    }
}

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
    for (setting, _, _) in GOLDEN {
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
        let outcome = Heuristic::new(&params, capacity(&params)).best().unwrap_or_else(|_| panic!("{params:?}"));
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
    assert_eq!(capacity(&params), 8);
    assert!(run("zb-v", &params).is_ok());
    assert_eq!(capacity(&ScheduleParams::new(4, 8).with_costs(Costs { mem_f: 0.0, ..Costs::default() })), u64::MAX);
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
