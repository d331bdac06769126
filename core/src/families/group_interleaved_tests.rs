//! Tests of grouped interleaved 1F1B against the authors' PipeOffload scheduler: the golden
//! files in `core/tests/golden/pipeoffload/` (`tools/pipeoffload_golden.py` writes them from
//! their code), and sizes it validates and simulates over.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::Value;

use super::super::test_support::assert_valid_and_simulates;
use super::*;
use crate::params::Costs;
use crate::registry::generate;
use crate::schedule::CopyKind;
use crate::sim::{simulate, Timeline};
use crate::trade::{Recompute, Trade};

const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/pipeoffload");

/// One pass as the authors' scheduler lists it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub kind: String,
    pub layer: u32,
    pub microbatch: u32,
    pub start: f64,
    pub end: f64,
    /// Compute nodes before it (offload lists only).
    pub position: usize,
}

/// One golden file.
#[derive(Clone, Debug)]
pub(crate) struct Golden {
    pub name: String,
    pub devices: u32,
    pub microbatches: u32,
    pub chunks: u32,
    pub group: u32,
    pub recompute_chunks: u32,
    pub offload_chunks: u32,
    /// F, B, W, comm per chunk; the parallel and solo copy times when offloading.
    pub costs: [f64; 4],
    pub copy: Option<(f64, f64)>,
    /// Whether the authors' times are the slot grid (group 1) rather than `add_time`'s.
    pub slot_grid: bool,
    pub compute: Vec<Vec<Node>>,
    pub offload: Vec<Vec<Node>>,
}

fn number(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn nodes(list: &Value) -> Vec<Node> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|n| Node {
                    kind: n["kind"].as_str().unwrap_or_default().to_string(),
                    layer: n["layer"].as_u64().unwrap_or(u64::MAX) as u32,
                    microbatch: number(n, "microbatch") as u32,
                    start: number(n, "start"),
                    end: number(n, "end"),
                    position: n["position"].as_u64().unwrap_or(0) as usize,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every golden file, by name.
pub(crate) fn goldens() -> Vec<Golden> {
    let mut paths: Vec<_> = std::fs::read_dir(GOLDEN_DIR)
        .unwrap_or_else(|e| panic!("{GOLDEN_DIR}: {e}"))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let (config, costs) = (&v["config"], &v["costs"]);
            let count = |key: &str| number(config, key) as u32;
            let ranks = v["ranks"].as_array().expect("ranks");
            Golden {
                name: path.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
                devices: count("devices"),
                microbatches: count("microbatches"),
                chunks: count("chunks"),
                group: count("group"),
                recompute_chunks: count("recompute_chunks"),
                offload_chunks: count("offload_chunks"),
                costs: [number(costs, "f"), number(costs, "b"), number(costs, "w"), number(costs, "comm")],
                copy: costs["parallel_offload_time"]
                    .as_f64()
                    .map(|p| (p, costs["solo_offload_time"].as_f64().unwrap_or(p))),
                slot_grid: v["times"] == "slot grid",
                compute: ranks.iter().map(|r| nodes(&r["compute"])).collect(),
                offload: ranks.iter().map(|r| nodes(&r["offload"])).collect(),
            }
        })
        .collect()
}

impl Golden {
    /// Our parameters for the same run: CLI costs are a device's share, `V` chunks of the
    /// authors' per-chunk costs; recompute chunks are a full-recompute trade limited to them.
    pub(crate) fn params(&self) -> ScheduleParams {
        let v = f64::from(self.chunks);
        let [f, b, w, comm] = self.costs;
        let mut costs = Costs { comm, ..Costs::fbw(f * v, b * v, w * v) };
        if self.recompute_chunks > 0 {
            let trade =
                Trade { recompute: vec![Recompute::Full], chunks: Some(self.recompute_chunks), ..Trade::default() };
            costs.trade = Some(Arc::new(trade));
        }
        ScheduleParams {
            chunks: Some(self.chunks),
            group: Some(self.group),
            ..ScheduleParams::new(self.devices, self.microbatches).with_costs(costs)
        }
    }
}

/// A pass as the golden files name it: kind, layer (global stage), microbatch.
fn key(pass: Pass) -> (String, u32, u32) {
    (pass.kind.name().to_string(), pass.stage, pass.microbatch)
}

fn order_keys(schedule: &Schedule, device: usize) -> Vec<(String, u32, u32)> {
    schedule.orders[device].iter().flat_map(|op| op.passes()).map(key).collect()
}

fn timeline(schedule: &Schedule, params: &ScheduleParams) -> Timeline {
    simulate(schedule, &StageCosts::for_schedule(&params.costs, schedule)).expect("simulates")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn there_are_golden_files_for_the_scripts_configurations() {
    let names: Vec<String> = goldens().into_iter().map(|g| g.name).collect();
    assert!(names.len() >= 10, "{names:?}");
    assert!(names.iter().any(|n| n.contains("offload")) && names.iter().any(|n| n.contains("recompute")));
}

#[test]
fn orders_equal_the_authors_pass_for_pass() {
    for g in goldens() {
        let params = g.params();
        let schedule = generate("group-interleaved", &params).unwrap_or_else(|e| panic!("{}: {e}", g.name));
        for (d, golden) in g.compute.iter().enumerate() {
            let expected: Vec<_> = golden.iter().map(|n| (n.kind.clone(), n.layer, n.microbatch)).collect();
            assert_eq!(order_keys(&schedule, d), expected, "{} device {d}", g.name);
        }
    }
}

#[test]
fn simulated_times_equal_add_times_when_the_group_is_above_one() {
    // With G > 1 the authors time the order as soon as possible (`passes.add_time`): same
    // costs, same dependencies, same communication, so the same times.
    let mut compared = 0;
    for g in goldens().into_iter().filter(|g| !g.slot_grid) {
        let params = g.params();
        let schedule = generate("group-interleaved", &params).expect("generates");
        let t = timeline(&schedule, &params);
        for (d, golden) in g.compute.iter().enumerate() {
            for (i, (ours, theirs)) in t.devices[d].ops.iter().zip(golden).enumerate() {
                assert!(
                    close(ours.start, theirs.start) && close(ours.end, theirs.end),
                    "{} device {d} op {i}: ours {}..{} theirs {}..{}",
                    g.name,
                    ours.start,
                    ours.end,
                    theirs.start,
                    theirs.end
                );
            }
        }
        compared += 1;
    }
    assert!(compared >= 6, "{compared}");
}

#[test]
fn the_slot_grid_of_group_one_is_not_a_simulated_time() {
    // With G = 1 the authors stamp slot j with j·max(F) (`transform_schedule`) and keep it:
    // an idle slot in their grid is idle time, where the simulator starts a pass as soon as
    // it can. The simulated step is never longer than their grid, and every pass starts no
    // later than its slot.
    for g in goldens().into_iter().filter(|g| g.slot_grid) {
        let params = g.params();
        let schedule = generate("group-interleaved", &params).expect("generates");
        let t = timeline(&schedule, &params);
        for (d, golden) in g.compute.iter().enumerate() {
            for (i, (ours, theirs)) in t.devices[d].ops.iter().zip(golden).enumerate() {
                assert!(ours.start <= theirs.start + 1e-9, "{} device {d} op {i}", g.name);
            }
        }
    }
}

#[test]
fn rejects_bad_groups_with_hints() {
    let p = |group| ScheduleParams { group: Some(group), ..ScheduleParams::new(4, 8) };
    let e = generate("group-interleaved", &p(5)).unwrap_err();
    assert_eq!(e.field, Field::Group);
    assert_eq!(
        e.to_string(),
        "group must lie between 1 and devices (4), found 5\n  \
         hint: PipeOffload groups ⌈P/2⌉ to P microbatches: --group 2 to --group 4"
    );
    let e = generate("group-interleaved", &p(0)).unwrap_err();
    assert!(e.to_string().starts_with("group must be at least 1, found 0\n  hint: "), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every accepted size validates and simulates, with and without recompute chunks.
    #[test]
    fn every_size_validates_and_simulates(
        devices in 1u32..9,
        microbatches in 1u32..25,
        chunks in 1u32..5,
        group_part in 0.0f64..1.0,
        (f, b, w, comm) in (0.5f64..3.0, 0.5f64..3.0, 0.0f64..3.0, 0.0f64..0.5),
        recompute in 0u32..3,
        offload in prop::option::of(0.05f64..1.0),
    ) {
        let group = 1 + (group_part * f64::from(devices)) as u32;
        let mut costs = Costs { comm, ..Costs::fbw(f, b, w) };
        if recompute > 0 {
            costs.trade = Some(Arc::new(Trade {
                recompute: vec![Recompute::Full],
                chunks: Some(recompute),
                ..Trade::default()
            }));
        }
        let params = ScheduleParams {
            chunks: Some(chunks),
            group: Some(group.min(devices)),
            ..ScheduleParams::new(devices, microbatches).with_costs(costs.clone())
        };
        let schedule = generate("group-interleaved", &params).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(schedule.pass_count() as u64, FAMILY.pass_count(&params) + recomputes(&params));
        assert_valid_and_simulates(&schedule, &costs, &format!("{params:?}"));
        // PipeOffload's placement on an even pipeline: valid copies that never raise a peak.
        if let (Some(copy), true) = (offload, devices % 2 == 0) {
            let trade = Trade {
                offload: crate::trade::Offload::PipeOffload,
                chunks: Some(1),
                copy_time: Some(copy),
                ..Trade::default()
            };
            let traded = Costs { trade: Some(Arc::new(trade)), ..Costs { comm, ..Costs::fbw(f, b, w) } };
            let p = ScheduleParams { costs: traded.clone(), ..params.clone() };
            match generate("group-interleaved", &p) {
                Ok(s) => {
                    assert_valid_and_simulates(&s, &traded, &format!("{p:?}"));
                    let plain = ScheduleParams { costs: Costs { comm, ..Costs::fbw(f, b, w) }, ..params.clone() };
                    let plain = generate("group-interleaved", &plain).expect("plain generates");
                    let (a, b) = (timeline(&plain, &params), timeline(&s, &p));
                    for (x, y) in a.devices.iter().zip(&b.devices) {
                        prop_assert!(y.peak_memory <= x.peak_memory + 1e-9);
                    }
                }
                Err(e) => prop_assert!(e.to_string().contains("no reload slot"), "{}", e),
            }
        }
    }
}

/// R passes the trade adds: one per microbatch on each device's first `chunks` chunks.
fn recomputes(params: &ScheduleParams) -> u64 {
    let chunks = params.costs.trade.as_ref().and_then(|t| t.chunks).unwrap_or(0).min(params.chunks.unwrap_or(2));
    u64::from(params.devices) * u64::from(params.microbatches) * u64::from(chunks)
}

/// The PipeOffload parameters of an offload golden: the authors' parallel copy time as the
/// stage's copy time (mem-f `V`, so one stage's activation is 1), their offload chunks as the
/// trade's chunk limit.
fn offload_params(g: &Golden) -> ScheduleParams {
    let (parallel, _) = g.copy.expect("an offload golden");
    let mut p = g.params();
    p.costs.mem_f = f64::from(g.chunks);
    p.costs.trade = Some(Arc::new(Trade {
        offload: crate::trade::Offload::PipeOffload,
        chunks: Some(g.offload_chunks),
        copy_time: Some(parallel),
        ..Trade::default()
    }));
    p
}

/// The copies of a golden rank: (kind, layer, microbatch, position), in the authors' order.
fn golden_copies(nodes: &[Node]) -> Vec<(CopyKind, u32, u32, usize)> {
    nodes
        .iter()
        .filter_map(|n| {
            let kind = match n.kind.as_str() {
                "OFFLOAD_SEND_START" => CopyKind::Offload,
                "OFFLOAD_RECV_START" => CopyKind::Reload,
                _ => return None,
            };
            Some((kind, n.layer, n.microbatch, n.position))
        })
        .collect()
}

/// The authors' planned times of a golden rank's copies, in their order: an offload from its
/// OFFLOAD_SEND_START to its OFFLOAD_SEND_END, a reload from its OFFLOAD_RECV_START for one copy
/// time (their `OffloadPass` ends there; the node list has no node for it).
fn golden_copy_times(nodes: &[Node], parallel: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for n in nodes {
        match n.kind.as_str() {
            "OFFLOAD_SEND_START" => {
                let end = nodes
                    .iter()
                    .find(|m| m.kind == "OFFLOAD_SEND_END" && (m.layer, m.microbatch) == (n.layer, n.microbatch))
                    .map_or(f64::NAN, |m| m.start);
                out.push((n.start, end));
            }
            "OFFLOAD_RECV_START" => out.push((n.start, n.start + parallel)),
            _ => {}
        }
    }
    out
}

/// The offload goldens, generated with the PipeOffload placement, simulated.
fn offload_runs() -> Vec<(Golden, ScheduleParams, Schedule, Timeline)> {
    let runs: Vec<_> = goldens()
        .into_iter()
        .filter(|g| g.offload_chunks > 0)
        .map(|g| {
            let params = offload_params(&g);
            let schedule = generate("group-interleaved", &params).unwrap_or_else(|e| panic!("{}: {e}", g.name));
            let t = timeline(&schedule, &params);
            (g, params, schedule, t)
        })
        .collect();
    assert!(runs.len() >= 4, "{}", runs.len());
    runs
}

#[test]
fn pipeoffload_offloads_the_same_activations_at_the_same_positions() {
    // The same (layer, microbatch) offloaded on every device; each offload issued where the
    // authors put OFFLOAD_SEND_START and each reload where they put OFFLOAD_RECV_START (the
    // number of compute nodes before it), in their order.
    for (g, _, schedule, _) in offload_runs() {
        for d in 0..g.devices {
            let ours: Vec<_> = schedule
                .copies_of(d)
                .iter()
                .map(|c| (c.kind, c.pass.stage, c.pass.microbatch, c.at as usize))
                .collect();
            let theirs = golden_copies(&g.offload[d as usize]);
            assert!(!theirs.is_empty(), "{} device {d} offloads nothing", g.name);
            assert_eq!(ours, theirs, "{} device {d}", g.name);
        }
    }
}

#[test]
fn pipeoffload_plans_the_authors_times_for_compute_and_copies() {
    // The planning times: their warm-up forwards postponed (`postpone_forward_in_warmup`)
    // and their slot grid, solo warm-up included, equal ours to 1e-9.
    for (g, params, schedule, t) in offload_runs() {
        let costs = StageCosts::for_schedule(&params.costs, &schedule);
        let planned = crate::passes::planned_times(&schedule, &t, &costs);
        let trade = params.costs.trade.as_deref().expect("a trade");
        let plan = crate::passes::pipeoffload_plan(&schedule, &t, &costs, trade).expect("plans");
        let (parallel, _) = g.copy.expect("copy times");
        for d in 0..g.devices as usize {
            let compute = g.offload[d].iter().filter(|n| ["F", "B", "W", "R"].contains(&n.kind.as_str()));
            for (i, (ours, theirs)) in planned[d].iter().zip(compute).enumerate() {
                assert!(close(ours.0, theirs.start) && close(ours.1, theirs.end), "{} device {d} op {i}", g.name);
            }
            let theirs = golden_copy_times(&g.offload[d], parallel);
            assert_eq!(plan[d].len(), theirs.len(), "{} device {d}", g.name);
            for (i, (ours, theirs)) in plan[d].iter().zip(&theirs).enumerate() {
                assert!(
                    close(ours.start, theirs.0) && close(ours.end, theirs.1),
                    "{} device {d} copy {i}: ours {}..{} theirs {}..{}",
                    g.name,
                    ours.start,
                    ours.end,
                    theirs.0,
                    theirs.1
                );
            }
        }
    }
}

#[test]
fn pipeoffload_copies_never_stall_compute_in_the_simulator() {
    // Simulated with the copies at the authors' positions: every compute op runs when
    // `add_time` says (the copies hide behind compute, as the authors plan), and every reload
    // ends before its backward starts.
    for (g, _, schedule, t) in offload_runs() {
        for d in 0..g.devices as usize {
            for (i, (ours, theirs)) in t.devices[d].ops.iter().zip(&g.compute[d]).enumerate() {
                assert!(close(ours.start, theirs.start) && close(ours.end, theirs.end), "{} device {d} op {i}", g.name);
            }
            let order = &schedule.orders[d];
            for (copy, timed) in schedule.copies_of(d as u32).iter().zip(&t.devices[d].copies) {
                if copy.kind != CopyKind::Reload {
                    continue;
                }
                let back = order
                    .iter()
                    .position(|op| {
                        op.passes().any(|p| {
                            p.kind == PassKind::B && p.stage == copy.pass.stage && p.microbatch == copy.pass.microbatch
                        })
                    })
                    .expect("the backward");
                assert!(timed.end <= t.devices[d].ops[back].start + 1e-9, "{} device {d} {copy}", g.name);
            }
        }
    }
}

#[test]
fn simulated_copy_times_equal_the_authors_slots() {
    // The simulator runs each copy in its slot: no earlier than the slot's start (the pair's
    // barrier, device 1's grid one copy time after device 0's) and for the slot's time (the
    // solo time in the warm-up, else the parallel time). Every offload golden's simulated copy
    // times equal the authors' planned ones to 1e-9, and compute still equals `add_time`.
    let mut worst = 0.0f64;
    for (g, _, _, t) in offload_runs() {
        let (parallel, _) = g.copy.expect("copy times");
        for d in 0..g.devices as usize {
            for (i, (ours, theirs)) in t.devices[d].ops.iter().zip(&g.compute[d]).enumerate() {
                assert!(close(ours.start, theirs.start) && close(ours.end, theirs.end), "{} device {d} op {i}", g.name);
            }
            let theirs = golden_copy_times(&g.offload[d], parallel);
            assert_eq!(t.devices[d].copies.len(), theirs.len(), "{} device {d}", g.name);
            for (i, (timed, &theirs)) in t.devices[d].copies.iter().zip(&theirs).enumerate() {
                let ours = (timed.start, timed.end);
                worst = worst.max((ours.0 - theirs.0).abs()).max((ours.1 - theirs.1).abs());
                let same = close(ours.0, theirs.0) && close(ours.1, theirs.1);
                assert!(same, "{} device {d} copy {i}: ours {ours:?} theirs {theirs:?}", g.name);
            }
        }
    }
    eprintln!("simulated copy times against the authors' slots: max abs difference {worst:e}");
}
