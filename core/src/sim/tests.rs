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
