//! Benchmarks of the schedule generators: generate + validate + simulate + stats
//! (`bubblescope::run`), the path the CLI and the app take.
//!
//! Run with `cargo bench -p bubblescope --bench families`.

use bubblescope::{generate, run, simulate, Costs, ScheduleParams, StageCosts};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

/// The automatic Zero Bubble heuristic: all eight switch combinations, then the best run's
/// orders simulated. The authors' Python takes about 0.66 s for P = 32, M = 256.
fn zero_bubble_auto(c: &mut Criterion) {
    let big = ScheduleParams::new(32, 256);
    c.bench_function("zb-auto p32 m256", |b| b.iter(|| run("zb-auto", black_box(&big)).map(|a| a.stats.cost)));
    // Uneven costs and a binding limit: all eight runs differ, the heuristic's worst case.
    let uneven = ScheduleParams::new(32, 256).with_costs(Costs { comm: 1.0, ..Costs::fbw(5.0, 6.0, 4.0) });
    c.bench_function("zb-2p p32 m256 uneven", |b| b.iter(|| run("zb-2p", black_box(&uneven)).map(|a| a.stats.cost)));
    // The measure: generate (all eight switch settings) and simulate, no validation.
    for (name, params) in
        [("zb-auto p32 m256 generate+simulate", &big), ("zb-2p p32 m256 uneven generate+simulate", &uneven)]
    {
        let family = if name.starts_with("zb-auto") { "zb-auto" } else { "zb-2p" };
        c.bench_function(name, |b| {
            b.iter(|| {
                let s = generate(family, black_box(params)).unwrap();
                let t = simulate(&s, &StageCosts::for_schedule(&params.costs, &s)).unwrap();
                t.end()
            });
        });
    }
    let paper = ScheduleParams::new(8, 24);
    c.bench_function("zb-1p p8 m24", |b| b.iter(|| run("zb-1p", black_box(&paper)).map(|a| a.stats.cost)));
    c.bench_function("zb-2p p8 m24", |b| b.iter(|| run("zb-2p", black_box(&paper)).map(|a| a.stats.cost)));
}

/// The hand-crafted Zero Bubble schedules at the same size, for scale.
fn zero_bubble_handcrafted(c: &mut Criterion) {
    let big = ScheduleParams::new(32, 256);
    c.bench_function("zb-h1 p32 m256", |b| b.iter(|| run("zb-h1", black_box(&big)).map(|a| a.stats.cost)));
    c.bench_function("zb-h2 p32 m256", |b| b.iter(|| run("zb-h2", black_box(&big)).map(|a| a.stats.cost)));
}

/// ZB-V's cost-aware heuristic (the authors' Python: 1.1 s for this input).
fn zero_bubble_v(c: &mut Criterion) {
    let big = ScheduleParams::new(32, 256);
    c.bench_function("zb-v p32 m256 generate", |b| b.iter(|| generate("zb-v", black_box(&big)).map(|s| s.op_count())));
    let uneven = ScheduleParams::new(32, 256).with_costs(Costs::fbw(10.0, 12.0, 8.0));
    c.bench_function("zb-v p32 m256 uneven generate", |b| {
        b.iter(|| generate("zb-v", black_box(&uneven)).map(|s| s.op_count()));
    });
    // The paper's profiled costs (issue 14's target: at most 10 ms).
    let paper = ScheduleParams::new(32, 256).with_costs(Costs { comm: 887.0, ..Costs::fbw(18894.0, 19288.0, 14386.0) });
    c.bench_function("zb-v p32 m256 paper-costs generate", |b| {
        b.iter(|| generate("zb-v", black_box(&paper)).map(|s| s.op_count()));
    });
    // What `simulate --json` computes in process: the run, the attribution's re-simulation and
    // the lower bound (the whole process against the authors' Python: tools/bench-simulate.sh).
    let family = bubblescope::family("zb-v");
    c.bench_function("zb-v p32 m256 paper-costs simulate --json", |b| {
        b.iter(|| {
            let a = run("zb-v", black_box(&paper)).unwrap();
            let parts = bubblescope::attribution::attribute(&a, &paper.costs).unwrap();
            let bound = bubblescope::findings::bound(family, &paper, &a);
            (parts.overall.schedule, bound.lower.value)
        });
    });
}

criterion_group!(benches, zero_bubble_auto, zero_bubble_handcrafted, zero_bubble_v);
criterion_main!(benches);
