//! A sweep of every family at 10 microbatch counts, P = 8, through the core's single-threaded
//! path (expand, run each as `simulate` does with its bubble attribution, mark the Pareto
//! front), plain (target: under 1 s) and with full recompute and automatic offload on every
//! device (each run places its copies on a simulated timeline first).

use bubblescope::plan::{parse_schedules, sweep, SweepSpec};
use std::sync::Arc;

use bubblescope::{Costs, Offload, Recompute, Trade};
use criterion::{criterion_group, criterion_main, Criterion};

/// Every family × 10 microbatch counts (8..80:8) at P = 8 (230 runs with 23 families),
/// uneven F, B, W and communication so attribution re-simulates.
fn spec() -> SweepSpec {
    SweepSpec {
        families: parse_schedules("all").unwrap(),
        devices: 8,
        microbatches: (1..=10).map(|k| 8 * k).collect(),
        chunks: vec![],
        group: None,
        mem_limits: vec![],
        costs: Costs { comm: 0.1, ..Costs::fbw(1.0, 1.2, 0.8) },
        bytes: false,
        trades: vec![],
        step: None,
        a2a: false,
    }
}

fn bench(c: &mut Criterion) {
    let s = spec();
    assert_eq!(s.expand().unwrap().len(), 10 * bubblescope::FAMILIES.len());
    let done = sweep(&s).unwrap();
    eprintln!("{} runs, {} invalid", done.runs.len(), done.invalid.len());
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("all-families-10-counts-P8", |b| b.iter(|| sweep(&s).unwrap()));
    let trade =
        Trade { recompute: vec![Recompute::Full], offload: Offload::Auto, copy_time: Some(0.05), ..Trade::default() };
    let traded = SweepSpec { costs: Costs { trade: Some(Arc::new(trade)), ..s.costs.clone() }, ..s.clone() };
    let done = sweep(&traded).unwrap();
    eprintln!("recompute + offload: {} runs, {} invalid", done.runs.len(), done.invalid.len());
    group.bench_function("all-families-10-counts-P8-recompute-offload", |b| b.iter(|| sweep(&traded).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
