//! Presets: published setups, reproduced exactly.

use crate::params::{Costs, ScheduleParams};

/// A named setup: a family, its parameters and families to compare it with.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Stable key (used in URLs and by the CLI).
    pub key: &'static str,
    /// Display name.
    pub title: &'static str,
    /// Where it comes from.
    pub source: &'static str,
    /// Main family.
    pub schedule: &'static str,
    /// Families stacked below.
    pub compare: &'static [&'static str],
    /// Sizes and costs.
    pub params: ScheduleParams,
}

/// One row of the Zero Bubble paper's Table 6 with the model shape of its Table 3: times in
/// µs, activation memory per token from §1.2 (`mem_f = 34h + 5as`, `mem_w = 32h`, s = 1024).
// The arguments are the columns of the paper's tables, in their order.
#[allow(clippy::too_many_arguments)]
fn zb_model(
    devices: u32,
    microbatches: u32,
    f: f64,
    b: f64,
    w: f64,
    comm: f64,
    hidden: f64,
    heads: f64,
) -> ScheduleParams {
    let seq = 1024.0;
    ScheduleParams {
        costs: Costs {
            trade: None,
            f,
            b,
            w,
            comm,
            links: None,
            overlap: None,
            mem_f: 34.0 * hidden + 5.0 * heads * seq,
            mem_w: Some(32.0 * hidden),
            profile: None,
            vocab: None,
            p2p: crate::params::P2p::Async,
            split_vocab: None,
        },
        ..ScheduleParams::new(devices, microbatches)
    }
}

/// Every preset, in menu order.
pub fn presets() -> Vec<Preset> {
    const ZB: &[&str] = &["1f1b", "zb-h1", "zb-h2", "zb-1p"];
    vec![
        Preset {
            key: "zb-1.5b",
            title: "Zero Bubble · 1.5B model, 8 GPUs",
            source: "Qi et al. ICLR 2024, Tables 3, 5 and 6 (first row)",
            schedule: "zb-2p",
            compare: ZB,
            params: zb_model(8, 24, 18522.0, 18086.0, 9337.0, 601.0, 2304.0, 24.0),
        },
        Preset {
            key: "zb-6.2b",
            title: "Zero Bubble · 6.2B model, 8 GPUs",
            source: "Qi et al. ICLR 2024, Tables 3 and 6",
            schedule: "zb-2p",
            compare: ZB,
            params: zb_model(8, 24, 29718.0, 29444.0, 19927.0, 527.0, 4096.0, 32.0),
        },
        Preset {
            key: "zb-14.6b",
            title: "Zero Bubble · 14.6B model, 16 GPUs",
            source: "Qi et al. ICLR 2024, Tables 3 and 6",
            schedule: "zb-2p",
            compare: ZB,
            params: zb_model(16, 48, 11347.0, 11248.0, 8132.0, 377.0, 5120.0, 40.0),
        },
        Preset {
            key: "zb-28.3b",
            title: "Zero Bubble · 28.3B model, 32 GPUs",
            source: "Qi et al. ICLR 2024, Tables 3 and 6",
            schedule: "zb-2p",
            compare: ZB,
            params: zb_model(32, 96, 10419.0, 10207.0, 7715.0, 408.0, 6144.0, 48.0),
        },
        Preset {
            key: "dualpipe-figure",
            title: "DualPipe · 8 devices, 20 microbatches",
            source: "DeepSeek-V3 report, DualPipe figure (F 1, full backward 2, W 1, F&B 3)",
            schedule: "dualpipe",
            compare: &["1f1b", "zb-1p"],
            params: ScheduleParams::new(8, 20).with_costs(Costs { overlap: Some(3.0), ..Costs::fbw(1.0, 1.0, 1.0) }),
        },
        Preset {
            key: "dualpipev-figure",
            title: "DualPipeV · 4 devices, 10 microbatches",
            source: "deepseek-ai/DualPipe README; PyTorch's DualPipeV test schedule",
            schedule: "dualpipe-v",
            compare: &["zb-v"],
            params: ScheduleParams::new(4, 10).with_costs(Costs { overlap: Some(6.0), ..Costs::fbw(2.0, 2.0, 2.0) }),
        },
        Preset {
            key: "v-schedules",
            title: "Controllable memory · V-Min, V-Half, V-ZB",
            source: "Qi et al. NeurIPS 2024, p = 4, m = 8, unit chunk costs",
            schedule: "v-half",
            compare: &["1f1b", "v-min", "zb-v"],
            params: ScheduleParams::new(4, 8).with_costs(Costs { mem_w: Some(1.0), ..Costs::fbw(2.0, 2.0, 2.0) }),
        },
        Preset {
            key: "zb-readme",
            title: "Zero Bubble README · p = 4, m = 8",
            source: "sail-sg/zero-bubble-pipeline-parallelism README",
            schedule: "zb-h1",
            compare: &["1f1b", "zb-h2"],
            params: ScheduleParams::new(4, 8),
        },
    ]
}

/// The preset called `key`.
pub fn preset(key: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_name_real_families_and_valid_parameters() {
        for p in presets() {
            assert!(crate::family(p.schedule).is_some(), "{}", p.key);
            for c in p.compare {
                assert!(crate::family(c).is_some(), "{} compares {c}", p.key);
            }
            p.params.check_common().unwrap();
        }
    }

    #[test]
    fn the_one_f_one_b_baseline_of_the_1_5b_preset_matches_table_5() {
        let p = preset("zb-1.5b").unwrap();
        let a = crate::run("1f1b", &p.params).unwrap();
        assert_eq!(format!("{:.4}", a.stats.bubble_rate), "0.2431");
    }
}
