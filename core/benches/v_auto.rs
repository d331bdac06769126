//! Generation time of the adaptive V scheduler, which the app re-runs on every slider move.
//!
//! `cargo bench -p bubblescope --bench v_auto`

use bubblescope::{generate, Costs, ScheduleParams};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn params(devices: u32, microbatches: u32, costs: &Costs, limit: Option<f64>) -> ScheduleParams {
    let mut params = ScheduleParams::new(devices, microbatches).with_costs(costs.clone());
    params.mem_limit = limit;
    params
}

fn v_auto(c: &mut Criterion) {
    let mut group = c.benchmark_group("v-auto");
    group.sample_size(10);
    let balanced = Costs::fbw(2.0, 2.0, 2.0);
    let unbalanced = Costs::fbw(10.0, 12.0, 8.0);
    let cases = [
        ("P8-M32-default", params(8, 32, &balanced, None)),
        // The size: P = 16, M = 32 (the authors' Python takes 29 s per limit).
        ("P16-M32-default", params(16, 32, &balanced, None)),
        ("P16-M32-unbalanced", params(16, 32, &unbalanced, None)),
        ("P8-M32-limit5-unbalanced", params(8, 32, &unbalanced, Some(5.0))),
        ("P16-M64-default", params(16, 64, &balanced, None)),
        ("P16-M64-limit12-unbalanced", params(16, 64, &unbalanced, Some(12.0))),
        ("P16-M64-limit6-unbalanced", params(16, 64, &unbalanced, Some(6.0))),
        ("P16-M24-default", params(16, 24, &balanced, None)),
        // Few microbatches (M < 2P), where trimming decides which blocks fit.
        ("P16-M17-unbalanced", params(16, 17, &unbalanced, None)),
        ("P32-M33-unbalanced", params(32, 33, &unbalanced, None)),
        ("P32-M63-unbalanced", params(32, 63, &unbalanced, None)),
        ("P32-M256-unbalanced", params(32, 256, &unbalanced, None)),
        // Many microbatches at unequal costs: blocks are screened at 2P microbatches.
        ("P32-M512-unbalanced", params(32, 512, &unbalanced, None)),
    ];
    for (name, params) in &cases {
        group.bench_with_input(BenchmarkId::from_parameter(name), params, |b, params| {
            b.iter(|| generate("v-auto", params).expect("v-auto generates"));
        });
    }
    group.finish();
}

/// A memory-vs-bubble curve, as the app's limit slider sweeps it: P = 16, M = 32, 17 limits
/// evenly spaced from V-Min's memory ((P + 4) / 3 · mem-f) to V-ZB's (P · mem-f), activations
/// counted until W (`mem-w = mem-f`) as the paper does.
fn memory_bubble_curve(c: &mut Criterion) {
    let mut group = c.benchmark_group("v-auto curve");
    group.sample_size(10);
    let (devices, microbatches) = (16u32, 32u32);
    let (lo, hi) = (f64::from((devices + 4) / 3), f64::from(devices));
    for (name, fbw) in [("P16-M32-17-limits", (2.0, 2.0, 2.0)), ("P16-M32-17-limits-unbalanced", (10.0, 12.0, 8.0))] {
        let costs = Costs { mem_w: Some(1.0), ..Costs::fbw(fbw.0, fbw.1, fbw.2) };
        let points: Vec<ScheduleParams> = (0..17)
            .map(|i| params(devices, microbatches, &costs, Some(lo + (hi - lo) * f64::from(i) / 16.0)))
            .collect();
        group.bench_function(name, |b| {
            b.iter(|| {
                points.iter().map(|p| generate("v-auto", p).expect("v-auto generates").op_count()).sum::<usize>()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, v_auto, memory_bubble_curve);
criterion_main!(benches);
