//! Tests of V-Half and V-Min against the authors' golden orders and numbers
//! (zero-bubble.md §9.2 and Appendix A).

use super::super::appendix_a::{Orders, V_HALF_M12, V_HALF_M8, V_MIN_M12, V_MIN_M8};
use super::*;
use crate::{generate, run, Costs};

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

fn assert_orders(name: &str, microbatches: u32, golden: &Orders) {
    let schedule = generate(name, &params(4, microbatches, chunk_costs(1.0, 1.0, 1.0))).unwrap();
    for (device, line) in golden.iter().enumerate() {
        assert_eq!(schedule.notation(device as u32), *line, "{name} m={microbatches} device {device}");
    }
}

#[test]
fn v_half_reproduces_the_golden_orders_pass_for_pass() {
    assert_orders("v-half", 8, &V_HALF_M8);
    assert_orders("v-half", 12, &V_HALF_M12);
}

#[test]
fn v_min_reproduces_the_golden_orders_pass_for_pass() {
    assert_orders("v-min", 8, &V_MIN_M8);
    assert_orders("v-min", 12, &V_MIN_M12);
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

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(48))]

    /// With F = B = W, no communication and M ≥ 2P (so M ≥ 2k−1), mem-f/2 ≤ mem-w ≤ mem-f
    /// (mem-w = mem-f for V-Min at P ≡ 2 mod 3), the bubble is the blocks' idle slots and
    /// every device holds k microbatches: the explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..9,
        extra in 0u32..9,
        f in 0.1f64..4.0,
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.5f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        for family in [&V_HALF, &V_MIN] {
            let lifespan = family.name == "v-min" && devices % 3 == 2;
            let mem_w = if lifespan { mem_f } else { mem_f * mem_w_part };
            let p = params(devices, 2 * devices + extra, explained_costs(f, f, f, mem_f, mem_w));
            check_explained(family, &p)?;
        }
    }
}
