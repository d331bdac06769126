//! Shared machinery of the two-chunk V-placement families (`zb-v`, `zb-v-handcrafted`,
//! `1f1b-v`).
//!
//! All three place the model on [`Placement::v_shape`]: model chunk 0 runs down the devices
//! (global stages `0..P`), model chunk 1 comes back up (stages `P..2P`), so device `d` holds
//! stage `d` and stage `2P-1-d`. The generators think in (device, model chunk) and name passes
//! through [`VPass`].

use crate::schedule::{Pass, PassKind, Placement};

/// Which half of the V a pass belongs to: the model chunk, as in the golden notation
/// (upper case = [`Chunk::Down`], lower case = [`Chunk::Up`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Chunk {
    /// Model chunk 0: stages `0..P`, device 0 to device `P-1`.
    Down,
    /// Model chunk 1: stages `P..2P`, device `P-1` back to device 0 (holds the loss).
    Up,
}

impl Chunk {
    /// The model chunk index, 0 or 1.
    pub(super) fn index(self) -> usize {
        match self {
            Chunk::Down => 0,
            Chunk::Up => 1,
        }
    }

    /// The global stage of this chunk on `device` in a V over `devices` devices.
    pub(super) fn stage(self, devices: u32, device: u32) -> u32 {
        match self {
            Chunk::Down => device,
            Chunk::Up => 2 * devices - 1 - device,
        }
    }
}

/// Index of a split-backward pass kind in per-kind counters: F 0, B 1, W 2 (a fused BW
/// counts as B, a recompute as F; the vocabulary passes, which these generators never place,
/// as their layer's forward or backward).
pub(super) fn fbw_index(kind: PassKind) -> usize {
    match kind {
        PassKind::F | PassKind::R | PassKind::S | PassKind::IF => 0,
        PassKind::B | PassKind::BW | PassKind::T | PassKind::IB => 1,
        PassKind::W => 2,
    }
}

/// Names the passes of a V over a fixed number of devices.
#[derive(Clone, Copy, Debug)]
pub(super) struct VPass {
    /// Number of devices `P`.
    pub(super) devices: u32,
}

impl VPass {
    /// The pass of `kind` for `microbatch` on `device`'s stage of `chunk`.
    pub(super) fn on(self, kind: PassKind, chunk: Chunk, device: u32, microbatch: u32) -> Pass {
        Pass::new(kind, chunk.stage(self.devices, device), microbatch)
    }

    /// The V placement these passes live on.
    pub(super) fn placement(self) -> Placement {
        Placement::v_shape(self.devices)
    }
}

/// Helpers shared by the V families' tests: the reference settings of zero-bubble.md §9.2 and
/// Appendix A, and comparisons against golden orders.
#[cfg(test)]
pub(super) mod testing {
    use crate::families::appendix_a::Orders;
    use crate::params::{CostProfile, Costs, ScheduleParams};
    use crate::schedule::Schedule;
    use crate::{run, Analysis};
    use proptest::test_runner::{Config, TestRunner};
    use std::ops::{Range, RangeInclusive};

    /// One of the four p=4 settings of Appendix A, in CLI units (each V chunk runs at half).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Setting {
        /// Microbatches.
        pub(crate) microbatches: u32,
        /// CLI F, B, W (twice the papers' per-chunk costs).
        pub(crate) fbw: (f64, f64, f64),
        /// Communication per hop.
        pub(crate) comm: f64,
    }

    impl Setting {
        /// Per-chunk costs 1,1,1 (CLI 2,2,2), no communication.
        pub(crate) const fn unit(microbatches: u32) -> Setting {
            Setting { microbatches, fbw: (2.0, 2.0, 2.0), comm: 0.0 }
        }

        /// Per-chunk costs 5,6,4 (CLI 10,12,8) with `comm` per hop.
        pub(crate) const fn uneven(microbatches: u32, comm: f64) -> Setting {
            Setting { microbatches, fbw: (10.0, 12.0, 8.0), comm }
        }

        /// The parameters on 4 devices, default memory.
        pub(crate) fn params(self) -> ScheduleParams {
            let (f, b, w) = self.fbw;
            ScheduleParams::new(4, self.microbatches).with_costs(Costs { comm: self.comm, ..Costs::fbw(f, b, w) })
        }
    }

    /// Runs `family` and panics with the error text if it fails.
    pub(crate) fn run_ok(family: &str, params: &ScheduleParams) -> Analysis {
        run(family, params).unwrap_or_else(|e| panic!("{family} {params:?}: {e}"))
    }

    /// Asserts every device's order equals the golden line, pass for pass.
    pub(crate) fn assert_orders(schedule: &Schedule, golden: &[&str]) {
        assert_eq!(schedule.devices() as usize, golden.len());
        for (device, expected) in golden.iter().enumerate() {
            assert_eq!(schedule.notation(device as u32), *expected, "device {device}");
        }
    }

    /// The four p=4 settings of Appendix A, in its table order: unit costs at 8 and 12
    /// microbatches, then per-chunk 5,6,4 at 8 and at 12 with communication 1.
    pub(crate) const APPENDIX_A: [Setting; 4] =
        [Setting::unit(8), Setting::unit(12), Setting::uneven(8, 0.0), Setting::uneven(12, 1.0)];

    /// Asserts `family` reproduces, in each [`APPENDIX_A`] setting, the golden orders of devices
    /// 0..4 and the cost (max span).
    pub(crate) fn assert_golden(family: &str, orders: [Orders; 4], costs: [f64; 4]) {
        for ((setting, orders), cost) in APPENDIX_A.into_iter().zip(orders).zip(costs) {
            let a = run_ok(family, &setting.params());
            assert_orders(&a.schedule, &orders);
            assert_eq!(a.stats.cost, cost, "{family} {setting:?}");
        }
    }

    /// Asserts `family`'s bubble rate in each setting, to the paper's four decimals.
    pub(crate) fn assert_bubble_rates(family: &str, rates: &[(Setting, &str)]) {
        for (setting, rate) in rates {
            let simulated = run_ok(family, &setting.params()).stats.bubble_rate;
            assert_eq!(format!("{simulated:.4}"), *rate, "{family} {setting:?}");
        }
    }

    /// The per-device peaks of an analysis.
    pub(crate) fn peaks(analysis: &Analysis) -> Vec<f64> {
        analysis.stats.per_device.iter().map(|d| d.peak_memory).collect()
    }

    /// Parameters with every piece at F = B = W = 1 and the given per-piece activation memory
    /// (`mem-w = mem-f/2`), one piece per device unless the list is longer.
    pub(crate) fn unequal_memory(devices: u32, microbatches: u32, mem_f: &[f64]) -> ScheduleParams {
        let n = mem_f.len();
        let profile = CostProfile {
            f: vec![1.0; n],
            b: vec![1.0; n],
            w: vec![1.0; n],
            mem_f: mem_f.to_vec(),
            mem_w: mem_f.iter().map(|m| m / 2.0).collect(),
            a2a_f: Vec::new(),
            a2a_b: Vec::new(),
            finer: Vec::new(),
        };
        ScheduleParams::new(devices, microbatches).with_costs(Costs::default().with_profile(profile, devices))
    }

    /// The property every memory-aware family keeps with unequal per-stage memory: it
    /// generates at its default limit, and under the explicit limit `scale` × that default
    /// (when it generates at all) no device's simulated peak exceeds it.
    pub(crate) fn assert_keeps_limits(family: &str, params: &ScheduleParams, scale: f64) {
        let entry = crate::registry::family(family).expect("a family");
        let default =
            entry.option(crate::Field::MemLimit).and_then(|o| o.default_value(params)).expect("a memory-aware family");
        let at_default = run_ok(family, params);
        let peak = at_default.stats.peak_memory;
        assert!(peak <= default * (1.0 + 1e-9), "{family}: peak {peak} above its default limit {default}: {params:?}");
        let limit = default * scale;
        match run(family, &params.clone().with_mem_limit(limit)) {
            Ok(analysis) => {
                let peak = analysis.stats.peak_memory;
                assert!(peak <= limit * (1.0 + 1e-9), "{family}: peak {peak} above mem-limit {limit}: {params:?}");
            }
            // Too little memory is a parameter error, never a broken schedule.
            Err(crate::AnalyzeError::Param(_)) => {}
            Err(e) => panic!("{family} at mem-limit {limit}: {e}: {params:?}"),
        }
    }

    /// The property of [`assert_keeps_limits`] for each of `families` on `cases` random cases
    /// (proptest, shrunk on failure): sizes from `devices` and `microbatches`, each device's
    /// activation memory cycled from a list of one to three values in 1..=8 ([`unequal_memory`]),
    /// explicit limits `scale` × the default. The families of `fixed` set their own limit:
    /// they only have to generate.
    pub(crate) fn check_limits_with_unequal_memory(
        families: &[&str],
        fixed: &[&str],
        devices: RangeInclusive<u32>,
        microbatches: RangeInclusive<u32>,
        scale: Range<f64>,
        cases: u32,
    ) {
        let strategy = (devices, microbatches, proptest::collection::vec(1u32..=8, 1..=3usize), scale);
        let mut runner = TestRunner::new(Config { source_file: Some(file!()), ..crate::proptest_cases(cases) });
        let result = runner.run(&strategy, |(devices, microbatches, mem_f, scale)| {
            let pieces: Vec<f64> = (0..devices as usize).map(|i| f64::from(mem_f[i % mem_f.len()])).collect();
            let params = unequal_memory(devices, microbatches, &pieces);
            for family in families {
                assert_keeps_limits(family, &params, scale);
            }
            for family in fixed {
                run_ok(family, &params);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{families:?} with unequal per-stage memory: {e}");
        }
    }

    /// Costs whose W keeps everything F stored (`mem-w = mem-f`): the papers' "in flight"
    /// peaks of §9.2, F +1 and W (or BW) −1.
    pub(crate) fn held_until_w(costs: Costs) -> Costs {
        Costs { mem_w: Some(costs.mem_f), ..costs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_map_to_the_v_stages() {
        let v = VPass { devices: 4 };
        assert_eq!(v.on(PassKind::F, Chunk::Down, 1, 3), Pass::f(1, 3));
        assert_eq!(v.on(PassKind::B, Chunk::Up, 1, 3), Pass::b(6, 3));
        let placement = v.placement();
        for device in 0..4 {
            for chunk in [Chunk::Down, Chunk::Up] {
                let stage = chunk.stage(4, device);
                assert_eq!(placement.device_of(stage), Some(device));
                assert_eq!(placement.chunk_of(stage) as usize, chunk.index());
            }
        }
    }
}
