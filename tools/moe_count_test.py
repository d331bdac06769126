#!/usr/bin/env python3
"""Tests of tools/moe_count.py: python3 tools/moe_count_test.py (standard library only).

Three kinds of check:
- against the model cards and DeepSeek's own FLOP figure (the real thing);
- against closed forms written here, term by term, so a dropped or misshaped term fails;
- bad input: an `error:` and a `hint:`, exit status 2.
"""

import copy
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import moe_count  # noqa: E402

CONFIGS = moe_count.DEFAULT_CONFIGS
with open(CONFIGS) as f:
    DATA = json.load(f)
MODELS = {m["id"]: m for m in DATA["models"]}


def config(model_id):
    return moe_count.plain_config(MODELS[model_id])


def counted(model_id, seq=4096):
    return moe_count.count(MODELS[model_id], seq)


def with_config(model_id, **changes):
    entry = copy.deepcopy(MODELS[model_id])
    for k, v in changes.items():
        entry["config"][k] = {"value": v}
    return entry


def pct(a, b):
    return 100.0 * abs(a - b) / b


class AgainstModelCards(unittest.TestCase):
    """Totals and activated parameters as the model cards state them."""

    def test_totals_within_half_a_percent(self):
        for mid, m in MODELS.items():
            stated = m["model_card"]["total_params"]["value"]
            self.assertLess(pct(counted(mid)["params_total"], stated), 0.5, mid)

    def test_deepseek_v3_total_is_671b_to_the_stated_digit(self):
        self.assertEqual(round(counted("deepseek-v3")["params_total"] / 1e9), 671)

    def test_active_within_one_percent_where_the_card_has_three_digits(self):
        for mid in ("qwen3-235b-a22b", "mixtral-8x7b"):
            stated = MODELS[mid]["model_card"]["active_params"]["value"]
            self.assertLess(pct(counted(mid)["params_active"], stated), 1.0, mid)

    def test_olmoe_active_rounds_to_the_readme_figure(self):
        got = counted("olmoe-1b-7b")["params_active"]
        self.assertEqual(round(got / 1e8), 13)  # "1.3 billion active"

    def test_qwen3_non_embedding_rounds_to_234b(self):
        self.assertEqual(round(counted("qwen3-235b-a22b")["params_non_embedding"] / 1e9), 234)

    def test_deepseek_v3_embedding_is_the_stated_0_9b(self):
        self.assertEqual(round(counted("deepseek-v3")["terms_total"]["embedding"] / 1e8), 9)

    def test_deepseek_v3_mtp_within_one_percent_of_11_5b(self):
        self.assertLess(pct(counted("deepseek-v3")["mtp_params"], 11.5e9), 1.0)

    def test_deepseek_v3_training_flops_match_deepseeks_table(self):
        # "Insights into DeepSeek-V3" Table 2: 250 GFLOPS per token at sequence length 4096.
        ref = MODELS["deepseek-v3"]["training_flops_reference"]
        got = counted("deepseek-v3", seq=4096)["training_flops_per_token_causal"]
        self.assertLess(pct(got, ref["value"]), 1.0)

    def test_qwen3_head_dim_is_not_hidden_over_heads(self):
        # With head_dim = hidden/heads = 64 the total misses the card by more than 1%.
        wrong = moe_count.count(with_config("qwen3-235b-a22b", head_dim=64), 4096)
        self.assertGreater(pct(wrong["params_total"], 235e9), 1.0)

    def test_known_discrepancies_stay_flagged(self):
        # DeepSeek's README_WEIGHTS.md says 36.7B activated "including 0.9B for Embedding and
        # 0.9B for the output Head"; the config gives 37.55B with both. If this starts to pass
        # the 1% check, the config or the count changed: look before relaxing this test.
        rows = {w: d for w, s, g, d, ok, src in moe_count.comparisons(MODELS["deepseek-v3"], counted("deepseek-v3"))}
        self.assertGreater(rows["active_params"], 1.0)
        self.assertLess(rows["total_params"], 0.01)


class ClosedForms(unittest.TestCase):
    """Every term against its shape, written out here again; the term set is fixed."""

    def test_deepseek_v3_terms_have_their_shapes(self):
        c = config("deepseek-v3")
        h, L, V, H = c["hidden"], c["layers"], c["vocab"], c["heads"]
        nope, rope, v, rq, rkv = 128, 64, 128, 1536, 512
        moe = L - 3
        expert = 3 * h * 2048
        want = {
            "embedding": V * h,
            "output_head": V * h,
            "final_norm": h,
            "mla_q_down": L * h * rq,
            "mla_q_down_norm": L * rq,
            "mla_q_up": L * rq * H * (nope + rope),
            "mla_kv_down": L * h * (rkv + rope),
            "mla_kv_down_norm": L * rkv,
            "mla_kv_up": L * rkv * H * (nope + v),
            "mla_out": L * H * v * h,
            "layer_norms": L * 2 * h,
            "dense_mlp": 3 * 3 * h * 18432,
            "routed_experts": moe * 256 * expert,
            "shared_experts": moe * expert,
            "router": moe * h * 256,
            "router_bias": moe * 256,
        }
        got = counted("deepseek-v3")["terms_total"]
        self.assertEqual(got, want)
        active = dict(want, routed_experts=moe * 8 * expert)
        self.assertEqual(counted("deepseek-v3")["terms_active"], active)

    def test_deepseek_v3_mtp_terms(self):
        h = 7168
        got = counted("deepseek-v3")["terms_mtp"]
        self.assertEqual(got["mtp_eh_proj"], 2 * h * h)
        self.assertEqual(got["mtp_routed_experts"], 256 * 3 * h * 2048)
        self.assertNotIn("mtp_embedding", got)  # shared with the main model
        self.assertNotIn("mtp_output_head", got)

    def test_gqa_terms_have_their_shapes(self):
        c = config("qwen3-235b-a22b")
        h, L, V, H, kv, d = c["hidden"], c["layers"], c["vocab"], c["heads"], c["kv_heads"], c["head_dim"]
        expert = 3 * h * 1536
        want = {
            "embedding": V * h,
            "output_head": V * h,
            "final_norm": h,
            "attn_q": L * h * H * d,
            "attn_k": L * h * kv * d,
            "attn_v": L * h * kv * d,
            "attn_out": L * H * d * h,
            "attn_qk_norm": L * 2 * d,
            "layer_norms": L * 2 * h,
            "routed_experts": L * 128 * expert,
            "router": L * h * 128,
        }
        self.assertEqual(counted("qwen3-235b-a22b")["terms_total"], want)

    def test_totals_are_the_sum_of_the_terms_and_nothing_else(self):
        for mid in MODELS:
            r = counted(mid)
            self.assertEqual(r["params_total"], sum(r["terms_total"].values()), mid)
            self.assertEqual(r["params_active"], sum(r["terms_active"].values()), mid)

    def test_tied_embeddings_drop_the_head(self):
        r = moe_count.count(with_config("olmoe-1b-7b", tie_embeddings=True), 4096)
        untied = counted("olmoe-1b-7b")
        self.assertEqual(untied["params_total"] - r["params_total"], 50304 * 2048)

    def test_active_routed_experts_scale_with_top_k(self):
        for mid in MODELS:
            c = config(mid)
            r = counted(mid)
            self.assertEqual(r["terms_active"]["routed_experts"] * c["experts"], r["terms_total"]["routed_experts"] * c["top_k"], mid)


class MlaIsNotMha(unittest.TestCase):
    def test_mla_attention_weights_are_far_from_mha(self):
        c = config("deepseek-v3")
        per_layer = sum(moe_count.attention_params(c).values())
        mha = 4 * c["hidden"] * c["heads"] * c["qk_nope_head_dim"]
        self.assertEqual(per_layer, 187_105_280 + 1536 + 512)
        self.assertLess(per_layer, mha / 2)

    def test_mla_scores_use_nope_plus_rope_and_context_uses_v(self):
        c = config("deepseek-v3")
        core = moe_count.attention_core_flops(c, 1000)
        self.assertEqual(core["attn_scores"], 2 * 128 * (128 + 64) * 1000)
        self.assertEqual(core["attn_context"], 2 * 128 * 128 * 1000)

    def test_gqa_scores_use_every_query_head(self):
        c = config("qwen3-235b-a22b")
        core = moe_count.attention_core_flops(c, 10)
        self.assertEqual(core["attn_scores"], 2 * 64 * 128 * 10)


class Flops(unittest.TestCase):
    def test_forward_is_twice_the_active_matrices_plus_attention(self):
        for mid in MODELS:
            c = config(mid)
            r = counted(mid, seq=2048)
            matrices = sum(v for k, v in r["terms_active"].items() if k != "embedding" and "norm" not in k and k != "router_bias")
            core = sum(moe_count.attention_core_flops(c, 2048).values()) * c["layers"]
            self.assertEqual(r["forward_flops_per_token_full"], 2 * matrices + core, mid)
            self.assertEqual(r["matmul_flops_per_token"], 2 * matrices, mid)

    def test_attention_term_grows_linearly_with_sequence_length(self):
        a, b, c = (counted("deepseek-v3", seq=s)["forward_flops_per_token_full"] for s in (1024, 2048, 3072))
        self.assertGreater(b, a)
        self.assertAlmostEqual(c - b, b - a)

    def test_causal_counts_about_half_the_positions(self):
        r = counted("mixtral-8x7b", seq=4095)
        full_core = r["forward_flops_per_token_full"] - r["matmul_flops_per_token"]
        causal_core = r["forward_flops_per_token_causal"] - r["matmul_flops_per_token"]
        self.assertAlmostEqual(causal_core / full_core, 2048 / 4095)


class BadInput(unittest.TestCase):
    def run_main(self, *argv, configs=None):
        args = list(argv)
        if configs is not None:
            tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            json.dump(configs, tmp)
            tmp.close()
            self.addCleanup(os.unlink, tmp.name)
            args = ["--configs", tmp.name] + args
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = moe_count.main(args)
        return status, out.getvalue(), err.getvalue()

    def assert_refused(self, entry, words):
        status, _, err = self.run_main(configs={"models": [entry]})
        self.assertEqual(status, 2)
        self.assertTrue(err.startswith("error: "), err)
        self.assertIn("\nhint: ", err)
        self.assertIn(words, err)

    def test_top_k_above_the_expert_count(self):
        self.assert_refused(with_config("mixtral-8x7b", top_k=9), "top_k 9 above 8 experts")

    def test_expert_ffn_without_experts(self):
        e = with_config("mixtral-8x7b", experts=0, dense_layers=32)
        self.assert_refused(e, "expert_ffn without experts")

    def test_mla_rank_on_gqa(self):
        self.assert_refused(with_config("qwen3-235b-a22b", kv_lora_rank=512), "MLA setting kv_lora_rank on gqa")

    def test_moe_layers_without_experts(self):
        e = with_config("olmoe-1b-7b", experts=0, expert_ffn=0)
        self.assert_refused(e, "MoE layers but no experts")

    def test_unknown_model(self):
        status, _, err = self.run_main("--model", "gpt-5")
        self.assertEqual(status, 2)
        self.assertIn("error: no model 'gpt-5'", err)
        self.assertIn("deepseek-v3", err)

    def test_missing_file(self):
        status, _, err = self.run_main("--configs", "/nonexistent/configs.json")
        self.assertEqual(status, 2)
        self.assertIn("error: cannot read", err)

    def test_bad_sequence_length(self):
        status, _, err = self.run_main("--seq", "0")
        self.assertEqual(status, 2)
        self.assertIn("hint:", err)


class Cli(unittest.TestCase):
    def test_json_output_carries_the_card_rows(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "moe_count.py"), "--json"], capture_output=True, text=True, check=True).stdout
        rows = json.loads(out)
        self.assertEqual([r["id"] for r in rows], list(MODELS))
        ds = rows[0]
        flagged = {c["what"] for c in ds["model_card"] if c["flag"]}
        self.assertIn("active_params", flagged)
        self.assertNotIn("total_params", flagged)


if __name__ == "__main__":
    unittest.main()
