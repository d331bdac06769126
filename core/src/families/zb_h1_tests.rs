use super::golden::{check_fewest_microbatches, check_predicted_bubbles, check_predicted_peaks, fbw_params};
use super::*;
use crate::run;

#[test]
fn bubble_is_p_minus_1_times_f_plus_b_minus_w_wherever_predicted() {
    let predicted = check_predicted_bubbles(&FAMILY, 1, &[0, 1], |f, b, w, _| f + b - w);
    // The range is comm 0, W ≤ F, M ≥ P (and every single-device run).
    assert!(predicted > 3000, "{predicted}");
}

#[test]
fn bubble_formula_fails_just_outside_its_range() {
    // Each case breaks one condition; the simulated bubble is not (P−1)(F+B−W) there.
    for (p, m, f, b, w, comm) in [(4, 8, 1.0, 2.0, 2.0, 0.0), (4, 8, 1.0, 1.0, 1.0, 1.0), (4, 3, 1.0, 1.0, 1.0, 0.0)] {
        let params = fbw_params(p, m, f, b, w, comm);
        assert_eq!((FAMILY.predict)(&params).unwrap().bubble, None);
        let stats = run("zb-h1", &params).unwrap().stats;
        assert_ne!(stats.cost - stats.ideal, f64::from(p - 1) * (f + b - w), "p={p} m={m} f={f} b={b} w={w}");
    }
}

#[test]
fn peak_memory_is_p_minus_d_forwards_plus_d_pending_weights() {
    check_predicted_peaks(&FAMILY, 1, |p| 2 * p + 2);
}

#[test]
fn too_few_microbatches_name_the_minimum() {
    check_fewest_microbatches(
        &FAMILY,
        8,
        7,
        "zb-h1 needs microbatches ≥ devices − 1 = 7 for 8 devices, found 6\n  \
         hint: use at least 7 microbatches, or fewer devices\n  \
         hint: zb-1p, zb-2p and zb-auto accept any number of microbatches",
    );
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// Without communication, with W ≤ F and M ≥ P, the bubble is (P−1)(F+B−W) and device d
    /// holds (P−d)·mem-f + d·mem-w: the explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..9,
        extra in 0u32..17,
        (f, b, w_part) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..1.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let costs = explained_costs(f, b, f * w_part, mem_f, mem_f * mem_w_part);
        check_explained(&FAMILY, &params(devices, devices + extra, costs))?;
    }
}
