//! Tests of GPipe: its explanation against the simulator.

use proptest::prelude::*;

use super::super::test_support::{check_explained, explained_costs, params};
use super::*;

proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// With equal stages and no communication, the bubble is one fill and drain and every
    /// device holds all M microbatches: the explanation's values are the simulated ones.
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
}
