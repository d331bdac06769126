use super::*;
use crate::params::{Costs, StageCosts};
use crate::schedule::fixtures::two_stage;
use crate::schedule::{Op, Pass, Placement, Schedule};

fn costs(schedule: &Schedule, f: f64, b: f64, w: f64, comm: f64) -> StageCosts {
    StageCosts::for_schedule(&Costs { comm, ..Costs::fbw(f, b, w) }, schedule)
}

#[test]
fn dependencies_and_communication_set_start_times() {
    let s = two_stage();
    let t = simulate(&s, &costs(&s, 1.0, 2.0, 3.0, 0.5)).unwrap();
    let times = |d: usize| t.devices[d].ops.iter().map(|o| (o.start, o.end)).collect::<Vec<_>>();
    assert_eq!(times(1), vec![(1.5, 2.5), (2.5, 4.5), (4.5, 7.5)]);
    // BW on device 0 waits for B on device 1 (ends 4.5) plus one hop.
    assert_eq!(times(0), vec![(0.0, 1.0), (5.0, 10.0)]);
    assert_eq!(t.devices[0].ops[1].waited_for, Some(OpRef { device: 1, position: 1 }));
    assert_eq!(t.devices[1].ops[2].waited_for, None);
}

#[test]
fn memory_allocates_at_forward_start_and_releases_at_backward_end() {
    let s = two_stage();
    let t = simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)).unwrap();
    let dev1: Vec<(f64, f64)> = t.devices[1].memory.iter().map(|p| (p.time, p.value)).collect();
    // F at 1 (+1), B ends at 3 (-0.5), W ends at 4 (-0.5).
    assert_eq!(dev1, vec![(0.0, 0.0), (1.0, 1.0), (3.0, 0.5), (4.0, 0.0)]);
    assert_eq!(t.devices[1].peak_memory, 1.0);
}

#[test]
fn a_pair_waits_for_both_dependencies_and_takes_the_overlap_time() {
    // Device 0 runs stage 0; device 1 runs stage 1 (each pass placed on its stage's device).
    // Two microbatches.
    let mut s = Schedule::new(Placement::linear(2), 2);
    s.push_placed(Pass::f(0, 0));
    s.push_placed(Pass::f(1, 0));
    s.push(1, Op::Pair(Pass::f(1, 1), Pass::bw(1, 0)));
    s.push_placed(Pass::bw(1, 1));
    s.push_placed(Pass::f(0, 1));
    s.push_placed(Pass::bw(0, 0));
    s.push_placed(Pass::bw(0, 1));
    let mut c = Costs::fbw(1.0, 1.0, 1.0);
    c.overlap = Some(2.5);
    let t = simulate(&s, &StageCosts::for_schedule(&c, &s)).unwrap();
    // F(1,1) needs F(0,1), which ends at 2; the pair starts at 2 and lasts 2.5.
    assert_eq!((t.devices[1].ops[1].start, t.devices[1].ops[1].end), (2.0, 4.5));
    // The pair's forward allocates while its backward still holds: 2 in flight.
    assert_eq!(t.devices[1].peak_memory, 2.0);
}

#[test]
fn a_cycle_is_reported_with_every_stuck_device() {
    let mut s = Schedule::new(Placement::linear(2), 1);
    s.push(0, Pass::bw(0, 0)); // needs B of stage 1, which needs F of stage 1, which needs F(0)
    s.push(0, Pass::f(0, 0));
    s.push(1, Pass::f(1, 0));
    s.push(1, Pass::bw(1, 0));
    let err = simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)).unwrap_err();
    let SimError::Deadlock(stuck) = &err else { panic!("{err}") };
    assert_eq!(stuck.len(), 2);
    assert_eq!((stuck[0].device, stuck[0].pass, stuck[0].waits_for), (0, Pass::bw(0, 0), Pass::bw(1, 0)));
    assert_eq!(stuck[0].waits_on, Some((1, 1)));
    assert_eq!((stuck[1].device, stuck[1].pass, stuck[1].waits_for), (1, Pass::f(1, 0), Pass::f(0, 0)));
}

#[test]
fn a_missing_dependency_is_a_deadlock_not_a_hang() {
    let mut s = Schedule::new(Placement::linear(2), 1);
    s.push(1, Pass::f(1, 0));
    let err = simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)).unwrap_err();
    assert!(err.to_string().contains("waiting for F(stage 0, mb 0), which no device runs"), "{err}");
}

#[test]
fn out_of_range_passes_are_malformed_not_a_panic() {
    let mut s = Schedule::new(Placement::linear(2), 1);
    s.push(0, Pass::f(5, 0));
    assert!(matches!(simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)), Err(SimError::Malformed(_))));
    let mut s = Schedule::new(Placement::linear(2), 1);
    s.orders.pop();
    assert!(matches!(simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)), Err(SimError::Malformed(_))));
}

#[test]
fn the_builder_agrees_with_the_simulator() {
    let s = two_stage();
    let c = costs(&s, 1.0, 2.0, 3.0, 0.5);
    let mut b = Builder::new(s.placement.clone(), 1, 1, c.clone());
    let mut ends = Vec::new();
    for (d, op) in
        [(0, s.orders[0][0]), (1, s.orders[1][0]), (1, s.orders[1][1]), (1, s.orders[1][2]), (0, s.orders[0][1])]
    {
        ends.push(b.push(d, op));
    }
    assert_eq!(ends, vec![1.0, 2.5, 4.5, 7.5, 10.0]);
    assert_eq!(b.idle(0), 4.0);
    assert_eq!(b.peak(1), 1.0);
    let built = b.finish();
    let t = simulate(&built, &c).unwrap();
    assert_eq!(t.devices[0].ops[1].end, 10.0);
}

#[test]
fn op_at_finds_the_op_running_at_a_time() {
    let s = two_stage();
    let t = simulate(&s, &costs(&s, 1.0, 2.0, 3.0, 0.5)).unwrap();
    assert_eq!(t.op_at(1, 1.5), Some(0));
    assert_eq!(t.op_at(1, 2.5), Some(1));
    assert_eq!(t.op_at(0, 3.0), None); // idle, waiting for B
    assert_eq!(t.op_at(0, 9.99), Some(1));
    assert_eq!(t.op_at(0, 10.0), None);
    assert_eq!(t.op_at(7, 1.0), None);
}

/// Bytes a timeline holds: its op times and memory curves.
fn footprint(t: &Timeline) -> usize {
    t.devices
        .iter()
        .map(|d| {
            d.ops.capacity() * std::mem::size_of::<TimedOp>() + d.memory.capacity() * std::mem::size_of::<MemPoint>()
        })
        .sum()
}

#[test]
fn timeline_memory_grows_linearly_with_the_passes() {
    let per_pass = |microbatches: u32| {
        let s = crate::generate("zb-v-handcrafted", &crate::ScheduleParams::new(8, microbatches)).unwrap();
        let t = simulate(&s, &costs(&s, 1.0, 1.0, 1.0, 0.0)).unwrap();
        footprint(&t) as f64 / s.pass_count() as f64
    };
    let (small, big) = (per_pass(64), per_pass(1024));
    // A constant number of bytes per pass (times, waits and two memory points), at any size.
    assert!((small - big).abs() / small < 0.05, "{small} vs {big} bytes per pass");
    assert!(big < 80.0, "{big} bytes per pass");
}

fn blocking(mut c: StageCosts) -> StageCosts {
    c.p2p = crate::params::P2p::Blocking;
    c
}

/// Two devices, 1F1B, two microbatches, fused backwards; stage 0 takes F 1 and BW 1, stage 1
/// takes F 3 and BW 3, a hop takes 1. Orders: device 0 F0 F1 BW0 BW1, device 1 F0 BW0 F1 BW1.
///
/// Async: d1 F0 [2,5], BW0 [5,8], F1 [8,11] (F(0,1) arrived at 3), BW1 [11,14]; d0 BW0 [9,10],
/// BW1 [15,16]. Makespan 16.
///
/// Blocking: d0 F0 [0,1]; its send meets d1's first receive (posted at 0) and crosses at 2,
/// so d0's F1 runs [2,3] and d1's F0 [2,5]. d1's BW0 [5,8]. d0's send of F(0,1) meets d1's
/// receive only when d1 ends BW0 (the exchange before its F1): it crosses at max(3, 8) + 1 = 9,
/// so d1's F1 runs [9,12] and d0 is held until 9. d1's send of BW(1,0) meets d0's receive
/// (posted at 3) at max(8, 3) + 1 = 9: d0's BW0 runs [9,10]. d1's BW1 [12,15]; its send meets
/// d0's receive (posted at 10) at 15 + 1 = 16: d0's BW1 runs [16,17]. Makespan 17.
#[test]
fn blocking_sends_hold_the_sender_until_the_receiver_reaches_its_exchange() {
    let s = crate::generate("1f1b", &crate::ScheduleParams::new(2, 2)).unwrap();
    let mut c = costs(&s, 1.0, 1.0, 0.0, 1.0);
    c.f = vec![1.0, 3.0];
    c.b = vec![1.0, 3.0];
    let times = |t: &Timeline, d: usize| t.devices[d].ops.iter().map(|o| (o.start, o.end)).collect::<Vec<_>>();
    let quick = simulate(&s, &c).unwrap();
    assert_eq!(times(&quick, 0), vec![(0.0, 1.0), (1.0, 2.0), (9.0, 10.0), (15.0, 16.0)]);
    assert_eq!(times(&quick, 1), vec![(2.0, 5.0), (5.0, 8.0), (8.0, 11.0), (11.0, 14.0)]);
    let held = simulate(&s, &blocking(c)).unwrap();
    assert_eq!(times(&held, 0), vec![(0.0, 1.0), (2.0, 3.0), (9.0, 10.0), (16.0, 17.0)]);
    assert_eq!(times(&held, 1), vec![(2.0, 5.0), (5.0, 8.0), (9.0, 12.0), (12.0, 15.0)]);
    assert_eq!(held.end(), 17.0);
    // d0's F1 waited for its own send of F0; its BW0 for d1's BW0 (the send and the receive
    // crossed together).
    assert_eq!(held.devices[0].ops[1].waited_for, Some(OpRef { device: 0, position: 0 }));
}

#[test]
fn blocking_sends_refuse_exchanges_that_never_meet() {
    // Each device sends first and receives second: with blocking sends neither reaches the
    // exchange the other's send needs.
    let mut s = Schedule::new(Placement::linear(2), 2);
    s.push(0, Pass::f(0, 0));
    s.push(0, Pass::f(0, 1));
    s.push(0, Pass::bw(0, 0));
    s.push(0, Pass::bw(0, 1));
    s.push(1, Pass::f(1, 0));
    s.push(1, Pass::bw(1, 0));
    s.push(1, Pass::bw(1, 1)); // before F(1,1): deadlocks with or without blocking
    s.push(1, Pass::f(1, 1));
    let err = simulate(&s, &blocking(costs(&s, 1.0, 1.0, 0.0, 1.0))).unwrap_err();
    assert!(matches!(err, SimError::Deadlock(_)), "{err}");
    // Two ops that swap results in the same order on both sides never meet.
    let mut s = Schedule::new(Placement::interleaved(2, 2), 1);
    s.push(0, Pass::f(0, 0));
    s.push(1, Pass::f(1, 0));
    s.push(0, Pass::f(2, 0));
    s.push(1, Pass::f(3, 0));
    s.push(1, Pass::bw(3, 0));
    s.push(0, Pass::bw(2, 0));
    s.push(1, Pass::bw(1, 0));
    s.push(0, Pass::bw(0, 0));
    let c = costs(&s, 1.0, 1.0, 0.0, 1.0);
    assert!(simulate(&s, &c).is_ok());
    assert!(simulate(&s, &blocking(c)).is_ok());
}

mod blocking_properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::proptest_cases(12))]
        /// Every family, generated for blocking sends, either simulates under them or is
        /// refused with a deadlock naming the stuck devices (the loop always ends); and blocking
        /// never makes a schedule faster than asynchronous sends.
        #[test]
        fn every_family_simulates_or_is_refused_and_blocking_is_never_faster(
            devices in 2u32..5,
            extra in 0u32..5,
            f in 0.5f64..3.0,
            b in 0.5f64..3.0,
            w in 0.5f64..3.0,
            comm in 0.0f64..1.0,
        ) {
            let microbatches = 2 * devices + extra;
            for family in crate::FAMILIES {
                let mut params = crate::ScheduleParams::new(devices, microbatches);
                params.costs = Costs { comm, ..Costs::fbw(f, b, w) };
                params.costs.p2p = crate::params::P2p::Blocking;
                let Ok(schedule) = family.generate(&params) else { continue };
                let quick = StageCosts::for_schedule(&Costs { p2p: crate::params::P2p::Async, ..params.costs.clone() }, &schedule);
                let Ok(fast) = simulate(&schedule, &quick) else { continue };
                match simulate(&schedule, &StageCosts::for_schedule(&params.costs, &schedule)) {
                    Ok(held) => prop_assert!(
                        held.end() >= fast.end() - 1e-9 * fast.end().max(1.0),
                        "{}: blocking {} < async {}", family.name, held.end(), fast.end()
                    ),
                    Err(SimError::Deadlock(stuck)) => prop_assert!(!stuck.is_empty(), "{}: no stuck device named", family.name),
                    Err(e) => prop_assert!(false, "{}: {e}", family.name),
                }
            }
        }
    }
}
