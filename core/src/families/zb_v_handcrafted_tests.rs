//! Tests of the handcrafted ZB-V pattern against zero-bubble.md §9.2 and Appendix A.

use super::super::v_common::testing::{
    assert_bubble_rates, assert_golden, held_until_w, peaks, run_ok, Golden, Setting,
};
use super::*;
use crate::error::Field;
use crate::params::Costs;
use crate::{generate, run};

/// Appendix A golden orders of ZB-V handcrafted (p=4): setting, cost (max span), orders of devices 0..4.
const GOLDEN: [Golden; 4] = [
    (
        Setting::unit(8),
        48.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 w7 B4 W4 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 w6 B4 b7 B5 W4 B6 W5 B7 W6 w7 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 w5 B4 b6 B5 b7 B6 W4 B7 W5 w6 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 B4 b5 B5 b6 B6 b7 B7 W4 w5 w6 w7 W5 W6 W7",
        ],
    ),
    (
        Setting::unit(12),
        72.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 W5 f9 b9 w9 B6 W6 f10 b10 w10 B7 W7 f11 b11 w11 B8 W8 B9 W9 B10 W10 B11 W11",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 W6 f10 b9 w9 B7 W7 f11 b10 w10 B8 b11 B9 W8 B10 W9 B11 W10 w11 W11",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 W7 f11 b9 w9 B8 b10 B9 b11 B10 W8 B11 W9 w10 w11 W10 W11",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 w8 B8 b9 B9 b10 B10 b11 B11 W8 w9 w10 w11 W9 W10 W11",
        ],
    ),
    (
        Setting::uneven(8, 0.0),
        252.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 B1 W1 f5 b5 w5 B2 W2 f6 b6 w6 B3 W3 f7 b7 w7 B4 W4 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 B2 W2 f6 b5 w5 B3 W3 f7 b6 w6 B4 b7 B5 W4 B6 W5 B7 W6 w7 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 B3 W3 f7 b5 w5 B4 b6 B5 b7 B6 W4 B7 W5 w6 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 B4 b5 B5 b6 B6 b7 B7 W4 w5 w6 w7 W5 W6 W7",
        ],
    ),
    (
        Setting::uneven(12, 1.0),
        388.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 w3 F7 B0 W0 f4 b4 w4 F8 B1 W1 f5 b5 w5 F9 B2 W2 f6 b6 w6 F10 B3 W3 f7 b7 w7 F11 B4 W4 f8 b8 w8 B5 W5 f9 b9 w9 B6 W6 f10 b10 w10 B7 W7 f11 b11 w11 B8 W8 B9 W9 B10 W10 B11 W11",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 w2 F6 B0 W0 f4 b3 w3 F7 B1 W1 f5 b4 w4 F8 B2 W2 f6 b5 w5 F9 B3 W3 f7 b6 w6 F10 B4 W4 f8 b7 w7 F11 B5 W5 f9 b8 w8 B6 W6 f10 b9 w9 B7 W7 f11 b10 w10 B8 b11 B9 W8 B10 W9 B11 W10 w11 W11",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 w1 F5 B0 W0 f4 b2 w2 F6 B1 W1 f5 b3 w3 F7 B2 W2 f6 b4 w4 F8 B3 W3 f7 b5 w5 F9 B4 W4 f8 b6 w6 F10 B5 W5 f9 b7 w7 F11 B6 W6 f10 b8 w8 B7 W7 f11 b9 w9 B8 b10 B9 b11 B10 W8 B11 W9 w10 w11 W10 W11",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 w0 F4 B0 W0 f4 b1 w1 F5 B1 W1 f5 b2 w2 F6 B2 W2 f6 b3 w3 F7 B3 W3 f7 b4 w4 F8 B4 W4 f8 b5 w5 F9 B5 W5 f9 b6 w6 F10 B6 W6 f10 b7 w7 F11 B7 W7 f11 b8 w8 B8 b9 B9 b10 B10 b11 B11 W8 w9 w10 w11 W9 W10 W11",
        ],
    ),
];

#[test]
fn reproduces_the_golden_orders_and_costs() {
    assert_golden("zb-v-handcrafted", &GOLDEN);
}

#[test]
fn reference_costs_and_bubble_rates() {
    // §9.2: zero bubble with per-chunk costs 1,1,1; 252 (0.0476) with 5,6,4; 388 (0.0722) at
    // m=12 with communication 1.
    assert_bubble_rates(
        "zb-v-handcrafted",
        &[(Setting::unit(8), "0.0000"), (Setting::uneven(8, 0.0), "0.0476"), (Setting::uneven(12, 1.0), "0.0722")],
    );
}

#[test]
fn holds_eight_chunk_activations_on_every_device() {
    // §9.2 / Appendix A: peak in flight [8, 8, 8, 8] chunk activations = 4 mem-f.
    for setting in [Setting::unit(8), Setting::uneven(12, 1.0)] {
        let mut params = setting.params();
        params.costs = held_until_w(params.costs);
        assert_eq!(peaks(&run_ok("zb-v-handcrafted", &params)), vec![4.0; 4], "{setting:?}");
    }
}

#[test]
fn every_size_validates_and_simulates() {
    for devices in 1..=8 {
        for microbatches in 1..=20 {
            let params = ScheduleParams::new(devices, microbatches).with_costs(Costs::fbw(3.0, 4.0, 2.0));
            let a = run_ok("zb-v-handcrafted", &params);
            assert_eq!(a.schedule.pass_count(), 6 * (devices * microbatches) as usize);
        }
    }
}

#[test]
fn zero_bubble_prediction_holds_when_costs_are_balanced() {
    for devices in 1..=8 {
        for microbatches in 1..=3 * devices + 2 {
            for unit in [1.0, 2.0, 3.5] {
                let params = ScheduleParams::new(devices, microbatches).with_costs(Costs::fbw(unit, unit, unit));
                let predicted = predict(&params).and_then(|p| p.bubble);
                let a = run_ok("zb-v-handcrafted", &params);
                let bubble = a.stats.cost - a.stats.ideal;
                match predicted {
                    Some(b) => assert_eq!(bubble, b, "P={devices} M={microbatches}"),
                    None => assert!(bubble > 0.0, "P={devices} M={microbatches}: zero bubble not predicted"),
                }
            }
        }
    }
}

#[test]
fn peak_prediction_matches_the_simulation() {
    for devices in 1..=8 {
        for microbatches in 1..=20 {
            for (f, b, w) in [(2.0, 2.0, 2.0), (10.0, 12.0, 8.0), (1.0, 3.0, 0.5)] {
                let params = ScheduleParams::new(devices, microbatches)
                    .with_costs(held_until_w(Costs { mem_f: 1.5, ..Costs::fbw(f, b, w) }));
                let predicted = predict(&params).and_then(|p| p.peak_memory).expect("mem-w = mem-f");
                assert_eq!(peaks(&run_ok("zb-v-handcrafted", &params)), predicted, "P={devices} M={microbatches}");
            }
        }
    }
}

#[test]
fn rejects_options_it_does_not_read() {
    let err = generate("zb-v-handcrafted", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("zb-v-handcrafted does not take --chunks"), "{err}");
    assert!(run("zb-v-handcrafted", &ScheduleParams::new(4, 8)).is_ok());
}
