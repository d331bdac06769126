use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::error::Severity;
use crate::params::ScheduleParams;
use crate::registry::generate;
use crate::trade::{Offload, Recompute, RecomputeShape};
use crate::validate::validate;

fn costs(trade: Option<Trade>) -> Costs {
    Costs { comm: 0.1, trade: trade.map(Arc::new), ..Costs::fbw(1.0, 1.0, 1.0) }
}

fn run(family: &str, devices: u32, microbatches: u32, costs: &Costs) -> (Schedule, Timeline) {
    let params = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
    let schedule = generate(family, &params).unwrap_or_else(|e| panic!("{family}: {e}"));
    let errors: Vec<_> = validate(&schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
    assert!(errors.is_empty(), "{family}: {errors:?}");
    let timeline = simulate(&schedule, &StageCosts::for_schedule(costs, &schedule)).expect("simulates");
    (schedule, timeline)
}

fn peaks(t: &Timeline) -> Vec<f64> {
    t.devices.iter().map(|d| d.peak_memory).collect()
}

#[test]
fn full_recompute_on_1f1b_keeps_the_input_and_adds_one_forward_per_backward() {
    // Worked by hand: 1F1B, 2 devices, 2 microbatches, F = B = W = 1, comm 0.1, mem-f 1.
    // Device 0 holds both microbatches' activations before its first backward: 2 without
    // recompute; with full recompute it keeps 2/34 each, and its R brings one back to 1.
    let trade = Trade { recompute: vec![Recompute::Full], ..Trade::default() };
    let (plain, plain_t) = run("1f1b", 2, 2, &costs(None));
    let (traded, traded_t) = run("1f1b", 2, 2, &costs(Some(trade)));
    assert_eq!(plain.pass_count() + 4, traded.pass_count(), "one R per backward");
    assert_eq!(traded.notation(0), "F0 F1 R0 X0 R1 X1");
    let keep = 2.0 / 34.0;
    assert!((plain_t.devices[0].peak_memory - 2.0).abs() < 1e-12);
    assert!((traded_t.devices[0].peak_memory - (1.0 + keep)).abs() < 1e-12, "{:?}", peaks(&traded_t));
    // The last stage's R runs right after its F: one forward more on the critical path per
    // microbatch at least.
    assert!(traded_t.end() >= plain_t.end() + 2.0 - 1e-9, "{} vs {}", traded_t.end(), plain_t.end());
    // The stats carry the peak without the trade: device 0's 2, none for the plain run.
    let traded_costs = costs(Some(Trade { recompute: vec![Recompute::Full], ..Trade::default() }));
    assert_eq!(crate::stats::peak_without_trade(&traded, &traded_costs), Some(2.0));
    assert_eq!(crate::stats::peak_without_trade(&plain, &costs(None)), None);
}

#[test]
fn offload_frees_the_first_stage_during_its_wait_and_reloads_before_the_backward() {
    // GPipe keeps every forward until the backwards, which run in forward order from one
    // per 2 units: on device 0 the later microbatches wait the longest, so half offloads
    // microbatches 4 to 7.
    let trade = Trade { offload: Offload::Fractions(vec![0.5]), copy_time: Some(0.05), ..Trade::default() };
    let (_, plain_t) = run("gpipe", 4, 8, &costs(None));
    let (traded, traded_t) = run("gpipe", 4, 8, &costs(Some(trade)));
    let copies = traded.copies_of(0);
    assert_eq!(copies.iter().filter(|c| c.kind == CopyKind::Offload).count(), 4);
    let offloaded: Vec<u32> =
        copies.iter().filter(|c| c.kind == CopyKind::Offload).map(|c| c.pass.microbatch).collect();
    assert_eq!(offloaded, [4, 5, 6, 7], "the longest waits are offloaded");
    assert!(traded_t.devices[0].peak_memory < plain_t.devices[0].peak_memory);
    // Copies that are quick against the wait never stall a backward.
    assert!((traded_t.end() - plain_t.end()).abs() < 1e-9, "{} vs {}", traded_t.end(), plain_t.end());
    let copy_times = &traded_t.devices[0].copies;
    assert_eq!(copy_times.len(), copies.len());
    for pair in copy_times.windows(2) {
        assert!(pair[1].start >= pair[0].end - 1e-12, "one copy stream: copies do not overlap");
    }
}

#[test]
fn planned_copies_never_queue_but_a_late_reload_stalls_its_backward() {
    // GPipe's first device waits about 17 units between a forward and its backward; copies of
    // 2.5 pass the placement's margin, but the stream has room for only some of them: those
    // planned never delay the step.
    let trade = Trade { offload: Offload::Auto, copy_time: Some(2.5), ..Trade::default() };
    let costs = costs(Some(trade));
    let (mut traded, traded_t) = run("gpipe", 4, 16, &costs);
    let (_, plain_t) = run("gpipe", 4, 16, &self::costs(None));
    assert!(traded.has_copies());
    assert!((traded_t.end() - plain_t.end()).abs() < 1e-9, "{} vs {}", traded_t.end(), plain_t.end());
    let offloaded = traded.copies_of(0).iter().filter(|c| c.kind == CopyKind::Offload).count();
    assert!(offloaded > 0 && offloaded < 16, "{offloaded} of 16 fit on the stream");
    // Issued only when its backward is next, a reload makes the backward wait for it.
    let last = traded.copies[0].iter().rposition(|c| c.kind == CopyKind::Reload).expect("a reload");
    let needed = traded.orders[0]
        .iter()
        .position(|op| {
            op.passes().any(|p| p.kind.is_input_grad() && p.microbatch == traded.copies[0][last].pass.microbatch)
        })
        .expect("its backward");
    traded.copies[0][last].at = needed as u32;
    let late = simulate(&traded, &StageCosts::for_schedule(&costs, &traded)).expect("simulates");
    assert!(late.end() > plain_t.end() + 1.0, "{} vs {}", late.end(), plain_t.end());
}

#[test]
fn a_trade_that_does_not_fit_the_devices_is_refused_with_a_hint() {
    let trade = Trade { recompute: vec![Recompute::Full, Recompute::None], ..Trade::default() };
    let params = ScheduleParams::new(4, 8).with_costs(costs(Some(trade)));
    let e = generate("1f1b", &params).unwrap_err();
    assert_eq!(e.field, crate::Field::Recompute);
    assert!(e.to_string().contains("hint:"), "{e}");
}

#[test]
fn validation_names_misplaced_recomputes_and_copies() {
    let trade = Trade { offload: Offload::Auto, copy_time: Some(0.01), ..Trade::default() };
    let (mut s, _) = run("gpipe", 2, 4, &costs(Some(trade)));
    s.orders[1].insert(0, Op::One(Pass::r(1, 0)));
    let offload = s.copies[0].iter().position(|c| c.kind == CopyKind::Offload).expect("an offload");
    s.copies[0][offload].at = 0;
    let text: Vec<String> = validate(&s).iter().map(ToString::to_string).collect();
    let all = text.join("\n");
    assert!(all.contains("R(stage 1, mb 0) must run after its F and before its backward"), "{all}");
    assert!(all.contains("is issued before its forward ends"), "{all}");
    assert!(all.contains("stage 1 recomputes 1 of its 4 microbatches: R(stage 1, mb 1) has no R"), "{all}");
}

fn families() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "v-half", "dualpipe-v"])
}

/// F, B and W times for the property tests.
fn pass_times() -> impl Strategy<Value = (f64, f64, f64)> {
    (0.5f64..3.0, 0.5f64..3.0, 0.2f64..3.0)
}

fn recompute() -> impl Strategy<Value = Recompute> {
    prop::sample::select(Recompute::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Recompute and offload never raise a device's peak memory, and never make a step shorter
    /// than the same schedule without them (no memory limit).
    #[test]
    fn trading_never_raises_peak_memory_nor_shortens_the_step(
        family in families(),
        devices in 2u32..6,
        rounds in 1u32..4,
        (f, b, w) in pass_times(),
        modes in prop::collection::vec(recompute(), 6),
        fractions in prop::collection::vec(prop::sample::select(vec![0.0, 0.25, 0.5, 1.0]), 6),
        auto in any::<bool>(),
        copy in 0.01f64..2.0,
        keep in 0.0f64..1.0,
    ) {
        let microbatches = 2 * devices * rounds;
        let base = Costs { comm: 0.1, ..Costs::fbw(f, b, w) };
        let plain_params = ScheduleParams::new(devices, microbatches).with_costs(base.clone());
        let Ok(plain) = generate(family, &plain_params) else { return Ok(()) };
        let trade = Trade {
            recompute: modes[..devices as usize].to_vec(),
            offload: if auto { Offload::Auto } else { Offload::Fractions(fractions[..devices as usize].to_vec()) },
            full: RecomputeShape { keep, redo: 1.0 },
            selective: RecomputeShape { keep: (keep + 1.0) / 2.0, redo: 0.3 },
            copy_time: Some(copy),
            chunks: None,
        };
        let traded_costs = Costs { trade: Some(Arc::new(trade)), ..base.clone() };
        let traded = generate(family, &ScheduleParams::new(devices, microbatches).with_costs(traded_costs.clone()))
            .expect("the trade fits");
        let errors: Vec<_> = validate(&traded).into_iter().filter(|d| d.severity == Severity::Error).collect();
        prop_assert!(errors.is_empty(), "{:?}", errors);
        let plain_t = simulate(&plain, &StageCosts::for_schedule(&base, &plain)).expect("plain simulates");
        let traded_t = simulate(&traded, &StageCosts::for_schedule(&traded_costs, &traded)).expect("traded simulates");
        for (d, (p, t)) in peaks(&plain_t).iter().zip(peaks(&traded_t)).enumerate() {
            prop_assert!(t <= p + 1e-9, "device {}: peak {} > {}", d, t, p);
        }
        prop_assert!(traded_t.end() >= plain_t.end() - 1e-9, "{} < {}", traded_t.end(), plain_t.end());
    }
}

/// The most forwards device 0 holds at once: done, and its backward not yet started.
fn most_in_flight(schedule: &Schedule) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for pass in schedule.orders[0].iter().flat_map(Op::passes) {
        match pass.kind {
            PassKind::F => now += 1,
            PassKind::B | PassKind::BW => now -= 1,
            _ => {}
        }
        most = most.max(now);
    }
    most
}

/// `family` at `params`, the generator planning without the trade and the passes added after:
/// what a family that ignores the trade's memory makes.
fn planned_without_the_trade(family: &str, params: &ScheduleParams) -> Result<Schedule, ParamError> {
    let f = crate::family(family).expect("a family");
    let bare = ScheduleParams { costs: Costs { trade: None, ..params.costs.clone() }, ..params.clone() };
    (f.generate)(&bare).and_then(|s| apply(s, &params.costs))
}

#[test]
fn zb_auto_spends_the_memory_full_recompute_frees_on_more_forwards_in_flight() {
    // P = 4, M = 12, F = B = W = 1, mem-f 1 (mem-w 1/2), limit 2: half of 1F1B's memory.
    // Without the trade's memory the heuristic holds 2 forwards on device 0. With full
    // recompute a forward holds max(2/34, 1/2) = 1/2 until its R pass, and an R adds at most
    // 1 − 1/2 before its backward frees it: (2 − 1/2) / (1/2) = 3 forwards fit.
    let trade = Trade { recompute: vec![Recompute::Full], ..Trade::default() };
    let params = ScheduleParams::new(4, 12).with_costs(costs(Some(trade))).with_mem_limit(2.0);
    let planned = generate("zb-auto", &params).expect("fits");
    let without = planned_without_the_trade("zb-auto", &params).expect("fits");
    assert_eq!((most_in_flight(&without), most_in_flight(&planned)), (2, 3));
    let step = |s: &Schedule| simulate(s, &StageCosts::for_schedule(&params.costs, s)).expect("simulates");
    let (planned_t, without_t) = (step(&planned), step(&without));
    assert!(planned_t.end() < 0.8 * without_t.end(), "{} vs {}", planned_t.end(), without_t.end());
    assert!(peaks(&planned_t).iter().all(|&p| p <= 2.0 + 1e-9), "{:?}", peaks(&planned_t));
}

fn memory_aware() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["zb-auto", "zb-v", "v-auto", "zb-opt"])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A memory-aware family under a limit, with recompute everywhere (and sometimes
    /// offload): every device stays within the limit, each backward gets one R pass, and the
    /// step is never longer than planning without the trade's memory.
    #[test]
    fn memory_aware_families_plan_within_the_limit_with_recompute(
        family in memory_aware(),
        devices in 2u32..5,
        rounds in 1u32..3,
        (f, b, w) in pass_times(),
        keep in 0.0f64..0.6,
        share in 0.5f64..2.0,
        offload in any::<bool>(),
    ) {
        let microbatches = 2 * devices * rounds;
        let trade = Trade {
            recompute: vec![Recompute::Full],
            full: RecomputeShape { keep, redo: 1.0 },
            offload: if offload { Offload::Auto } else { Offload::None },
            copy_time: offload.then_some(0.05),
            ..Trade::default()
        };
        let costs = Costs { comm: 0.1, trade: Some(Arc::new(trade)), ..Costs::fbw(f, b, w) };
        let limit = share * f64::from(devices);
        let params = ScheduleParams::new(devices, microbatches).with_costs(costs.clone()).with_mem_limit(limit);
        let Ok(schedule) = generate(family, &params) else { return Ok(()) };
        let errors: Vec<_> = validate(&schedule).into_iter().filter(|d| d.severity == Severity::Error).collect();
        prop_assert!(errors.is_empty(), "{:?}", errors);
        let passes = || schedule.orders.iter().flatten().flat_map(Op::passes);
        let recomputes = passes().filter(|p| p.kind == PassKind::R).count();
        prop_assert_eq!(recomputes, passes().filter(|p| p.kind.is_input_grad()).count());
        let t = simulate(&schedule, &StageCosts::for_schedule(&costs, &schedule)).expect("simulates");
        for (d, peak) in peaks(&t).into_iter().enumerate() {
            prop_assert!(peak <= limit + 1e-9, "device {}: peak {} over the limit {}", d, peak, limit);
        }
        // v-auto's adaptive search is not monotone in the memory it may use: with the memory
        // recompute frees it can settle 2% slower (v-auto, P 4, M 8, F 0.5, B 0.5, W 2.39, limit
        // 3.29), so only the planners that keep the better of the two are held to it.
        if family == "v-auto" {
            return Ok(());
        }
        if let Ok(other) = planned_without_the_trade(family, &params) {
            let other_t = simulate(&other, &StageCosts::for_schedule(&costs, &other)).expect("simulates");
            prop_assert!(t.end() <= other_t.end() + 1e-9, "{} > {}", t.end(), other_t.end());
        }
    }
}
