use super::super::zb_h1::golden::{assert_goldens, ZB_H2_GOLDEN};
use super::*;
use crate::{run, Costs, Field};

#[test]
fn matches_the_golden_orders() {
    assert_goldens("zb-h2", &ZB_H2_GOLDEN);
}

fn params(p: u32, m: u32, f: f64, b: f64, w: f64, comm: f64) -> ScheduleParams {
    ScheduleParams::new(p, m).with_costs(Costs { comm, ..Costs::fbw(f, b, w) })
}

#[test]
fn bubble_is_p_minus_1_times_f_plus_b_plus_2comm_minus_2w_wherever_predicted() {
    let mut predicted = 0;
    for p in 1..=6 {
        for m in (2 * (p - 1)).max(1)..=3 * p + 1 {
            for (f, b, w) in (0..5).flat_map(|f| (0..5).flat_map(move |b| (0..5).map(move |w| (f, b, w)))) {
                if f + b + w == 0 {
                    continue;
                }
                for comm in 0..3 {
                    let params = params(p, m, f.into(), b.into(), w.into(), comm.into());
                    let Some(bubble) = (FAMILY.predict)(&params).and_then(|pr| pr.bubble) else {
                        continue;
                    };
                    let stats = run("zb-h2", &params).unwrap().stats;
                    assert_eq!(stats.cost - stats.ideal, bubble, "p={p} m={m} f={f} b={b} w={w} comm={comm}");
                    assert_eq!(bubble, f64::from(p - 1) * f64::from(f + b + 2 * comm - 2 * w));
                    predicted += 1;
                }
            }
        }
    }
    // The range is W ≤ F, 2W ≤ F+B+2·comm, 2·comm ≤ F+B, M ≥ 2P−1 (and every single-device run).
    assert!(predicted > 4000, "{predicted}");
}

#[test]
fn bubble_formula_fails_just_outside_its_range() {
    // Each case breaks one condition; the simulated bubble is not (P−1)(F+B+2·comm−2W) there.
    for (p, m, f, b, w, comm) in [
        (4, 8, 1.0, 4.0, 2.0, 0.0), // W > F
        (4, 8, 4.0, 1.0, 3.0, 0.0), // 2W > F+B+2·comm
        (4, 8, 1.0, 1.0, 1.0, 2.0), // 2·comm > F+B
        (4, 6, 1.0, 1.0, 1.0, 0.0), // M = 2P−2
    ] {
        let params = params(p, m, f, b, w, comm);
        assert_eq!((FAMILY.predict)(&params).unwrap().bubble, None);
        let stats = run("zb-h2", &params).unwrap().stats;
        let formula = f64::from(p - 1) * (f + b + 2.0 * comm - 2.0 * w);
        assert_ne!(stats.cost - stats.ideal, formula, "p={p} m={m} f={f} b={b} w={w} comm={comm}");
    }
}

#[test]
fn peak_memory_is_2p_minus_2d_minus_1_forwards_plus_2d_pending_weights() {
    for (mem_f, mem_w) in [(1.0, 0.5), (2.0, 0.5), (3.0, 0.0), (1.0, 1.0)] {
        for p in 1..=7 {
            for m in (2 * (p - 1)).max(1)..=3 * p {
                let params = ScheduleParams::new(p, m).with_costs(Costs {
                    mem_f,
                    mem_w: Some(mem_w),
                    ..Costs::fbw(2.0, 3.0, 1.0)
                });
                let analysis = run("zb-h2", &params).unwrap();
                let simulated: Vec<f64> = analysis.stats.per_device.iter().map(|d| d.peak_memory).collect();
                let predicted = (FAMILY.predict)(&params).unwrap().peak_memory.unwrap();
                assert_eq!(simulated, predicted, "p={p} m={m} mem_f={mem_f} mem_w={mem_w}");
                if m >= 2 * p - 1 {
                    // The paper's (2p−2i+1)M_B + (2i−2)M_W for the 1-based worker i = d+1.
                    let paper: Vec<f64> =
                        (0..p).map(|d| f64::from(2 * p - 2 * d - 1) * mem_f + f64::from(2 * d) * mem_w).collect();
                    assert_eq!(simulated, paper, "p={p} m={m}");
                }
            }
        }
    }
}

#[test]
fn too_few_microbatches_name_the_minimum() {
    let err = crate::generate("zb-h2", &ScheduleParams::new(4, 5)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert_eq!(
        err.to_string(),
        "zb-h2 needs microbatches ≥ 2·(devices − 1) = 6 for 4 devices, found 5\n  \
         hint: use at least 6 microbatches, or fewer devices\n  \
         hint: zb-1p, zb-2p and zb-auto accept any number of microbatches"
    );
    assert!(crate::generate("zb-h2", &ScheduleParams::new(4, 6)).is_ok());
}

#[test]
fn unused_options_are_rejected() {
    let mut params = ScheduleParams::new(4, 8);
    params.seq_splits = Some(2);
    let err = crate::generate("zb-h2", &params).unwrap_err();
    assert_eq!(err.field, Field::SeqSplits);
    assert!(err.to_string().starts_with("zb-h2 does not take --seq-splits"), "{err}");
}
