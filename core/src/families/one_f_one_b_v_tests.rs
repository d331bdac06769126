//! Tests of 1F1B-V against zero-bubble.md §4.10, §9.2 and Appendix A.

use super::super::v_common::testing::{assert_bubble_rates, peaks, run_ok, Setting};
use super::*;
use crate::params::Costs;

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

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(32))]

    /// Once M ≥ 2⌊2P/3⌋+1 every device holds 2⌊2P/3⌋+2 chunk activations, whatever the costs:
    /// the explanation's memory is the simulated peak.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..9,
        extra in 0u32..6,
        (f, b, w) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let m = 2 * (2 * devices / 3) + 1 + extra;
        check_explained(&FAMILY, &params(devices, m, explained_costs(f, b, w, mem_f, mem_f * mem_w_part)))?;
    }
}
