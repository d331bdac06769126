//! The headline bubble rate and its split: the share of GPU time idle, equal to the papers'
//! rate whenever stages are equal; communication, imbalance and schedule never negative and
//! adding up to `cost − ideal`; and the monotone simulator that makes communication `≥ 0`.

use bubblescope::attribution::{attribute, overall};
use bubblescope::{generate, run, simulate, CostProfile, Costs, ScheduleParams, StageCosts, Stats, FAMILIES};
use proptest::prelude::*;

/// Costs with one entry per device share in each list (`--f 1,2,1,3 …`).
fn listed(f: &[u32], b: &[u32], w: &[u32], comm: u32) -> Costs {
    let base = Costs { comm: f64::from(comm) / 2.0, ..Costs::default() };
    let mut profile = CostProfile::uniform(&base, f.len());
    let to = |v: &[u32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    profile.f = to(f);
    profile.b = to(b);
    profile.w = to(w);
    base.with_profile(profile, f.len() as u32)
}

/// `1 − Σ work / (devices · cost)`, from the per-device numbers.
fn idle_gpu_share(s: &Stats) -> f64 {
    let work: f64 = s.per_device.iter().map(|d| d.work).sum();
    1.0 - work / (s.per_device.len() as f64 * s.cost)
}

proptest! {
    #![proptest_config(crate::proptest_cases(24))]

    /// With equal stages (no overlapped pairs) every family's headline is the papers'
    /// `(cost − M·(F+B+W)) / cost`, and so is `bubble_rate_paper`: equal to within float
    /// noise at the run's scale (the bubble they imply within 1e-9 of the largest time), as
    /// stats takes differences of times through the one noise rule (`units::difference`).
    #[test]
    fn with_equal_stages_the_headline_is_the_papers_rate(
        devices in 1u32..7, microbatches in 1u32..13, f in 1u32..5, b in 0u32..5, w in 0u32..5, comm in 0u32..3,
        chunks in proptest::option::of(1u32..4), seq in proptest::option::of(1u32..3),
    ) {
        let costs = Costs { comm: f64::from(comm) / 2.0, ..Costs::fbw(f64::from(f), f64::from(b), f64::from(w)) };
        let paper_ideal = f64::from(microbatches) * (costs.f + costs.b + costs.w);
        for family in FAMILIES {
            let p = ScheduleParams { chunks, seq_splits: seq, ..ScheduleParams::new(devices, microbatches).with_costs(costs.clone()) };
            let Ok(a) = run(family.name, &p) else { continue };
            let s = &a.stats;
            // The papers' rate, raw; stats' may differ from it by float noise alone.
            let paper = if s.cost > 0.0 { (s.cost - paper_ideal) / s.cost } else { 0.0 };
            let scale = s.cost.max(paper_ideal).max(1.0);
            let within_noise = |rate: f64| ((rate - paper) * s.cost).abs() <= 1e-9 * scale;
            prop_assert_eq!(s.ideal, paper_ideal, "{}", family.name);
            prop_assert_eq!(s.busiest_work, paper_ideal, "{}", family.name);
            prop_assert!(within_noise(s.bubble_rate), "{}: {} vs {paper}", family.name, s.bubble_rate);
            prop_assert!(within_noise(s.bubble_rate_paper), "{}: {} vs {paper}", family.name, s.bubble_rate_paper);
            prop_assert!(s.bubble_rate >= 0.0, "{}: {}", family.name, s.bubble_rate);
            let tol = 1e-12;
            prop_assert!((s.bubble_rate - idle_gpu_share(s)).abs() <= tol, "{}: {} vs {}", family.name, s.bubble_rate, idle_gpu_share(s));
            let parts = attribute(&a, &costs).expect("re-simulates").overall;
            prop_assert_eq!(parts.imbalance, 0.0, "{}", family.name);
        }
    }

    /// Over random per-device lists, every family, with and without communication: the three
    /// parts are `≥ 0` and sum to `cost − ideal`, overall and per device (to its idle time);
    /// the headline is the idle GPU share, the mean of the devices' own idle shares, and
    /// exceeds the papers' rate by imbalance / cost.
    #[test]
    fn the_parts_are_never_negative_and_add_up(
        f in proptest::collection::vec(1u32..6, 4), b in proptest::collection::vec(1u32..6, 4),
        w in proptest::collection::vec(0u32..4, 4), comm in 0u32..3, microbatches in 2u32..10,
    ) {
        let costs = listed(&f, &b, &w, comm);
        for family in FAMILIES {
            let Ok(a) = run(family.name, &ScheduleParams::new(4, microbatches).with_costs(costs.clone())) else { continue };
            let s = &a.stats;
            let name = family.name;
            let tol = 1e-9 * s.cost.max(1.0);
            let at = attribute(&a, &costs).expect("re-simulates");
            let p = at.overall;
            prop_assert!(p.communication >= 0.0 && p.imbalance >= 0.0 && p.schedule >= 0.0, "{name}: {p:?}");
            prop_assert!((p.total() - (s.cost - s.ideal)).abs() <= tol, "{name}: {p:?} vs {}", s.cost - s.ideal);
            prop_assert!((p.imbalance - (s.busiest_work - s.ideal)).abs() <= tol, "{name}: {p:?}");
            prop_assert_eq!(overall(&a.schedule, &costs, s).expect("re-simulates"), p, "{}", name);
            for (d, dp) in at.per_device.iter().enumerate() {
                prop_assert!(dp.communication >= 0.0 && dp.imbalance >= 0.0 && dp.schedule >= 0.0, "{name}: device {d} {dp:?}");
                prop_assert!((dp.total() - s.per_device[d].idle).abs() <= tol, "{name}: device {d} {dp:?}");
            }
            prop_assert!((s.bubble_rate - idle_gpu_share(s)).abs() <= 1e-12, "{name}");
            let mean_share = (0..4).map(|d| s.idle_share(d)).sum::<f64>() / 4.0;
            prop_assert!((s.bubble_rate - mean_share).abs() <= 1e-12, "{name}");
            prop_assert!((s.bubble_rate - s.bubble_rate_paper - p.imbalance / s.cost).abs() <= 1e-12, "{name}");
            prop_assert!(s.bubble_rate >= s.bubble_rate_paper - 1e-12, "{name}");
        }
    }

    /// For fixed orders the simulator is monotone: lengthening passes or hops never makes an
    /// op start or end earlier. (This is what makes communication `c₀ − c₁ ≥ 0`.)
    #[test]
    fn the_simulator_is_monotone_in_durations(
        f in proptest::collection::vec(1u32..6, 4), b in proptest::collection::vec(1u32..6, 4),
        w in proptest::collection::vec(0u32..4, 4), comm in 0u32..3,
        more in proptest::collection::vec(0u32..3, 12), more_comm in 0u32..3, microbatches in 2u32..9,
    ) {
        let base = listed(&f, &b, &w, comm);
        let add = |v: &[u32], k: usize| v.iter().zip(&more[k * 4..k * 4 + 4]).map(|(x, m)| x + m).collect::<Vec<_>>();
        let slower = listed(&add(&f, 0), &add(&b, 1), &add(&w, 2), comm + more_comm);
        for family in FAMILIES {
            let Ok(schedule) = generate(family.name, &ScheduleParams::new(4, microbatches).with_costs(base.clone())) else { continue };
            let t0 = simulate(&schedule, &StageCosts::for_schedule(&base, &schedule)).expect("runs");
            let t1 = simulate(&schedule, &StageCosts::for_schedule(&slower, &schedule)).expect("the same orders run");
            for (d, (a, b)) in t0.devices.iter().zip(&t1.devices).enumerate() {
                for (i, (x, y)) in a.ops.iter().zip(&b.ops).enumerate() {
                    prop_assert!(y.start >= x.start - 1e-9 && y.end >= x.end - 1e-9,
                        "{}: op {i} of device {d} ran {}..{} and slower {}..{}", family.name, x.start, x.end, y.start, y.end);
                }
            }
        }
    }
}
