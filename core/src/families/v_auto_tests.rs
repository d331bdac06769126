//! Tests of the adaptive V scheduler against the authors' outputs (zero-bubble.md §9.2,
//! Appendices B and C).

use super::super::test_support;
use super::super::v_blocks::simulated_cost;
use super::steps::*;
use super::*;
use crate::{generate, run, AnalyzeError};

/// CLI costs whose V chunk passes take `f, b, w`, with W freeing the whole activation (the
/// papers' lifespan count), so a limit of `k/2` mem-f is `k` chunk-activations.
fn chunk_costs(f: f64, b: f64, w: f64) -> Costs {
    Costs { mem_w: Some(1.0), ..Costs::fbw(2.0 * f, 2.0 * b, 2.0 * w) }
}

/// [`test_support::params`] under the memory limit `limit`.
fn params(devices: u32, microbatches: u32, costs: Costs, limit: Option<f64>) -> ScheduleParams {
    ScheduleParams { mem_limit: limit, ..test_support::params(devices, microbatches, costs) }
}

#[test]
fn appendix_b_costs_with_unit_chunk_costs() {
    // P = 4, M = 8, F = B = W = 1 per chunk: limit (chunk-activations) → cost.
    for (chunks, cost) in [(4, 59.0), (5, 56.0), (6, 53.0), (7, 51.0), (8, 48.0)] {
        let limit = f64::from(chunks) / 2.0;
        let a = run("v-auto", &params(4, 8, chunk_costs(1.0, 1.0, 1.0), Some(limit))).unwrap();
        assert_eq!(a.stats.cost, cost, "limit {limit}");
        let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
        assert_eq!(peaks, vec![limit; 4], "limit {limit}");
    }
}

#[test]
fn appendix_b_costs_with_unbalanced_chunk_costs() {
    // P = 4, M = 8, F, B, W = 5, 6, 4 per chunk (CLI 10, 12, 8).
    for (limit, cost) in [(2.0, 334.0), (3.0, 278.0), (4.0, 252.0)] {
        let a = run("v-auto", &params(4, 8, chunk_costs(5.0, 6.0, 4.0), Some(limit))).unwrap();
        assert_eq!(a.stats.cost, cost, "limit {limit}");
        assert!(a.stats.peak_memory <= limit, "limit {limit}: peak {}", a.stats.peak_memory);
    }
}

#[test]
fn bubble_follows_the_closed_form_between_half_and_full_memory() {
    // Appendix C: P = 4, 6, 8; peak k = P..2P chunk-activations; M = 2P and 4P.
    for p in [4u32, 6, 8] {
        for m in [2 * p, 4 * p] {
            for k in p..=2 * p {
                let a = run("v-auto", &params(p, m, chunk_costs(1.0, 1.0, 1.0), Some(f64::from(k) / 2.0))).unwrap();
                let worst_idle = a.stats.per_device.iter().map(|d| d.idle).fold(0.0, f64::max);
                let expected = closed_form_bubble(p, k) as f64;
                assert_eq!(worst_idle, expected, "p={p} m={m} k={k}");
                assert_eq!(a.stats.cost - a.stats.ideal, expected, "p={p} m={m} k={k}");
                assert!(a.stats.peak_memory <= f64::from(k) / 2.0, "p={p} m={m} k={k}");
            }
        }
    }
}

#[test]
fn closed_form_matches_the_authors_table() {
    // §4.9: p = 8, k = 8..16 → 23, 20, 17, 14, 11, 8, 5, 3, 0.
    let bubbles: Vec<i64> = (8..=16).map(|k| closed_form_bubble(8, k)).collect();
    assert_eq!(bubbles, vec![23, 20, 17, 14, 11, 8, 5, 3, 0]);
    assert_eq!(closed_form_bubble(4, 4), 11);
}

#[test]
fn default_limit_is_v_zb_with_zero_bubble() {
    for p in 2..=6 {
        let a = run("v-auto", &params(p, 3 * p, chunk_costs(1.0, 1.0, 1.0), None)).unwrap();
        assert_eq!(a.stats.cost, a.stats.ideal, "p={p}");
        assert_eq!(a.stats.peak_memory, f64::from(p), "p={p}");
    }
    // Limits above P·mem-f change nothing.
    let at_p = run("v-auto", &params(4, 8, chunk_costs(5.0, 6.0, 4.0), None)).unwrap();
    let above = run("v-auto", &params(4, 8, chunk_costs(5.0, 6.0, 4.0), Some(100.0))).unwrap();
    assert_eq!(at_p.schedule, above.schedule);
}

#[test]
fn every_size_validates_simulates_and_keeps_the_limit() {
    // Default memory-weight split (mem-w = mem-f/2) here: the limit still holds.
    let costs = Costs::fbw(6.0, 8.0, 4.0);
    for p in 1..=8 {
        for m in 1..=24 {
            for limit in [None, Some(f64::from(p) * 0.75), Some(f64::from(p) / 3.0 + 1.0)] {
                let params = params(p, m, costs.clone(), limit);
                match run("v-auto", &params) {
                    Ok(a) => {
                        assert_eq!(a.schedule.pass_count(), (6 * p * m) as usize, "p={p} m={m} limit {limit:?}");
                        let cap = limit.unwrap_or(f64::from(p));
                        assert!(a.stats.peak_memory <= cap, "p={p} m={m} limit {limit:?}: {}", a.stats.peak_memory);
                    }
                    Err(AnalyzeError::Param(e)) => {
                        assert!(limit.is_some(), "p={p} m={m} default limit: {e}");
                        assert_eq!(e.field, Field::MemLimit, "p={p} m={m}: {e}");
                        assert!(e.message.starts_with("cannot fit memory: "), "{e}");
                    }
                    Err(e) => panic!("p={p} m={m} limit {limit:?}: {e}"),
                }
            }
        }
    }
}

#[test]
fn a_limit_below_v_min_names_the_least_that_fits() {
    let err = generate("v-auto", &params(4, 8, chunk_costs(1.0, 1.0, 1.0), Some(1.5))).unwrap_err();
    assert_eq!(err.field, Field::MemLimit);
    let text = err.to_string();
    assert!(
        text.starts_with(
            "cannot fit memory: v-auto needs a mem-limit of at least 2 (4 chunk-activations of mem-f/2) \
             for 4 devices and 8 microbatches, found 1.5\n  hint: raise --mem-limit to 2 or more"
        ),
        "{text}"
    );
    // The least limit it names works.
    assert!(run("v-auto", &params(4, 8, chunk_costs(1.0, 1.0, 1.0), Some(2.0))).is_ok());
}

#[test]
fn memory_limit_counts_chunk_activations_of_half_mem_f() {
    let mut p = params(4, 8, chunk_costs(1.0, 1.0, 1.0), Some(3.0));
    assert_eq!(chunk_limit(&p), 6);
    p.costs.mem_f = 2.0;
    assert_eq!(chunk_limit(&p), 3);
    p.mem_limit = None; // P·mem-f = 8 → 2P chunk-activations
    assert_eq!(chunk_limit(&p), 8);
    p.costs.mem_f = 0.0; // nothing is held: no limit binds
    assert_eq!(chunk_limit(&p), 8);
    p.mem_limit = Some(1e9);
    p.costs.mem_f = 1.0;
    assert_eq!(chunk_limit(&p), 8);
}

#[test]
fn predicted_bubble_matches_the_search() {
    for p in 1..=6 {
        for m in [2 * p, 2 * p + 3] {
            for k in least_peak(p)..=2 * p {
                for f in [2.0, 4.0] {
                    let params =
                        params(p, m, Costs { mem_w: Some(1.0), ..Costs::fbw(f, f, f) }, Some(f64::from(k) / 2.0));
                    let bubble = (FAMILY.predict)(&params).unwrap().bubble.unwrap();
                    let a = run("v-auto", &params).unwrap();
                    assert_eq!(a.stats.cost - a.stats.ideal, bubble, "p={p} m={m} k={k} f={f}");
                }
            }
        }
    }
    // Outside the closed form's range: unbalanced costs, below V-Min's peak, few microbatches.
    let predict = FAMILY.predict;
    assert_eq!(predict(&params(4, 8, chunk_costs(5.0, 6.0, 4.0), None)).unwrap().bubble, None);
    assert_eq!(predict(&params(4, 8, chunk_costs(1.0, 1.0, 1.0), Some(1.5))).unwrap().bubble, None);
    assert_eq!(predict(&params(9, 18, chunk_costs(1.0, 1.0, 1.0), Some(4.0))).unwrap().bubble, Some(29.0));
    assert_eq!(predict(&params(4, 7, chunk_costs(1.0, 1.0, 1.0), None)).unwrap().bubble, None);
}

#[test]
fn rejects_too_many_devices_and_unused_options() {
    let err = generate("v-auto", &ScheduleParams::new(33, 66)).unwrap_err();
    assert_eq!(err.field, Field::Devices);
    assert!(err.to_string().starts_with("v-auto supports at most 32 devices, found 33\n  hint:"), "{err}");
    let err = generate("v-auto", &ScheduleParams::new(16, 20_000)).unwrap_err();
    assert_eq!(err.field, Field::Microbatches);
    assert!(
        err.to_string().starts_with("v-auto supports at most 16320 microbatches on 16 devices, found 20000\n  hint:"),
        "{err}"
    );
    let err = generate("v-auto", &ScheduleParams::new(4, 8).with_chunks(2)).unwrap_err();
    assert_eq!(err.field, Field::Chunks);
}

/// Every block the authors' loops would evaluate for `devices` at the widest limit, through
/// every step: (initial peak, slot bubble) of those that work.
fn all_blocks(devices: u32, microbatches: u32) -> Vec<(i32, i64)> {
    let costs = Costs::default();
    let search = Search { devices, microbatches, costs: &costs };
    let mut out = Vec::new();
    search.for_each_block(|_, starts| {
        let initial = repeated_peak(starts, microbatches.max(2 * devices));
        if let (_, Some(grid)) = schedule_block(starts, devices, microbatches, 2 * devices) {
            out.push((initial, slot_bubble(&grid)));
        }
        false
    });
    out
}

#[test]
fn closed_form_bounds_every_blocks_slot_bubble() {
    // The screened search rests on this: no block beats the §4.9 bubble at its peak, and at
    // every peak from V-Min's to 2P some block reaches it.
    for p in 2..=8 {
        let m = 2 * p;
        let blocks = all_blocks(p, m);
        for &(peak, bubble) in &blocks {
            assert!(bubble >= closed_form_bubble(p, peak as u32), "p={p} peak {peak} bubble {bubble}");
        }
        let least_peak = least_peak(p) as i32;
        for k in least_peak..=2 * p as i32 {
            let best = blocks.iter().filter(|b| b.0 == k).map(|b| b.1).min();
            assert_eq!(best, Some(closed_form_bubble(p, k as u32)), "p={p} peak {k}");
        }
        assert!(blocks.iter().all(|b| b.0 >= least_peak), "p={p}: a block below V-Min's peak");
    }
}

/// Chunk F, B, W, limit in chunk-activations, cost, and the four devices' orders.
type AppendixB = (f64, f64, f64, u32, f64, [&'static str; 4]);

/// zero-bubble.md Appendix B, the adaptive V scheduler at P = 4, M = 8.
const APPENDIX_B: [AppendixB; 8] = [
    (
        1.0,
        1.0,
        1.0,
        4,
        59.0,
        [
            "F0 F1 F2 f0 b0 w0 f1 b1 w1 F3 B0 W0 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 f7 b7 w7 B6 W6 B7 W7",
            "F0 F1 f0 f1 b0 w0 F2 b1 w1 B0 W0 F3 f2 B1 b2 W1 w2 f3 F4 B2 b3 W2 w3 f4 F5 B3 b4 W3 w4 f5 F6 B4 b5 W4 w5 f6 F7 B5 W5 b6 w6 f7 b7 w7 B6 W6 B7 W7",
            "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 w1 f2 F3 B1 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 f7 b6 w6 B6 b7 W6 w7 B7 W7",
            "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 b7 B7 w7 W7",
        ],
    ),
    (
        1.0,
        1.0,
        1.0,
        5,
        56.0,
        [
            "F0 F1 F2 F3 f0 b0 w0 f1 b1 w1 F4 B0 W0 f2 b2 B1 w2 W1 F5 f3 b3 B2 w3 W2 F6 f4 b4 B3 w4 W3 F7 f5 b5 B4 w5 W4 f6 b6 w6 f7 b7 w7 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 f0 f1 b0 w0 F3 b1 w1 B0 W0 F4 f2 B1 b2 W1 w2 f3 F5 B2 b3 W2 w3 f4 F6 B3 b4 W3 w4 f5 F7 B4 b5 W4 w5 f6 b6 f7 w6 B5 b7 W5 B6 w7 W6 B7 W7",
            "F0 F1 F2 f0 f1 b0 w0 F3 B0 W0 b1 f2 w1 B1 W1 F4 b2 f3 w2 B2 W2 F5 b3 f4 w3 B3 W3 F6 b4 f5 w4 B4 W4 F7 b5 f6 w5 f7 b6 B5 w6 B6 b7 W5 W6 B7 w7 W7",
            "F0 f0 F1 f1 F2 b0 B0 w0 W0 f2 b1 B1 F3 w1 W1 f3 b2 B2 F4 w2 W2 f4 b3 B3 F5 w3 W3 f5 b4 B4 F6 w4 W4 f6 b5 F7 w5 f7 B5 W5 b6 B6 w6 W6 b7 B7 w7 W7",
        ],
    ),
    (
        1.0,
        1.0,
        1.0,
        6,
        53.0,
        [
            "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 b2 w2 B0 W0 F5 f3 b3 B1 w3 W1 F6 f4 b4 B2 w4 W2 F7 f5 b5 B3 w5 W3 f6 b6 B4 w6 W4 f7 b7 w7 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 F4 B0 W0 b2 w2 f3 F5 B1 W1 b3 w3 f4 F6 B2 W2 b4 w4 f5 F7 B3 W3 b5 w5 f6 B4 W4 b6 f7 w6 B5 b7 W5 B6 w7 W6 B7 W7",
            "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 B0 w1 W0 F4 f3 b2 B1 w2 W1 F5 f4 b3 B2 w3 W2 F6 f5 b4 B3 w4 W3 F7 f6 b5 B4 w5 W4 f7 b6 B5 w6 B6 b7 W5 W6 B7 w7 W7",
            "F0 f0 F1 f1 F2 f2 b0 w0 B0 F3 W0 b1 f3 w1 B1 F4 W1 b2 f4 w2 B2 F5 W2 b3 f5 w3 B3 F6 W3 b4 f6 w4 B4 F7 W4 f7 b5 B5 b6 B6 w5 W5 b7 B7 w6 W6 w7 W7",
        ],
    ),
    (
        1.0,
        1.0,
        1.0,
        7,
        51.0,
        [
            "F0 F1 F2 F3 F4 F5 f0 b0 w0 f1 b1 w1 f2 b2 w2 B0 W0 f3 b3 w3 F6 B1 W1 f4 b4 w4 F7 B2 W2 f5 b5 w5 B3 W3 f6 b6 w6 f7 b7 B4 w7 B5 W4 B6 W5 B7 W6 W7",
            "F0 F1 F2 F3 F4 f0 f1 b0 w0 f2 b1 w1 B0 b2 f3 W0 w2 F5 B1 b3 f4 W1 w3 F6 B2 b4 f5 W2 w4 F7 B3 b5 f6 W3 w5 b6 f7 B4 w6 b7 B5 W4 B6 w7 B7 W5 W6 W7",
            "F0 F1 F2 f0 F3 f1 f2 b0 w0 F4 b1 B0 w1 f3 W0 b2 w2 B1 F5 f4 W1 b3 w3 B2 F6 f5 W2 b4 w4 B3 F7 f6 W3 b5 w5 f7 B4 b6 B5 W4 b7 B6 w6 B7 W5 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 b0 w0 B0 b1 f3 W0 w1 F4 B1 b2 f4 W1 w2 F5 B2 b3 f5 W2 w3 F6 B3 b4 f6 W3 w4 F7 f7 B4 b5 B5 b6 B6 W4 b7 B7 w5 W5 w6 W6 w7 W7",
        ],
    ),
    (
        1.0,
        1.0,
        1.0,
        8,
        48.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 B0 w3 W0 F7 f4 b4 B1 w4 W1 f5 b5 B2 w5 W2 f6 b6 B3 w6 W3 f7 b7 B4 w7 B5 W4 B6 W5 B7 W6 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 B0 w2 W0 F6 f4 b3 B1 w3 W1 F7 f5 b4 B2 w4 W2 f6 b5 B3 w5 W3 f7 b6 B4 b7 B5 w6 B6 W4 B7 w7 W5 W6 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 B0 w1 W0 F5 f4 b2 B1 w2 W1 F6 f5 b3 B2 w3 W2 F7 f6 b4 B3 w4 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 B0 w0 W0 F4 f4 b1 B1 w1 W1 F5 f5 b2 B2 w2 W2 F6 f6 b3 B3 w3 W3 F7 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
        ],
    ),
    (
        5.0,
        6.0,
        4.0,
        4,
        334.0,
        [
            "F0 F1 F2 f0 b0 w0 f1 b1 w1 F3 B0 W0 f2 b2 B1 w2 W1 F4 f3 b3 B2 w3 W2 F5 f4 b4 B3 w4 W3 F6 f5 b5 B4 w5 W4 F7 f6 b6 B5 w6 W5 f7 b7 w7 B6 W6 B7 W7",
            "F0 F1 f0 f1 b0 w0 F2 b1 w1 B0 W0 F3 f2 B1 b2 W1 w2 f3 F4 B2 b3 W2 w3 f4 F5 B3 b4 W3 w4 f5 F6 B4 b5 W4 w5 f6 F7 B5 W5 b6 w6 f7 b7 w7 B6 W6 B7 W7",
            "F0 F1 f0 f1 b0 w0 F2 B0 W0 b1 w1 f2 F3 B1 W1 b2 f3 w2 B2 F4 W2 b3 f4 w3 B3 F5 W3 b4 f5 w4 B4 F6 W4 b5 f6 w5 B5 F7 W5 f7 b6 w6 B6 b7 W6 w7 B7 W7",
            "F0 f0 F1 f1 b0 B0 w0 W0 F2 f2 b1 B1 w1 W1 F3 f3 b2 B2 w2 W2 F4 f4 b3 B3 w3 W3 F5 f5 b4 B4 w4 W4 F6 f6 b5 B5 w5 W5 F7 f7 b6 B6 w6 W6 b7 B7 w7 W7",
        ],
    ),
    (
        5.0,
        6.0,
        4.0,
        6,
        278.0,
        [
            "F0 F1 F2 F3 F4 f0 b0 w0 f1 b1 w1 f2 b2 w2 F5 B0 W0 f3 b3 w3 B1 W1 F6 f4 b4 w4 B2 W2 F7 f5 b5 w5 B3 W3 f6 b6 w6 B4 W4 f7 b7 w7 B5 W5 B6 W6 B7 W7",
            "F0 F1 F2 F3 f0 f1 b0 w0 f2 b1 w1 F4 b2 B0 w2 W0 f3 F5 B1 b3 W1 f4 w3 F6 B2 b4 W2 f5 w4 F7 B3 b5 W3 f6 w5 B4 W4 f7 b6 w6 b7 B5 w7 B6 W5 B7 W6 W7",
            "F0 F1 F2 f0 f1 f2 b0 w0 F3 b1 w1 B0 W0 F4 f3 b2 w2 B1 W1 F5 f4 b3 w3 B2 W2 F6 f5 b4 w4 B3 W3 F7 f6 b5 w5 B4 W4 f7 B5 b6 W5 b7 B6 w6 B7 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 b0 w0 F3 B0 b1 W0 f3 w1 F4 B1 b2 W1 f4 w2 F5 B2 b3 W2 f5 w3 F6 B3 b4 W3 f6 w4 F7 B4 W4 f7 b5 B5 w5 W5 b6 B6 b7 B7 w6 W6 w7 W7",
        ],
    ),
    (
        5.0,
        6.0,
        4.0,
        8,
        252.0,
        [
            "F0 F1 F2 F3 F4 F5 F6 f0 b0 w0 f1 b1 w1 f2 b2 w2 f3 b3 B0 w3 W0 F7 f4 b4 B1 w4 W1 f5 b5 B2 w5 W2 f6 b6 B3 w6 W3 f7 b7 B4 w7 B5 W4 B6 W5 B7 W6 W7",
            "F0 F1 F2 F3 F4 f0 F5 f1 b0 w0 f2 b1 w1 f3 b2 B0 w2 W0 F6 f4 b3 B1 w3 W1 F7 f5 b4 B2 w4 W2 f6 b5 B3 w5 W3 f7 b6 B4 b7 B5 w6 B6 W4 B7 w7 W5 W6 W7",
            "F0 F1 F2 f0 F3 f1 F4 f2 b0 w0 f3 b1 B0 w1 W0 F5 f4 b2 B1 w2 W1 F6 f5 b3 B2 w3 W2 F7 f6 b4 B3 w4 W3 f7 b5 B4 b6 B5 b7 B6 w5 B7 W4 w6 W5 w7 W6 W7",
            "F0 f0 F1 f1 F2 f2 F3 f3 b0 B0 w0 W0 F4 f4 b1 B1 w1 W1 F5 f5 b2 B2 w2 W2 F6 f6 b3 B3 w3 W3 F7 f7 b4 B4 b5 B5 b6 B6 b7 B7 w4 W4 w5 W5 w6 W6 w7 W7",
        ],
    ),
];

#[test]
fn appendix_b_orders_are_reproduced_pass_for_pass() {
    for (f, b, w, chunks, cost, lines) in APPENDIX_B {
        let params = params(4, 8, chunk_costs(f, b, w), Some(f64::from(chunks) / 2.0));
        let a = run("v-auto", &params).unwrap();
        assert_eq!(a.stats.cost, cost, "costs {f},{b},{w} limit {chunks}");
        for (device, line) in lines.iter().enumerate() {
            assert_eq!(a.schedule.notation(device as u32), *line, "costs {f},{b},{w} limit {chunks} device {device}");
        }
    }
}

/// Steps 1–8 of one block for `M < 2P` the way [`Search::few_microbatches`] runs them, with
/// the same result as [`schedule_block`].
fn few_microbatch_block(starts: &[[u32; 6]], devices: u32, microbatches: u32, limit: u32) -> (i32, Option<Grid>) {
    let initial = repeated_peak(starts, 2 * devices);
    if initial > 2 * devices as i32 {
        return (initial, None);
    }
    let cap = limit.min(2 * devices) as i32;
    let Some(rows) = trimmed_rows(starts, devices, microbatches, initial, cap).and_then(|g| g.squeeze(microbatches))
    else {
        return (initial, None);
    };
    let reference = rows.peak();
    if reference > cap {
        return (reference, None);
    }
    finish_block(rows, reference, devices, microbatches, reference)
}

/// Every limit that changes what a block does for `M < 2P`: below and at `2M` (whether the
/// early W are released), every peak in between, and `2P`.
fn few_microbatch_limits(devices: u32, microbatches: u32) -> Vec<u32> {
    let mut limits: Vec<u32> = (least_peak(devices)..=2 * devices).collect();
    limits.retain(|&l| l == 2 * devices || l % 3 == 0 || l + 1 == 2 * microbatches || l == 2 * microbatches);
    limits
}

/// Runs `check` on every block the search visits for `devices` (at the widest limit).
fn for_every_block(devices: u32, mut check: impl FnMut(&[[u32; 6]])) {
    let costs = Costs::default();
    let search = Search { devices, microbatches: 2 * devices, costs: &costs };
    search.for_each_block(|_, starts| {
        check(starts);
        false
    });
}

#[test]
fn order_based_steps_match_the_laid_out_ones_block_by_block() {
    for p in 1..=7 {
        for_every_block(p, |starts| {
            for m in 1..2 * p {
                for limit in few_microbatch_limits(p, m) {
                    let laid_out = schedule_block(starts, p, m, limit);
                    let read_off = few_microbatch_block(starts, p, m, limit);
                    assert_eq!(read_off, laid_out, "p={p} m={m} limit {limit} block {starts:?}");
                }
            }
        });
    }
}

#[test]
fn order_based_steady_steps_match_the_laid_out_ones() {
    // What the M ≥ 2P screen runs (at its screening size) against the laid-out steps, for
    // every block, limit and M from 2P to 4P + 2.
    for p in 1..=8 {
        for_every_steady_block(p, |starts, m| {
            for limit in least_peak(p).min(2 * p)..=2 * p {
                let laid_out = schedule_block(starts, p, m, limit);
                let read_off = steady_block(starts, p, m, limit);
                assert_eq!(read_off, laid_out, "p={p} m={m} limit {limit} block {starts:?}");
            }
        });
    }
}

/// Runs the search's first steps the slow way and checks what [`trimmed_rows`] and
/// [`steady_block`] rely on: the warm-up rewrite ends before each row's first `b`, neither
/// squeeze fails, and the rows and peak read off the block ([`warm_up_rows`]) are those laid
/// out.
fn check_warm_up_facts(devices: u32) {
    let padded = 2 * devices;
    for_every_block(devices, |starts| {
        let grid = repeat(starts, padded);
        if grid.peak() > 2 * devices as i32 {
            return;
        }
        let squeezed = grid.squeeze(padded).expect("the repeated block squeezes");
        let peak = squeezed.peak().clamp(0, padded as i32) as usize;
        for (i, row) in squeezed.rows.iter().enumerate() {
            let first_b = row.iter().position(|&c| c == Part::B0 as u8).expect("a row holds b");
            let mut counts = WarmUpCounts::default();
            row[..first_b].iter().filter_map(|&c| Part::from_index(c)).for_each(|part| counts.add(part));
            let steps = warm_up_steps(i, devices as usize, peak, padded as usize, counts).expect("warm-up rewrites");
            let end = i + steps.iter().rposition(Option::is_some).map_or(0, |last| last + 1);
            assert!(end <= first_b, "p={devices} row {i}: warm-up ends at {end}, first b at {first_b}: {starts:?}");
        }
        let initial = squeezed.peak();
        let warm = rewrite_warm_up(squeezed, padded).expect("warm-up rewrites");
        let warm =
            warm.squeeze(padded).unwrap_or_else(|| panic!("p={devices}: rewritten warm-up deadlocks: {starts:?}"));
        // The rows and peak read off the block are the laid-out ones.
        match warm_up_rows(starts, padded, padded, initial) {
            Some((rows, peak)) => {
                assert_eq!(peak, warm.peak(), "p={devices}: warm-up peak {starts:?}");
                assert_eq!(rows.squeeze(padded).as_ref(), Some(&warm), "p={devices}: warm-up rows {starts:?}");
            }
            None => assert!(warm.peak() > initial, "p={devices}: warm-up rows {starts:?}"),
        }
    });
}

#[test]
fn order_based_warm_up_matches_the_laid_out_one() {
    for p in 1..=12 {
        check_warm_up_facts(p);
    }
}

/// Checks [`few_microbatch_bound`] against every block's slot bubble for every `M < 2P` and
/// the limits that change what blocks do.
fn check_few_microbatch_bound(devices: u32) {
    let p = devices;
    for_every_block(p, |starts| {
        let initial = repeated_peak(starts, 2 * p);
        for m in 1..2 * p {
            // Only two limits matter to a block's rows: whether 2M fits (early W released).
            for limit in [2 * p, (2 * m).saturating_sub(1).max(1)] {
                if let (_, Some(grid)) = few_microbatch_block(starts, p, m, limit) {
                    let bound = few_microbatch_bound(p, m, initial as u32);
                    let bubble = slot_bubble(&grid);
                    assert!(bubble >= bound, "p={p} m={m} limit {limit} peak {initial}: {bubble} < {bound}");
                }
            }
        }
    });
}

#[test]
fn few_microbatch_bound_holds_for_every_block() {
    for p in 1..=8 {
        check_few_microbatch_bound(p);
    }
}

/// The block-by-block facts of the two tests above for every size the family accepts
/// (`P ≤ 32`; several minutes in release mode):
/// `cargo test --release -p bubblescope --lib v_auto -- --ignored`.
#[test]
#[ignore]
fn block_facts_hold_up_to_32_devices() {
    for p in 9..=MAX_SEARCH_DEVICES {
        if p > 12 {
            check_warm_up_facts(p);
        }
        check_few_microbatch_bound(p);
    }
}

/// The cost mixes the fast searches are compared with the exhaustive one under (chunk
/// `F, B, W` and communication).
const COST_SETS: [(f64, f64, f64, f64); 7] = [
    (1.0, 1.0, 1.0, 0.0),
    (5.0, 6.0, 4.0, 0.0),
    (3.0, 4.0, 2.0, 0.0),
    (1.0, 1.0, 2.0, 0.0),
    (4.0, 1.0, 1.0, 0.0),
    (5.0, 6.0, 4.0, 1.0),
    (2.0, 3.0, 1.0, 2.5),
];

/// The limits the fast searches are compared at: those that change what a block does with
/// few microbatches, every limit from V-Min's peak to `2P` with more.
fn compared_limits(devices: u32, microbatches: u32) -> Vec<u32> {
    if microbatches < 2 * devices {
        few_microbatch_limits(devices, microbatches)
    } else {
        (least_peak(devices)..=2 * devices).collect()
    }
}

#[test]
fn fast_search_keeps_the_exhaustive_candidates_and_winner() {
    for p in 2..=8 {
        for m in 1..=4 * p + 2 {
            for limit in compared_limits(p, m) {
                // Every block through every step at M: the same for every cost mix.
                let every = Search { devices: p, microbatches: m, costs: &Costs::default() }.every_block(limit);
                for (f, b, w, comm) in COST_SETS {
                    let costs = Costs { comm, ..chunk_costs(f, b, w) };
                    let search = Search { devices: p, microbatches: m, costs: &costs };
                    let what = format!("p={p} m={m} limit {limit} costs {f},{b},{w} comm {comm}");
                    let exhaustive = search.screen(every.clone());
                    let key = |c: &[Candidate]| c.iter().map(|c| (c.index, c.bubble)).collect::<Vec<_>>();
                    if m < 2 * p {
                        let fast = search.few_microbatches(limit);
                        let grids = |c: &[Candidate]| c.iter().map(|c| c.grid.clone()).collect::<Vec<_>>();
                        assert_eq!(key(&fast), key(&exhaustive), "{what}");
                        assert_eq!(grids(&fast), grids(&exhaustive), "{what}");
                    } else if !search.balanced() {
                        // Balanced costs stop the screen at the first block reaching the bound.
                        let fast: Vec<Candidate> = search.screened(limit).into_iter().map(|c| c.candidate).collect();
                        assert_eq!(key(&fast), key(&exhaustive), "{what}");
                    }
                    let slow = search.cheapest(exhaustive, m >= 2 * p && search.balanced());
                    let fast = search.run(limit);
                    assert_eq!(fast, slow, "{what}");
                }
            }
        }
    }
}

/// Runs `check(starts, m)` on every block the search visits for `devices`, for `M` from `2P`
/// to `4P + 2`.
fn for_every_steady_block(devices: u32, mut check: impl FnMut(&[[u32; 6]], u32)) {
    for_every_block(devices, |starts| {
        for m in 2 * devices..=4 * devices + 2 {
            check(starts, m);
        }
    });
}

#[test]
fn steady_screen_sees_every_block_as_at_full_size() {
    // What the screen reads off a block at M₀ (2P, more for few devices) is what it would read at M: the peak, the
    // limit it fails, whether it works and its slot bubble.
    for p in 1..=8 {
        for_every_steady_block(p, |starts, m| {
            let m0 = steady_microbatches(starts, p, m);
            assert_eq!(repeated_peak(starts, m), repeated_peak(starts, m0), "p={p} m={m} block {starts:?}");
            let read = |m| {
                let (peak, grid) = schedule_block(starts, p, m, 2 * p);
                (peak, grid.map(|g| slot_bubble(&g)))
            };
            assert_eq!(read(m), read(m0), "p={p} m={m} block {starts:?}");
        });
    }
}

#[test]
fn steady_bound_never_exceeds_the_simulated_cost() {
    // The bound `steady_cheapest` screens with: a block's rows cost at least their cost at
    // their screening size M₀ plus the least per-microbatch work of a device for every further
    // microbatch, with equal and with unequal per-stage costs.
    for p in 1..=7 {
        let mut mixes: Vec<(String, Costs)> = COST_SETS
            .iter()
            .map(|&(f, b, w, comm)| (format!("costs {f},{b},{w} comm {comm}"), Costs { comm, ..chunk_costs(f, b, w) }))
            .collect();
        mixes.extend((0..UNEQUAL_PROFILES).map(|kind| (format!("profile {kind}"), unequal_costs(p, kind))));
        for_every_steady_block(p, |starts, m| {
            let m0 = steady_microbatches(starts, p, m);
            if m == m0 {
                return;
            }
            let (_, Some(small)) = schedule_block(starts, p, m0, 2 * p) else { return };
            let (_, Some(large)) = schedule_block(starts, p, m, 2 * p) else {
                panic!("p={p} m={m}: works at M₀ only: {starts:?}")
            };
            for (what, costs) in &mixes {
                let (Some(c0), Some(c)) =
                    (simulated_cost(&small.to_schedule(m0), costs), simulated_cost(&large.to_schedule(m), costs))
                else {
                    panic!("p={p} m={m}: deadlock {starts:?}")
                };
                let bound = c0 + f64::from(m - m0) * microbatch_work(p, costs);
                assert!(bound <= c + 1e-9, "p={p} m={m} {what}: {bound} > {c}: {starts:?}");
            }
        });
    }
}

/// How many per-stage cost profiles [`unequal_costs`] has.
const UNEQUAL_PROFILES: usize = 4;

/// Per-stage (per V stage, `2P` pieces) costs for the comparisons at unequal costs: F, B, W
/// and activation memory that differ from stage to stage, a heavy last stage (the LM head)
/// with communication, a heavy first stage (the embedding), and a mixed pattern with
/// communication.
fn unequal_costs(devices: u32, kind: usize) -> Costs {
    let n = 2 * devices as usize;
    let cycle = |pattern: &[f64]| (0..n).map(|i| pattern[i % pattern.len()]).collect::<Vec<f64>>();
    let heavy = |at: usize, light: f64, heavy: f64| (0..n).map(|i| if i == at { heavy } else { light }).collect();
    let (f, b, w, mem_f, comm): (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, f64) = match kind {
        0 => (cycle(&[2.0, 3.0, 2.0]), cycle(&[4.0, 5.0, 3.0]), cycle(&[2.0, 1.0, 3.0]), cycle(&[1.0, 2.0]), 0.0),
        1 => (heavy(n - 1, 2.0, 5.0), heavy(n - 1, 2.0, 6.0), heavy(n - 1, 1.0, 3.0), heavy(n - 1, 1.0, 3.0), 0.5),
        2 => (heavy(0, 3.0, 7.0), heavy(0, 4.0, 5.0), heavy(0, 2.0, 2.0), heavy(0, 2.0, 4.0), 0.0),
        _ => (cycle(&[5.0, 4.0, 6.0, 3.0]), cycle(&[6.0, 7.0, 5.0]), cycle(&[4.0, 2.0]), cycle(&[3.0, 1.0, 2.0]), 1.5),
    };
    let mem_w = mem_f.iter().map(|m| m / 2.0).collect();
    let profile =
        crate::params::CostProfile { f, b, w, mem_f, mem_w, a2a_f: Vec::new(), a2a_b: Vec::new(), finer: Vec::new() };
    Costs { comm, ..Costs::default() }.with_profile(profile, devices)
}

/// The exhaustive search's winner with every candidate simulated whole (no early stop, no
/// bound): every block through every step at `M`, the screen, then the least simulated cost,
/// the first in enumeration order on ties. `every` is [`Search::every_block`] at `limit`.
fn simulated_winner(search: &Search, every: Vec<Candidate>) -> Option<Schedule> {
    let mut best: Option<(f64, Schedule)> = None;
    for candidate in search.screen(every) {
        let schedule = candidate.grid.to_schedule(search.microbatches);
        let Some(cost) = simulated_cost(&schedule, search.costs) else { continue };
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            best = Some((cost, schedule));
        }
    }
    best.map(|(_, schedule)| schedule)
}

#[test]
fn steady_search_picks_the_simulated_winner_with_unequal_stage_costs() {
    // M ≥ 2P at unequal per-stage costs: the screened search (blocks at M₀, the few left laid
    // out at M) picks the schedule the exhaustive one does, every limit from V-Min's to 2P,
    // and through `generate` with memory limits in mem-f over unequal per-stage memory.
    for p in 2..=6 {
        for m in [2 * p, 2 * p + 1, 3 * p + 1, 4 * p + 2] {
            let every: Vec<(u32, Vec<Candidate>)> = (least_peak(p)..=2 * p)
                .map(|limit| {
                    (limit, Search { devices: p, microbatches: m, costs: &Costs::default() }.every_block(limit))
                })
                .collect();
            for kind in 0..UNEQUAL_PROFILES {
                let costs = unequal_costs(p, kind);
                let search = Search { devices: p, microbatches: m, costs: &costs };
                for (limit, every) in &every {
                    let expected = simulated_winner(&search, every.clone());
                    assert!(expected.is_some(), "p={p} m={m} profile {kind} limit {limit}: no block works");
                    assert_eq!(search.run(*limit), expected, "p={p} m={m} profile {kind} limit {limit}");
                }
                let base = ScheduleParams::new(p, m).with_costs(costs.clone());
                let unit = share_mem_f(&base) / 2.0;
                for chunks in [least_peak(p), p + 1, 2 * p - 1, 2 * p].into_iter().filter(|&c| c >= least_peak(p)) {
                    let params = base.clone().with_mem_limit(f64::from(chunks) * unit);
                    let limit = chunk_limit(&params);
                    assert_eq!(limit, chunks, "p={p} m={m} profile {kind}");
                    let (_, every) = every.iter().find(|(l, _)| *l == limit).expect("a compared limit");
                    let expected = simulated_winner(&search, every.clone());
                    let generated = generate("v-auto", &params).ok();
                    assert_eq!(generated, expected, "p={p} m={m} profile {kind} limit {limit} (mem-limit)");
                }
            }
        }
    }
}

/// The first version of [`fill_bubbles`], which reads the row from the slot on until every
/// part that may move has been seen; kept to check the faster one against.
///
/// Step 7: fills every empty slot, left to right and device by device, with the first later
/// pass of its row that may move there: one of each part is looked at (the first after the
/// slot), a forward only if it does not raise the peak, any pass only if what it depends on
/// is in an earlier slot.
fn fill_bubbles_reference(grid: &mut Grid, microbatches: u32) {
    let p = grid.rows.len();
    let m = microbatches as usize;
    let peak = grid.peak();
    let len = grid.len();
    let mut last = vec![[None::<usize>; 6]; p];
    for (i, row) in grid.rows.iter().enumerate() {
        for (j, &cell) in row.iter().enumerate() {
            if let Some(part) = Part::from_index(cell) {
                last[i][part.index()] = Some(j);
            }
        }
    }
    let mut sweep = FillSweep::new(p, m);
    for j in 0..len {
        for (i, last) in last.iter().enumerate() {
            if let Some(part) = Part::from_index(grid.rows[i][j]) {
                sweep.pass(i, j, part);
                continue;
            }
            // A part's next pass may move here if what it depends on is in an earlier slot
            // (the peak is checked during the scan). Only the first later pass of each part
            // is looked at; the scan ends when no movable part is left to find.
            let (mut open, mut movable) = (0u8, 0u8);
            for x in Part::ALL {
                if last[x.index()].is_none_or(|l| l <= j) {
                    continue;
                }
                open |= 1 << x.index();
                if sweep.ready(i, j, x) {
                    movable |= 1 << x.index();
                }
            }
            let (mut delta, mut highest) = (0i32, 0i32);
            for k in j + 1..len {
                if open & movable == 0 {
                    break;
                }
                let cell = grid.rows[i][k];
                let Some(part) = Part::from_index(cell) else { continue };
                let before = highest;
                delta += part.memory();
                highest = highest.max(delta);
                let bit = 1 << part.index();
                if open & bit == 0 {
                    continue;
                }
                open &= !bit;
                if movable & bit == 0 || (part.is_forward() && sweep.memory[i] + before >= peak) {
                    continue;
                }
                grid.rows[i][j] = cell;
                grid.rows[i][k] = EMPTY;
                sweep.pass(i, j, part);
                break;
            }
        }
    }
}

#[test]
fn bubble_filling_matches_the_row_scanning_version() {
    // The rows step 7 runs on, for every block, few and many microbatches.
    for p in 1..=7 {
        for_every_block(p, |starts| {
            for m in [1, p, 2 * p - 1, 2 * p, 3 * p + 1] {
                let padded = m.max(2 * p);
                let grid = repeat(starts, padded);
                if grid.peak() > 2 * p as i32 {
                    continue;
                }
                let Some(warm) = grid.squeeze(padded).and_then(|g| rewrite_warm_up(g, padded)?.squeeze(padded)) else {
                    continue;
                };
                let trimmed = if m < padded { keep_microbatches(warm, m).squeeze(m) } else { Some(warm) };
                let Some(cooled) = trimmed.and_then(|g| rewrite_cool_down(g.clone(), g.peak(), p, m)?.squeeze(m))
                else {
                    continue;
                };
                let (mut fast, mut reference) = (cooled.clone(), cooled);
                let peak = fill_bubbles(&mut fast, m);
                fill_bubbles_reference(&mut reference, m);
                assert_eq!(fast, reference, "p={p} m={m} block {starts:?}");
                assert_eq!(peak, reference.peak(), "p={p} m={m} block {starts:?}");
            }
        });
    }
}

#[test]
fn repeated_peak_matches_the_count_slot_by_slot() {
    for p in 1..=8 {
        for_every_block(p, |starts| {
            for m in [1, 2, p, 2 * p, 5 * p] {
                let grid = repeat(starts, m);
                assert_eq!(repeated_peak(starts, m), grid.peak(), "p={p} m={m} block {starts:?}");
            }
        });
    }
}

/// Unequal per-stage memory: v-auto generates at its default limit and never goes above an
/// explicit one.
#[test]
fn keeps_its_limits_with_unequal_stage_memory() {
    super::super::v_common::testing::check_limits_with_unequal_memory(&["v-auto"], &[], 2..=6, 1..=16, 0.5..1.5, 32);
}
