use super::golden::{assert_goldens, ZB_H1_GOLDEN};
use super::*;
use crate::{run, Costs, Field};

#[test]
fn matches_the_golden_orders() {
    assert_goldens("zb-h1", &ZB_H1_GOLDEN);
}

fn params(p: u32, m: u32, f: f64, b: f64, w: f64, comm: f64) -> ScheduleParams {
    ScheduleParams::new(p, m).with_costs(Costs { comm, ..Costs::fbw(f, b, w) })
}

#[test]
fn bubble_is_p_minus_1_times_f_plus_b_minus_w_wherever_predicted() {
    let mut predicted = 0;
    for p in 1..=6 {
        for m in (p - 1).max(1)..=3 * p + 1 {
            for (f, b, w) in (0..5).flat_map(|f| (0..5).flat_map(move |b| (0..5).map(move |w| (f, b, w)))) {
                if f + b + w == 0 {
                    continue;
                }
                for comm in [0.0, 1.0] {
                    let params = params(p, m, f.into(), b.into(), w.into(), comm);
                    let Some(bubble) = (FAMILY.predict)(&params).and_then(|pr| pr.bubble) else {
                        continue;
                    };
                    let stats = run("zb-h1", &params).unwrap().stats;
                    assert_eq!(stats.cost - stats.ideal, bubble, "p={p} m={m} f={f} b={b} w={w} comm={comm}");
                    assert_eq!(bubble, f64::from(p - 1) * f64::from(f + b - w));
                    predicted += 1;
                }
            }
        }
    }
    // The range is comm 0, W ≤ F, M ≥ P (and every single-device run).
    assert!(predicted > 3000, "{predicted}");
}

#[test]
fn bubble_formula_fails_just_outside_its_range() {
    // Each case breaks one condition; the simulated bubble is not (P−1)(F+B−W) there.
    for (p, m, f, b, w, comm) in [(4, 8, 1.0, 2.0, 2.0, 0.0), (4, 8, 1.0, 1.0, 1.0, 1.0), (4, 3, 1.0, 1.0, 1.0, 0.0)] {
        let params = params(p, m, f, b, w, comm);
        assert_eq!((FAMILY.predict)(&params).unwrap().bubble, None);
        let stats = run("zb-h1", &params).unwrap().stats;
        assert_ne!(stats.cost - stats.ideal, f64::from(p - 1) * (f + b - w), "p={p} m={m} f={f} b={b} w={w}");
    }
}

#[test]
fn peak_memory_is_p_minus_d_forwards_plus_d_pending_weights() {
    for (mem_f, mem_w) in [(1.0, 0.5), (2.0, 0.5), (3.0, 0.0), (1.0, 1.0)] {
        for p in 1..=7 {
            for m in (p - 1).max(1)..=2 * p + 2 {
                let params = ScheduleParams::new(p, m).with_costs(Costs {
                    mem_f,
                    mem_w: Some(mem_w),
                    ..Costs::fbw(2.0, 3.0, 1.0)
                });
                let analysis = run("zb-h1", &params).unwrap();
                let simulated: Vec<f64> = analysis.stats.per_device.iter().map(|d| d.peak_memory).collect();
                let predicted = (FAMILY.predict)(&params).unwrap().peak_memory.unwrap();
                assert_eq!(simulated, predicted, "p={p} m={m} mem_f={mem_f} mem_w={mem_w}");
                if m >= p {
                    // The paper's (p−i+1)M_B + (i−1)M_W for the 1-based worker i = d+1.
                    let paper: Vec<f64> = (0..p).map(|d| f64::from(p - d) * mem_f + f64::from(d) * mem_w).collect();
                    assert_eq!(simulated, paper, "p={p} m={m}");
                }
            }
        }
    }
}

#[test]
fn too_few_microbatches_name_the_minimum() {
    let err = crate::generate("zb-h1", &ScheduleParams::new(8, 6)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert_eq!(
        err.to_string(),
        "zb-h1 needs microbatches ≥ devices − 1 = 7 for 8 devices, found 6\n  \
         hint: use at least 7 microbatches, or fewer devices\n  \
         hint: zb-1p, zb-2p and zb-auto accept any number of microbatches"
    );
    assert_eq!((FAMILY.predict)(&ScheduleParams::new(8, 6)), None);
    assert!(crate::generate("zb-h1", &ScheduleParams::new(8, 7)).is_ok());
}

#[test]
fn unused_options_are_rejected() {
    let err = crate::generate("zb-h1", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
    assert!(err.to_string().starts_with("zb-h1 does not take --chunks"), "{err}");
}
