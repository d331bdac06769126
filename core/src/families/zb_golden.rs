//! Test data shared by the linear Zero Bubble families: the p = 4 golden orders of
//! `zero-bubble.md` Appendix A, produced by running the authors' generators (ZB-H1/H2 from
//! `efficiency.py`, ZB-1p/2p from `zb.py`) and their ASAP simulator. ZB-1p/2p there use
//! mem_f = 2, mem_b = −1, mem_w = −1 and a limit of k·p·2: in our units mem-f 1, mem-w 0.5 (the
//! defaults) and a limit of P or 2P. `peaks` is the reference's "peak with M_W = M_B/2" line.

use super::Family;
use crate::params::{Costs, ScheduleParams};
use crate::run;

/// One golden run on 4 devices.
pub(crate) struct Golden {
    pub microbatches: u32,
    /// F, B, W, comm.
    pub costs: [f64; 4],
    /// Longest device span.
    pub cost: f64,
    /// End of the last pass (every schedule starts at 0).
    pub makespan: f64,
    /// `(cost − ideal) / cost` to 4 digits.
    pub bubble_rate: &'static str,
    /// Peak activation memory per device, mem-f = 1, mem-w = 0.5.
    pub peaks: [f64; 4],
    /// Per-device orders in `Schedule::notation`.
    pub orders: [&'static str; 4],
}

impl Golden {
    /// The parameters of this run (default memory: mem-f 1, mem-w 0.5).
    pub fn params(&self) -> ScheduleParams {
        let [f, b, w, comm] = self.costs;
        ScheduleParams::new(4, self.microbatches).with_costs(Costs { comm, ..Costs::fbw(f, b, w) })
    }
}

/// Runs `family` on every golden and compares orders pass for pass, cost, makespan, bubble
/// rate and per-device peaks.
pub(crate) fn assert_goldens(family: &str, goldens: &[Golden]) {
    for g in goldens {
        let label = format!("{family} m={} costs={:?}", g.microbatches, g.costs);
        let a = run(family, &g.params()).unwrap_or_else(|e| panic!("{label}: {e}"));
        for (d, expected) in g.orders.iter().enumerate() {
            assert_eq!(a.schedule.notation(d as u32), *expected, "{label}, device {d}");
        }
        assert_eq!(a.stats.cost, g.cost, "{label}");
        assert_eq!(a.stats.makespan, g.makespan, "{label}");
        assert_eq!(format!("{:.4}", a.stats.bubble_rate), g.bubble_rate, "{label}");
        let peaks: Vec<f64> = a.stats.per_device.iter().map(|d| d.peak_memory).collect();
        assert_eq!(peaks, g.peaks, "{label}");
    }
}

/// `p` devices, `m` microbatches, F, B, W and comm (default memory).
pub(crate) fn fbw_params(p: u32, m: u32, f: f64, b: f64, w: f64, comm: f64) -> ScheduleParams {
    ScheduleParams::new(p, m).with_costs(Costs { comm, ..Costs::fbw(f, b, w) })
}

/// For a handcrafted family whose first device runs `delay·(P−1)` warm-up forwards (ZB-H1: 1,
/// ZB-H2: 2): wherever `family` predicts a bubble for P ≤ 6, M from its minimum to 3P + 1,
/// integer F, B, W < 5 and each of `comms`, checks the prediction against the simulator and
/// against `(P−1)·factor(F, B, W, comm)`. Returns how many settings were predicted.
pub(crate) fn check_predicted_bubbles(
    family: &Family,
    delay: u32,
    comms: &[i32],
    factor: fn(i32, i32, i32, i32) -> i32,
) -> usize {
    let mut predicted = 0;
    for p in 1..=6 {
        for m in (delay * (p - 1)).max(1)..=3 * p + 1 {
            for (f, b, w) in (0..5).flat_map(|f| (0..5).flat_map(move |b| (0..5).map(move |w| (f, b, w)))) {
                if f + b + w == 0 {
                    continue;
                }
                for &comm in comms {
                    let params = fbw_params(p, m, f.into(), b.into(), w.into(), comm.into());
                    let Some(bubble) = (family.predict)(&params).and_then(|pr| pr.bubble) else {
                        continue;
                    };
                    let stats = run(family.name, &params).unwrap().stats;
                    let label = format!("{} p={p} m={m} f={f} b={b} w={w} comm={comm}", family.name);
                    assert_eq!(stats.cost - stats.ideal, bubble, "{label}");
                    assert_eq!(bubble, f64::from(p - 1) * f64::from(factor(f, b, w, comm)), "{label}");
                    predicted += 1;
                }
            }
        }
    }
    predicted
}

/// For the same families: for P ≤ 7 and M from the minimum to `max_microbatches(P)`, the
/// predicted peaks equal the simulated ones, and from M = delay·(P−1) + 1 on they are the
/// paper's (delay·(p−i) + 1)·M_B + delay·(i−1)·M_W for the 1-based worker i = d + 1.
pub(crate) fn check_predicted_peaks(family: &Family, delay: u32, max_microbatches: fn(u32) -> u32) {
    for (mem_f, mem_w) in [(1.0, 0.5), (2.0, 0.5), (3.0, 0.0), (1.0, 1.0)] {
        for p in 1..=7 {
            for m in (delay * (p - 1)).max(1)..=max_microbatches(p) {
                let params = ScheduleParams::new(p, m).with_costs(Costs {
                    mem_f,
                    mem_w: Some(mem_w),
                    ..Costs::fbw(2.0, 3.0, 1.0)
                });
                let analysis = run(family.name, &params).unwrap();
                let simulated: Vec<f64> = analysis.stats.per_device.iter().map(|d| d.peak_memory).collect();
                let predicted = (family.predict)(&params).unwrap().peak_memory.unwrap();
                let label = format!("{} p={p} m={m} mem_f={mem_f} mem_w={mem_w}", family.name);
                assert_eq!(simulated, predicted, "{label}");
                if m > delay * (p - 1) {
                    let paper: Vec<f64> = (0..p)
                        .map(|d| f64::from(delay * (p - 1 - d) + 1) * mem_f + f64::from(delay * d) * mem_w)
                        .collect();
                    assert_eq!(simulated, paper, "{label}");
                }
            }
        }
    }
}

/// For the same families: on `devices` devices `family` refuses one microbatch fewer than its
/// warm-up needs with `message` and no prediction, and takes `fewest`.
pub(crate) fn check_fewest_microbatches(family: &Family, devices: u32, fewest: u32, message: &str) {
    let too_few = ScheduleParams::new(devices, fewest - 1);
    let err = crate::generate(family.name, &too_few).unwrap_err();
    assert_eq!(err.field, crate::Field::Microbatches);
    assert_eq!(err.to_string(), message);
    assert_eq!((family.predict)(&too_few), None);
    assert!(crate::generate(family.name, &ScheduleParams::new(devices, fewest)).is_ok());
}

/// The four settings of Appendix A, in table order: microbatches and F, B, W, comm.
const SETTINGS: [(u32, [f64; 4]); 4] =
    [(8, [1.0, 1.0, 1.0, 0.0]), (12, [1.0, 1.0, 1.0, 0.0]), (8, [5.0, 6.0, 4.0, 0.0]), (12, [5.0, 6.0, 4.0, 1.0])];

/// One table row: the golden run at `SETTINGS[setting]`.
const fn row(
    setting: usize,
    (cost, makespan, bubble_rate): (f64, f64, &'static str),
    peaks: [f64; 4],
    orders: [&'static str; 4],
) -> Golden {
    let (microbatches, costs) = SETTINGS[setting];
    Golden { microbatches, costs, cost, makespan, bubble_rate, peaks, orders }
}

/// Per-device peaks of ZB-H1 and ZB-H2: the same under every cost setting.
const H1_PEAKS: [f64; 4] = [4.0, 3.5, 3.0, 2.5];
const H2_PEAKS: [f64; 4] = [7.0, 6.0, 5.0, 4.0];

/// ZB-H1's orders at 8 and 12 microbatches: the same under every cost setting.
const H1_ORDERS_8: [&str; 4] = [
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7",
    "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7",
];
const H1_ORDERS_12: [&str; 4] = [
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 F8 B5 W5 F9 B6 W6 F10 B7 W7 F11 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 F8 B6 W5 F9 B7 W6 F10 B8 W7 F11 B9 W8 B10 W9 B11 W10 W11",
    "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 F8 B7 W5 F9 B8 W6 F10 B9 W7 F11 B10 W8 B11 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 F8 B8 W5 F9 B9 W6 F10 B10 W7 F11 B11 W8 W9 W10 W11",
];

/// ZB-H2's orders at 8 and 12 microbatches: the same under every cost setting.
const H2_ORDERS_8: [&str; 4] = [
    "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 B4 W2 B5 W3 B6 W4 B7 W5 W6 W7",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 W2 W3 W4 W5 W6 W7",
];
const H2_ORDERS_12: [&str; 4] = [
    "F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 F8 B2 W2 F9 B3 W3 F10 B4 W4 F11 B5 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
    "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 W0 F7 B3 W1 F8 B4 W2 F9 B5 W3 F10 B6 W4 F11 B7 W5 B8 W6 B9 W7 B10 W8 B11 W9 W10 W11",
    "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 W0 F7 B5 W1 F8 B6 W2 F9 B7 W3 F10 B8 W4 F11 B9 W5 B10 W6 B11 W7 W8 W9 W10 W11",
    "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 W0 F7 B7 W1 F8 B8 W2 F9 B9 W3 F10 B10 W4 F11 B11 W5 W6 W7 W8 W9 W10 W11",
];

/// ZB-2p's orders, one per setting.
const P2_ORDERS: [[&str; 4]; 4] = [
    [
        "F0 F1 F2 F3 F4 F5 F6 B0 F7 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 W0 B4 W1 B5 W2 B6 W3 B7 W4 W5 W6 W7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 W0 B6 W1 B7 W2 W3 W4 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 W7",
    ],
    [
        "F0 F1 F2 F3 F4 F5 F6 B0 F7 B1 F8 B2 W0 F9 B3 B4 F10 B5 W1 F11 W2 W3 W4 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
        "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 F8 B4 F9 B5 F10 B6 W0 F11 B7 B8 W1 B9 W2 B10 W3 B11 W4 W5 W6 W7 W8 W9 W10 W11",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 F9 B7 F10 B8 F11 B9 W0 B10 W1 B11 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 F8 B8 F9 B9 F10 B10 F11 B11 W0 W1 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
    ],
    [
        "F0 F1 F2 F3 F4 F5 F6 B0 F7 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 W0 B4 W1 W2 B5 B6 W3 B7 W4 W5 W6 W7",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 W0 B6 W1 B7 W2 W3 W4 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 W7",
    ],
    [
        "F0 F1 F2 F3 F4 F5 F6 F7 B0 W0 F8 B1 W1 F9 B2 B3 F10 B4 W2 F11 W3 W4 B5 W5 B6 W6 B7 W7 B8 W8 B9 W9 B10 W10 B11 W11",
        "F0 F1 F2 F3 F4 F5 B0 F6 B1 F7 B2 F8 B3 F9 B4 W0 W1 F10 B5 B6 W2 B7 F11 B8 W3 W4 B9 W5 B10 W6 B11 W7 W8 W9 W10 W11",
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 F8 B6 F9 B7 F10 B8 W0 F11 B9 W1 B10 W2 B11 W3 W4 W5 W6 W7 W8 W9 W10 W11",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 F8 B8 F9 B9 F10 B10 F11 B11 W0 W1 W2 W3 W4 W5 W6 W7 W8 W9 W10 W11",
    ],
];

/// ZB-H1 (`zb-h1`) under the four cost settings.
pub(crate) const ZB_H1_GOLDEN: [Golden; 4] = [
    row(0, (27.0, 27.0, "0.1111"), H1_PEAKS, H1_ORDERS_8),
    row(1, (39.0, 39.0, "0.0769"), H1_PEAKS, H1_ORDERS_12),
    row(2, (141.0, 141.0, "0.1489"), H1_PEAKS, H1_ORDERS_8),
    row(3, (213.0, 213.0, "0.1549"), H1_PEAKS, H1_ORDERS_12),
];
/// ZB-H2 (`zb-h2`) under the four cost settings.
pub(crate) const ZB_H2_GOLDEN: [Golden; 4] = [
    row(0, (24.0, 27.0, "0.0000"), H2_PEAKS, H2_ORDERS_8),
    row(1, (36.0, 39.0, "0.0000"), H2_PEAKS, H2_ORDERS_12),
    row(2, (129.0, 135.0, "0.0698"), H2_PEAKS, H2_ORDERS_8),
    row(3, (195.0, 198.0, "0.0769"), H2_PEAKS, H2_ORDERS_12),
];
/// ZB-1p (`zb-1p`) under the four cost settings: at every one the authors' `zb.py` gives
/// exactly ZB-H1's orders, times and peaks.
pub(crate) const ZB_1P_GOLDEN: [Golden; 4] = ZB_H1_GOLDEN;
/// ZB-2p (`zb-2p`) under the four cost settings.
pub(crate) const ZB_2P_GOLDEN: [Golden; 4] = [
    row(0, (24.0, 27.0, "0.0000"), [7.5, 6.5, 5.5, 4.5], P2_ORDERS[0]),
    row(1, (36.0, 39.0, "0.0000"), [8.0, 8.0, 7.5, 6.5], P2_ORDERS[1]),
    row(2, (126.0, 135.0, "0.0476"), [7.5, 6.5, 5.5, 4.5], P2_ORDERS[2]),
    row(3, (184.0, 198.0, "0.0217"), [8.0, 8.0, 7.0, 6.5], P2_ORDERS[3]),
];
