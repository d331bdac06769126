//! The MoE and MLA cost model against independent counts: `tools/moe_count.py`'s output
//! (stored as `tests/golden/moe-count.json`, made by that script from
//! `tests/fixtures/moe/configs.json`) and the model cards' quoted totals.

use serde_json::Value;

use super::presets::model_preset;
use super::{roofline, Model};
use crate::error::Field;

const GOLDEN: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden/moe-count.json"));
const CONFIGS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/moe/configs.json"));

/// The MoE presets, each named as in the golden and the configs.
const PRESETS: [&str; 4] = ["deepseek-v3", "qwen3-235b-a22b", "mixtral-8x7b", "olmoe-1b-7b"];

/// Parameters the script counts and the cost model leaves out (router biases, Qwen3's and
/// OLMoE's query/key norms) stay under this share of a total.
const PARAMS_TOLERANCE: f64 = 1e-4;
/// The FLOPs are the same sums of the same GEMMs: equal to rounding.
const FLOPS_TOLERANCE: f64 = 1e-9;

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

fn golden(id: &str) -> Value {
    let all: Value = serde_json::from_str(GOLDEN).expect("golden JSON");
    all.as_array().expect("a list").iter().find(|r| r["id"] == id).cloned().unwrap_or_else(|| panic!("{id} in golden"))
}

fn model(key: &str) -> Model {
    model_preset(key).unwrap_or_else(|| panic!("preset {key}")).model
}

#[test]
fn parameters_and_flops_per_token_equal_the_independent_count() {
    for key in PRESETS {
        let (m, g) = (model(key), golden(key));
        assert_eq!(g["seq"].as_u64(), Some(u64::from(m.seq)), "{key}: the golden's sequence length");
        let n = |k: &str| g[k].as_f64().unwrap_or_else(|| panic!("{key}: {k}"));
        let c = m.param_count();
        for (what, got, want, tol) in [
            ("params_total", c.total, n("params_total"), PARAMS_TOLERANCE),
            ("params_active", c.active, n("params_active"), PARAMS_TOLERANCE),
            ("mtp_params", c.mtp_total, n("mtp_params"), PARAMS_TOLERANCE),
        ] {
            let off = if want == 0.0 { got } else { rel(got, want) };
            assert!(off <= tol, "{key} {what}: {got} against {want} ({off:.2e} off, tolerance {tol:.0e})");
        }
        let f = m.flops_per_token();
        assert!(rel(f.forward, n("forward_flops_per_token_full")) < FLOPS_TOLERANCE, "{key} forward {}", f.forward);
        assert!(rel(f.matmuls, n("matmul_flops_per_token")) < FLOPS_TOLERANCE, "{key} matmuls {}", f.matmuls);
    }
}

#[test]
fn parameters_are_within_the_model_cards_quoted_totals() {
    // Total within 1%; active within 2.5%: DeepSeek-V3's card says 36.7B "including" the
    // embedding and head, which count to 37.55B (`docs/notes/moe-oracles.md`).
    let configs: Value = serde_json::from_str(CONFIGS).expect("configs JSON");
    for entry in configs["models"].as_array().expect("models") {
        let key = entry["id"].as_str().expect("id");
        let card = &entry["model_card"];
        let stated = |k: &str| card[k]["value"].as_f64().unwrap_or_else(|| panic!("{key}: card {k}"));
        let c = model(key).param_count();
        assert!(
            rel(c.total, stated("total_params")) < 0.01,
            "{key}: total {} against {}",
            c.total,
            stated("total_params")
        );
        let active = stated("active_params");
        assert!(rel(c.active, active) < 0.025, "{key}: active {} against {active}", c.active);
    }
    // The report's round figures: DeepSeek-V3 671B total, 37B active.
    let c = model("deepseek-v3").param_count();
    assert!(rel(c.total, 671e9) < 0.001 && rel(c.active, 37e9) < 0.02, "{c:?}");
}

#[test]
fn mla_is_priced_as_its_own_gemms_not_as_mha() {
    // Each MLA weight the script counts, over the 61 layers, is one of the shapes priced.
    let (m, g) = (model("deepseek-v3"), golden("deepseek-v3"));
    let terms = &g["terms_total"];
    let layers = f64::from(m.layers);
    let mla: f64 =
        ["mla_q_down", "mla_q_up", "mla_kv_down", "mla_kv_up", "mla_out", "mla_q_down_norm", "mla_kv_down_norm"]
            .iter()
            .map(|k| terms[*k].as_f64().unwrap_or_else(|| panic!("{k}")))
            .sum();
    assert!(rel(m.attention_params() * layers, mla) < 1e-12, "{} against {mla}", m.attention_params() * layers);
    // As 128-head MHA of head width 128 it would be 4·H·128·128 a layer, 2.5 times more.
    let mha = Model { mla: super::Mla::default(), head_dim: Some(128), ..m.clone() };
    assert!(mha.attention_params() > 2.0 * m.attention_params());
    let matmul_f = |m: &Model| roofline::flops(&m.moe_layer_ops())[roofline::F];
    assert!(matmul_f(&mha) > matmul_f(&m));
}

#[test]
fn expert_parallelism_splits_the_expert_weights_not_the_flops() {
    let one = Model { dp: 64, moe: super::Moe { ep: 1, ..model("deepseek-v3").moe }, ..model("deepseek-v3") };
    let ep = Model { moe: super::Moe { ep: 64, ..one.moe.clone() }, ..one.clone() };
    let (h, w) = (7168.0, 1.5 * 2048.0);
    let routed = 256.0 * 2.0 * h * w;
    assert!(rel(one.moe_layer_params() - ep.moe_layer_params(), routed * (1.0 - 1.0 / 64.0)) < 1e-12);
    assert_eq!(roofline::flops(&one.moe_layer_ops()), roofline::flops(&ep.moe_layer_ops()));
    // Per piece, the parameters follow: the whole model on one device holds 64 times the experts.
    let p1 = one.derive(1).unwrap().pieces[0].params;
    let p64 = ep.derive(1).unwrap().pieces[0].params;
    assert!(rel(p1 - p64, 58.0 * routed * (1.0 - 1.0 / 64.0)) < 1e-9, "{p1} {p64}");
}

#[test]
fn the_all_to_all_is_timed_on_the_ep_groups_link_and_added_to_f_and_b() {
    let base = model("mixtral-8x7b");
    assert_eq!(base.a2a_micros(4).unwrap(), [0.0; 3], "EP 1 sends nothing");
    let within = Model { dp: 8, moe: super::Moe { ep: 8, ..base.moe.clone() }, ..base.clone() };
    assert!(!within.ep_crosses_nodes(4));
    let across = Model { tp: 2, ..within.clone() };
    assert!(across.ep_crosses_nodes(4), "TP 2 × EP 8 spans 16 GPUs");
    let spread = Model { rank_order: super::RankOrder::TpPpDp, ..within.clone() };
    assert!(spread.ep_crosses_nodes(4), "tp-pp-dp puts the replicas 4 devices apart");
    // 2 (top-2) × 4096 tokens × 4096 hidden, 7/8 of it leaving, 2 bytes, dispatch and combine.
    let gpu = within.gpu().unwrap();
    let gbps = super::parallel::collective_gbps(gpu, None, false);
    let bytes = 2.0 * 4096.0 * 4096.0 * 7.0 / 8.0 * 2.0;
    let want = 2.0 * (bytes / (gbps * 1e9) * 1e6 + crate::model::COLLECTIVE_LATENCY_US);
    let [f, b, w] = within.a2a_micros(4).unwrap();
    assert!(rel(f, want) < 1e-12 && f == b && w == 0.0, "{f} {want}");
    let (d0, d1) = (base.derive(4).unwrap(), within.derive(4).unwrap());
    for (p0, p1) in d0.pieces.iter().zip(&d1.pieces) {
        let x = f64::from(p1.piece.layers);
        assert!(rel(p1.a2a[0], x * f) < 1e-12 && rel(p1.a2a[1], x * b) < 1e-12);
        // The rest is the compute, no slower with fewer expert weights to read.
        assert!(p1.f - p1.a2a[0] <= p0.f * (1.0 + 1e-12) && p1.b - p1.a2a[1] <= p0.b * (1.0 + 1e-12) && p1.w <= p0.w);
        assert!(p1.f - p1.a2a[0] > 0.9 * p0.f);
    }
}

#[test]
fn dense_layers_stay_dense_and_the_capacity_factor_scales_the_routed_work() {
    let m = model("deepseek-v3");
    assert_eq!((m.moe_layers_in(0, 4), m.moe_layers_in(4, 4), m.moe_layers_in(60, 1)), (1, 4, 1));
    let d = m.derive(16).unwrap();
    let first = &d.pieces[0];
    assert_eq!(first.piece.layers, 4);
    assert!(first.a2a[0] > 0.0 && rel(first.a2a[0], d.a2a[0]) < 1e-12, "one MoE layer of four");
    let cf = Model { moe: super::Moe { capacity_factor: Some(1.25), ..m.moe.clone() }, ..m.clone() };
    let routed = |m: &Model| m.routed_share();
    assert!(rel(routed(&cf), 1.25 * routed(&m)) < 1e-12);
    assert!(roofline::flops(&cf.moe_layer_ops())[0] > roofline::flops(&m.moe_layer_ops())[0]);
    assert!(rel(cf.a2a_micros(16).unwrap()[0] - 10.0, 1.25 * (m.a2a_micros(16).unwrap()[0] - 10.0)) < 1e-9);
}

#[test]
fn bad_moe_and_mla_settings_name_the_setting_with_a_hint() {
    let moe = model("mixtral-8x7b");
    let dense = model("llama-3-8b");
    let cases = [
        (
            Model { moe: super::Moe { top_k: Some(9), ..moe.moe.clone() }, ..moe.clone() },
            Field::TopK,
            "top-k 9 is more than the 8 experts",
        ),
        (
            Model { dp: 3, moe: super::Moe { ep: 3, ..moe.moe.clone() }, ..moe.clone() },
            Field::Ep,
            "ep 3 does not divide the 8 experts",
        ),
        (
            Model { moe: super::Moe { ep: 4, ..moe.moe.clone() }, ..moe.clone() },
            Field::Ep,
            "ep 4 does not divide the 1 data-parallel",
        ),
        (
            Model { moe: super::Moe { expert_ffn: Some(2048), ..dense.moe.clone() }, ..dense.clone() },
            Field::ExpertFfn,
            "expert-ffn is set but the model has no experts",
        ),
        (
            Model { mla: super::Mla { qk_rope_dim: Some(64), ..super::Mla::default() }, ..dense.clone() },
            Field::QkRopeDim,
            "--kv-lora-rank is not set",
        ),
        (
            Model { moe: super::Moe { dense_layers: 40, ..moe.moe.clone() }, ..moe.clone() },
            Field::DenseLayers,
            "dense-layers 40 is more than the 32 layers",
        ),
    ];
    for (m, field, says) in cases {
        let e = m.check().unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(says), "{}", e.message);
        assert!(!e.hints.is_empty(), "{e}");
    }
}

#[test]
fn the_steps_mean_layer_counts_the_routed_experts() {
    // Dense models keep the formula the step always used.
    let dense = model("llama-3-8b");
    assert_eq!(dense.mean_layer_forward_flops(), dense.layer_flops()[0]);
    // OLMoE: every layer MoE, a token through 8 experts of 1024, not one dense MLP of 1024.
    let m = model("olmoe-1b-7b");
    let tokens = f64::from(m.seq * m.micro_batch);
    let f = m.flops_per_token();
    let head = 2.0 * f64::from(m.hidden) * f64::from(m.vocab);
    let want = (f.forward - head) * tokens / f64::from(m.layers);
    assert!(rel(m.mean_layer_forward_flops(), want) < 1e-9, "{} {want}", m.mean_layer_forward_flops());
    assert!(m.mean_layer_forward_flops() > 2.0 * m.layer_flops()[0]);
}

/// DualPipe's overlapped F&B pairs hide each pass's expert-parallel all-to-all behind the other
/// pass's compute: with EP over the node the step is shorter than the same passes with their
/// communication exposed (the profile's all-to-all cleared), and each pair takes exactly the
/// longer of its compute and its communication.
#[test]
fn dualpipe_pairs_hide_the_all_to_all_in_their_phases() {
    let mut m = model("mixtral-8x7b");
    m.dp = 8;
    m.moe.ep = 8;
    let derived = m.derive(4).unwrap();
    let costs = derived.costs();
    let profile = costs.profile.clone().unwrap();
    assert!(profile.a2a_f.iter().all(|&a| a > 0.0) && profile.a2a_b.iter().all(|&a| a > 0.0));
    // The same profile, its finer cuts too, with no all-to-all phases.
    fn without_a2a(p: &crate::CostProfile) -> crate::CostProfile {
        crate::CostProfile {
            a2a_f: Vec::new(),
            a2a_b: Vec::new(),
            finer: p.finer.iter().map(|f| std::sync::Arc::new(without_a2a(f))).collect(),
            ..p.clone()
        }
    }
    let exposed = crate::Costs { profile: Some(std::sync::Arc::new(without_a2a(&profile))), ..costs.clone() };
    for family in ["dualpipe", "dualpipe-v"] {
        let run = |c: &crate::Costs| {
            crate::registry::run(family, &crate::ScheduleParams::new(4, 16).with_costs(c.clone())).unwrap()
        };
        let (hidden, shown) = (run(&costs), run(&exposed));
        assert!(
            hidden.stats.cost < shown.stats.cost * 0.99,
            "{family}: {} against {}",
            hidden.stats.cost,
            shown.stats.cost
        );
        let stages = crate::StageCosts::for_schedule(&costs, &hidden.schedule);
        let mut pairs = 0;
        for order in &hidden.schedule.orders {
            for op in order {
                if let crate::Op::Pair(f, b) = *op {
                    let a2a = stages.a2a[f.stage as usize][0] + stages.a2a[b.stage as usize][1];
                    let sum = stages.pass(f) + stages.pass(b);
                    assert_eq!(stages.op(op), (sum - a2a).max(a2a));
                    assert!(stages.op(op) < sum);
                    pairs += 1;
                }
            }
        }
        assert!(pairs > 0, "{family} overlaps pairs");
    }
}
