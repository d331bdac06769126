//! Tests of 1F1B-V against zero-bubble.md §4.10, §9.2 and Appendix A.

use super::super::v_common::testing::{assert_bubble_rates, assert_golden, peaks, run_ok, Golden, Setting};
use super::*;
use crate::params::Costs;

/// Appendix A golden orders of 1F1B-V (p=4): setting, cost (max span), orders of devices 0..4.
const GOLDEN: [Golden; 4] = [
    (
        Setting::unit(8),
        63.0,
        [
            "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 f7 x7 X4 X5 X6 X7",
            "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 X4 x7 X5 X6 X7",
            "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 X5 x7 X6 X7",
            "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 x6 X6 x7 X7",
        ],
    ),
    (
        Setting::unit(12),
        87.0,
        [
            "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 F8 f7 x7 X4 F9 f8 x8 X5 F10 f9 x9 X6 F11 f10 x10 X7 f11 x11 X8 X9 X10 X11",
            "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 F8 X4 x7 f8 F9 X5 x8 f9 F10 X6 x9 f10 F11 X7 x10 f11 X8 x11 X9 X10 X11",
            "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 F8 X5 f8 x7 F9 X6 f9 x8 F10 X7 f10 x9 F11 X8 f11 x10 X9 x11 X10 X11",
            "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 F8 f8 x6 X6 F9 f9 x7 X7 F10 f10 x8 X8 F11 f11 x9 X9 x10 X10 x11 X11",
        ],
    ),
    (
        Setting::uneven(8, 0.0),
        315.0,
        [
            "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 f7 x7 X4 X5 X6 X7",
            "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 X4 x7 X5 X6 X7",
            "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 X5 x7 X6 X7",
            "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 x6 X6 x7 X7",
        ],
    ),
    (
        Setting::uneven(12, 1.0),
        483.0,
        [
            "F0 F1 F2 F3 F4 f0 x0 f1 x1 f2 x2 f3 x3 X0 F5 f4 x4 X1 F6 f5 x5 X2 F7 f6 x6 X3 F8 f7 x7 X4 F9 f8 x8 X5 F10 f9 x9 X6 F11 f10 x10 X7 f11 x11 X8 X9 X10 X11",
            "F0 F1 F2 F3 f0 f1 x0 f2 x1 F4 x2 f3 X0 x3 f4 F5 X1 x4 f5 F6 X2 x5 f6 F7 X3 x6 f7 F8 X4 x7 f8 F9 X5 x8 f9 F10 X6 x9 f10 F11 X7 x10 f11 X8 x11 X9 X10 X11",
            "F0 F1 F2 f0 f1 f2 x0 F3 x1 F4 X0 f3 x2 X1 f4 x3 F5 X2 f5 x4 F6 X3 f6 x5 F7 X4 f7 x6 F8 X5 f8 x7 F9 X6 f9 x8 F10 X7 f10 x9 F11 X8 f11 x10 X9 x11 X10 X11",
            "F0 f0 F1 f1 F2 f2 x0 X0 F3 f3 x1 X1 F4 f4 x2 X2 F5 f5 x3 X3 F6 f6 x4 X4 F7 f7 x5 X5 F8 f8 x6 X6 F9 f9 x7 X7 F10 f10 x8 X8 F11 f11 x9 X9 x10 X10 x11 X11",
        ],
    ),
];

#[test]
fn reproduces_the_golden_orders_and_costs() {
    assert_golden("1f1b-v", &GOLDEN);
}

#[test]
fn reference_bubble_rates() {
    // §9.2 / Appendix A: 0.2381 at p=4 m=8 (both cost settings), 0.1724 at m=12, 0.2547 at
    // m=12 with costs 5,6,4 and communication 1.
    assert_bubble_rates(
        "1f1b-v",
        &[
            (Setting::unit(8), "0.2381"),
            (Setting::uneven(8, 0.0), "0.2381"),
            (Setting::unit(12), "0.1724"),
            (Setting::uneven(12, 1.0), "0.2547"),
        ],
    );
}

#[test]
fn holds_six_chunk_activations_at_p4() {
    // Appendix A: peak in flight [6, 6, 6, 6] chunk activations = 3 mem-f, whatever mem-w is
    // (a fused backward frees everything).
    for setting in [Setting::unit(8), Setting::unit(12), Setting::uneven(12, 1.0)] {
        assert_eq!(peaks(&run_ok("1f1b-v", &setting.params())), vec![3.0; 4], "{setting:?}");
    }
}

#[test]
fn peak_is_three_quarters_of_1f1b_for_p_4_8_12_and_five_sixths_for_p6() {
    // §4.10, measured with the authors' code.
    for (devices, num, den) in [(4, 3, 4), (8, 3, 4), (12, 3, 4), (6, 5, 6)] {
        let params = ScheduleParams::new(devices, 3 * devices);
        let v = run_ok("1f1b-v", &params).stats.peak_memory;
        let plain = run_ok("1f1b", &params).stats.peak_memory;
        assert_eq!(v * f64::from(den), plain * f64::from(num), "P={devices}");
    }
}

#[test]
fn peak_prediction_matches_the_simulation() {
    for devices in 1..=16 {
        for microbatches in 1..=3 * devices + 2 {
            let params =
                ScheduleParams::new(devices, microbatches).with_costs(Costs { mem_f: 3.0, ..Costs::default() });
            let a = run_ok("1f1b-v", &params);
            match predict(&params).and_then(|p| p.peak_memory) {
                Some(predicted) => assert_eq!(peaks(&a), predicted, "P={devices} M={microbatches}"),
                None => {
                    assert!(microbatches < 2 * (2 * devices / 3) + 1, "P={devices} M={microbatches}: no prediction");
                }
            }
        }
    }
}

#[test]
fn every_size_validates_and_simulates() {
    let costs = Costs { comm: 0.5, ..Costs::fbw(3.0, 4.0, 2.0) };
    for devices in 1..=8 {
        for microbatches in 1..=20 {
            let a = run_ok("1f1b-v", &ScheduleParams::new(devices, microbatches).with_costs(costs.clone()));
            assert_eq!(a.schedule.pass_count(), 4 * (devices * microbatches) as usize);
        }
    }
    for (devices, microbatches) in [(12, 5), (16, 40), (24, 7), (32, 64), (33, 100)] {
        run_ok("1f1b-v", &ScheduleParams::new(devices, microbatches).with_costs(costs.clone()));
    }
}

#[test]
fn slot_offsets_never_collide_within_a_period() {
    for devices in 1..=64 {
        for (device, offsets) in slot_offsets(devices).iter().enumerate() {
            let mut sorted = *offsets;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4, 5], "P={devices} device {device}");
        }
    }
}
