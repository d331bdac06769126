//! Tests of the handcrafted ZB-V pattern against zero-bubble.md §9.2 and Appendix A.

use super::super::v_common::testing::{assert_bubble_rates, held_until_w, peaks, run_ok, Setting};
use super::*;
use crate::error::Field;
use crate::params::Costs;
use crate::{generate, run};

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

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(32))]

    /// With F = B = W, no communication, M ≥ 2P−1 and mem-w = mem-f, the pattern has no bubble
    /// and device d holds min(2P, 2M, M+d+1) chunk activations: the explanation's values are
    /// the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(devices in 1u32..7, extra in 0u32..8, f in 0.1f64..4.0, mem_f in 0.5f64..3.0) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let p = params(devices, 2 * devices - 1 + extra, explained_costs(f, f, f, mem_f, mem_f));
        check_explained(&FAMILY, &p)?;
    }
}
