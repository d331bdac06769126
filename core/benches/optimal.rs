//! The exact search at P = 4, M = 8 (96 passes): `cargo bench -p bubblescope --bench optimal`.
//!
//! Two instances: one where the heuristics leave room (communication 1 at 1F1B's memory:
//! zb-1p and ZB-H1 cost 41, the bound is 33, the search improves to 39 within its budget), and
//! one where the answer meets the bound at once (limit 2P·mem-f, F = B = W: ZB-H2's 24).

use bubblescope::optimal::{optimize_run, Budget};
use bubblescope::{family, run, Costs, ScheduleParams};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn optimal(c: &mut Criterion) {
    let mut group = c.benchmark_group("optimal");
    group.sample_size(10);
    let cases = [
        (
            "p4 m8 comm1 limit4",
            ScheduleParams::new(4, 8).with_costs(Costs { comm: 1.0, ..Costs::default() }).with_mem_limit(4.0),
        ),
        ("p4 m8 limit8", ScheduleParams::new(4, 8).with_mem_limit(8.0)),
    ];
    for (name, params) in cases {
        let f = family("zb-auto").unwrap();
        let a = run("zb-auto", &params).unwrap();
        let limit = params.mem_limit.unwrap();
        let o = optimize_run(Some(f), &params, &a.schedule, limit, Budget::default()).unwrap();
        eprintln!(
            "{name}: zb-auto {} bound {} optimal {} proven {} nodes {}",
            a.stats.cost, o.lower_bound, o.cost, o.proven, o.nodes
        );
        group.bench_function(name, |b| {
            b.iter(|| optimize_run(Some(f), black_box(&params), &a.schedule, limit, Budget::default()).map(|o| o.cost))
        });
    }
    group.finish();
}

criterion_group!(benches, optimal);
criterion_main!(benches);
