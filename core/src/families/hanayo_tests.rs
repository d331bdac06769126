//! Tests of Hanayo: the slot table's claims, the exact case, the trend in W, validity, errors.

use super::super::test_support::assert_valid_and_simulates;
use super::*;
use crate::params::Costs;
use crate::registry::generate;
use crate::run;

fn waves(devices: u32, microbatches: u32, waves: u32, costs: Costs) -> ScheduleParams {
    ScheduleParams { waves: Some(waves), ..ScheduleParams::new(devices, microbatches).with_costs(costs.clone()) }
}

fn bubble(p: &ScheduleParams) -> f64 {
    let a = run("hanayo", p).unwrap();
    a.stats.cost - a.stats.ideal
}

#[test]
fn slot_table_is_conflict_free_and_respects_every_dependency() {
    // The derivation of the module docs: with M a multiple of P no two passes of a device
    // share a slot, every pass comes after the one it depends on, and the table spans
    // 2S·rounds + 2P − 2 slots on device 0.
    for devices in 1..=7u32 {
        for w in 1..=3u32 {
            for rounds in 1..=3u32 {
                let microbatches = rounds * devices;
                let placement = Placement::wave(devices, w);
                let table = SlotTable::new(&placement, microbatches);
                let stages = placement.stages();
                let mut used = vec![std::collections::HashSet::new(); devices as usize];
                for mb in 0..microbatches {
                    for stage in 0..stages {
                        for pass in [Pass::f(stage, mb), Pass::bw(stage, mb)] {
                            let slot = table.priority(pass).slot;
                            let device = placement.device_of(stage).unwrap() as usize;
                            assert!(used[device].insert(slot), "P={devices} W={w} M={microbatches}: {pass} collides");
                            if let Some(dep) = crate::sim::dependency(&placement, pass) {
                                assert!(table.priority(dep.as_pass()).slot < slot, "{pass} before its input");
                            }
                        }
                    }
                }
                let last = used[0].iter().max().unwrap() + 1;
                let span = 2 * u64::from(stages) * u64::from(rounds) + 2 * u64::from(devices) - 2;
                assert_eq!(last, span, "P={devices} W={w} M={microbatches}");
            }
        }
    }
}

#[test]
fn equal_forward_and_backward_give_the_interleaved_bubble() {
    // F = B + W, no communication, M a multiple of P: (P−1)(F+B+W)/(2W) and P·mem-f.
    for (f, b, w) in [(2.0, 1.0, 1.0), (4.0, 3.0, 1.0), (8.0, 8.0, 0.0)] {
        for devices in 1..=8u32 {
            for n in 1..=4u32 {
                for rounds in 1..=3u32 {
                    let p = waves(devices, rounds * devices, n, Costs::fbw(f, b, w));
                    let a = run("hanayo", &p).unwrap();
                    let expected = f64::from(devices - 1) * (f + b + w) / f64::from(2 * n);
                    let got = a.stats.cost - a.stats.ideal;
                    assert!((got - expected).abs() < 1e-9, "{p:?}: {got} vs {expected}");
                    let predicted = (FAMILY.predict)(&p).unwrap();
                    assert_eq!(predicted.bubble, Some(expected));
                    let want = predicted.peak_memory.unwrap();
                    for (d, stats) in a.stats.per_device.iter().enumerate() {
                        // P·mem-f from two rounds on; one round holds (P−1−d)/(2W) less.
                        let held = if rounds == 1 { f64::from(devices - 1 - d as u32) / f64::from(2 * n) } else { 0.0 };
                        assert!((stats.peak_memory - (f64::from(devices) - held)).abs() < 1e-9, "{p:?}: {stats:?}");
                        assert!((stats.peak_memory - want[d]).abs() < 1e-9, "{p:?}: {stats:?}");
                    }
                }
            }
        }
    }
    assert_eq!((FAMILY.predict)(&waves(4, 8, 2, Costs::fbw(1.0, 1.0, 1.0))), None);
    assert_eq!((FAMILY.predict)(&waves(4, 6, 2, Costs::fbw(2.0, 1.0, 1.0))), None);
}

#[test]
fn bubble_shrinks_as_waves_grow() {
    let costs = [(1.0, 1.0, 1.0), (2.0, 1.0, 1.0), (5.0, 6.0, 4.0), (1.0, 3.0, 0.0), (4.0, 1.0, 0.0)];
    for (f, b, w) in costs {
        for devices in (2..=8u32).step_by(2) {
            for microbatches in [devices, 2 * devices, 4 * devices] {
                let bubbles: Vec<f64> =
                    (1..=4).map(|n| bubble(&waves(devices, microbatches, n, Costs::fbw(f, b, w)))).collect();
                for pair in bubbles.windows(2) {
                    assert!(pair[1] <= pair[0] + 1e-9, "P={devices} M={microbatches} {:?}: {bubbles:?}", (f, b, w));
                }
                assert!(bubbles[3] < bubbles[0], "P={devices} M={microbatches}: {bubbles:?}");
            }
        }
    }
}

#[test]
fn bubble_is_below_one_f_one_b_unless_backward_dwarfs_forward() {
    let costs = [(1.0, 1.0, 1.0), (2.0, 1.0, 1.0), (5.0, 6.0, 4.0), (1.0, 3.0, 0.0), (4.0, 1.0, 0.0), (8.0, 1.0, 1.0)];
    for (f, b, w) in costs {
        for devices in 2..=8u32 {
            for n in 1..=3u32 {
                let one_f_one_b = f64::from(devices - 1) * (f + b + w);
                // A single microbatch is one chain: nothing can overlap.
                let alone = bubble(&waves(devices, 1, n, Costs::fbw(f, b, w)));
                assert!((alone - one_f_one_b).abs() < 1e-9, "P={devices} W={n}: {alone}");
                for microbatches in [2, devices, devices + 1, 2 * devices, 4 * devices] {
                    let p = waves(devices, microbatches, n, Costs::fbw(f, b, w));
                    assert!(bubble(&p) < one_f_one_b, "{p:?}: {} vs {one_f_one_b}", bubble(&p));
                }
            }
        }
    }
    // With B = 10F the round structure costs more than 1F1B's drain.
    assert!(bubble(&waves(4, 16, 1, Costs::fbw(1.0, 10.0, 0.0))) > 33.0);
}

#[test]
fn one_wave_beats_the_reference_v_shaped_one_f_one_b() {
    // zero-bubble.md Appendix A, p = 4, m = 8, chunk costs 1,1,1 (CLI 2,2,2): 1F1B-V (v1f1b.py)
    // costs 63 and Megatron's interleaving with 2 chunks 57.
    let a = run("hanayo", &waves(4, 8, 1, Costs::fbw(2.0, 2.0, 2.0))).unwrap();
    assert!(a.stats.cost < 63.0 && a.stats.cost > 57.0, "{}", a.stats.cost);
}

#[test]
fn in_flight_limit_bounds_memory_by_two_pipelines() {
    for (f, b, w) in [(1.0, 10.0, 0.0), (1.0, 3.0, 0.0), (10.0, 1.0, 1.0), (0.0, 1.0, 0.0)] {
        for devices in 1..=6u32 {
            for n in 1..=3u32 {
                let a = run("hanayo", &waves(devices, 6 * devices, n, Costs::fbw(f, b, w))).unwrap();
                assert!(a.stats.peak_memory <= 2.0 * f64::from(devices) + 1e-9, "P={devices} W={n} {:?}", (f, b, w));
            }
        }
    }
}

#[test]
fn every_schedule_validates_and_runs_with_communication() {
    for devices in 1..=7u32 {
        for microbatches in 1..=2 * devices + 3 {
            for n in 1..=3u32 {
                let costs = Costs { comm: 0.5, ..Costs::fbw(1.0, 2.0, 1.0) };
                let p = waves(devices, microbatches, n, costs.clone());
                let schedule = generate("hanayo", &p).unwrap();
                assert_valid_and_simulates(&schedule, &costs, &format!("{p:?}"));
                assert_eq!(schedule.pass_count(), 4 * (n * devices * microbatches) as usize);
            }
        }
    }
}

#[test]
fn default_is_two_waves_and_the_v_placement_is_one() {
    let s = generate("hanayo", &ScheduleParams::new(4, 8)).unwrap();
    assert_eq!(s.placement, Placement::wave(4, 2));
    let s = generate("hanayo", &waves(4, 8, 1, Costs::default())).unwrap();
    assert_eq!(s.placement.stage_devices(), Placement::v_shape(4).stage_devices());
}

#[test]
fn rejects_bad_parameters_with_exact_messages() {
    let err = generate("hanayo", &waves(4, 8, 0, Costs::default())).unwrap_err();
    assert_eq!(err.field, Field::Waves);
    assert_eq!(
        err.to_string(),
        "waves must be at least 1, found 0\n  \
         hint: --waves 1 is the V placement (2 chunks per device); each further wave adds 2 chunks"
    );
    let err = generate("hanayo", &waves(64, 4096, 8, Costs::default())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this schedule would have 8388608 passes, more than the 8000000 supported\n  \
         hint: use fewer devices, microbatches, chunks or sequence splits"
    );
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(48))]

    /// Without communication, with F = B+W and M a multiple of P, the bubble is one chunk's
    /// fill and drain and every device holds P·mem-f (less in a single round): the
    /// explanation's values are the simulated ones.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..7,
        rounds in 1u32..4,
        wave_count in 1u32..4,
        (b, w) in (0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs};
        let costs = explained_costs(b + w, b, w, mem_f, mem_f * mem_w_part);
        check_explained(&FAMILY, &waves(devices, devices * rounds, wave_count, costs))?;
    }
}

#[test]
fn an_input_arriving_a_rounding_error_late_still_wins_its_slot() {
    // The proptest's seed: P = 2, M = 4, 3 waves, chunk costs (B+W)/6 summed along two
    // devices' passes. F of stage 11, microbatch 1 arrives on device 0 at 13 chunk costs, the
    // instant device 0 is free; summed along device 1 it came a few ulps late, device 0 took
    // the waiting F of stage 0, microbatch 3 instead and held one chunk above P·mem-f.
    let (b, w) = (0.860062125557041, 3.4778190867092933);
    let costs = Costs { mem_f: 0.5, mem_w: Some(0.0), ..Costs::fbw(b + w, b, w) };
    let a = run("hanayo", &waves(2, 4, 3, costs)).unwrap();
    for stats in &a.stats.per_device {
        assert!((stats.peak_memory - 1.0).abs() < 1e-9, "{stats:?}");
    }
    let device0: Vec<_> = a.schedule.orders[0].iter().take(14).map(|op| op.passes().next().unwrap()).collect();
    assert_eq!(device0[12..], [Pass::bw(11, 0), Pass::f(11, 1)]);
}
