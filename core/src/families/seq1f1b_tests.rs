//! Tests of Seq1F1B: equality with 1F1B at K = 1, the closed forms, validity and errors.

use super::super::test_support::assert_sizes_validate_and_simulate;
use super::*;
use crate::params::Costs;
use crate::registry::generate;
use crate::run;

fn with_splits(devices: u32, microbatches: u32, slices: u32) -> ScheduleParams {
    ScheduleParams { seq_splits: Some(slices), ..ScheduleParams::new(devices, microbatches) }
}

#[test]
fn one_split_is_exactly_one_f_one_b() {
    let costs = Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) };
    for devices in 1..=6 {
        for microbatches in 1..=10 {
            let ours = run("seq1f1b", &with_splits(devices, microbatches, 1).with_costs(costs.clone())).unwrap();
            let reference = run("1f1b", &ScheduleParams::new(devices, microbatches).with_costs(costs.clone())).unwrap();
            assert_eq!(ours.schedule.orders, reference.schedule.orders, "P={devices} M={microbatches}");
            assert_eq!(ours.stats, reference.stats);
        }
    }
    // zero-bubble.md §9.2: 1F1B p=4 m=12, F,B,W = 5,6,4, comm 1 → 247.
    let a = run("seq1f1b", &with_splits(4, 12, 1).with_costs(costs.clone())).unwrap();
    assert_eq!(a.stats.cost, 247.0);
}

#[test]
fn forwards_run_slices_in_order_and_backwards_in_reverse() {
    let s = generate("seq1f1b", &with_splits(2, 2, 3)).unwrap();
    // Device 0 warms up P−d−1 + K−1 = 3 slices, device 1 only K−1 = 2.
    assert_eq!(s.notation(0), "F0 F0.1 F0.2 F1 X0.2 F1.1 X0.1 F1.2 X0 X1.2 X1.1 X1");
    assert_eq!(s.notation(1), "F0 F0.1 F0.2 X0.2 F1 X0.1 F1.1 X0 F1.2 X1.2 X1.1 X1");
    assert_eq!(s.slices, 3);
}

#[test]
fn bubble_shrinks_by_the_number_of_splits() {
    // cost − M(F+B+W) = (P−1)(F+B+W)/K for every M. Costs are multiples of 60 so every slice
    // cost is an integer for K ≤ 6 and the comparison is exact.
    let costs = [(60.0, 60.0, 60.0), (120.0, 180.0, 60.0), (300.0, 360.0, 240.0), (60.0, 240.0, 0.0)];
    for devices in 1..=6u32 {
        for slices in 1..=6u32 {
            for microbatches in 1..=9u32 {
                for &(f, b, w) in &costs {
                    let p = with_splits(devices, microbatches, slices).with_costs(Costs::fbw(f, b, w));
                    let a = run("seq1f1b", &p).unwrap();
                    let expected = f64::from(devices - 1) * (f + b + w) / f64::from(slices);
                    assert_eq!(a.stats.cost - a.stats.ideal, expected, "{p:?}");
                    assert_eq!((FAMILY.predict)(&p).unwrap().bubble, Some(expected));
                }
            }
        }
    }
}

#[test]
fn peak_memory_is_p_plus_k_minus_one_over_k_on_device_zero() {
    for devices in 1..=6u32 {
        for slices in 1..=5u32 {
            for microbatches in 1..=8u32 {
                let p = with_splits(devices, microbatches, slices);
                let a = run("seq1f1b", &p).unwrap();
                let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
                let predicted = (FAMILY.predict)(&p).unwrap().peak_memory.unwrap();
                for (d, (got, want)) in peaks.iter().zip(&predicted).enumerate() {
                    assert!((got - want).abs() < 1e-9, "{p:?} device {d}: {got} vs {want}");
                }
                if microbatches * slices >= devices + slices - 1 {
                    let want = f64::from(devices + slices - 1) / f64::from(slices);
                    assert!((peaks[0] - want).abs() < 1e-9, "{p:?}: {} vs {want}", peaks[0]);
                }
            }
        }
    }
    // The paper's headline: about half of 1F1B's memory with two splits (P = 8: 4.5 vs 8).
    let a = run("seq1f1b", &with_splits(8, 16, 2)).unwrap();
    assert_eq!(a.stats.peak_memory, 4.5);
}

#[test]
fn every_schedule_validates_and_runs_with_communication() {
    let costs = Costs { comm: 0.25, ..Costs::fbw(1.0, 2.0, 1.0) };
    assert_sizes_validate_and_simulate(&["seq1f1b"], (Field::SeqSplits, 1..=4), &costs, 1..=7, |_| 1..=9, true);
}

#[test]
fn rejects_bad_parameters_with_exact_messages() {
    let err = generate("seq1f1b", &with_splits(4, 8, 0)).unwrap_err();
    assert_eq!(err.field, Field::SeqSplits);
    assert_eq!(
        err.to_string(),
        "seq-splits must be at least 1, found 0\n  \
         hint: --seq-splits 1 is plain 1F1B; 2 or 4 cut every microbatch's sequence in halves or quarters"
    );
    let err = generate("seq1f1b", &with_splits(64, 4096, 64)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this schedule would have 33554432 passes, more than the 8000000 supported\n  \
         hint: use fewer devices, microbatches, chunks or sequence splits"
    );
    assert_eq!((FAMILY.predict)(&with_splits(4, 8, 0)), None);
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// Without communication the bubble is (P−1)(F+B+W)/K and device d holds
    /// min(P−d−1+K, M·K) slices of mem-f/K: the explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..8,
        microbatches in 1u32..13,
        slices in 1u32..5,
        (f, b, w) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let mut p = params(devices, microbatches, explained_costs(f, b, w, mem_f, mem_f * mem_w_part));
        p.seq_splits = Some(slices);
        check_explained(&FAMILY, &p)?;
    }
}
