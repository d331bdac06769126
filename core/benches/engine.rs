//! The engine on a big schedule: simulating about 400,000 passes (64 devices × 1024
//! microbatches, split backward, 2 chunks per device: the handcrafted ZB-V), validating them,
//! and laying out the chart with level of detail; and the lower bound of 1,024 chunks.
//!
//! `cargo bench -p bubblescope --bench engine`

use bubblescope::render::{gantt, GanttOptions, GanttPanel, Theme};
use bubblescope::{generate, simulate, stats, validate, ScheduleParams, StageCosts};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn engine(c: &mut Criterion) {
    let params = ScheduleParams::new(64, 1024);
    let schedule = generate("zb-v-handcrafted", &params).expect("generates");
    assert!(schedule.pass_count() >= 390_000, "{} passes", schedule.pass_count());
    let costs = StageCosts::for_schedule(&params.costs, &schedule);
    let mut group = c.benchmark_group("400k passes");
    group.sample_size(20);
    group.bench_function("simulate", |b| {
        b.iter(|| simulate(black_box(&schedule), black_box(&costs)).map(|t| t.devices.len()));
    });
    group.bench_function("validate", |b| b.iter(|| validate(black_box(&schedule)).len()));
    let timeline = simulate(&schedule, &costs).expect("simulates");
    group.bench_function("stats", |b| b.iter(|| stats(black_box(&schedule), black_box(&timeline), &params.costs).cost));
    group.bench_function("gantt layout 1200px", |b| {
        b.iter(|| {
            let panel = GanttPanel {
                title: None,
                note: None,
                schedule: &schedule,
                timeline: &timeline,
                causes: None,
                step: None,
            };
            let opts = GanttOptions { width: 1200.0, row_height: 9.0, ..GanttOptions::default() };
            gantt(&[panel], &opts, &Theme::light()).0.items.len()
        });
    });
    group.bench_function("generate zb-v-handcrafted", |b| {
        b.iter(|| generate("zb-v-handcrafted", black_box(&params)).map(|s| s.op_count()));
    });
    group.finish();
    // The closed-form lower bound `simulate` prints, on 65,536 passes of 1,024 chunks (before
    // it was linear this took minutes).
    let mut many = ScheduleParams::new(4, 8);
    many.chunks = Some(1024);
    let chunked = generate("interleaved-1f1b", &many).expect("generates");
    let mut group = c.benchmark_group("1024 chunks");
    group.sample_size(10);
    group.bench_function("lower bound", |b| {
        b.iter(|| bubblescope::bounds::lower_bound(black_box(&chunked), &many.costs, None).value);
    });
    group.finish();
    page_move(c);
}

/// What one slider move of the playground's `zb-auto` P = 64, M = 512 computes: the chosen
/// schedule (generate, validate, simulate, stats) and the 1F1B baseline its speedup needs.
fn page_move(c: &mut Criterion) {
    let params = ScheduleParams::new(64, 512);
    let mut group = c.benchmark_group("zb-auto 64x512 move");
    group.sample_size(10);
    group.bench_function("generate", |b| b.iter(|| generate("zb-auto", black_box(&params)).map(|s| s.op_count())));
    let schedule = generate("zb-auto", &params).expect("generates");
    group.bench_function("validate", |b| b.iter(|| validate(black_box(&schedule)).len()));
    let costs = StageCosts::for_schedule(&params.costs, &schedule);
    group.bench_function("simulate", |b| b.iter(|| simulate(black_box(&schedule), &costs).map(|t| t.devices.len())));
    let timeline = simulate(&schedule, &costs).expect("simulates");
    group.bench_function("stats", |b| b.iter(|| stats(black_box(&schedule), &timeline, &params.costs).cost));
    group.bench_function("run zb-auto", |b| {
        b.iter(|| bubblescope::run("zb-auto", black_box(&params)).map(|a| a.stats.cost));
    });
    group.bench_function("run 1f1b baseline", |b| {
        b.iter(|| bubblescope::run("1f1b", black_box(&params)).map(|a| a.stats.cost));
    });
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
