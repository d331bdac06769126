//! Properties every family must have, over random sizes and costs.

use bubblescope::render::{gantt, GanttOptions, GanttPanel, Theme};
use bubblescope::sim::dependency;
use bubblescope::{generate, simulate, stats, validate, Costs, ScheduleParams, StageCosts, FAMILIES};
use proptest::prelude::*;

/// Random parameters: small sizes, small integer costs, sometimes options and a limit.
fn params() -> impl Strategy<Value = ScheduleParams> {
    (
        (1u32..=8, 1u32..=24),
        (0u32..=4, 0u32..=4, 0u32..=4, 0u32..=2),
        (
            proptest::option::of(1u32..=3),
            proptest::option::of(1u32..=24),
            proptest::option::of(1u32..=2),
            proptest::option::of(1u32..=3),
        ),
        (proptest::option::of(1u32..=6), proptest::option::of(0u32..=2), proptest::option::of(2u32..=20)),
    )
        .prop_map(
            |((devices, microbatches), (f, b, w, comm), (chunks, group, waves, seq), (overlap, mem_w, limit))| {
                let f = if f + b + w == 0 { 1 } else { f };
                ScheduleParams {
                    devices,
                    microbatches,
                    chunks,
                    group,
                    waves,
                    seq_splits: seq,
                    a2a_overlap: false,
                    costs: Costs {
                        f: f64::from(f),
                        b: f64::from(b),
                        w: f64::from(w),
                        comm: f64::from(comm),
                        links: None,
                        overlap: overlap.map(f64::from),
                        mem_f: 2.0,
                        mem_w: mem_w.map(|m| f64::from(m) / 2.0 * 2.0),
                        profile: None,
                        trade: None,
                        vocab: None,
                        p2p: bubblescope::P2p::Async,
                        split_vocab: None,
                    },
                    mem_limit: limit.map(|l| f64::from(l) / 2.0 * f64::from(devices)),
                    units: bubblescope::units::Units::Cost,
                }
            },
        )
}

fn check_family(family: &bubblescope::Family, params: &ScheduleParams) -> Result<(), TestCaseError> {
    let name = family.name;
    let Ok(schedule) = generate(name, params) else {
        // A ParamError is a fine answer; the property is that it is not a panic.
        return Ok(());
    };
    // The registry's pass count (the size check) is exact.
    prop_assert_eq!(family.pass_count(params), schedule.pass_count() as u64, "{} pass count", name);
    // Same input, same output.
    prop_assert_eq!(&generate(name, params).unwrap(), &schedule, "{} is not deterministic", name);

    // Structure: each pass exactly once, on its stage's device, in order.
    let problems = validate(&schedule);
    prop_assert!(
        problems.is_empty(),
        "{name} {params:?}: {}",
        problems.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n")
    );

    let costs = StageCosts::for_schedule(&params.costs, &schedule);
    let timeline = simulate(&schedule, &costs).map_err(|e| TestCaseError::fail(format!("{name} {params:?}: {e}")))?;
    prop_assert_eq!(&simulate(&schedule, &costs).unwrap(), &timeline);

    // Every dependency respected, with communication across devices; no overlap on a device.
    let mut done = std::collections::HashMap::new();
    for (d, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        for (op, t) in order.iter().zip(&times.ops) {
            for pass in op.passes() {
                done.insert(
                    (
                        pass.kind.is_input_grad(),
                        pass.kind == bubblescope::PassKind::F,
                        pass.stage,
                        pass.microbatch,
                        pass.slice,
                    ),
                    (d as u32, t.end),
                );
            }
        }
    }
    for (d, (order, times)) in schedule.orders.iter().zip(&timeline.devices).enumerate() {
        let mut prev_end = f64::NEG_INFINITY;
        for (op, t) in order.iter().zip(&times.ops) {
            prop_assert!(t.start >= prev_end - 1e-9, "{name}: ops overlap on device {d}");
            prop_assert!(t.end >= t.start);
            prev_end = t.end;
            for pass in op.passes() {
                let Some(dep) = dependency(&schedule.placement, pass) else { continue };
                let key = match dep.class {
                    bubblescope::sim::DepClass::Forward => (false, true, dep.stage, dep.microbatch, dep.slice),
                    bubblescope::sim::DepClass::InputGrad => (true, false, dep.stage, dep.microbatch, dep.slice),
                };
                let (from, end) = done[&key];
                let comm = if from == d as u32 { 0.0 } else { params.costs.comm };
                prop_assert!(
                    t.start >= end + comm - 1e-9,
                    "{name}: {pass} starts at {} before its dependency arrives at {}",
                    t.start,
                    end + comm
                );
            }
        }
        // Memory never goes below zero and ends where it started.
        for p in &times.memory {
            prop_assert!(p.value >= -1e-9, "{name}: memory below zero on device {d}");
        }
        let last = times.memory.last().map_or(0.0, |p| p.value);
        prop_assert!(last.abs() < 1e-9, "{name}: device {d} ends holding {last}");
    }

    // Stats agree with the timeline and with the definitions.
    let s = stats(&schedule, &timeline, &params.costs);
    for dev in &s.per_device {
        prop_assert!(dev.span <= s.cost + 1e-9 && dev.busy <= dev.span + 1e-9);
    }
    if params.costs.overlap.is_none() {
        prop_assert!(s.cost >= s.ideal - 1e-9, "{name}: cost {} below ideal {}", s.cost, s.ideal);
        prop_assert!((0.0..1.0).contains(&s.bubble_rate) || s.bubble_rate.abs() < 1e-12);
    }

    // Memory-aware families keep their limit.
    if let (true, Some(limit)) = (family.uses(bubblescope::Field::MemLimit), params.mem_limit) {
        prop_assert!(s.peak_memory <= limit + 1e-9, "{name}: peak {} above the limit {limit}", s.peak_memory);
    }

    // The chart accounts for every pass.
    let panel =
        GanttPanel { title: None, note: None, schedule: &schedule, timeline: &timeline, causes: None, step: None };
    let (scene, _) = gantt(&[panel], &GanttOptions { width: 500.0, ..GanttOptions::default() }, &Theme::light());
    let c = scene.counts;
    prop_assert_eq!(c.drawn + c.merged + c.culled, schedule.pass_count());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn every_family_is_valid_exact_and_never_panics(params in params()) {
        for family in FAMILIES {
            let p = family.own_params(&params);
            check_family(family, &p)?;
        }
    }

    #[test]
    fn unused_options_and_wild_inputs_are_errors_not_panics(
        devices in 0u32..=2000, microbatches in 0u32..=100_000, chunks in proptest::option::of(0u32..=100),
        f in prop_oneof![Just(f64::NAN), Just(-1.0), Just(f64::INFINITY), 0.0f64..10.0],
    ) {
        for family in FAMILIES {
            let mut p = ScheduleParams::new(devices.min(64), microbatches.min(64));
            p.chunks = chunks;
            p.costs.f = f;
            let _ = generate(family.name, &p);
            // Huge sizes must be refused before any work is done.
            let mut big = ScheduleParams::new(devices, microbatches);
            big.costs.f = f;
            if u64::from(devices) * u64::from(microbatches) > 4_000_000 {
                prop_assert!(generate(family.name, &big).is_err());
            }
        }
    }
}
