use super::super::zb_h1::golden::{
    check_fewest_microbatches, check_predicted_bubbles, check_predicted_peaks, fbw_params,
};
use super::*;
use crate::run;

#[test]
fn bubble_is_p_minus_1_times_f_plus_b_plus_2comm_minus_2w_wherever_predicted() {
    let predicted = check_predicted_bubbles(&FAMILY, 2, &[0, 1, 2], |f, b, w, comm| f + b + 2 * comm - 2 * w);
    // The range is W ≤ F, 2W ≤ F+B+2·comm, 2·comm ≤ F+B, M ≥ 2P−1 (and every single-device run).
    assert!(predicted > 4000, "{predicted}");
}

#[test]
fn bubble_formula_fails_just_outside_its_range() {
    // Each case breaks one condition; the simulated bubble is not (P−1)(F+B+2·comm−2W) there.
    for (p, m, f, b, w, comm) in [
        (4, 8, 1.0, 4.0, 2.0, 0.0), // W > F
        (4, 8, 4.0, 1.0, 3.0, 0.0), // 2W > F+B+2·comm
        (4, 8, 1.0, 1.0, 1.0, 2.0), // 2·comm > F+B
        (4, 6, 1.0, 1.0, 1.0, 0.0), // M = 2P−2
    ] {
        let params = fbw_params(p, m, f, b, w, comm);
        assert_eq!((FAMILY.predict)(&params).unwrap().bubble, None);
        let stats = run("zb-h2", &params).unwrap().stats;
        let formula = f64::from(p - 1) * (f + b + 2.0 * comm - 2.0 * w);
        assert_ne!(stats.cost - stats.ideal, formula, "p={p} m={m} f={f} b={b} w={w} comm={comm}");
    }
}

#[test]
fn peak_memory_is_2p_minus_2d_minus_1_forwards_plus_2d_pending_weights() {
    check_predicted_peaks(&FAMILY, 2, |p| 3 * p);
}

#[test]
fn too_few_microbatches_name_the_minimum() {
    check_fewest_microbatches(
        &FAMILY,
        4,
        6,
        "zb-h2 needs microbatches ≥ 2·(devices − 1) = 6 for 4 devices, found 5\n  \
         hint: use at least 6 microbatches, or fewer devices\n  \
         hint: zb-1p, zb-2p and zb-auto accept any number of microbatches",
    );
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// Under the paper's conditions (W ≤ F, 2W ≤ F+B+2·comm, 2·comm ≤ F+B, M ≥ 2P−1) the
    /// bubble is (P−1)(F+B+2·comm−2W) and device d holds (2P−2d−1)·mem-f + 2d·mem-w: the
    /// explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..8,
        extra in 0u32..17,
        (f, b) in (0.1f64..4.0, 0.1f64..4.0),
        (w_part, comm_part) in (0.0f64..1.0, 0.0f64..1.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let comm = comm_part * (f + b) / 2.0;
        let w = w_part * f.min((f + b + 2.0 * comm) / 2.0);
        let costs = crate::params::Costs { comm, ..explained_costs(f, b, w, mem_f, mem_f * mem_w_part) };
        check_explained(&FAMILY, &params(devices, 2 * devices - 1 + extra, costs))?;
    }
}
