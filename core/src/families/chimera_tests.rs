//! Tests of Chimera: the paper's bubble ratio, the closed forms, validity and errors.

use super::*;
use crate::params::Costs;
use crate::registry::generate;
use crate::run;
use crate::stats::Stats;

/// Generates, validates, simulates and measures.
fn analyze(params: &ScheduleParams) -> (Schedule, Stats) {
    let a = run("chimera", params).unwrap_or_else(|e| panic!("{params:?}: {e}"));
    (a.schedule, a.stats)
}

fn chimera_params(devices: u32, microbatches: u32, f: f64, b: f64, w: f64) -> ScheduleParams {
    ScheduleParams::new(devices, microbatches).with_costs(Costs::fbw(f, b, w))
}

#[test]
fn two_devices_merge_without_a_bubble() {
    // Down: mb 0 on stages 0 → 1 (devices 0 → 1); up: mb 1 on stages 2 → 3 (devices 1 → 0).
    // With a forward as long as a backward, the directions fill each other's gaps.
    let (schedule, stats) = analyze(&chimera_params(2, 2, 1.0, 0.5, 0.5));
    assert_eq!(schedule.notation(0), "F0 f1 x1 X0");
    assert_eq!(schedule.notation(1), "f1 F0 X0 x1");
    assert_eq!(stats.cost, 4.0);
    assert_eq!(stats.cost, stats.ideal);
}

#[test]
fn bubble_rate_is_the_papers_when_forward_and_backward_take_one_slot() {
    // Li & Hoefler: bubble ratio (D−2)/(2N+D−2) against (D−1)/(N+D−1) for 1F1B (DAPPLE), in
    // slots where a forward and a backward take the same time: F = B + W here, and the
    // ratio is our bubble rate (cost − ideal)/cost. It holds for N a multiple of D.
    for (f, b, w) in [(2.0, 1.0, 1.0), (4.0, 3.0, 1.0), (1.0, 1.0, 0.0)] {
        for devices in (2..=12u32).step_by(2) {
            for microbatches in (devices..=4 * devices).step_by(devices as usize) {
                let p = chimera_params(devices, microbatches, f, b, w);
                let (_, ours) = analyze(&p);
                let (d, n) = (f64::from(devices), f64::from(microbatches));
                let paper = (d - 2.0) / (2.0 * n + d - 2.0);
                assert!((ours.bubble_rate - paper).abs() < 1e-12, "{p:?}: {} vs {paper}", ours.bubble_rate);
                let one_f_one_b = run("1f1b", &p).unwrap().stats;
                assert!((one_f_one_b.bubble_rate - (d - 1.0) / (n + d - 1.0)).abs() < 1e-12);
                assert!(ours.bubble_rate < one_f_one_b.bubble_rate, "{p:?}");
            }
        }
    }
}

#[test]
fn bubble_follows_the_closed_form_for_any_costs() {
    let costs = [(1.0, 1.0, 1.0), (1.0, 2.0, 0.0), (2.0, 1.0, 0.0), (5.0, 6.0, 4.0), (3.0, 1.0, 0.0), (1.0, 3.0, 1.0)];
    for &(f, b, w) in &costs {
        for devices in (2..=10u32).step_by(2) {
            for units in 1..=4u32 {
                let p = chimera_params(devices, units * devices, f, b, w);
                let (_, s) = analyze(&p);
                let expected = f64::from(devices - 2) * (f64::max(f, b + w) + f64::from(units - 1) * (b + w - f).abs());
                assert!((s.cost - s.ideal - expected).abs() < 1e-9, "{p:?}: {} vs {expected}", s.cost - s.ideal);
                assert_eq!((FAMILY.predict)(&p).unwrap().bubble, Some(expected));
            }
        }
    }
}

#[test]
fn with_slow_backwards_it_beats_one_f_one_b_only_for_a_few_units() {
    // B + W = 2F: Chimera's bubble is (P−2)(M/P + 1)·F, 1F1B's 3(P−1)·F.
    for devices in (4..=10u32).step_by(2) {
        for units in 1..=6u32 {
            let p = chimera_params(devices, units * devices, 1.0, 1.0, 1.0);
            let (_, ours) = analyze(&p);
            let one_f_one_b = run("1f1b", &p).unwrap().stats;
            let wins = (devices - 2) * (units + 1) < 3 * (devices - 1);
            assert_eq!(ours.cost < one_f_one_b.cost, wins, "{p:?}");
        }
    }
}

#[test]
fn peak_memory_lies_between_half_and_all_of_the_pipeline() {
    for devices in (2..=12u32).step_by(2) {
        for microbatches in (2..=4 * devices).step_by(2) {
            let p = chimera_params(devices, microbatches, 1.0, 1.0, 1.0);
            let (_, s) = analyze(&p);
            let predicted = (FAMILY.predict)(&p).unwrap().peak_memory.unwrap();
            let peaks: Vec<f64> = s.per_device.iter().map(|d| d.peak_memory).collect();
            assert_eq!(peaks, predicted, "{p:?}");
            if microbatches >= devices {
                // The paper: between D/2 + 1 (the end devices) and D (the middle ones).
                assert_eq!(peaks[0], f64::from(devices / 2 + 1));
                assert_eq!(peaks[(devices / 2) as usize], f64::from(devices));
            }
        }
    }
}

#[test]
fn every_schedule_validates_and_runs_with_communication() {
    for devices in (2..=10u32).step_by(2) {
        for microbatches in (2..=3 * devices + 2).step_by(2) {
            let costs = Costs { comm: 0.5, ..Costs::fbw(1.0, 2.0, 1.0) };
            let (schedule, s) = analyze(&ScheduleParams::new(devices, microbatches).with_costs(costs));
            assert_eq!(schedule.pass_count(), 4 * devices as usize * microbatches as usize / 2);
            assert!(s.cost >= s.ideal);
        }
    }
}

#[test]
fn rejects_bad_parameters_with_exact_messages() {
    let text = |p: ScheduleParams| generate("chimera", &p).unwrap_err().to_string();
    assert_eq!(
        text(ScheduleParams::new(5, 8)),
        "chimera needs an even number of devices, found 5\n  \
         hint: the two directions share every device without conflict only when devices is even\n  \
         hint: use 4 or 6 devices"
    );
    assert_eq!(
        text(ScheduleParams::new(1, 8)),
        "chimera needs an even number of devices, found 1\n  \
         hint: the two directions share every device without conflict only when devices is even\n  \
         hint: use 2 devices"
    );
    let err = generate("chimera", &ScheduleParams::new(4, 7)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert_eq!(
        err.to_string(),
        "chimera needs an even number of microbatches, found 7\n  \
         hint: each direction runs half of the microbatches\n  \
         hint: use 6 or 8 microbatches"
    );
    let err = generate("chimera", &ScheduleParams::new(1024, 8192)).unwrap_err();
    assert!(err.to_string().contains("more than the 8000000 supported"), "{err}");
    assert_eq!((FAMILY.predict)(&ScheduleParams::new(4, 7)), None);
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// Without communication and with M a multiple of P, the bubble is the closed form for any
    /// costs and device d holds the smaller of its slots and its microbatches: the
    /// explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        half_devices in 1u32..5,
        rounds in 1u32..5,
        (f, b, w) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let devices = 2 * half_devices;
        let costs = explained_costs(f, b, w, mem_f, mem_f * mem_w_part);
        check_explained(&FAMILY, &params(devices, devices * rounds, costs))?;
    }
}
