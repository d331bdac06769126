//! Tests of interleaved 1F1B and looped BFS against zero-bubble.md Appendix A and Megatron.

use super::super::appendix_a::{INTERLEAVED_M12, INTERLEAVED_M8};
use super::super::test_support::assert_sizes_validate_and_simulate;
use super::*;
use crate::params::Costs;
use crate::registry::generate;
use crate::{run, simulate, StageCosts};

/// CLI costs for per-chunk costs `f, b, w` of a 2-chunk schedule: a chunk is half a device's
/// share of the model, so the CLI numbers are twice the chunk's. `mem_f = 2` makes one chunk
/// activation the unit of memory, as in the reference's peaks.
fn chunk_costs(f: f64, b: f64, w: f64, comm: f64) -> Costs {
    Costs { comm, mem_f: 2.0, ..Costs::fbw(2.0 * f, 2.0 * b, 2.0 * w) }
}

fn interleaved(devices: u32, microbatches: u32, costs: Costs) -> ScheduleParams {
    ScheduleParams::new(devices, microbatches).with_costs(costs.clone())
}

fn peaks(a: &crate::Analysis) -> Vec<f64> {
    a.stats.per_device.iter().map(|d| d.peak_memory).collect()
}

#[test]
fn reproduces_the_vpp_golden_orders_costs_and_peaks() {
    // zero-bubble.md Appendix A, "Interleaved 1F1B, 2 chunks (vpp.py)".
    let cases = [
        (8, chunk_costs(1.0, 1.0, 1.0, 0.0), 57.0, "0.1579", &INTERLEAVED_M8),
        (12, chunk_costs(1.0, 1.0, 1.0, 0.0), 81.0, "0.1111", &INTERLEAVED_M12),
        (8, chunk_costs(5.0, 6.0, 4.0, 0.0), 285.0, "0.1579", &INTERLEAVED_M8),
        (12, chunk_costs(5.0, 6.0, 4.0, 1.0), 419.0, "0.1408", &INTERLEAVED_M12),
    ];
    for (microbatches, costs, cost, rate, golden) in cases {
        let a = run("interleaved-1f1b", &interleaved(4, microbatches, costs.clone())).unwrap();
        for (device, line) in golden.iter().enumerate() {
            assert_eq!(a.schedule.notation(device as u32), *line, "m={microbatches} device {device}");
        }
        assert_eq!(a.stats.cost, cost, "m={microbatches} {costs:?}");
        assert_eq!(format!("{:.4}", a.stats.bubble_rate), rate);
        assert_eq!(peaks(&a), vec![11.0, 9.0, 7.0, 5.0]);
    }
}

#[test]
fn schedule_table_matches_megatrons_docstring() {
    // peers.md §3.3: PP2, VP2, group 3, m = 5.
    let table = schedule_table(5, 2, 3);
    let microbatch: Vec<u32> = table.iter().map(|t| t.0).collect();
    let chunk: Vec<u32> = table.iter().map(|t| t.1).collect();
    assert_eq!(microbatch, vec![0, 1, 2, 0, 1, 2, 3, 4, 3, 4]);
    assert_eq!(chunk, vec![0, 0, 0, 1, 1, 1, 0, 0, 1, 1]);

    // The same table drives the generator: device 1 (no warm-up beyond (V−1)·G = 3)
    // runs these forwards, and backwards on the mirrored chunk.
    let p = ScheduleParams { group: Some(3), ..ScheduleParams::new(2, 5) };
    let s = generate("interleaved-1f1b", &p).unwrap();
    assert_eq!(s.notation(1), "F0 F1 F2 f0 x0 f1 x1 f2 x2 F3 X0 F4 X1 f3 X2 f4 x3 x4 X3 X4");
}

#[test]
fn bubble_is_p_minus_one_over_v_for_every_accepted_size() {
    let costs = [(1.0, 1.0, 1.0), (2.0, 3.0, 1.0), (5.0, 6.0, 4.0), (3.0, 1.0, 0.0), (1.0, 0.0, 0.0)];
    let mut checked = 0;
    for devices in 1..=5u32 {
        for chunks in 2..=4u32 {
            for microbatches in devices..=3 * devices + 2 {
                for group in devices..=microbatches {
                    let rest = microbatches % group;
                    if rest != 0 && rest < devices {
                        continue;
                    }
                    for &(f, b, w) in &costs {
                        let p = ScheduleParams {
                            chunks: Some(chunks),
                            group: Some(group),
                            ..ScheduleParams::new(devices, microbatches).with_costs(Costs::fbw(f, b, w))
                        };
                        let a = run("interleaved-1f1b", &p).unwrap();
                        let expected = f64::from(devices - 1) * (f + b + w) / f64::from(chunks);
                        let bubble = a.stats.cost - a.stats.ideal;
                        assert!((bubble - expected).abs() < 1e-9, "{p:?}: {bubble} vs {expected}");
                        let predicted = (FAMILY.predict)(&p).unwrap();
                        assert_eq!(predicted.bubble, Some(expected));
                        let want = predicted.peak_memory.unwrap();
                        for (d, (got, want)) in peaks(&a).iter().zip(&want).enumerate() {
                            assert!((got - want).abs() < 1e-9, "{p:?} device {d}: {got} vs {want}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 1500, "{checked}");
}

#[test]
fn peak_follows_the_warm_up_formula() {
    // Device d holds min(2(P−d−1) + (V−1)·G + 1, M·V) chunk activations of mem-f/V.
    let p = ScheduleParams { chunks: Some(3), group: Some(5), ..ScheduleParams::new(4, 10) };
    let a = run("interleaved-1f1b", &p).unwrap();
    let expected: Vec<f64> = [17.0, 15.0, 13.0, 11.0].iter().map(|c| c / 3.0).collect();
    for (got, want) in peaks(&a).iter().zip(&expected) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    // Capped at M·V when the warm-up covers every virtual microbatch (P = M = 4: 10 > 8).
    let a = run("interleaved-1f1b", &ScheduleParams::new(4, 4).with_costs(chunk_costs(1.0, 1.0, 1.0, 0.0))).unwrap();
    assert_eq!(peaks(&a), vec![8.0, 8.0, 7.0, 5.0]);
}

#[test]
fn one_chunk_is_plain_one_f_one_b() {
    for (devices, microbatches) in [(1, 1), (4, 3), (4, 8), (5, 12)] {
        let p = ScheduleParams::new(devices, microbatches).with_chunks(1);
        let ours = run("interleaved-1f1b", &p).unwrap();
        let reference = run("1f1b", &ScheduleParams::new(devices, microbatches)).unwrap();
        for d in 0..devices {
            assert_eq!(ours.schedule.notation(d), reference.schedule.notation(d));
        }
        assert_eq!(ours.stats.cost, reference.stats.cost);
        let bfs = run("looped-bfs", &p).unwrap();
        assert_eq!(bfs.schedule.orders, reference.schedule.orders);
    }
}

#[test]
fn accepts_one_and_two_devices() {
    for devices in [1, 2] {
        for microbatches in [devices, 2 * devices, 3 * devices] {
            let p = ScheduleParams::new(devices, microbatches);
            let a = run("interleaved-1f1b", &p).unwrap();
            assert_eq!(a.stats.cost - a.stats.ideal, f64::from(devices - 1) * 3.0 / 2.0, "{p:?}");
        }
    }
}

#[test]
fn looped_bfs_is_the_interleaved_schedule_with_group_m() {
    for devices in 1..=5u32 {
        for chunks in 2..=3u32 {
            for microbatches in devices..=3 * devices {
                let bfs = ScheduleParams::new(devices, microbatches).with_chunks(chunks);
                let megatron = ScheduleParams { group: Some(microbatches), ..bfs.clone() };
                let a = run("looped-bfs", &bfs).unwrap();
                let b = run("interleaved-1f1b", &megatron).unwrap();
                assert_eq!(a.schedule.orders, b.schedule.orders, "{bfs:?}");
                let expected = f64::from(devices - 1) * 3.0 / f64::from(chunks);
                assert!((a.stats.cost - a.stats.ideal - expected).abs() < 1e-9);
                // Peak: min(2(P−d−1) + (V−1)·M + 1, M·V) chunk activations.
                for (d, got) in peaks(&a).iter().enumerate() {
                    let chunks_held =
                        (2 * (devices - 1 - d as u32) + (chunks - 1) * microbatches + 1).min(microbatches * chunks);
                    let want = f64::from(chunks_held) / f64::from(chunks);
                    assert!((got - want).abs() < 1e-9, "{bfs:?} device {d}: {got} vs {want}");
                }
            }
        }
    }
    // Breadth-first: device 0 runs chunk 0 of every microbatch before chunk 1.
    let s = generate("looped-bfs", &ScheduleParams::new(2, 4)).unwrap();
    assert_eq!(s.notation(0), "F0 F1 F2 F3 f0 f1 f2 x0 f3 x1 x2 x3 X0 X1 X2 X3");
}

#[test]
fn every_schedule_validates_and_runs_with_communication() {
    let costs = Costs { comm: 0.5, ..Costs::fbw(1.0, 2.0, 1.0) };
    let families = ["interleaved-1f1b", "looped-bfs"];
    // Sizes the families reject (microbatches against the group) are skipped.
    assert_sizes_validate_and_simulate(&families, (Field::Chunks, 1..=3), &costs, 1..=6, |_| 1..=14, false);
}

#[test]
fn the_orders_megatron_rejects_deadlock_or_stall() {
    // G < P: the warm-up is too short for a chunk round to come back; P = 4, M = 8, G = 2.
    let short = VirtualPipeline { devices: 4, microbatches: 8, chunks: 2, group: 2, paired: false, steps: false };
    let err = simulate(&short.schedule(), &StageCosts::for_schedule(&Costs::default(), &short.schedule()));
    assert!(err.is_err(), "a group smaller than the pipeline should deadlock");
    // A last group shorter than P: P = 4, M = 10, G = 4 runs, but with extra bubble.
    let stalled = VirtualPipeline { devices: 4, microbatches: 10, chunks: 2, group: 4, paired: false, steps: false };
    let schedule = stalled.schedule();
    let timeline = simulate(&schedule, &StageCosts::for_schedule(&Costs::default(), &schedule)).unwrap();
    let stats = crate::stats(&schedule, &timeline, &Costs::default());
    assert_eq!(stats.cost - stats.ideal, 9.5, "the accepted sizes give (P−1)(F+B+W)/V = 4.5");
}

#[test]
fn rejects_bad_parameters_with_exact_messages() {
    let text = |p: &ScheduleParams, name: &str| generate(name, p).unwrap_err().to_string();
    let base = ScheduleParams::new(4, 8);

    assert_eq!(
        text(&base.clone().with_chunks(0), "interleaved-1f1b"),
        "chunks must be at least 1, found 0\n  hint: --chunks 2 is Megatron's usual virtual pipeline; --chunks 1 is plain 1F1B"
    );
    assert_eq!(
        text(&ScheduleParams { group: Some(4), ..base.clone().with_chunks(1) }, "interleaved-1f1b"),
        "group needs at least 2 chunks per device, found group 4 with chunks 1\n  \
         hint: with --chunks 1 the schedule is plain 1F1B; use --chunks 2 or more, or remove --group"
    );
    assert_eq!(
        text(&ScheduleParams::new(4, 3), "interleaved-1f1b"),
        "interleaved-1f1b needs at least as many microbatches as devices, found 3 microbatches for 4 devices\n  \
         hint: a chunk round needs a microbatch in flight on every device; use --microbatches 4 or more, \
         or --chunks 1 for plain 1F1B"
    );
    assert_eq!(
        text(&ScheduleParams { group: Some(3), ..base.clone() }, "interleaved-1f1b"),
        "group must lie between devices (4) and microbatches (8), found 3\n  \
         hint: Megatron requires devices ≤ group ≤ microbatches: --group 4 is its depth-first default, \
         --group 8 is breadth-first (looped-bfs)"
    );
    let err = generate("interleaved-1f1b", &ScheduleParams::new(4, 10)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert_eq!(
        err.to_string(),
        "microbatches mod group must be 0 or at least devices (4), found 10 mod 4 = 2\n  \
         hint: a last group shorter than the pipeline stalls it (Megatron's \"dependency bubbles\"; \
         some such orders deadlock)\n  \
         hint: use --microbatches 8 or 12, or a group that fits, e.g. --group 5"
    );
    let err =
        generate("interleaved-1f1b", &ScheduleParams { group: Some(6), ..ScheduleParams::new(4, 9) }).unwrap_err();
    assert_eq!(err.field, Field::Group);
    assert!(err.to_string().starts_with("microbatches mod group must be 0 or at least devices (4), found 9 mod 6 = 3"));
    assert_eq!(
        text(&ScheduleParams::new(4, 2), "looped-bfs"),
        "looped-bfs needs at least as many microbatches as devices, found 2 microbatches for 4 devices\n  \
         hint: a chunk round needs a microbatch in flight on every device; use --microbatches 4 or more, \
         or --chunks 1 for plain 1F1B"
    );
    let err = generate("interleaved-1f1b", &ScheduleParams::new(1024, 65_536)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert!(err.to_string().contains("more than the 8000000 supported"), "{err}");
    let err = generate("looped-bfs", &base.with_chunks(u32::MAX)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("chunks must be between 1 and 1024, found 4294967295\n  hint: "), "{err}");
    let err = generate("looped-bfs", &ScheduleParams::new(64, 4096).with_chunks(1024)).unwrap_err();
    assert!(err.to_string().contains("more than the 8000000 supported"), "{err}");
}

proptest::proptest! {
    #![proptest_config(crate::proptest_cases(64))]

    /// With equal stages and no communication, the interleaved bubble is the fill and drain
    /// divided by V and device d holds Megatron's warm-up plus one chunk activation: the
    /// explanation's values are the simulated ones, for the depth-first group (P), the
    /// breadth-first one (M) and looped BFS.
    #[test]
    fn the_explanation_is_the_simulation(
        devices in 1u32..7,
        rounds in 1u32..5,
        chunks in 1u32..4,
        breadth_first in proptest::bool::ANY,
        (f, b, w) in (0.1f64..4.0, 0.1f64..4.0, 0.0f64..4.0),
        (mem_f, mem_w_part) in (0.5f64..3.0, 0.0f64..1.0),
    ) {
        use super::super::test_support::{check_explained, explained_costs, params};
        let costs = explained_costs(f, b, w, mem_f, mem_f * mem_w_part);
        let mut p = params(devices, devices * rounds, costs);
        p.chunks = Some(chunks);
        check_explained(&LOOPED_BFS, &p)?;
        if breadth_first && chunks > 1 {
            p.group = Some(p.microbatches);
        }
        check_explained(&FAMILY, &p)?;
    }
}
