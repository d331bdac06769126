//! Test data shared by the linear Zero Bubble families: the p = 4 golden runs of
//! `zero-bubble.md` Appendix A (their orders in [`crate::families::appendix_a`]), produced by
//! running the authors' generators (ZB-H1/H2 from `efficiency.py`, ZB-1p/2p from `zb.py`) and
//! their ASAP simulator. ZB-1p/2p there use mem_f = 2, mem_b = −1, mem_w = −1 and a limit of
//! k·p·2: in our units mem-f 1, mem-w 0.5 (the defaults) and a limit of P or 2P. `peaks` is the
//! reference's "peak with M_W = M_B/2" line.

use super::Family;
use crate::families::appendix_a::{
    Orders, ZB_2P_UNEVEN_COMM_M12, ZB_2P_UNEVEN_M8, ZB_2P_UNIT_M12, ZB_2P_UNIT_M8, ZB_H1_M12, ZB_H1_M8, ZB_H2_M12,
    ZB_H2_M8,
};
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
    pub orders: Orders,
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
    orders: Orders,
) -> Golden {
    let (microbatches, costs) = SETTINGS[setting];
    Golden { microbatches, costs, cost, makespan, bubble_rate, peaks, orders }
}

/// Per-device peaks of ZB-H1 and ZB-H2: the same under every cost setting.
const H1_PEAKS: [f64; 4] = [4.0, 3.5, 3.0, 2.5];
const H2_PEAKS: [f64; 4] = [7.0, 6.0, 5.0, 4.0];

/// ZB-H1 (`zb-h1`) under the four cost settings.
pub(crate) const ZB_H1_GOLDEN: [Golden; 4] = [
    row(0, (27.0, 27.0, "0.1111"), H1_PEAKS, ZB_H1_M8),
    row(1, (39.0, 39.0, "0.0769"), H1_PEAKS, ZB_H1_M12),
    row(2, (141.0, 141.0, "0.1489"), H1_PEAKS, ZB_H1_M8),
    row(3, (213.0, 213.0, "0.1549"), H1_PEAKS, ZB_H1_M12),
];
/// ZB-H2 (`zb-h2`) under the four cost settings.
pub(crate) const ZB_H2_GOLDEN: [Golden; 4] = [
    row(0, (24.0, 27.0, "0.0000"), H2_PEAKS, ZB_H2_M8),
    row(1, (36.0, 39.0, "0.0000"), H2_PEAKS, ZB_H2_M12),
    row(2, (129.0, 135.0, "0.0698"), H2_PEAKS, ZB_H2_M8),
    row(3, (195.0, 198.0, "0.0769"), H2_PEAKS, ZB_H2_M12),
];
/// ZB-1p (`zb-1p`) under the four cost settings: at every one the authors' `zb.py` gives
/// exactly ZB-H1's orders, times and peaks.
pub(crate) const ZB_1P_GOLDEN: [Golden; 4] = ZB_H1_GOLDEN;
/// ZB-2p (`zb-2p`) under the four cost settings.
pub(crate) const ZB_2P_GOLDEN: [Golden; 4] = [
    row(0, (24.0, 27.0, "0.0000"), [7.5, 6.5, 5.5, 4.5], ZB_2P_UNIT_M8),
    row(1, (36.0, 39.0, "0.0000"), [8.0, 8.0, 7.5, 6.5], ZB_2P_UNIT_M12),
    row(2, (126.0, 135.0, "0.0476"), [7.5, 6.5, 5.5, 4.5], ZB_2P_UNEVEN_M8),
    row(3, (184.0, 198.0, "0.0217"), [8.0, 8.0, 7.0, 6.5], ZB_2P_UNEVEN_COMM_M12),
];

/// Every linear Zero Bubble family against its golden runs: orders pass for pass, cost,
/// makespan, bubble rate and per-device peaks.
#[test]
fn every_family_matches_its_golden_runs() {
    let families =
        [("zb-h1", &ZB_H1_GOLDEN), ("zb-h2", &ZB_H2_GOLDEN), ("zb-1p", &ZB_1P_GOLDEN), ("zb-2p", &ZB_2P_GOLDEN)];
    for (family, goldens) in families {
        assert_goldens(family, goldens);
    }
}
