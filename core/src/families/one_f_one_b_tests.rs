//! Tests of 1F1B: its explanation against the simulator.

use proptest::prelude::*;

use super::super::test_support::{check_explained, explained_costs, params};
use super::*;
use crate::params::Costs;

proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// With equal stages and no communication, 1F1B's bubble is GPipe's and device d holds
    /// min(P−d, M) microbatches: the explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..9,
        microbatches in 1u32..25,
        (f, b, w) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        let costs = explained_costs(f, b, w, mem_f, mem_f * mem_w_part);
        check_explained(&FAMILY, &params(devices, microbatches, costs))?;
    }

    /// With communication the fill-and-drain assumption breaks, and the simulated bubble is
    /// longer than the formula's.
    #[test]
    fn communication_breaks_the_bubble_formula(devices in 2u32..9, microbatches in 1u32..25, comm in 0.01f64..1.0) {
        let p = params(devices, microbatches, Costs { comm, ..Costs::fbw(1.0, 1.0, 1.0) });
        let e = FAMILY.explanation(&p).unwrap();
        prop_assert!(!e.all_hold());
        let stats = crate::run(FAMILY.name, &p).unwrap().stats;
        prop_assert!(stats.cost - stats.ideal > e.bubble_value().unwrap() + 1e-9);
    }
}
