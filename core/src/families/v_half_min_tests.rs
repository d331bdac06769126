//! Tests of V-Half and V-Min against the authors' golden orders and numbers
//! (zero-bubble.md §9.2 and Appendix A).

use super::*;
use crate::{generate, run, Costs};

// Appendix A, `zbv_greedy` orders for P = 4. The same orders are produced for every cost
// setting there (the generator works in slots); only the simulated times differ.
const V_HALF_P4_M8: [&str; 4] = [
    "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 B0 b2 w2 f3 W0 F5 B1 b3 w3 f4 W1 F6 B2 b4 w4 f5 W2 F7 B3 b5 w5 f6 b6 w6 B4 W3 W4 f7 b7 B5 w7 B6 W5 W6 B7 W7",
    "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 B0 W0 F4 f3 b2 w2 B1 W1 F5 f4 b3 w3 B2 W2 F6 f5 b4 w4 B3 F7 W3 f6 b5 w5 B4 b6 w6 f7 W4 B5 b7 B6 w7 W5 W6 B7 W7",
    "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 B0 w1 W0 f3 F4 B1 b2 w2 f4 W1 F5 B2 b3 w3 f5 W2 F6 B3 b4 w4 f6 W3 F7 B4 b5 w5 f7 b6 B5 w6 B6 b7 w7 W4 B7 W5 W6 W7",
    "F0 f0 F1 f1 F2 f2 b0 w0 B0 W0 F3 f3 b1 w1 B1 W1 F4 f4 b2 w2 B2 W2 F5 f5 b3 w3 B3 F6 W3 f6 b4 B4 w4 F7 W4 f7 b5 B5 b6 B6 w5 w6 b7 B7 w7 W5 W6 W7",
];
const V_MIN_P4_M8: [&str; 4] = [
    "F0 F1 F2 f0 b0 w0 f1 b1 w1 B0 W0 F3 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 f7 b7 B6 w7 W6 B7 W7",
    "F0 F1 f0 f1 b0 w0 F2 B0 b1 w1 W0 f2 F3 B1 b2 w2 W1 f3 F4 B2 b3 w3 W2 f4 F5 B3 b4 w4 W3 f5 F6 B4 b5 w5 W4 f6 F7 B5 b6 w6 W5 f7 B6 b7 w7 W6 B7 W7",
    "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 f2 w1 B1 F3 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 b6 f7 w6 B6 W6 b7 w7 B7 W7",
    "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 b7 B7 w7 W7",
];
const V_HALF_P4_M12: [&str; 4] = [
    "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 B0 b2 w2 f3 W0 F5 B1 b3 w3 f4 W1 F6 B2 b4 w4 f5 W2 F7 B3 b5 w5 f6 W3 F8 B4 b6 w6 f7 W4 F9 B5 b7 w7 f8 W5 F10 B6 b8 w8 f9 W6 F11 B7 b9 w9 f10 b10 w10 B8 W7 W8 f11 b11 B9 w11 B10 W9 W10 B11 W11",
    "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 B0 W0 F4 f3 b2 w2 B1 W1 F5 f4 b3 w3 B2 W2 F6 f5 b4 w4 B3 W3 F7 f6 b5 w5 B4 W4 F8 f7 b6 w6 B5 W5 F9 f8 b7 w7 B6 W6 F10 f9 b8 w8 B7 F11 W7 f10 b9 w9 B8 b10 w10 f11 W8 B9 b11 B10 w11 W9 W10 B11 W11",
    "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 B0 w1 W0 f3 F4 B1 b2 w2 f4 W1 F5 B2 b3 w3 f5 W2 F6 B3 b4 w4 f6 W3 F7 B4 b5 w5 f7 W4 F8 B5 b6 w6 f8 W5 F9 B6 b7 w7 f9 W6 F10 B7 b8 w8 f10 W7 F11 B8 b9 w9 f11 b10 B9 w10 B10 b11 w11 W8 B11 W9 W10 W11",
    "F0 f0 F1 f1 F2 f2 b0 w0 B0 W0 F3 f3 b1 w1 B1 W1 F4 f4 b2 w2 B2 W2 F5 f5 b3 w3 B3 W3 F6 f6 b4 w4 B4 W4 F7 f7 b5 w5 B5 W5 F8 f8 b6 w6 B6 W6 F9 f9 b7 w7 B7 F10 W7 f10 b8 B8 w8 F11 W8 f11 b9 B9 b10 B10 w9 w10 b11 B11 w11 W9 W10 W11",
];
const V_MIN_P4_M12: [&str; 4] = [
    "F0 F1 F2 f0 b0 w0 f1 b1 w1 B0 W0 F3 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 F8 f7 b7 B6 w7 W6 F9 f8 b8 B7 w8 W7 F10 f9 b9 B8 w9 W8 F11 f10 b10 B9 w10 W9 f11 b11 B10 w11 W10 B11 W11",
    "F0 F1 f0 f1 b0 w0 F2 B0 b1 w1 W0 f2 F3 B1 b2 w2 W1 f3 F4 B2 b3 w3 W2 f4 F5 B3 b4 w4 W3 f5 F6 B4 b5 w5 W4 f6 F7 B5 b6 w6 W5 f7 F8 B6 b7 w7 W6 f8 F9 B7 b8 w8 W7 f9 F10 B8 b9 w9 W8 f10 F11 B9 b10 w10 W9 f11 B10 b11 w11 W10 B11 W11",
    "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 f2 w1 B1 F3 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 b6 f7 w6 B6 F8 W6 b7 f8 w7 B7 F9 W7 b8 f9 w8 B8 F10 W8 b9 f10 w9 B9 F11 W9 b10 f11 w10 B10 W10 b11 w11 B11 W11",
    "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 F8 f8 b7 B7 w7 W7 F9 f9 b8 B8 w8 W8 F10 f10 b9 B9 w9 W9 F11 f11 b10 B10 w10 W10 b11 B11 w11 W11",
];

/// CLI costs whose V chunk passes take `f, b, w` (a V stage is half a device's share).
fn chunk_costs(f: f64, b: f64, w: f64) -> Costs {
    Costs::fbw(2.0 * f, 2.0 * b, 2.0 * w)
}

/// `chunk_costs` with W freeing the whole activation, the papers' lifespan count.
fn lifespan_costs(f: f64, b: f64, w: f64) -> Costs {
    Costs { mem_w: Some(1.0), ..chunk_costs(f, b, w) }
}

fn params(devices: u32, microbatches: u32, costs: Costs) -> ScheduleParams {
    ScheduleParams::new(devices, microbatches).with_costs(costs)
}

fn assert_orders(name: &str, microbatches: u32, golden: &[&str; 4]) {
    let schedule = generate(name, &params(4, microbatches, chunk_costs(1.0, 1.0, 1.0))).unwrap();
    for (device, line) in golden.iter().enumerate() {
        assert_eq!(schedule.notation(device as u32), *line, "{name} m={microbatches} device {device}");
    }
}

#[test]
fn v_half_reproduces_the_golden_orders_pass_for_pass() {
    assert_orders("v-half", 8, &V_HALF_P4_M8);
    assert_orders("v-half", 12, &V_HALF_P4_M12);
}

#[test]
fn v_min_reproduces_the_golden_orders_pass_for_pass() {
    assert_orders("v-min", 8, &V_MIN_P4_M8);
    assert_orders("v-min", 12, &V_MIN_P4_M12);
}

#[test]
fn costs_and_bubble_rates_match_the_reference() {
    // (family, microbatches, chunk F, B, W, comm, cost, bubble rate) from §9.2 / Appendix A.
    let cases = [
        ("v-half", 8, (1.0, 1.0, 1.0), 0.0, 53.0, "0.0943"),
        ("v-min", 8, (1.0, 1.0, 1.0), 0.0, 59.0, "0.1864"),
        ("v-half", 12, (1.0, 1.0, 1.0), 0.0, 77.0, "0.0649"),
        ("v-min", 12, (1.0, 1.0, 1.0), 0.0, 83.0, "0.1325"),
        ("v-half", 8, (5.0, 6.0, 4.0), 0.0, 279.0, "0.1398"),
        ("v-min", 8, (5.0, 6.0, 4.0), 0.0, 344.0, "0.3023"),
        ("v-half", 12, (5.0, 6.0, 4.0), 1.0, 418.0, "0.1388"),
        ("v-min", 12, (5.0, 6.0, 4.0), 1.0, 544.0, "0.3382"),
    ];
    for (name, m, (f, b, w), comm, cost, rate) in cases {
        let costs = Costs { comm, ..chunk_costs(f, b, w) };
        let a = run(name, &params(4, m, costs)).unwrap();
        assert_eq!(a.stats.cost, cost, "{name} m={m} costs {f},{b},{w} comm {comm}");
        assert_eq!(format!("{:.4}", a.stats.bubble_rate), rate, "{name} m={m}");
    }
}

#[test]
fn peaks_match_the_reference() {
    // 6 chunk-activations (3 mem-f) for V-Half, 4 (2 mem-f) for V-Min, on every device.
    for (name, peak) in [("v-half", 3.0), ("v-min", 2.0)] {
        for m in [8, 12] {
            let a = run(name, &params(4, m, lifespan_costs(1.0, 1.0, 1.0))).unwrap();
            let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
            assert_eq!(peaks, vec![peak; 4], "{name} m={m}");
        }
    }
}

#[test]
fn every_size_validates_and_simulates() {
    for name in ["v-half", "v-min"] {
        for p in 1..=8 {
            for m in 1..=24 {
                let a = run(name, &params(p, m, chunk_costs(3.0, 4.0, 2.0)))
                    .unwrap_or_else(|e| panic!("{name} p={p} m={m}: {e}"));
                assert_eq!(a.schedule.pass_count(), (6 * p * m) as usize, "{name} p={p} m={m}");
            }
        }
    }
}

#[test]
fn predicted_peaks_hold_where_the_prediction_is_given() {
    for name in ["v-half", "v-min"] {
        let family = crate::family(name).unwrap();
        for p in 1..=12 {
            for m in 1..=3 * p + 4 {
                for mem_w in [0.5, 0.75, 1.0] {
                    let params = params(p, m, Costs { mem_w: Some(mem_w), ..chunk_costs(1.0, 1.0, 1.0) });
                    let Some(predicted) = (family.predict)(&params).unwrap().peak_memory else { continue };
                    let a = run(name, &params).unwrap();
                    let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
                    assert_eq!(peaks, predicted, "{name} p={p} m={m} mem-w={mem_w}");
                }
            }
        }
    }
}

#[test]
fn peak_prediction_covers_enough_microbatches_and_mem_w() {
    let predicted = |name: &str, p: u32, m: u32, mem_w: f64| {
        let params = params(p, m, Costs { mem_w: Some(mem_w), ..chunk_costs(1.0, 1.0, 1.0) });
        (crate::family(name).unwrap().predict)(&params).unwrap().peak_memory
    };
    assert_eq!(predicted("v-half", 4, 5, 0.5), Some(vec![3.0; 4]));
    assert_eq!(predicted("v-half", 4, 4, 1.0), None); // the stable phase is not full yet
    assert_eq!(predicted("v-min", 4, 3, 1.0), Some(vec![2.0; 4]));
    assert_eq!(predicted("v-min", 5, 40, 1.0), Some(vec![2.5, 3.0, 3.0, 3.0, 3.0]));
    assert_eq!(predicted("v-min", 5, 40, 0.5), None);
    assert_eq!(predicted("v-half", 4, 8, 0.25), None); // B frees more than the lifespan count
}

#[test]
fn predicted_bubbles_hold_for_balanced_costs() {
    for name in ["v-half", "v-min"] {
        let family = crate::family(name).unwrap();
        for p in 1..=12 {
            for m in 2 * p..=4 * p + 2 {
                for f in [2.0, 6.0] {
                    let params = params(p, m, Costs::fbw(f, f, f));
                    let bubble = (family.predict)(&params).unwrap().bubble.unwrap();
                    let a = run(name, &params).unwrap();
                    assert_eq!(a.stats.cost - a.stats.ideal, bubble, "{name} p={p} m={m} f={f}");
                }
            }
        }
    }
    // Unbalanced costs, communication or too few microbatches: no closed form.
    let predict = V_HALF.predict;
    assert_eq!(predict(&params(4, 8, chunk_costs(1.0, 2.0, 1.0))).unwrap().bubble, None);
    assert_eq!(predict(&params(4, 8, Costs { comm: 1.0, ..chunk_costs(1.0, 1.0, 1.0) })).unwrap().bubble, None);
    assert_eq!(predict(&params(4, 7, chunk_costs(1.0, 1.0, 1.0))).unwrap().bubble, None);
}

#[test]
fn v_min_pays_a_bubble_every_microbatch_when_costs_are_unbalanced() {
    // P2 Fig. 5: per-chunk F, B, W = 3, 4, 2. V-Min's bubble grows with every microbatch,
    // V-Half's does not.
    let bubble = |name: &str, m: u32| {
        let a = run(name, &params(4, m, chunk_costs(3.0, 4.0, 2.0))).unwrap();
        a.stats.cost - a.stats.ideal
    };
    let (min_16, min_32, min_64) = (bubble("v-min", 16), bubble("v-min", 32), bubble("v-min", 64));
    let (half_16, half_32, half_64) = (bubble("v-half", 16), bubble("v-half", 32), bubble("v-half", 64));
    // V-Min: a steady extra per microbatch, the same over both doublings.
    assert!(min_32 - min_16 >= 16.0, "v-min bubble {min_16} → {min_32}");
    assert_eq!((min_64 - min_32) / 32.0, (min_32 - min_16) / 16.0, "v-min {min_16} {min_32} {min_64}");
    // V-Half: bounded by the depth of the pipeline.
    assert_eq!(half_32, half_16, "v-half bubble {half_16} → {half_32}");
    assert_eq!(half_64, half_16, "v-half bubble {half_16} → {half_64}");
    assert!(half_16 < min_16);
}

#[test]
fn rejects_options_it_does_not_read_and_too_many_devices() {
    let err = generate("v-half", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("v-half does not take --chunks"), "{err}");
    let err = generate("v-min", &ScheduleParams::new(300, 8)).unwrap_err();
    assert_eq!(err.field, Field::Devices);
    assert!(err.to_string().starts_with("v-min supports at most 256 devices, found 300\n  hint:"), "{err}");
}
