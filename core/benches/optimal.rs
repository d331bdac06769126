//! The exact search at P = 4, M = 8: `cargo bench -p bubblescope --bench optimal`.
//!
//! Each instance is solved as `simulate --optimal` solves it (the family's schedule, its
//! problem's memory limit, the default budget) and prints its heuristic cost, the lower
//! bound, the optimum and whether it is proven:
//!
//! * zb-auto at 1F1B's memory with communication 1 (the heuristics' 41 against a closed-form
//!   bound of 33; the device relaxation proves 39);
//! * zb-auto at twice that memory, F = B = W (meets the bound 24 at once);
//! * ZB-H1, 1F1B and ZB-V with unequal passes (F, B, W = 2, 3, 1.5) and communication 0.5,
//!   at their own memory.

use bubblescope::bounds::problem_limit;
use bubblescope::optimal::Budget;
use bubblescope::registry::optimize_run;
use bubblescope::{family, run, Costs, ScheduleParams};
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn optimal(c: &mut Criterion) {
    let mut group = c.benchmark_group("optimal");
    group.sample_size(10);
    let comm1 = Costs { comm: 1.0, ..Costs::default() };
    let paper = Costs { comm: 0.5, ..Costs::fbw(2.0, 3.0, 1.5) };
    let cases = [
        ("zb-auto p4 m8 comm1 limit4", "zb-auto", ScheduleParams::new(4, 8).with_costs(comm1).with_mem_limit(4.0)),
        ("zb-auto p4 m8 limit8", "zb-auto", ScheduleParams::new(4, 8).with_mem_limit(8.0)),
        ("zb-h1 p4 m8 2,3,1.5 comm0.5", "zb-h1", ScheduleParams::new(4, 8).with_costs(paper.clone())),
        ("1f1b p4 m8 2,3,1.5 comm0.5", "1f1b", ScheduleParams::new(4, 8).with_costs(paper.clone())),
        ("zb-v p4 m8 2,3,1.5 comm0.5", "zb-v", ScheduleParams::new(4, 8).with_costs(paper)),
    ];
    for (name, fam, params) in cases {
        let f = family(fam).unwrap();
        let params = f.own_params(&params);
        let a = run(fam, &params).unwrap();
        let limit = problem_limit(Some(f), &params, &a.stats);
        let o = optimize_run(Some(f), &params, &a.schedule, limit, Budget::default()).unwrap();
        eprintln!(
            "{name}: {fam} {} lower bound {} proven bound {} optimal {} proven {} nodes {}",
            a.stats.cost, o.lower_bound, o.bound, o.cost, o.proven, o.nodes
        );
        group.bench_function(name, |b| {
            b.iter(|| optimize_run(Some(f), black_box(&params), &a.schedule, limit, Budget::default()).map(|o| o.cost));
        });
    }
    group.finish();
}

criterion_group!(benches, optimal);
criterion_main!(benches);
